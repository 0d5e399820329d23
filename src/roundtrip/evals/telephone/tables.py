"""The Telephone Game's tables from the per-item similarity and MGG files.

- ``telephone_similarity``: ``S_delta(g)`` per (model, set, chain, direction, backbone,
  generation): Eq. 1 over all items (a failed generation counts 0) with a 95 % bootstrap CI,
  and the survivors' mean beside it (the data of Fig. 6);
- ``telephone_mcd``: ``MCD_delta`` (Eq. 2) per experiment (chain, direction, backbone),
  ``MCD_avg`` over the paper's four mappings (Sec. 3.1) and roundtrip's mean over every
  experiment beside it;
- ``telephone_sdr``: Table 3's layout, power-law ``α, β, γ`` (``γ >= 0``) per chain averaged
  over the paper's mappings (Sec. 3.2), and the released code's exponential ``a, b, c``
  averaged over the four mappings; ``telephone_sdr_fits``: every fit, power law (paper) and
  exponential (released code), with initial values, bounds, standard errors and R^2;
- ``telephone_mgg``: accuracy per task (Fig. 11's order) and generation by the released MGG
  rules, the prompt-weighted ``overall_prompts`` (headline, reproduces Fig. 8), the task mean
  ``overall_tasks`` and GenEval's own rules' ``overall_prompts_geneval``, and the MGG row, the
  mean over generations (Sec. 3.3).

Models are the pairs (``telephone.pairs``) and the chain sets made elsewhere. A cell that cannot
be computed is "n/a" with the reason in a numbered note.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from roundtrip.metrics.drift import SDR_FORMS, average_fits, fit_sdr, mcd, similarity_curve
from roundtrip.metrics.geneval import TASKS
from roundtrip.tables import write_frame
from roundtrip.tables.matrix import Notes
from roundtrip.tables.reasons import summarize_reasons

TABLES = ["telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_sdr_fits",
          "telephone_mgg"]
ARROWS = {"text_text": "text→text", "text_image": "text→image", "image_image": "image→image",
          "image_text": "image→text"}

Key = tuple[str, str]  # (model, dataset)


def experiment_label(chain: str, direction: str, backbone: str) -> str:
    """``text-first text→text (wordllama)``: one of the paper's Table 1 experiments."""
    return f"{chain} {ARROWS[direction]} ({backbone})"


def _row_name(key: Key, many_sets: bool) -> str:
    return f"{key[0]} ({key[1]})" if many_sets else key[0]


def _why(rows: pd.DataFrame) -> str:
    bad = rows[rows["status"] != "ok"]
    if bad.empty:
        return ""
    top = summarize_reasons((str(r) for r in bad["reason"]), top=1, counts="never")
    return f"{len(bad)} of {len(rows)} item values missing: {top}"


def eq1_values(rows: pd.DataFrame) -> tuple[list[float], list[float]]:
    """The item values of one (experiment, generation) for Eq. 1 and for the survivors' mean.

    Eq. 1 divides by |D|: an item whose chain has no output at ``g`` (status ``failed``: the
    model failed at ``g`` or earlier) stays in ``D`` with similarity 0, the value of an output
    that shares nothing with the input (the paper gives no rule for failures; a missing output
    retains no meaning). Items without an input for the direction or with a backbone error
    (``error``) and unavailable backbones (``n/a``) are left out of both.

    Returns:
        ``(eq1, survivors)``: the Eq. 1 values (``ok`` similarities and a 0 per failed item) and
        the ``ok`` similarities alone.
    """
    ok = rows.loc[rows["status"] == "ok", "similarity"].astype(float).tolist()
    failed = int((rows["status"] == "failed").sum())
    return ok + [0.0] * failed, ok


