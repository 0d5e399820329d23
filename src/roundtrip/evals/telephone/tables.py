"""The Telephone Game's tables from the per-item similarity and MGG files.

- ``telephone_similarity``: ``S_delta(g)`` per (model, set, chain, direction, backbone,
  generation) with a 95 % bootstrap CI over items (Eq. 1; the data of Fig. 6);
- ``telephone_mcd``: ``MCD_delta`` (Eq. 2) per experiment (chain, direction, backbone),
  ``MCD_avg`` per chain and over all experiments, per model and set (Sec. 3.1);
- ``telephone_sdr``: the power law (paper) and exponential (released code) fitted per experiment,
  with initial values, bounds, standard errors and R^2, and the parameters averaged over the
  directions of each chain (Table 3);
- ``telephone_mgg``: GenEval accuracy per task and generation, the per-generation overall (GenEval's
  unweighted task mean, and the mean over prompts), and MGG = the mean over generations of the
  task-mean overall (Sec. 3.3, Figs. 8, 11).

Models are the pairs (``telephone.pairs``) and the chain sets made elsewhere. A cell that cannot
be computed is "n/a" with the reason in a numbered note.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from roundtrip.metrics.drift import SDR_FORMS, average_fits, fit_sdr, mcd, similarity_curve
from roundtrip.metrics.geneval import TASKS, task_accuracies
from roundtrip.tables import write_frame

TABLES = ["telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_mgg"]
ARROWS = {"text_text": "text→text", "text_image": "text→image", "image_image": "image→image",
          "image_text": "image→text"}

Key = tuple[str, str]  # (model, dataset)


def experiment_label(chain: str, direction: str, backbone: str) -> str:
    """``text-first text→text (wordllama)``: one of the paper's Table 1 experiments."""
    return f"{chain} {ARROWS[direction]} ({backbone})"


def _row_name(key: Key, many_sets: bool) -> str:
    return f"{key[0]} ({key[1]})" if many_sets else key[0]


class Notes:
    """Numbered notes of one table (same text, same number)."""

    def __init__(self):
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def _why(rows: pd.DataFrame) -> str:
    bad = rows[rows["status"] != "ok"]
    if bad.empty:
        return ""
    top = Counter(str(r) for r in bad["reason"]).most_common(1)[0][0]
    return f"{len(bad)} of {len(rows)} item values missing: {top}"


def curves(similarity: dict[Key, pd.DataFrame], bootstrap: dict | None = None
           ) -> pd.DataFrame:
    """``S_delta(g)`` per (model, dataset, chain, direction, backbone, generation): columns
    ``model, dataset, chain, direction, backbone, generation, s, ci_low, ci_high, n, n_items,
    note``."""
    b = {"samples": 1000, "seed": 0} | (bootstrap or {})
    rows = []
    for (model, dataset), df in similarity.items():
        for (chain, direction, backbone), exp in df.groupby(["chain", "direction", "backbone"],
                                                            sort=False):
            per_gen = {int(g): grp["similarity"].astype(float).tolist()
                       for g, grp in exp.groupby("generation")}
            summaries = similarity_curve(per_gen, n_boot=b["samples"], seed=b["seed"])
            for g, s in summaries.items():
                grp = exp[exp["generation"] == g]
                rows.append({"model": model, "dataset": dataset, "chain": chain,
                             "direction": direction, "backbone": backbone, "generation": g,
                             "s": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n,
                             "n_items": len(grp), "note": _why(grp)})
    return pd.DataFrame(rows, columns=["model", "dataset", "chain", "direction", "backbone",
                                       "generation", "s", "ci_low", "ci_high", "n", "n_items",
                                       "note"])


def similarity_table(curve: pd.DataFrame, out_dir) -> None:
    notes = Notes()
    shown = curve.copy()
    shown["direction"] = shown["direction"].map(ARROWS)
    shown["n"] = [f"{n}{notes.mark(t) if t else ''}" for n, t in zip(curve["n"], curve["note"])]
    shown = shown.drop(columns=["note", "n_items"]).rename(columns={"s": "S"})
    write_frame(shown, "telephone_similarity",
                "The Telephone Game: S(g), mean similarity to the input at generation g "
                "(Eq. 1), with 95% bootstrap CIs over items", notes.texts, out_dir,
                digits={"S": 4, "ci_low": 4, "ci_high": 4},
                csv_frame=curve)


def _experiment_note(model: str, label: str, notes_col) -> str:
    """Why an experiment has no value: an ``n/a`` reason holds for every model alike."""
    why = next((t for t in notes_col if t), "no generation with a value")
    reason = why.split(": ", 1)[1] if why.startswith(tuple("0123456789")) and ": " in why else why
    return reason if reason.startswith("n/a") else f"{model}, {label}: {why}"


