"""VTBench's findings for the report's first page and its headline figure, read from the run's
tables (:class:`roundtrip.report.findings.RunResults`).

The headline comparison is the paper's Table 1, ImageNet setting (VTBench Sec. 4.1: every image
center-cropped and resized to each model's input size) where the run has it, else the first
setting that ran (:data:`SETTINGS`: high resolution, varying resolution, a fixed size, Table 2):
PSNR in the released evaluator's convention (one MSE over the set, the originals' data range),
with every model's value, then SSIM; the text comparison is Table 3's CER (App. F, Eq. 3: the
OCR of a reconstruction against the OCR of its original), on the sets whose reference the OCR
engine can read (:mod:`roundtrip.evals.vtbench.readability`); the others are named with the
reason. Models that reconstruct every item exactly (PSNR = inf, e.g. ``identity``) are
references, not contenders: they are left out of every best/worst and the sentence names them.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pandas as pd

from roundtrip.evals.vtbench.readability import READABILITY_TABLE, VIEW_OF_METRIC, VIEWS
from roundtrip.report import style
from roundtrip.report.findings import (Ranking, RunResults, number, paper_datasets,
                                       per_item_metric, rank_table, with_ci)

#: The Table 1 ImageNet-setting table (protocol ``model_size``) and the other tables read.
MODEL_SIZE_TABLE = "reconstruction_model_size"
TEXT_TABLE = "text_preservation"
#: The reconstruction tables (tables.reconstruction_tables) in the order the first page reads
#: them, the paper's headline setting first: table -> (where, the paper's name of it).
SETTINGS = {
    MODEL_SIZE_TABLE: ("At the model's input size", "VTBench Table 1's ImageNet setting"),
    "reconstruction_1024": ("At 1024 x 1024", "VTBench Table 1's high-resolution setting"),
    "reconstruction_native": ("At native size", "VTBench Table 1's varying-resolution setting"),
    "reconstruction_fixed": ("At the set's fixed size", "datasets.<name>.size"),
    "reconstruction_detail": ("On the detail-preservation set", "VTBench Table 2"),
}
#: Table 1's settings, a fixed size and Table 2.
RECONSTRUCTION_TABLES = tuple(SETTINGS)
CARD_TABLE = "model_card"
#: The per-item image-quality file of a (model, dataset): its ``psnr`` column is the per-item
#: PSNR (dB, data range 1) behind the tables' "PSNR (per-item mean)" column.
ITEM_FILE = "image_quality.csv"
ITEM_PATTERN = "results/metrics/{model}/{dataset}/" + ITEM_FILE


def datasets_with(table: pd.DataFrame | None, metric: str) -> list[str]:
    """Datasets (column prefixes) of ``table`` that have a ``{dataset}.{metric}`` column, in the
    table's column order (the config's dataset order)."""
    if table is None:
        return []
    suffix = f".{metric}"
    return [c[: -len(suffix)] for c in table.columns if c.endswith(suffix)]


def values(table: pd.DataFrame, column: str) -> dict[str, float]:
    """``model -> value`` of one table column, NaN (not run, not computed) left out."""
    out = {}
    for model, v in zip(table["model"].astype(str), pd.to_numeric(table[column],
                                                                  errors="coerce")):
        if not math.isnan(v):
            out[model] = float(v)
    return out


def exact_models(table: pd.DataFrame | None, datasets: list[str] | None = None) -> list[str]:
    """Models whose PSNR (VTBench eval.) is ``+inf`` on every one of ``datasets`` (default: every
    dataset of the table) that they ran on: they reconstructed every item exactly."""
    if table is None:
        return []
    sets = datasets if datasets is not None else datasets_with(table, "psnr_vtbench")
    seen: dict[str, list[float]] = {}
    for d in sets:
        for model, v in values(table, f"{d}.psnr_vtbench").items():
            seen.setdefault(model, []).append(v)
    return [m for m, vs in seen.items() if vs and all(v == math.inf for v in vs)]


def headline_setting(tables) -> str | None:
    """The reconstruction table the first page reads among ``tables`` (names): the first of
    :data:`SETTINGS` there, or None."""
    return next((name for name in SETTINGS if name in tables), None)


def headline_table(results) -> tuple[str | None, pd.DataFrame | None]:
    """``(name, frame)`` of the first reconstruction table of :data:`SETTINGS` that the run
    wrote with a PSNR (VTBench eval.) column; ``(None, None)`` where there is none."""
    for name in SETTINGS:
        table = results.table(name)
        if datasets_with(table, "psnr_vtbench"):
            return name, table
    return None, None


def cell_notes(table: pd.DataFrame, model: str, column: str) -> list[str]:
    """The footnotes of one cell (``{dataset}.{metric}``) of a table's CSV, from the row's
    ``notes`` column (the table engine's ``"{column}: note | ..."``)."""
    if "notes" not in table.columns:
        return []
    row = table[table["model"].astype(str) == model]
    text = row["notes"].iloc[0] if len(row) else ""
    if not isinstance(text, str):
        return []
    head = f"{column}: "
    return [n[len(head):] for n in text.split(" | ") if n.startswith(head)]


def _no_value(table: pd.DataFrame, column: str) -> str:
    """``"; a has no value there (its footnote)"`` for the table's models without a value in
    ``column`` (not run, unsupported, not scored), or ``""``."""
    have = values(table, column)
    missing = [m for m in table["model"].astype(str) if m not in have]
    if not missing:
        return ""
    parts = []
    for m in missing:
        note = next(iter(cell_notes(table, m, column)), "")
        parts.append(f"{m} ({note})" if note else m)
    verb = "has" if len(missing) == 1 else "have"
    return f"; {_names(parts)} {verb} no value there"


def _names(models: list[str]) -> str:
    if len(models) <= 1:
        return "".join(models)
    return ", ".join(models[:-1]) + " and " + models[-1]


def _left_out(models: list[str]) -> str:
    if not models:
        return ""
    verb = "is" if len(models) == 1 else "are"
    return (f"; {_names(models)} {verb} left out (PSNR = inf: every item reconstructed "
            f"exactly)")


def psnr_order(table: pd.DataFrame, dataset: str) -> list[tuple[str, float]]:
    """``(model, PSNR (VTBench eval.))`` best first, finite values only (VTBench Sec. 4.1,
    Table 1; dB)."""
    vals = values(table, f"{dataset}.psnr_vtbench")
    finite = [(m, v) for m, v in vals.items() if math.isfinite(v)]
    return sorted(finite, key=lambda mv: (-mv[1], mv[0]))


def per_item_psnr(files: list[Path], dataset: str) -> pd.DataFrame:
    """The per-item PSNR (dB) of ``dataset`` from the declared ``image_quality.csv`` files
    (``results/metrics/{model}/{dataset}/image_quality.csv``, rows with status ``ok``): one row
    per (model, item) with columns ``model``, ``item_id``, ``value``."""
    return per_item_metric(files, ITEM_FILE, "psnr", [dataset]).drop(columns="dataset")


def paired_sentence(results, dataset: str, best: str, runner: str) -> str:
    """The best against the runner-up on per-item PSNR (dB): mean difference over the items
    both reconstructed, with its paired-bootstrap CI (items where either PSNR is infinite have
    no finite difference and are dropped)."""
    items = per_item_psnr(results.files, dataset)
    a = items[items["model"] == best].set_index("item_id")["value"]
    b = items[items["model"] == runner].set_index("item_id")["value"]
    if a.empty or b.empty:
        missing = [m for m, s in ((best, a), (runner, b)) if s.empty]
        pattern = ITEM_PATTERN.replace("{dataset}", dataset)
        return (f"The paired comparison of {best} and the runner-up {runner} could not be "
                f"computed: no per-item PSNR ({pattern}) for {_names(missing)}.")
    shared = a.index.intersection(b.index)
    diff = results.paired(a.loc[shared].to_numpy(), b.loc[shared].to_numpy())
    if diff.ci_high < 0:  # the pooled PSNR and the per-item mean order the two differently
        return (f"On per-item PSNR (dB), however, the runner-up {runner} is ahead of {best} by "
                f"{number(-diff.difference)} [{number(-diff.ci_high)}, {number(-diff.ci_low)}] "
                f"(paired bootstrap over {diff.n} shared items): the set-level and per-item "
                f"conventions rank the two differently.")
    ranking = Ranking("per-item PSNR", [(best, results.summary(a.to_numpy())),
                                        (runner, results.summary(b.to_numpy()))],
                      diff, len(shared))
    return "On per-item PSNR (dB), " + ranking.sentences(2)[1]


def psnr_sentences(results) -> list[str]:
    """Best and worst model on PSNR (VTBench eval.) with every other model's value, in the
    first setting the run has (:func:`headline_table`: Table 1's ImageNet setting where it
    ran), and the best against the runner-up, paired over per-item PSNR."""
    name, table = headline_table(results)
    if table is None:
        return ["PSNR could not be computed: the run wrote no reconstruction table with a PSNR "
                "column (reconstruction_model_size, _1024, _native, _fixed or _detail: no "
                "image set)."]
    d = datasets_with(table, "psnr_vtbench")[0]
    order = psnr_order(table, d)
    exact = exact_models(table, [d])
    phrase, paper = SETTINGS[name]
    where = f"{phrase} ({d}, {paper})"
    absent = _no_value(table, f"{d}.psnr_vtbench")
    if not order:
        return [f"{where} no model has a finite PSNR (VTBench eval.){_left_out(exact)}"
                f"{absent}."]
    (best, b), (worst, w) = order[0], order[-1]
    if len(order) == 1:
        return [f"{where} {best} is the only model with a finite PSNR (VTBench eval.): "
                f"{number(b)} dB{_left_out(exact)}{absent}; there is no runner-up to compare "
                f"with."]
    middle = ", ".join(f"{m} {number(v)} dB" for m, v in order[1:-1])
    others = f" (the others: {middle})" if middle else ""
    first = (f"{where}, {best} has the highest PSNR (VTBench eval.), {number(b)} dB, and "
             f"{worst} the lowest, {number(w)} dB, of {len(order)} models{others}"
             f"{_left_out(exact)}{absent}.")
    return [first, paired_sentence(results, d, best, order[1][0])]


def ssim_sentence(results) -> str | None:
    """Best and worst model on SSIM (VTBench eval.) in the setting of :func:`psnr_sentences`,
    with the 95 % CIs of the table (Table 1's second metric), and whether PSNR names the same
    two."""
    _, table = headline_table(results)
    sets = datasets_with(table, "ssim_vtbench")
    if not sets:
        return None
    d = sets[0]
    exact = exact_models(table, [d])
    rows = table[~table["model"].astype(str).isin(exact)]
    ranked = [r for r in rank_table(rows, "model", f"{d}.ssim_vtbench", True)
              if not math.isnan(r[1].mean)]
    if len(ranked) < 2:
        return None
    (best, b), (worst, w) = ranked[0], ranked[-1]
    psnr = psnr_order(table, d)
    same = bool(psnr) and psnr[0][0] == best and psnr[-1][0] == worst
    tail = "the same two as PSNR" if same else "a different order from PSNR"
    return (f"On SSIM (VTBench eval.) on {d}, {best} is highest ({with_ci(b, 4)}) and {worst} "
            f"lowest ({with_ci(w, 4)}), {tail}.")


def cer_columns(table: pd.DataFrame | None) -> list[str]:
    """The text sets with a CER column (every text set has roundtrip's per-item ``{set}.cer``;
    the finding reads :func:`cer_metric`), in the table's order; the multilingual block has
    one per language set."""
    return datasets_with(table, "cer")


def cer_metric(table: pd.DataFrame, dataset: str) -> str:
    """The CER column a finding reads for ``dataset``: ``cer_vtbench`` (the released
    evaluator's, the headline) where the table has it with a value, else ``cer``."""
    col = f"{dataset}.cer_vtbench"
    if col in table.columns and table[col].notna().any():
        return col
    return f"{dataset}.cer"


def cer_extremes(table: pd.DataFrame, exact: list[str], sets: list[str] | None = None
                 ) -> dict[str, tuple[list[str], float, list[str], float]]:
    """Per text set (of ``sets``, default every :func:`cer_columns` set) with at least two
    models compared: ``(lowest models, lowest CER, highest models, highest CER)`` (ties all
    listed), the exact models left out."""
    out = {}
    for s in cer_columns(table) if sets is None else sets:
        vals = {m: v for m, v in values(table, cer_metric(table, s)).items()
                if m not in exact and math.isfinite(v)}
        if len(vals) < 2:
            continue
        lo, hi = min(vals.values()), max(vals.values())
        out[s] = ([m for m, v in vals.items() if v == lo], lo,
                  [m for m, v in vals.items() if v == hi], hi)
    return out


def unreadable_sets(results, table: pd.DataFrame) -> dict[str, dict]:
    """Text set -> its :data:`~roundtrip.evals.vtbench.readability.READABILITY_TABLE` row (a
    dict) where the reference of the CER the findings read (:func:`cer_metric`: the released
    view for ``cer_vtbench``, the originals as built for ``cer``) is unreadable by the engine
    of ``text_preservation``; empty where the run wrote no readability table."""
    frame = results.table(READABILITY_TABLE)
    if frame is None or frame.empty or "readable" not in frame.columns:
        return {}
    bad = frame[(frame["readable"].astype(str) == "no")
                & frame["tables"].fillna("").astype(str).str.contains(TEXT_TABLE)]
    out = {}
    for s in cer_columns(table):
        view = VIEW_OF_METRIC[cer_metric(table, s).rpartition(".")[2]]
        hit = bad[(bad["dataset"].astype(str) == s) & (bad["view"].astype(str) == view)]
        if len(hit):
            out[s] = hit.iloc[0].to_dict()
    return out


def _range(vals: list[float], digits: int = 4) -> str:
    lo, hi = number(min(vals), digits), number(max(vals), digits)
    return lo if lo == hi else f"{lo} to {hi}"


def readability_sentence(flagged: dict[str, dict]) -> str:
    """The sentence naming the text sets left out of the CER comparison and why: per engine
    and view, the CER of its reading of their originals against the ground truth, or the share
    of empty readings, each with its threshold (``ocr.readability``); ``""`` for none."""
    if not flagged:
        return ""
    groups: dict[tuple, list[str]] = {}
    for s, row in flagged.items():
        measure = "cer" if "cer" in str(row.get("over", "")).split("+") else "empty"
        groups.setdefault((str(row["engine"]), str(row["view"]), measure), []).append(s)
    parts = []
    for (engine, view, measure), sets in groups.items():
        rows = [flagged[s] for s in sets]
        originals = ("their originals" if len(groups) == 1
                     else f"the originals of {_names(sets)}")
        if measure == "cer":
            parts.append(f"{engine} reads {originals} at {VIEWS[view]} with a CER of "
                         f"{_range([float(r['cer_gt']) for r in rows])} against the ground "
                         f"truth (above ocr.readability.max_cer {float(rows[0]['max_cer']):g})")
        else:
            parts.append(f"{engine} reads no text in a share of "
                         f"{_range([float(r['empty_share']) for r in rows], 2)} of {originals} "
                         f"at {VIEWS[view]} (above ocr.readability.max_empty "
                         f"{float(rows[0]['max_empty']):g})")
    whose = "its" if len(flagged) == 1 else "their"
    return (f"The CER of {_names(list(flagged))} is left out of this comparison, as the OCR "
            f"cannot read {whose} reference: {'; '.join(parts)}, so those cells compare one "
            f"unreadable text with another (table {READABILITY_TABLE}).")


#: What the CER sentences compare, named once.
_CER_WHAT = ("OCR of each reconstruction against the OCR of its original, the released "
             "evaluator's where a set has it, lower is better; VTBench Table 3")


def _most(counts: Counter) -> tuple[list[str], int]:
    top = max(counts.values())
    return [m for m, c in counts.items() if c == top], top


def _spread(ext: dict, models: list[str], k: int) -> str:
    """The CER values (``k``: 0 lowest, 2 highest) of the sets where ``models`` hold that
    place, as a value or a range."""
    return _range([ext[s][k + 1] for s in ext if set(models) & set(ext[s][k])])


def _sets(n: int) -> str:
    return f"{n} text set{'' if n == 1 else 's'}"


def _uncompared(table: pd.DataFrame, exact: list[str], sets: list[str]) -> str:
    """The CER sentence where no set has two models compared: what the table holds, each
    model's CER (range over the sets) and on how many sets, the exact models named apart."""
    held: dict[str, list[float]] = {}
    for s in sets:
        for m, v in values(table, cer_metric(table, s)).items():
            if math.isfinite(v):
                held.setdefault(m, []).append(v)
    if not held:
        return f"CER was not compared: no model has a CER on the {_sets(len(sets))}."
    compared = [m for m in held if m not in exact]
    refs = [m for m in held if m in exact]

    def cer_of(m: str) -> str:
        return f"CER {_range(held[m])} on {_sets(len(held[m]))}"

    own = (f"({cer_of(refs[0])})" if len(refs) == 1
           else "(" + "; ".join(f"{m}: {cer_of(m)}" for m in refs) + ")")
    if not compared:
        return (f"CER was not compared over {_sets(len(sets))}: the only models with a CER, "
                f"{_names(refs)}, reconstruct every item exactly (PSNR = inf) {own}.")
    if len(compared) == 1:
        lead = (f"On CER ({_CER_WHAT}), {compared[0]} is the only model compared: "
                f"{cer_of(compared[0])}")
    else:
        each = "; ".join(f"{m}: {cer_of(m)}" for m in compared)
        lead = (f"On CER ({_CER_WHAT}), no text set has two models compared, so there is no "
                f"ranking ({each})")
    verb = "is" if len(refs) == 1 else "are"
    return lead + (f"; {_names(refs)}, exact (PSNR = inf), {verb} left out {own}"
                   if refs else "") + "."


def cer_sentence(results) -> str:
    """Which model has the lowest and which the highest CER on the most text sets (VTBench
    Table 3, App. F Eq. 3; a tie counts for every tied model), with its CER on those sets, on
    the sets whose reference is readable (:func:`unreadable_sets`; a sentence names the others
    and why); where no set has two models compared, what the table holds
    (:func:`_uncompared`)."""
    table = results.table(TEXT_TABLE)
    if table is None or not cer_columns(table):
        return "CER was not computed: the run has no text set (table text_preservation)."
    exact = exact_models(table)
    flagged = unreadable_sets(results, table)
    sets = [s for s in cer_columns(table) if s not in flagged]
    left = readability_sentence(flagged)
    tail = f" {left}" if left else ""
    if not sets:
        return (f"CER was not compared: the reference of every one of the "
                f"{_sets(len(flagged))} is unreadable.{tail}")
    ext = cer_extremes(table, exact, sets)
    if not ext:
        return _uncompared(table, exact, sets) + tail
    low, high = Counter(), Counter()
    for lows, _, highs, _ in ext.values():
        low.update(lows)
        high.update(highs)
    (best, nb), (worst, nw) = _most(low), _most(high)
    ties = any(len(e[0]) > 1 or len(e[2]) > 1 for e in ext.values())
    notes = ([f"{_names(exact)} left out as exact"] * bool(exact)
             + ["a tie counts for every tied model"] * ties)
    return (f"On CER over {_sets(len(ext))} ({_CER_WHAT}), {_names(best)} "
            f"{'is' if len(best) == 1 else 'are'} lowest on {nb} (CER {_spread(ext, best, 0)}) "
            f"and {_names(worst)} highest on {nw} (CER {_spread(ext, worst, 2)})"
            f"{'; ' + '; '.join(notes) if notes else ''}.{tail}")


def findings(results) -> list[str]:
    """VTBench's sentences: PSNR best/worst (every model's value) in the first setting that
    ran, the paired best vs runner-up, SSIM best/worst, and CER on the text sets with a
    readable reference (2 to 4 sentences)."""
    if all(results.table(name) is None for name in (*RECONSTRUCTION_TABLES, TEXT_TABLE)):
        return ["VTBench reconstructed nothing: the config has no image or text set "
                "(the OCR of the originals it runs serves the other evaluations)."]
    out = psnr_sentences(results)
    ssim = ssim_sentence(results)
    if ssim:
        out.append(ssim)
    return [*out, cer_sentence(results)][:4]


# -- the headline figure: rate-distortion --------------------------------------------------------
#: Marker shapes of the text sets in the CER panel, in table order.
SET_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*")
AXIS_RATIO = "compression ratio (latent / input elements)"
#: Horizontal step (a factor, on the log axis) between the text sets' markers at one ratio.
DODGE = 1.05


def ratios(results) -> dict[str, float]:
    """``model -> compression ratio`` at 256 x 256 (latent elements / input elements, model
    card ``ratio_256``, MediBench Table 6's definition); codecs without a fixed ratio
    (variable-length bitstreams: an empty cell) left out."""
    card = results.table(CARD_TABLE)
    if card is None or "ratio_256" not in card.columns:
        return {}
    return {m: v for m, v in values(card, "ratio_256").items() if v > 0 and math.isfinite(v)}


def psnr_points(results, ratio: dict[str, float]) -> tuple[str | None, dict[str, float],
                                                            list[str]]:
    """``(dataset, model -> PSNR (VTBench eval.) in dB, models with PSNR = inf)`` of the first
    set of the first setting that ran (:func:`headline_table`), for the models with a
    ratio."""
    _, table = headline_table(results)
    sets = datasets_with(table, "psnr_vtbench")
    if not sets:
        return None, {}, []
    vals = {m: v for m, v in values(table, f"{sets[0]}.psnr_vtbench").items() if m in ratio}
    return (sets[0], {m: v for m, v in vals.items() if math.isfinite(v)},
            [m for m, v in vals.items() if not math.isfinite(v)])


def cer_points(results, ratio: dict[str, float]) -> dict[str, dict[str, float]]:
    """``text set -> model -> CER`` for the models with a ratio (sets without one, and sets
    whose reference is unreadable, :func:`unreadable_sets`, left out)."""
    table = results.table(TEXT_TABLE)
    flagged = unreadable_sets(results, table) if table is not None else {}
    out = {}
    for s in cer_columns(table):
        if s in flagged:
            continue
        vals = {m: v for m, v in values(table, cer_metric(table, s)).items()
                if m in ratio and math.isfinite(v)}
        if vals:
            out[s] = vals
    return out


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def ratio_label(r: float) -> str:
    """A ratio as the fraction it is (``1/24``) where its inverse is a whole number, else 3
    significant digits."""
    inv = 1 / r
    return f"1/{round(inv)}" if r < 1 and abs(inv - round(inv)) < 1e-6 else f"{r:.3g}"


def _ratio_axis(ax, shown: list[float]) -> None:
    """Log x axis ticked at the ratios drawn (labelled as fractions); a tick closer to the
    previous one than a tenth of the axis (in log units) is dropped, so labels do not collide."""
    from matplotlib.ticker import NullLocator

    lo, hi = min(shown) / 1.5, max(shown) * 1.5
    gap = 0.1 * math.log(hi / lo)
    ticks = []
    for r in sorted(set(shown)):
        if not ticks or math.log(r / ticks[-1]) > gap:
            ticks.append(r)
    ax.set_xscale("log")
    ax.set_xticks(ticks, [ratio_label(r) for r in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(lo, hi)
    ax.set_xlabel(AXIS_RATIO)


def headline_figure(results, path) -> str | None:
    """Rate against distortion: PSNR (VTBench eval., Table 1: the first setting that ran,
    :func:`headline_table`, the model-size protocol where it ran) and CER on each text set with
    a readable reference (Table 3) against the compression ratio at 256 x 256 (model card), two
    panels, one colour per model (:func:`roundtrip.report.style.colours` of the run's models),
    one marker shape per text set. Returns the caption, or None where no model has both a
    fixed ratio and a finite PSNR or a CER."""
    ratio = ratios(results)
    setting = headline_table(results)[0]
    dataset, psnr, inf_models = psnr_points(results, ratio)
    cer = cer_points(results, ratio)
    if not psnr and not cer:
        return None
    colours = style.colours([*results.models, *ratio])
    fig, axes = style.figure(1, 2, height_in=3.0)
    left, right = axes[0]
    if psnr:
        for m, v in psnr.items():
            left.scatter(ratio[m], v, color=colours[m], s=30, zorder=3)
        _ratio_axis(left, [ratio[m] for m in psnr])
        left.set(ylabel="PSNR (VTBench eval.), dB",
                 title=f"{_PANEL_TITLES[setting]} ({dataset})")
    else:
        _empty(left, "no image set with a finite PSNR")
    if cer:
        for k, ((s, vals), marker) in enumerate(zip(cer.items(), SET_MARKERS * 4)):
            dodge = DODGE ** (k - (len(cer) - 1) / 2)  # sets side by side at one ratio
            for m, v in vals.items():
                right.scatter(ratio[m] * dodge, v, color=colours[m], marker=marker, s=24,
                              alpha=0.85, zorder=3)
            right.scatter([], [], color="#555555", marker=marker, s=24, label=s)
        _ratio_axis(right, [ratio[m] for vals in cer.values() for m in vals])
        right.set(ylabel="CER (lower is better)", title="Text preservation (marker: text set)")
        right.legend(loc="best", frameon=False, ncol=2 if len(cer) > 4 else 1)
    else:
        _empty(right, "no text set in this run")
    # one model legend for both panels: every model drawn in either
    drawn = [m for m in colours if m in psnr or any(m in v for v in cer.values())]
    handles = [left.scatter([], [], color=colours[m], s=30, label=m) for m in drawn]
    left.legend(handles=handles, loc="best", frameon=False, ncol=2)
    style.save(fig, path)
    table = results.table(TEXT_TABLE)
    flagged = list(unreadable_sets(results, table)) if table is not None else []
    return _caption(results, ratio, dataset, inf_models, setting, flagged)


#: The PSNR panel's title per setting (:data:`SETTINGS`).
_PANEL_TITLES = {MODEL_SIZE_TABLE: "Reconstruction at model size",
                 "reconstruction_1024": "Reconstruction at 1024 x 1024",
                 "reconstruction_native": "Reconstruction at native size",
                 "reconstruction_fixed": "Reconstruction at a fixed size",
                 "reconstruction_detail": "Detail preservation"}
#: Where the caption says the PSNR was measured, per setting.
_CAPTION_WHERE = {MODEL_SIZE_TABLE: "at each model's input size",
                  "reconstruction_1024": "at 1024 x 1024",
                  "reconstruction_native": "at native size",
                  "reconstruction_fixed": "at the set's fixed size",
                  "reconstruction_detail": "on the detail-preservation set"}


def _caption(results, ratio: dict, dataset: str | None, inf_models: list[str],
             setting: str | None = MODEL_SIZE_TABLE, flagged: list[str] = ()) -> str:
    card = results.table(CARD_TABLE)
    no_ratio = [m for m in card["model"].astype(str) if m not in ratio] if card is not None else []
    where = f" ({dataset})" if dataset else ""
    measured = _CAPTION_WHERE.get(setting, _CAPTION_WHERE[MODEL_SIZE_TABLE])
    parts = [f"Rate against distortion (VTBench Tables 1 and 3). Left: PSNR in the released "
             f"evaluator's convention {measured}{where}. Right: CER of the OCR of "
             "each reconstruction against the OCR of its original, one marker shape per text "
             "set (the sets of one model drawn side by side around its ratio). x: compression "
             "ratio at 256 x 256 (latent elements / input elements, model card), log scale; one "
             "colour per model."]
    if no_ratio:
        parts.append(f"Left out: {_names(no_ratio)} (no fixed compression ratio: a "
                     "variable-length bitstream).")
    if inf_models:
        parts.append(f"Not in the PSNR panel: {_names(inf_models)} (PSNR = inf, exact "
                     "reconstruction).")
    if flagged:
        parts.append(f"Not in the CER panel: {_names(list(flagged))} (the OCR engine cannot "
                     f"read their originals in the view the CER scores against: table "
                     f"{READABILITY_TABLE}).")
    return " ".join(parts)


#: Table 1's metrics as the published cells name them, by our column label.
_TABLE1_COLUMNS = {"PSNR (VTBench eval.)": ("PSNR", 4), "SSIM (VTBench eval.)": ("SSIM", 4),
                   "LPIPS (VTBench eval.)": ("LPIPS", 4), "FID": ("FID", 4)}


def table1_cells(results: RunResults) -> pd.DataFrame | None:
    """The run's rows of VTBench Table 1 in the published cells' layout
    (:mod:`roundtrip.tables.published`), for the settings whose set is marked as the paper's
    data (``datasets.<name>.paper_data``, e.g. ImageNet val at the model's size): PSNR, SSIM
    (the released evaluator's convention, as Table 1), LPIPS and FID, to four decimals as
    printed. None where no setting ran on the paper's data."""
    table = results.table("vtbench_table1")
    mine = paper_datasets(results)
    if table is None or table.empty or not mine:
        return None
    rows = []
    for column in table.columns:
        head, sep, label = column.rpartition(": ")
        setting, _, dataset = head.partition(" (")
        dataset = dataset.rstrip(")")
        if not sep or dataset not in mine or label not in _TABLE1_COLUMNS:
            continue
        name, digits = _TABLE1_COLUMNS[label]
        for model, value in zip(table["model"], pd.to_numeric(table[column], errors="coerce")):
            if pd.notna(value):
                rows.append({"table": "Table 1", "row_group": "This run", "row": str(model),
                             "column_group": setting, "column": name,
                             "printed": number(float(value), digits)})
    return pd.DataFrame(rows) if rows else None
