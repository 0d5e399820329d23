"""MediBench's findings for the report's first page and its headline figure.

MediBench scores medical autoencoders on three pillars (Sec. 3.2): reconstruction fidelity (PSNR
and SSIM, Eq. 3; Tables 1 and 3), clinical structure preservation on volumes (SegQC and SegSim,
Eq. 4; Table 4) and latent utility (AUC of a classifier on the latents; Tables 2 and 5). Its
point is that the pillars need not agree: higher pixel fidelity "often does not translate" into
structure or downstream gains (Abstract; Sec. 4.2). The sentences here rank the models on 2D
PSNR from the per-image files (``results/metrics/{model}/{dataset}/image_quality.csv``) and set
fidelity against structure and utility from the tables (dataset rows x model columns, an
``Average`` row, columns ``{model}.{metric}``; roundtrip.evals.medibench.tables).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.report.findings import RunResults, number, per_item_metric, rank

FIDELITY_2D = "medibench_2d_fidelity"
FIDELITY_3D = "medibench_3d_fidelity"
STRUCTURE_3D = "medibench_3d_structure"
LATENT_2D = "medibench_2d_latent"
LATENT_3D = "medibench_3d_latent"
#: The tables of each part of the benchmark, for the sentence on what did not run.
PARTS = (("2D fidelity", FIDELITY_2D), ("2D latent utility", LATENT_2D),
         ("3D fidelity", FIDELITY_3D), ("3D structure", STRUCTURE_3D),
         ("3D latent utility", LATENT_3D))
AVERAGE = "Average"  # the tables' row of column means over the dataset rows
AVG = "Avg"  # the tables' column of row means over the models


# -- reading the tables -------------------------------------------------------------------------
def column_means(results: RunResults, table: str, metric: str) -> dict[str, float]:
    """``model -> value`` of ``metric`` in the ``Average`` row of a MediBench table (the mean
    over its dataset rows; SegSim and Dice as fractions, PSNR in dB, ``inf`` for exact
    reconstructions), models in column order, the ``Avg`` column and NaN cells left out. In a
    table with one block per input size, the first block's (``Average (256x256)``: Table 1).
    Empty where the table is missing or has no ``Average`` row."""
    df = results.table(table)
    if df is None or df.empty:
        return {}
    # tables with one block per input size have a Size column first and an "Average (256x256)"
    # row per block; the first block (the smallest size, Table 1's 256x256) stands for the table
    labels = "Dataset" if "Dataset" in df.columns else df.columns[0]
    names = df[labels].astype(str)
    avg = df[(names == AVERAGE) | names.str.startswith(f"{AVERAGE} (")]
    if avg.empty:
        return {}
    row = avg.iloc[0]
    out = {}
    for col in df.columns[list(df.columns).index(labels) + 1:]:
        model, _, m = str(col).rpartition(".")
        if m == metric and model != AVG and pd.notna(row[col]):
            out[model] = float(row[col])
    return out


def has_values(results: RunResults, table: str) -> bool:
    """Whether the run wrote ``table`` with at least one number in it."""
    df = results.table(table)
    return df is not None and not df.empty and df.iloc[:, 1:].apply(
        pd.to_numeric, errors="coerce").notna().to_numpy().any()


def missing_parts(results: RunResults) -> list[str]:
    """The parts of the benchmark (:data:`PARTS`) whose table is missing or holds no number."""
    return [f"{part} ({table})" for part, table in PARTS if not has_values(results, table)]


# -- per-image PSNR -----------------------------------------------------------------------------
def per_item_psnr(results: RunResults) -> pd.DataFrame:
    """PSNR (dB) of every 2D image: ``model``, ``item_id`` (``dataset/item``), ``value``, from
    the declared ``results/metrics/{model}/{dataset}/image_quality.csv`` files (MediBench Eq. 3,
    [0, 1] intensities); ``inf`` for exact reconstructions."""
    df = per_item_metric(results.files, "image_quality.csv", "psnr")
    df["item_id"] = df["dataset"] + "/" + df["item_id"]
    return df.drop(columns="dataset")


def _exact(per_item: pd.DataFrame) -> list[str]:
    """Models whose every scored image is reconstructed exactly (PSNR = inf): references, not
    ranked (the tables' Avg leaves identity out for the same reason)."""
    scored = per_item.dropna(subset=["value"])
    return [m for m, g in scored.groupby("model", sort=False) if np.isposinf(g["value"]).all()]


def psnr_ranking(results: RunResults) -> list[str]:
    """Best and worst model on 2D PSNR with bootstrap CIs over images, and the best against the
    runner-up as a paired difference over their shared images; from the fidelity table's
    Average row without CIs where the per-image files were not given."""
    per_item = per_item_psnr(results)
    exact = _exact(per_item)
    per_item = per_item[~per_item["model"].isin(exact)]
    n_items = per_item.dropna(subset=["value"])["item_id"].nunique()
    if n_items:
        out = rank(results, per_item, "2D PSNR (dB)", True).sentences(
            2, f"over {n_items} medical 2D images")
    else:
        out = _ranking_from_table(results)
    if exact and out:
        verb, be = ("reconstructs", "is") if len(exact) == 1 else ("reconstruct", "are")
        out[0] = (out[0][:-1] + f"; {', '.join(exact)} {verb} every image exactly "
                  f"(PSNR = inf) and {be} left out as a reference.")
    return out


def _ranking_from_table(results: RunResults) -> list[str]:
    means = {m: v for m, v in column_means(results, FIDELITY_2D, "psnr").items()
             if math.isfinite(v)}
    if not means:
        return []
    order = sorted(means, key=lambda m: (-means[m], m))
    if len(order) == 1:
        return [f"{order[0]} is the only model with a 2D PSNR ({number(means[order[0]], 2)} dB,"
                f" {FIDELITY_2D} Average row)."]
    return [f"On 2D PSNR ({FIDELITY_2D} Average row), {order[0]} is best "
            f"({number(means[order[0]], 2)} dB) and {order[-1]} worst "
            f"({number(means[order[-1]], 2)} dB), of {len(order)} models; without the per-image "
            "files there are no CIs and no paired comparison."]


# -- fidelity against structure and utility -----------------------------------------------------
def _spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation of two equally long lists (average ranks for ties)."""
    ra = pd.Series(a).rank().to_numpy()
    rb = pd.Series(b).rank().to_numpy()
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def fidelity_structure(results: RunResults) -> tuple[dict[str, float], dict[str, float]]:
    """``(PSNR dB, SegSim x100)`` per model on the volumes (Average rows of the 3D fidelity and
    structure tables, MediBench Tables 3 and 4), for the models with both and a finite PSNR."""
    psnr = column_means(results, FIDELITY_3D, "psnr")
    segsim = column_means(results, STRUCTURE_3D, "segsim")
    both = [m for m in psnr if m in segsim and math.isfinite(psnr[m])]
    return {m: psnr[m] for m in both}, {m: 100.0 * segsim[m] for m in both}


def structure_sentence(results: RunResults) -> str | None:
    """Whether PSNR and SegSim pick the same best model on the volumes, with Spearman's rho of
    the two rankings from three models on (MediBench's point: fidelity and structure can
    disagree, Sec. 4.2); None without two models that have both."""
    psnr, segsim = fidelity_structure(results)
    if len(psnr) < 2:
        return None
    by_psnr = max(psnr, key=lambda m: (psnr[m], m))
    by_seg = max(segsim, key=lambda m: (segsim[m], m))
    rho = (f"; over the {len(psnr)} models the two rankings have Spearman rho = "
           f"{number(_spearman(list(psnr.values()), list(segsim.values())), 2)}"
           if len(psnr) >= 3 else "")
    if by_psnr == by_seg:
        return (f"On the volumes, fidelity and structure agree on the best model: {by_psnr} has "
                f"both the highest PSNR ({number(psnr[by_psnr], 1)} dB) and the highest SegSim "
                f"({number(segsim[by_seg], 1)}){rho}.")
    return (f"On the volumes, fidelity and structure disagree: {by_psnr} has the highest PSNR "
            f"({number(psnr[by_psnr], 1)} dB, SegSim {number(segsim[by_psnr], 1)}) but {by_seg} "
            f"the highest SegSim ({number(segsim[by_seg], 1)}, PSNR "
            f"{number(psnr[by_seg], 1)} dB){rho}.")


def utility_sentence(results: RunResults) -> str | None:
    """Whether the model with the best 2D latent AUC (Table 2) is the one with the best 2D PSNR
    (Table 1), Average rows; None without two models that have both."""
    psnr = {m: v for m, v in column_means(results, FIDELITY_2D, "psnr").items()
            if math.isfinite(v)}
    auc = {m: v for m, v in column_means(results, LATENT_2D, "auc").items() if m in psnr}
    if len(auc) < 2:
        return None
    by_auc = max(auc, key=lambda m: (auc[m], m))
    by_psnr = max(auc, key=lambda m: (psnr[m], m))
    where = f"In 2D (Average rows of {FIDELITY_2D} and {LATENT_2D})"
    if by_auc == by_psnr:
        return (f"{where}, {by_auc} leads on both fidelity ({number(psnr[by_auc], 1)} dB PSNR) "
                f"and latent utility (AUC {number(auc[by_auc], 3)}).")
    return (f"{where}, latent utility does not follow fidelity: {by_auc} has the best latent AUC "
            f"({number(auc[by_auc], 3)}, PSNR {number(psnr[by_auc], 1)} dB) and {by_psnr} the "
            f"best PSNR ({number(psnr[by_psnr], 1)} dB, AUC {number(auc[by_psnr], 3)}).")


def findings(results: RunResults) -> list[str]:
    """Two to four sentences: the 2D PSNR ranking (best and worst with CIs, best against the
    runner-up), fidelity against structure on the volumes, then either the parts that did not
    run or fidelity against latent utility in 2D."""
    out = psnr_ranking(results)
    if not out:
        out = ["No model has a 2D PSNR: the per-image files and medibench_2d_fidelity hold no "
               "finite value."]
    structure = structure_sentence(results)
    if structure:
        out.append(structure)
    missing = missing_parts(results)
    if missing:
        out.append(f"Not in this run (table missing or empty): {', '.join(missing)}.")
    else:
        utility = utility_sentence(results)
        if utility:
            out.append(utility)
    if len(out) < 2:
        out.append("Fidelity cannot be set against structure: the 3D fidelity and structure "
                   "tables have no two models in common.")
    return out[:4]


# -- headline figure ----------------------------------------------------------------------------
def headline_figure(results: RunResults, path: Path) -> str | None:
    """PSNR (left) and SSIM (right) against SegSim on the volumes, one marker per model in its
    run colour (Average rows of MediBench Tables 3 and 4); None without a model that has both.
    Exact reconstructions (PSNR = inf) are left out."""
    from roundtrip.report import style

    psnr, segsim = fidelity_structure(results)
    if not psnr:
        return None
    ssim = column_means(results, FIDELITY_3D, "ssim")
    colour = style.colours(list(results.models) + [m for m in psnr if m not in results.models])
    fig, axes = style.figure(1, 2, height_in=2.6)
    for ax, values, label in ((axes[0, 0], psnr, "PSNR (dB)"),
                              (axes[0, 1], {m: ssim.get(m, math.nan) for m in psnr}, "SSIM")):
        for m in psnr:
            ax.scatter(values[m], segsim[m], s=36, color=colour[m], edgecolor="black",
                       linewidth=0.5, zorder=3, label=m)
            ax.annotate(m, (values[m], segsim[m]), xytext=(4, 3), textcoords="offset points",
                        fontsize=7.5)
        ax.set_xlabel(f"{label}, mean over volume sets")
        ax.set_ylabel("SegSim (x100)")
        ax.grid(alpha=0.3)
        ax.margins(0.25)
    axes[0, 0].set_title("Fidelity vs structure (PSNR)")
    axes[0, 1].set_title("Fidelity vs structure (SSIM)")
    style.save(fig, path)
    return ("Reconstruction fidelity against structure preservation on the volume sets: PSNR "
            "(left) and SSIM (right) against SegSim, the voxel agreement of the segmentations "
            "of original and reconstruction (x100, MediBench Eq. 4), each a mean over the "
            "datasets (Average rows of medibench_3d_fidelity and medibench_3d_structure); one "
            "marker per model, exact reconstructions (PSNR = inf) left out.")
