"""CHD and CMMS's findings for the report's first page and its headline figure, read from the
run's tables (:class:`roundtrip.report.findings.RunResults`).

The CHD paper's headline check of the metrics themselves is Figure 2: CHD between a clean set
and its degraded copies rises monotonically with the degradation level, for every kind of
degradation (here with Spearman's rho per kind, table ``token_sensitivity_spearman``), and CMMS,
a per-image naturalness score (Sec. 4.2, target exp(-20 p) for a share p of corrupted tokens),
falls. Then the models: CHD (Sec. 4.1, Eq. 14; lower is closer to the originals' code
histograms, set level) and CMMS (higher is more natural, per item) on the first scored set
(table ``token_metrics``). A model with CHD = 0 reproduces the reference tokens exactly
(``identity``): a reference, not a contender, left out of the rankings and named.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from roundtrip.report import style
from roundtrip.report.findings import (number, per_item_metric, rank, rank_table,
                                       table_summary, with_ci)

SPEARMAN_TABLE = "token_sensitivity_spearman"
CURVES_TABLE = "token_sensitivity"
METRICS_TABLE = "token_metrics"
#: The per-item CMMS file of a (model, dataset).
ITEM_FILE = "tokens.csv"
ITEM_PATTERN = "results/metrics/{model}/{dataset}/" + ITEM_FILE
#: Columns of the Spearman table (as the rule writes them).
RHO_CHD, RHO_CMMS, MONOTONE = ("Spearman(level, CHD)", "Spearman(level, CMMS)",
                               "CHD strictly increasing")


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _truth(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes")


def spearman_sentence(results) -> str:
    """Spearman's rho of CHD and of mean CMMS with the degradation level, per kind of
    degradation (table ``token_sensitivity_spearman``), and whether CHD rises as the CHD
    paper's Figure 2 shows and CMMS, a quality score (Sec. 4.2), falls."""
    t = results.table(SPEARMAN_TABLE)
    if t is None or t.empty or not {"degradation", RHO_CHD, RHO_CMMS} <= set(t.columns):
        return ("The sensitivity to degradation (CHD paper, Figure 2) was not computed: no "
                f"{SPEARMAN_TABLE} table (metrics.tokens.sensitivity.dataset is not set).")
    kinds = t["degradation"].astype(str).tolist()
    chd = pd.to_numeric(t[RHO_CHD], errors="coerce").tolist()
    cmms = pd.to_numeric(t[RHO_CMMS], errors="coerce").tolist()
    levels = _levels(results)

    def listing(rhos):
        return _names([f"{number(r, 3)} ({k})" for k, r in zip(kinds, rhos)])

    monotone = [k for k, v in zip(kinds, t.get(MONOTONE, [None] * len(kinds))) if _truth(v)]
    up = [k for k, r in zip(kinds, chd) if r <= 0]
    down = [k for k, r in zip(kinds, cmms) if r >= 0]
    verdict = (f"CHD does not rise with {_names(up)}, unlike the paper's Figure 2" if up else
               "CHD rises with every kind of degradation, as in the paper's Figure 2")
    verdict += (f", and CMMS does not fall with {_names(down)}" if down else
                ", and CMMS falls with every kind")
    undefined = [k for k, a, b in zip(kinds, chd, cmms) if math.isnan(a) or math.isnan(b)]
    if undefined:  # a constant series has no rank correlation
        verdict += f" (rho undefined for {_names(undefined)})"
    strict = (f", strictly increasing for {len(monotone)} of {len(kinds)} kinds"
              if MONOTONE in t.columns else "")
    return (f"Against the degradation level{levels}, CHD has Spearman's rho {listing(chd)}"
            f"{strict}, and mean CMMS {listing(cmms)}: {verdict}.")


def _levels(results) -> str:
    t = results.table(CURVES_TABLE)
    if t is None or "level" not in t.columns or t.empty:
        return ""
    lv = pd.to_numeric(t["level"], errors="coerce")
    lv = lv[lv > 0]
    return f" ({int(lv.min())}-{int(lv.max())})" if len(lv) else ""


def main_set(table: pd.DataFrame | None) -> str | None:
    """The first scored set of ``token_metrics`` (``metrics.tokens.datasets``' order)."""
    if table is None:
        return None
    sets = [c[: -len(".chd")] for c in table.columns if c.endswith(".chd")]
    return sets[0] if sets else None