def mcd_frame(curve: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Wide MCD table: one row per (model, dataset); a column per experiment and ``MCD_avg``
    (mean of the experiments present in the row).

    Returns:
        The numeric frame, the same with formatted cells and note marks, and the notes.
    """
    notes = Notes()
    experiments = list(dict.fromkeys(
        experiment_label(c, d, b) for c, d, b in
        curve[["chain", "direction", "backbone"]].itertuples(index=False)))
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
        for chain in dict.fromkeys(curve["chain"]):  # MCD_avg per chain, then over both
            mine = [row[e] for e in experiments if e.startswith(chain + " ")
                    and not math.isnan(row[e])]
            key = f"MCD_avg {chain}"
            row[key] = float(np.mean(mine)) if mine else math.nan
            text[key] = f"{row[key]:.4f}" if mine else "n/a"
        values = [row[e] for e in experiments if not math.isnan(row[e])]
        row["MCD_avg"] = float(np.mean(values)) if values else math.nan
        text["MCD_avg"] = f"{row['MCD_avg']:.4f}" if values else "n/a"
        row["generations"] = text["generations"] = int(grp["generation"].max()) if len(grp) else 0
        rows.append(row)
        shown.append(text)
    return pd.DataFrame(rows), pd.DataFrame(shown), notes.texts


def mcd_table(curve: pd.DataFrame, out_dir) -> pd.DataFrame:
    frame, shown, notes = mcd_frame(curve)
    write_frame(shown, "telephone_mcd",
                "The Telephone Game: Mean Cumulative Drift MCD (Eq. 2) per experiment "
                "(chain, direction, backbone) and MCD_avg over the experiments; higher = less "
                "drift", notes, out_dir, csv_frame=frame)
    return frame


def sdr_frame(curve: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, dataset, chain, experiment, form) fit, then per (model, dataset,
    chain, form) the parameters averaged over directions (``direction = "average"``)."""
    rows = []
    for (model, dataset, chain), grp in curve.groupby(["model", "dataset", "chain"], sort=False):
        for form, (names, formula) in SDR_FORMS.items():
            fits = []
            for (d, b), e in grp.groupby(["direction", "backbone"], sort=False):
                fit = fit_sdr(e["generation"].to_numpy(float), e["s"].to_numpy(float), form)
                fits.append(fit)
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
            avg = average_fits(fits)
            row = {"model": model, "dataset": dataset, "chain": chain, "direction": "average",
                   "backbone": "", "form": formula, "n": avg["n_fits"],
                   "status": "ok" if avg["n_fits"] else "no fit succeeded"}
            for i, k in enumerate(names):
                row[f"p{i + 1}"] = avg[k]
            rows.append(row)
    cols = ["model", "dataset", "chain", "direction", "backbone", "form", "p1", "p1_se", "p2",
            "p2_se", "p3", "p3_se", "r2", "n", "initial", "bounds", "status"]
    return pd.DataFrame(rows).reindex(columns=cols)


def sdr_table(curve: pd.DataFrame, out_dir) -> pd.DataFrame:
    frame = sdr_frame(curve)
    notes = ["power: y = alpha * g^(-beta) + gamma (p1, p2, p3 = alpha, beta, gamma; the "
             "paper, Sec. 3.2); exp: y = a * exp(-b * g) + c (the authors' released code); "
             "scipy curve_fit with the bounds shown; 'average' rows average each parameter over "
             "the directions of the chain (the paper's Table 3); a failed fit has no numbers"]
    exact = frame[(frame["direction"] != "average") & (frame["n"] == 3) &
                  (frame["status"] == "ok")]
    if len(exact):
        notes.append(f"{len(exact)} fit(s) on 3 points: 3 parameters interpolate them exactly "
                     "(no residual, no standard errors), so the parameters are not identified; "
                     "the text->text rows get G/2 points, so G >= 10 is needed for a fit with "
                     "residuals (the paper: G = 20)")
    digits = {c: 4 for c in ("p1", "p1_se", "p2", "p2_se", "p3", "p3_se", "r2")}
    shown = frame.copy()
    shown["n"] = shown["n"].astype("Int64").astype(str)
    write_frame(shown, "telephone_sdr", "The Telephone Game: Semantic Drift Rate fits "
                "(Sec. 3.2, Table 3)", notes, out_dir, digits=digits, csv_frame=frame)
    return frame


def mgg_frame(mgg: dict[Key, pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    """Per (model, dataset, generation): accuracy per task, ``overall`` (task mean),
    ``overall_prompts``; then per (model, dataset) a ``MGG`` row (generation ``all``)."""
    notes = Notes()
    rows = []
    for (model, dataset), df in mgg.items():
        if df.empty:
            continue
        scored = df[df["status"] == "ok"]
        gens = sorted(df["generation"].unique())
        overall = []
        for g in gens:
            at = df[df["generation"] == g]
            ok = scored[scored["generation"] == g]
            row = {"model": model, "dataset": dataset, "generation": str(g)}
            acc = task_accuracies(ok["tag"].tolist(), (ok["correct"] == 1).tolist()) \
                if len(ok) else {"overall": math.nan, "overall_prompts": math.nan}
            for t in TASKS:
                row[t] = acc.get(t, math.nan)
            row["overall"], row["overall_prompts"] = acc["overall"], acc["overall_prompts"]
            row["n"] = f"{len(ok)}/{len(at)}"
            why = _why(at)
            if why:
                row["n"] += notes.mark(f"{model}, generation {g}: {why}")
            overall.append(acc["overall"])
            rows.append(row)
        values = [v for v in overall if not math.isnan(v)]
        rows.append({"model": model, "dataset": dataset, "generation": "MGG",
                     "overall": float(np.mean(values)) if values else math.nan,
                     "n": f"{len(values)} generations"})
    cols = ["model", "dataset", "generation", *TASKS, "overall", "overall_prompts", "n"]
    return pd.DataFrame(rows).reindex(columns=cols), notes.texts


def mgg_table(mgg: dict[Key, pd.DataFrame], out_dir, why_none: str = "") -> pd.DataFrame:
    frame, notes = mgg_frame(mgg)
    if frame.empty:
        notes = [why_none or "n/a: no GenEval prompt set (type: geneval) is configured"]
    write_frame(frame, "telephone_mgg", "The Telephone Game: Multi-Generation GenEval accuracy per "
                "task and generation; overall = mean of the task accuracies (GenEval), "
                "overall_prompts = mean over prompts; MGG = mean overall over generations "
                "(Sec. 3.3)", notes, out_dir,
                digits={c: 3 for c in (*TASKS, "overall", "overall_prompts")})
    return frame