def curves(similarity: dict[Key, pd.DataFrame], bootstrap: dict | None = None
           ) -> pd.DataFrame:
    """``S_delta(g)`` per (model, dataset, chain, direction, backbone, generation).

    Columns ``model, dataset, chain, direction, backbone, generation, s, ci_low, ci_high, n,
    s_survivors, n_failed, n_items, note``: ``s`` is Eq. 1 (mean over the items of ``D``, a
    failed item counting 0, see :func:`eq1_values`) with its 95 % bootstrap CI over items and
    ``n`` items; ``s_survivors`` the mean over the items that still have an output (roundtrip's,
    beside it); ``n_failed`` the items counted as 0.
    """
    b = {"samples": 1000, "seed": 0} | (bootstrap or {})
    rows = []
    for (model, dataset), df in similarity.items():
        for (chain, direction, backbone), exp in df.groupby(["chain", "direction", "backbone"],
                                                            sort=False):
            by_gen = {int(g): grp for g, grp in exp.groupby("generation")}
            values = {g: eq1_values(grp) for g, grp in by_gen.items()}
            summaries = similarity_curve({g: v[0] for g, v in values.items()},
                                         n_boot=b["samples"], seed=b["seed"])
            for g, s in summaries.items():
                grp, survivors = by_gen[g], values[g][1]
                rows.append({"model": model, "dataset": dataset, "chain": chain,
                             "direction": direction, "backbone": backbone, "generation": g,
                             "s": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n,
                             "s_survivors": float(np.mean(survivors)) if survivors else math.nan,
                             "n_failed": int((grp["status"] == "failed").sum()),
                             "n_items": len(grp), "note": _why(grp)})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


CURVE_COLUMNS = ["model", "dataset", "chain", "direction", "backbone", "generation", "s",
                 "ci_low", "ci_high", "n", "s_survivors", "n_failed", "n_items", "note"]


def similarity_table(curve: pd.DataFrame, out_dir) -> None:
    notes = Notes(sep="")
    shown = curve.copy()
    shown["direction"] = shown["direction"].map(ARROWS)
    shown["n"] = [f"{n}{notes.mark(t) if t else ''}" for n, t in zip(curve["n"], curve["note"])]
    shown = shown.drop(columns=["note", "n_items"]).rename(columns={"s": "S"})
    notes.texts.append("S (Eq. 1, Sec. 3.1): mean over all items of D; an item whose chain "
                       "has no output at g counts 0 (n_failed of them); S_survivors: mean over "
                       "the items with an output (roundtrip's, not in the paper)")
    write_frame(shown.rename(columns={"s_survivors": "S_survivors"}), "telephone_similarity",
                "The Telephone Game: S(g), mean similarity to the input at generation g "
                "(Eq. 1), with 95% bootstrap CIs over items", notes.texts, out_dir,
                digits={"S": 4, "ci_low": 4, "ci_high": 4, "S_survivors": 4},
                csv_frame=curve)


def _experiment_note(model: str, label: str, notes_col) -> str:
    """Why an experiment has no value: an ``n/a`` reason holds for every model alike."""
    why = next((t for t in notes_col if t), "no generation with a value")
    reason = why.split(": ", 1)[1] if why.startswith(tuple("0123456789")) and ": " in why else why
    return reason if reason.startswith("n/a") else f"{model}, {label}: {why}"


#: The paper's mappings delta in Delta (Sec. 3.1, Table 1 Exps. 2, 4, 5, 7): (chain, direction,
#: backbone type, the backbone's name in the paper). MCD_avg and Table 3 average over these.
PAPER_MAPPINGS = (
    ("text-first", "text_text", "sentence_transformers", "MPNet"),
    ("text-first", "text_image", "clip", "CLIP"),
    ("image-first", "image_image", "dino", "DINO"),
    ("image-first", "image_text", "clip", "CLIP"),
)
#: What a user runs to get the paper's backbones (the weights registry's names).
FETCH_PAPER_BACKBONES = ("`roundtrip weights fetch mpnet clip-vit-b32 dino-vitb16` and add them "
                         "to telephone.backbones (types sentence_transformers, clip, dino)")