def _column(table: pd.DataFrame, column: str) -> dict[str, float]:
    if column not in table.columns:
        return {}
    vals = pd.to_numeric(table[column], errors="coerce")
    return {m: float(v) for m, v in zip(table["model"].astype(str), vals) if not math.isnan(v)}


def exact_models(table: pd.DataFrame, dataset: str) -> list[str]:
    """Models with CHD exactly 0 on ``dataset``: their reconstructions have the originals' code
    histograms (Sec. 4.1)."""
    return [m for m, v in _column(table, f"{dataset}.chd").items() if v == 0]


def chd_sentence(results) -> str | None:
    """Lowest and highest CHD on the first scored set (set level, no CI; Sec. 4.1, Eq. 14), the
    exact models left out, and the originals' CMMS (with its CI) for scale."""
    t = results.table(METRICS_TABLE)
    d = main_set(t)
    if d is None:
        return None
    exact = exact_models(t, d)
    chd = {m: v for m, v in _column(t, f"{d}.chd").items() if m not in exact and math.isfinite(v)}
    head = f"On {d} (the first scored set)"
    if exact:
        one = len(exact) == 1
        head += (f", {_names(exact)} {'reproduces' if one else 'reproduce'} the originals' code "
                 f"histograms exactly (CHD 0) and {'is' if one else 'are'} left out")
    ref = list(_column(t, f"{d}.cmms_reference"))
    tail = ""
    if ref:  # the originals' CMMS: the same items for every model that ran on the set
        row = t[t["model"].astype(str) == ref[0]].iloc[0]
        originals = table_summary(row, f"{d}.cmms_reference")
        tail = f"; the originals score CMMS {with_ci(originals, 3)}"
    if len(chd) < 2:
        only = f": {_names(list(chd))} alone has a CHD" if chd else ": no other model has a CHD"
        return f"{head}{only}{tail}."
    order = sorted(chd.items(), key=lambda mv: (mv[1], mv[0]))
    (best, b), (worst, w) = order[0], order[-1]
    return (f"{head}; {best} has the lowest CHD ({number(b, 4)}) and {worst} the highest "
            f"({number(w, 4)}) of {len(order)} models{tail}.")


def per_item_cmms(files: list[Path], dataset: str, leave_out: list[str]) -> pd.DataFrame:
    """Per-item CMMS of ``dataset`` from the declared ``tokens.csv`` files (rows with status
    ``ok``), ``leave_out`` models dropped: columns ``model``, ``item_id``, ``value``."""
    return per_item_metric(files, ITEM_FILE, "cmms", [dataset], leave_out).drop(
        columns="dataset")


def cmms_sentences(results) -> list[str]:
    """Highest and lowest CMMS on the first scored set with 95 % CIs, and the highest against
    the runner-up paired over the items (per-item ``tokens.csv``); from the table alone (no
    paired comparison, said so) where the per-item files were not given."""
    t = results.table(METRICS_TABLE)
    d = main_set(t)
    if d is None or f"{d}.cmms" not in t.columns:
        return []
    exact = exact_models(t, d)
    metric = "CMMS (higher is more natural)"
    items = per_item_cmms(results.files, d, exact)
    if items["model"].nunique() >= 2:
        return rank(results, items, metric, higher_is_better=True).sentences(3, f"on {d}")
    rows = t[~t["model"].astype(str).isin(exact)]
    ranked = [r for r in rank_table(rows, "model", f"{d}.cmms", True)
              if not math.isnan(r[1].mean)]
    if len(ranked) < 2:
        return []
    (best, b), (worst, w) = ranked[0], ranked[-1]
    ci = [with_ci(x, 3) for x in (b, w)]
    return [f"On {metric} on {d}, {best} is highest ({ci[0]}) and {worst} lowest ({ci[1]}) of "
            f"{len(ranked)} models; the paired comparison needs the per-item files "
            f"({ITEM_PATTERN.replace('{dataset}', d)}), which were not given."]


def calibration_sentence(results) -> str | None:
    """The hint that CMMS is uncalibrated where a model's reconstructions score above the
    originals themselves on the first scored set, beyond the originals' 95 % CI (a flat-colour
    model can): CMMS is a learned no-reference score (Sec. 4.2), as good as its regressor's
    training, and such a rank says nothing about fidelity. None where no model does."""
    t = results.table(METRICS_TABLE)
    d = main_set(t)
    if d is None:
        return None
    ref = list(_column(t, f"{d}.cmms_reference").values())
    if not ref:
        return None
    bound = (list(_column(t, f"{d}.cmms_reference.ci_high").values()) or ref)[0]
    exact = exact_models(t, d)
    above = sorted(m for m, v in _column(t, f"{d}.cmms").items()
                   if m not in exact and v > bound)
    if not above:
        return None
    return (f"CMMS is uncalibrated here: on {d}, {_names(above)} "
            f"{'scores' if len(above) == 1 else 'score'} above the originals themselves "
            f"({number(ref[0], 3)}, 95 % CI up to {number(bound, 3)}), so a CMMS rank says "
            f"nothing of fidelity; CMMS is a "
            f"learned no-reference score, as good as its regressor's training "
            f"(metrics.tokens.cmms; the paper: 200 epochs of ImageNet-1K): read it beside CHD.")


def findings(results) -> list[str]:
    """CHD/CMMS's sentences: the sensitivity to degradation (Figure 2), CHD lowest/highest and
    CMMS highest/lowest with the paired best vs runner-up on the first scored set (2 to 4)."""
    out = [spearman_sentence(results)]
    chd = chd_sentence(results)
    if chd:
        out.append(chd)
    cmms = cmms_sentences(results)
    hint = calibration_sentence(results)
    out += cmms[:1] + ([hint] if hint else []) + cmms[1:]  # the hint right after the ranking
    if len(out) == 1 and results.table(METRICS_TABLE) is None:
        out.append(f"The models were not compared: no {METRICS_TABLE} table in this run.")
    return out[:4]


# -- the headline figure: sensitivity curves (Figure 2) --------------------------------------
#: Marker of each degradation kind, so the curves stay apart without colour.
KIND_MARKERS = ("o", "s", "^", "D", "v", "P")


def headline_figure(results, path) -> str | None:
    """CHD (between the clean set and its degraded copy) and mean CMMS of the degraded set
    against the degradation level, one curve per kind (CHD paper, Figure 2), with each kind's
    Spearman rho in the legends. None without a ``token_sensitivity`` table."""
    t = results.table(CURVES_TABLE)
    if t is None or t.empty or not {"kind", "level", "chd", "cmms"} <= set(t.columns):
        return None
    rho = _rhos(results)
    kinds = list(dict.fromkeys(t["kind"].astype(str)))
    colours = style.colours(kinds)
    fig, axes = style.figure(1, 2, height_in=2.7)
    panels = (("chd", "CHD vs the clean set", "CHD (lower: closer to the clean set)"),
              ("cmms", "mean CMMS", "CMMS (higher: more natural)"))
    for ax, (col, ylabel, title) in zip(axes[0], panels):
        for kind, marker in zip(kinds, KIND_MARKERS * 4):
            g = t[t["kind"].astype(str) == kind].sort_values("level")
            r = rho.get(kind, {}).get(col)
            label = kind if r is None or math.isnan(r) else f"{kind} (ρ {r:+.2f})"
            ax.plot(g["level"], g[col], marker=marker, ms=3.5, lw=1.2, color=colours[kind],
                    label=label)
        ax.set(xlabel="degradation level (0 = clean)", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, loc="best")
    style.save(fig, path)
    n = pd.to_numeric(t.get("n_images"), errors="coerce").dropna()
    images = f" over {int(n.iloc[0])} images" if len(n) else ""
    return ("Sensitivity of the token statistics to degradation (CHD paper, Figure 2): CHD "
            "between the clean set and its degraded copy (left) and the mean CMMS of the "
            f"degraded images (right) at each level{images}, one curve per kind of degradation "
            f"({_names(kinds)}), Spearman's rho with the level in the legends.")


def _rhos(results) -> dict[str, dict[str, float]]:
    t = results.table(SPEARMAN_TABLE)
    if t is None or "degradation" not in t.columns:
        return {}
    out = {}
    for _, row in t.iterrows():
        out[str(row["degradation"])] = {
            "chd": float(pd.to_numeric(pd.Series([row.get(RHO_CHD)]), errors="coerce").iloc[0]),
            "cmms": float(pd.to_numeric(pd.Series([row.get(RHO_CMMS)]), errors="coerce").iloc[0])}
    return out