def paper_experiments(backbone_types: dict[str, str] | None
                      ) -> list[tuple[tuple[str, str, str, str], str | None]]:
    """Each paper mapping with the configured backbone that fills it (the first backbone of the
    mapping's type in config order), or None.

    Args:
        backbone_types: backbone name -> ``telephone.backbones.<name>.type``, in config order.
    """
    types = backbone_types or {}
    return [(m, next((n for n, t in types.items() if t == m[2]), None)) for m in PAPER_MAPPINGS]


def _mapping_label(m: tuple[str, str, str, str]) -> str:
    return f"{m[0]} {ARROWS[m[1]]} ({m[3]})"


def mcd_frame(curve: pd.DataFrame, backbone_types: dict[str, str] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Wide MCD table: one row per (model, dataset); a column per experiment (the paper's four
    mappings first), ``MCD_avg`` and ``MCD_avg_all_experiments``.

    ``MCD_avg`` is the paper's (Sec. 3.1, after Eq. 2): the mean of ``MCD_delta`` over the four
    mappings of :data:`PAPER_MAPPINGS`; n/a with the reason when one of them is not configured or
    has no value. ``MCD_avg_all_experiments`` is roundtrip's: the mean over every experiment
    measured (other backbones, the image-first text->text direction, wordllama, 1 - CER).

    Args:
        curve: :func:`curves`' frame.
        backbone_types: backbone name -> type (which backbone fills which paper mapping).

    Returns:
        The numeric frame, the same with formatted cells and note marks, and the notes.
    """
    notes = Notes(sep="")
    paper = paper_experiments(backbone_types)
    present = list(dict.fromkeys(
        (c, d, b) for c, d, b in curve[["chain", "direction", "backbone"]].itertuples(index=False)))
    first = [(m[0], m[1], b) for m, b in paper if b is not None and (m[0], m[1], b) in present]
    order = first + [e for e in present if e not in first]
    experiments = [experiment_label(*e) for e in order]
    rows, shown = [], []
    for (model, dataset), grp in curve.groupby(["model", "dataset"], sort=False):
        row = {"model": model, "dataset": dataset, **dict.fromkeys(experiments, math.nan)}
        text = {"model": model, "dataset": dataset, **dict.fromkeys(experiments, "–")}
        for (c, d, b), e in grp.groupby(["chain", "direction", "backbone"], sort=False):
            label = experiment_label(c, d, b)
            value = mcd({int(g): s for g, s in zip(e["generation"], e["s"])})
            row[label] = value
            partial = next((t for t in e["note"] if t), "")
            if math.isnan(value):
                text[label] = "n/a " + notes.mark(_experiment_note(model, label, e["note"]))
            else:
                text[label] = f"{value:.4f}" + (notes.mark(f"{model}, {label}: {partial}")
                                                 if partial else "")
        avg, why = _paper_mcd_avg(row, paper)
        row["MCD_avg"] = avg
        text["MCD_avg"] = f"{avg:.4f}" if not math.isnan(avg) else "n/a " + notes.mark(why)
        values = [row[e] for e in experiments if not math.isnan(row[e])]
        row["MCD_avg_all_experiments"] = float(np.mean(values)) if values else math.nan
        text["MCD_avg_all_experiments"] = f"{np.mean(values):.4f}" if values else "n/a"
        row["generations"] = text["generations"] = int(grp["generation"].max()) if len(grp) else 0
        rows.append(row)
        shown.append(text)
    # the paper's four mappings, their MCD_avg, then the extra experiments and roundtrip's mean
    cols = ["model", "dataset", *experiments[:len(first)], "MCD_avg",
            *experiments[len(first):], "MCD_avg_all_experiments", "generations"]
    return pd.DataFrame(rows, columns=cols), pd.DataFrame(shown, columns=cols), notes.texts


def _paper_mcd_avg(row: dict, paper) -> tuple[float, str]:
    """The mean of MCD over the paper's four mappings, or NaN and why."""
    missing = [_mapping_label(m) for m, b in paper if b is None]
    if missing:
        return math.nan, (f"n/a: the paper's MCD_avg needs its four mappings (Sec. 3.1); not "
                          f"configured: {', '.join(missing)}; run {FETCH_PAPER_BACKBONES}")
    values = {_mapping_label(m): row.get(experiment_label(m[0], m[1], b), math.nan)
              for m, b in paper}
    empty = [k for k, v in values.items() if math.isnan(v)]
    if empty:
        return math.nan, f"n/a: the paper's MCD_avg has no value for {', '.join(empty)}"
    return float(np.mean(list(values.values()))), ""


def mcd_table(curve: pd.DataFrame, out_dir, backbone_types: dict[str, str] | None = None
              ) -> pd.DataFrame:
    frame, shown, notes = mcd_frame(curve, backbone_types)
    notes = notes + ["MCD_avg (the paper, Sec. 3.1, Eq. 2): mean of MCD over its four mappings, "
                     "MPNet text→text and CLIP text→image on text-first chains, DINO image→image "
                     "and CLIP image→text on image-first chains (Table 1, Exps. 2, 4, 5, 7); "
                     "MCD_avg_all_experiments (roundtrip's): mean over every experiment "
                     "measured; S(g) counts a failed generation as 0 (Eq. 1 over |D|)"]
    write_frame(shown, "telephone_mcd",
                "The Telephone Game: Mean Cumulative Drift MCD (Eq. 2) per experiment "
                "(chain, direction, backbone) and MCD_avg over the paper's four mappings; "
                "higher = less drift", notes, out_dir, csv_frame=frame)
    return frame


def sdr_fits_frame(curve: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, dataset, chain, experiment, form) fit: the power law (the paper) and
    the exponential (the released code), with standard errors, R^2, initial values and bounds."""
    rows = []
    for (model, dataset, chain), grp in curve.groupby(["model", "dataset", "chain"], sort=False):
        for form, (names, formula) in SDR_FORMS.items():
            for (d, b), e in grp.groupby(["direction", "backbone"], sort=False):
                fit = fit_sdr(e["generation"].to_numpy(float), e["s"].to_numpy(float), form)
                if not fit.ok and e["s"].isna().all():  # nothing to fit: say why, not "failed"
                    fit.reason = _experiment_note(model, experiment_label(chain, d, b), e["note"])
                row = {"model": model, "dataset": dataset, "chain": chain,
                       "direction": ARROWS[d], "backbone": b, "form": formula}
                for i, k in enumerate(names):
                    row[f"p{i + 1}"] = fit.params[k]
                    row[f"p{i + 1}_se"] = fit.stderr[k]
                row.update(r2=fit.r2, n=fit.n,
                           initial=" ".join(f"{v:g}" for v in fit.initial),
                           bounds=" ".join(f"[{lo:g},{hi:g}]" for lo, hi in zip(*fit.bounds)),
                           status="ok" if fit.ok else
                           fit.reason if fit.reason.startswith("n/a") else f"failed: {fit.reason}")
                rows.append(row)
    cols = ["model", "dataset", "chain", "direction", "backbone", "form", "p1", "p1_se", "p2",
            "p2_se", "p3", "p3_se", "r2", "n", "initial", "bounds", "status"]
    return pd.DataFrame(rows).reindex(columns=cols)


SDR_PARAMS = ("α", "β", "γ")


def sdr_frame(curve: pd.DataFrame, backbone_types: dict[str, str] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Table 3 as the paper prints it: one row per (model, dataset), power-law ``α, β, γ`` per
    chain (``text-first α`` ...), each averaged over the paper's mappings of that chain (Sec. 3.2:
    "average each parameter across all distance mappings"; :data:`PAPER_MAPPINGS`); then
    roundtrip's averages over every experiment of the chain (``text-first α (all experiments)``).

    Returns:
        The numeric frame, the same with formatted cells and note marks, and the notes.
    """
    notes = Notes(sep="")
    paper = paper_experiments(backbone_types)
    rows, shown = [], []
    for (model, dataset), grp in curve.groupby(["model", "dataset"], sort=False):
        row, text = {"model": model, "dataset": dataset}, {"model": model, "dataset": dataset}
        fits = {}
        for (c, d, b), e in grp.groupby(["chain", "direction", "backbone"], sort=False):
            fits[(c, d, b)] = fit_sdr(e["generation"].to_numpy(float), e["s"].to_numpy(float))
        for chain in ("text-first", "image-first"):
            mine = [(m, b) for m, b in paper if m[0] == chain]
            missing = [_mapping_label(m) for m, b in mine if b is None or (chain, m[1], b)
                       not in fits]
            avg = average_fits([fits[(chain, m[1], b)] for m, b in mine]) if not missing \
                else {"n_fits": 0}
            why = (f"n/a: Table 3 averages the paper's mappings (Sec. 3.2); not measured: "
                   f"{', '.join(missing)}; run {FETCH_PAPER_BACKBONES}") if missing else \
                "n/a: no power-law fit of the paper's mappings succeeded" \
                if avg["n_fits"] < len(mine) else ""
            for k, name in zip(("alpha", "beta", "gamma"), SDR_PARAMS):
                value = avg.get(k, math.nan) if not why else math.nan
                row[f"{chain} {name}"] = value
                text[f"{chain} {name}"] = f"{value:.4f}" if not why else "n/a " + notes.mark(why)
        for chain in ("text-first", "image-first"):
            mine = [f for (c, _, _), f in fits.items() if c == chain]
            avg = average_fits(mine) if mine else {"n_fits": 0}
            for k, name in zip(("alpha", "beta", "gamma"), SDR_PARAMS):
                key = f"{chain} {name} (all experiments)"
                row[key] = avg.get(k, math.nan) if avg["n_fits"] else math.nan
                text[key] = f"{row[key]:.4f}" if avg["n_fits"] else "n/a"
        _released_exp(grp, paper, row, text, notes)
        rows.append(row)
        shown.append(text)
    return pd.DataFrame(rows), pd.DataFrame(shown), notes.texts


#: Columns of the released code's exponential SDR (``a, b, c`` over the paper's four mappings).
EXP_COLUMNS = tuple(f"exponential {k} (released)" for k in ("a", "b", "c"))


def _released_exp(grp: pd.DataFrame, paper, row: dict, text: dict, notes: Notes) -> None:
    """The released code's SDR line: ``a * exp(-b g) + c`` fitted per mapping (unbounded, from
    ``(1, 0.1, 0)``) and each parameter averaged over the paper's four mappings of both chains
    (github.com/mollahsabbir/Semantic-Drift-in-Unified-Models @ 4f1d253,
    ``semantic-drift/mcd-sdr.py``, ``main``); n/a when a mapping is not measured or its fit
    does not converge (the released script stops there)."""
    def rows_of(m, b):
        return grp[(grp["chain"] == m[0]) & (grp["direction"] == m[1]) & (grp["backbone"] == b)]

    missing = [_mapping_label(m) for m, b in paper if b is None or rows_of(m, b).empty]
    fits, why = [], ""
    if missing:
        why = (f"n/a: the released exponential SDR averages the paper's four mappings; not "
               f"measured: {', '.join(missing)}; run {FETCH_PAPER_BACKBONES}")
    for m, b in paper if not missing else ():
        e = rows_of(m, b)
        fit = fit_sdr(e["generation"].to_numpy(float), e["s"].to_numpy(float), "exp")
        if not fit.ok:
            why = f"n/a: the exponential fit of {_mapping_label(m)} failed: {fit.reason}"
            break
        fits.append(fit)
    avg = average_fits(fits) if not why else {}
    mark = notes.mark(why) if why else ""
    for key, k in zip(EXP_COLUMNS, ("a", "b", "c")):
        row[key] = avg.get(k, math.nan)
        text[key] = f"{row[key]:.4f}" if not why else f"n/a {mark}"


def _grouped_header(column: str) -> str:
    """``text-first α`` -> ``text-first: α``; ``text-first α (all experiments)`` ->
    ``text-first (all experiments): α``; other columns unchanged."""
    for chain in ("text-first", "image-first"):
        for name in SDR_PARAMS:
            if column == f"{chain} {name}":
                return f"{chain}: {name}"
            if column == f"{chain} {name} (all experiments)":
                return f"{chain} (all experiments): {name}"
    if column in EXP_COLUMNS:
        return f"exponential, four mappings (released code): {column.split()[1]}"
    return column


def sdr_table(curve: pd.DataFrame, out_dir, backbone_types: dict[str, str] | None = None
              ) -> pd.DataFrame:
    """``telephone_sdr`` (Table 3's layout) and ``telephone_sdr_fits`` (every fit, both forms)."""
    frame, shown, notes = sdr_frame(curve, backbone_types)
    notes = notes + ["power law y = α g^(-β) + γ fitted to S(g) (Sec. 3.2) with scipy; each "
                     "parameter averaged over the paper's mappings of the chain (text-first: "
                     "MPNet text→text, CLIP text→image; image-first: DINO image→image, CLIP "
                     "image→text), as Table 3, bounds α in [0, 2], β in [0, 10], γ in [0, 1] "
                     "(the published γ are all >= 0, most at the bound 0); '(all experiments)': "
                     "roundtrip's average over every experiment of the chain; exponential "
                     "(released code): a e^(-b g) + c fitted unbounded from (1, 0.1, 0) per "
                     "mapping, each parameter averaged over the four mappings of both chains, "
                     "as the authors' released script; every fit: telephone_sdr_fits"]
    # Markdown and LaTeX head each parameter "chain order: α", so a reader (and the report,
    # which stacks column groups as blocks of rows) sees one row per pair and chain order
    write_frame(shown.rename(columns=_grouped_header), "telephone_sdr", "The Telephone Game: "
                "Semantic Drift Rate, fitted power-law parameters per chain (Sec. 3.2, Table 3)",
                notes, out_dir, csv_frame=frame)
    fits = sdr_fits_frame(curve)
    fit_notes = ["power: y = alpha * g^(-beta) + gamma (p1, p2, p3 = alpha, beta, gamma; the "
                 "paper, Sec. 3.2), bounded as shown; exp: y = a * exp(-b * g) + c as the "
                 "authors' released code fits it, unbounded from (1, 0.1, 0) with at most 5000 "
                 "evaluations; scipy curve_fit; a failed fit has no numbers"]
    exact = fits[(fits["n"] == 3) & (fits["status"] == "ok")]
    if len(exact):
        fit_notes.append(f"{len(exact)} fit(s) on 3 points: 3 parameters for 3 points (no "
                         "standard errors), so the parameters are not identified: the curve "
                         "passes through the points or, where a bound or a local optimum holds "
                         "it (R^2 < 1), misses them; the text->text rows get G/2 points, so "
                         "G >= 10 is needed for a fit with residuals (the paper: G = 20)")
    digits = {c: 4 for c in ("p1", "p1_se", "p2", "p2_se", "p3", "p3_se", "r2")}
    shown_fits = fits.copy()
    shown_fits["n"] = shown_fits["n"].astype("Int64").astype(str)
    write_frame(shown_fits, "telephone_sdr_fits", "The Telephone Game: every Semantic Drift Rate "
                "fit, power law and exponential (Sec. 3.2)", fit_notes, out_dir, digits=digits,
                csv_frame=fits)
    return frame


def mgg_frame(mgg: dict[Key, pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    """:func:`~roundtrip.evals.telephone.mgg.mgg_scores` of the per-item MGG files, ``n`` written
    ``scored/items`` with a note mark where items were not scored."""
    from roundtrip.evals.telephone.mgg import SCORE_COLUMNS, mgg_scores

    notes = Notes(sep="")
    parts = [df.assign(model=m, dataset=d) for (m, d), df in mgg.items() if not df.empty]
    if not parts:
        return pd.DataFrame(columns=SCORE_COLUMNS), []
    records = pd.concat(parts, ignore_index=True)
    frame = mgg_scores(records).astype({"n": object})
    for i, r in frame.iterrows():
        if r["generation"] == "MGG":
            gens = (frame["model"] == r["model"]) & (frame["dataset"] == r["dataset"]) & \
                (frame["generation"] != "MGG")
            frame.at[i, "n"] = f"mean of {int(gens.sum())} generations"
            continue
        at = records[(records["model"] == r["model"]) & (records["dataset"] == r["dataset"]) &
                     (records["generation"].astype(int) == int(r["generation"]))]
        cell = f"{int(r['n'])}/{len(at)}"
        why = _why(at)
        frame.at[i, "n"] = cell + (notes.mark(f"{r['model']}, generation {r['generation']}: "
                                              f"{why}") if why else "")
    return frame, notes.texts


def mgg_table(mgg: dict[Key, pd.DataFrame], out_dir, why_none: str = "") -> pd.DataFrame:
    frame, notes = mgg_frame(mgg)
    if frame.empty:
        notes = [why_none or "n/a: no GenEval prompt set (type: geneval) is configured"]
    notes = notes + ["verdicts by the authors' released MGG rules (mgg.py): OWLv2 queried once "
                     "per include entry with its colour in the query, every detection scoring "
                     ">= 0.1 counted, every object in the position relation to some target "
                     "object, in pixels; overall_prompts (headline): accuracy over all prompts "
                     "of the generation, the convention that reproduces Fig. 8's published "
                     "cells; overall_tasks: the unweighted mean of the six task accuracies "
                     "(Sec. 3.3's text, GenEval's overall); overall_prompts_geneval: "
                     "overall_prompts by GenEval's own rules (class queries, CLIP colour, the "
                     "most confident objects, normalized offsets), n/a unless "
                     "telephone.mgg.colour is set; MGG row: the mean over generations of each "
                     "column; tasks in Fig. 11's order"]
    write_frame(frame, "telephone_mgg", "The Telephone Game: Multi-Generation GenEval accuracy per "
                "task and generation, and MGG = the mean over generations (Sec. 3.3, Figs. 8, "
                "11)", notes, out_dir,
                digits={c: 3 for c in (*TASKS, "overall_prompts", "overall_tasks",
                                       "overall_prompts_geneval")})
    return frame


def mgg_grid(frame: pd.DataFrame) -> pd.DataFrame:
    """Fig. 8 as a table: one row per (model, dataset), one column per generation (``Gen k``)
    and ``MGG``, each cell ``overall_prompts`` (accuracy over all prompts, the convention of the
    published cells) in [0, 1].

    Args:
        frame: :func:`~roundtrip.evals.telephone.mgg.mgg_scores`' output (``model, dataset,
            generation, overall_prompts``; ``generation`` an int or ``"MGG"``).

    Returns:
        ``model, dataset, Gen 1 ... Gen G, MGG``, rows in ``frame``'s order; empty with those
        two columns when ``frame`` is.
    """
    if frame.empty:
        return pd.DataFrame(columns=["model", "dataset", "MGG"])
    grid = frame.pivot_table(index=["model", "dataset"], columns="generation",
                             values="overall_prompts", sort=False, dropna=False)
    gens = sorted((g for g in grid.columns if g != "MGG"), key=int)
    grid = grid[[*gens, "MGG"]] if "MGG" in grid.columns else grid[gens]
    grid.columns = [f"Gen {g}" if g != "MGG" else "MGG" for g in grid.columns]
    return grid.reset_index()


def mgg_grid_table(frame: pd.DataFrame, out_dir, why_none: str = "") -> pd.DataFrame:
    """``telephone_mgg_grid``: :func:`mgg_grid` of :func:`mgg_table`'s frame, written."""
    grid = mgg_grid(frame)
    notes = [why_none or "n/a: no GenEval prompt set (type: geneval) is configured"] \
        if frame.empty else []
    notes += ["cells: overall_prompts, accuracy over all prompts of the generation (the "
              "convention that reproduces Fig. 8's published cells); MGG: the mean over "
              "generations; per task in telephone_mgg"]
    write_frame(grid, "telephone_mgg_grid", "The Telephone Game: MGG overall per model and "
                "generation (Fig. 8)", notes, out_dir,
                digits={c: 3 for c in grid.columns if c not in ("model", "dataset")})
    return grid

