"""The Telephone Game's figures: S(g) curves (Fig. 6), fitted SDR curves (Fig. 7), MGG heatmaps
(Figs. 8, 11), MGG against MCD_avg (Fig. 9) and a strip of chains generation by generation
(Figs. 1, 5). A figure without data says why inside the image."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.evals.telephone.tables import ARROWS, experiment_label
from roundtrip.report.style import colours


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _empty(path, message: str) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, textwrap.fill(message, 70), ha="center", va="center", fontsize=9)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _label(model: str, dataset: str, many: bool) -> str:
    return f"{model} ({dataset})" if many else model


def plot_similarity(curve: pd.DataFrame, path) -> None:
    """One panel per experiment: S(g) per model with its 95 % CI band."""
    if curve.empty:
        return _empty(path, "No similarity values: no chain was scored.")
    plt = _plt()
    exps = list(dict.fromkeys(curve[["chain", "direction", "backbone"]].itertuples(index=False)))
    many = curve["dataset"].nunique() > 1
    cols = min(3, len(exps))
    rows = math.ceil(len(exps) / cols)
    # one colour per pair, the same as in the report's headline figure (roundtrip.report.style)
    colour = colours(_label(m, ds, many) for m, ds in zip(curve["model"], curve["dataset"]))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (c, d, b) in zip(axes.flat, exps):
        e = curve[(curve["chain"] == c) & (curve["direction"] == d) & (curve["backbone"] == b)]
        for (m, ds), grp in e.groupby(["model", "dataset"], sort=False):
            label = _label(m, ds, many)
            ax.plot(grp["generation"], grp["s"], marker="o", ms=3, label=label,
                    color=colour[label])
            ax.fill_between(grp["generation"], grp["ci_low"], grp["ci_high"], alpha=0.15,
                            color=colour[label])
        ax.set_title(experiment_label(c, d, b), fontsize=9)
        ax.set_xlabel("generation g")
        ax.set_ylabel("S(g)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(exps):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sdr_params(row: pd.Series, chain: str) -> tuple[tuple[float, float, float], str]:
    """The chain's paper-mapping parameters (Table 3), else roundtrip's all-experiment ones."""
    for suffix, name in (("", "paper's mappings"), (" (all experiments)", "all experiments")):
        p = tuple(float(row.get(f"{chain} {k}{suffix}", math.nan)) for k in ("α", "β", "γ"))
        if not any(math.isnan(v) for v in p):
            return p, name
    return (math.nan,) * 3, ""


def plot_sdr(curve: pd.DataFrame, sdr: pd.DataFrame, path) -> None:
    """Per chain: the averaged power-law curve of each model (Fig. 7), over its mean S(g); the
    paper's mappings where measured, else every experiment of the chain (said in the legend)."""
    chains = ["text-first", "image-first"]
    usable = [] if sdr.empty else [
        (chain, r) for chain in chains for _, r in sdr.iterrows()
        if not math.isnan(_sdr_params(r, chain)[0][0])]
    if not usable:
        return _empty(path, "No SDR curve: no power-law fit succeeded (see telephone_sdr).")
    plt = _plt()
    many = sdr["dataset"].nunique() > 1
    colour = colours(_label(r["model"], r["dataset"], many) for _, r in usable)
    fig, axes = plt.subplots(1, len(chains), figsize=(5 * len(chains), 3.4), squeeze=False)
    for ax, chain in zip(axes.flat, chains):
        for c, r in usable:
            if c != chain:
                continue
            (alpha, beta, gamma), source = _sdr_params(r, chain)
            pts = curve[(curve["model"] == r["model"]) & (curve["dataset"] == r["dataset"])
                        & (curve["chain"] == chain)]
            g_max = max(2, int(pts["generation"].max())) if len(pts) else 2
            g = np.linspace(1, g_max, 100)
            label = _label(r["model"], r["dataset"], many)
            line, = ax.plot(g, alpha * g ** (-beta) + gamma, color=colour[label],
                            label=f"{label}: β={beta:.3f} ({source})")
            mean = pts.groupby("generation")["s"].mean()
            ax.scatter(mean.index, mean.values, s=10, color=line.get_color())
        ax.set_title(f"{chain}: α g^(-β) + γ, averaged over mappings", fontsize=9)
        ax.set_xlabel("generation g")
        ax.set_ylabel("similarity")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_mgg(mgg: pd.DataFrame, path, why_none: str = "") -> None:
    """Fig. 8: the models x generations grid of ``overall_prompts`` (the published convention),
    then one grid per task in Fig. 11's order; cells print their value."""
    per_gen = mgg[mgg["generation"] != "MGG"] if not mgg.empty else mgg
    if per_gen.empty or per_gen["overall_prompts"].isna().all():
        return _empty(path, why_none or "No MGG values: no GenEval prompt set was scored.")
    from roundtrip.metrics.geneval import TASKS

    plt = _plt()
    panels = ["overall_prompts", *[t for t in TASKS if per_gen[t].notna().any()]]
    many = per_gen["dataset"].nunique() > 1
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 2.8), squeeze=False)
    for ax, col in zip(axes.flat, panels):
        table = per_gen.pivot_table(index=["model", "dataset"], columns="generation", values=col,
                                    sort=False)
        table = table[sorted(table.columns, key=int)]
        values = table.to_numpy(float)
        ax.imshow(values, vmin=0, vmax=1, cmap="Blues", aspect="auto")
        for (i, j), v in np.ndenumerate(values):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if v > 0.6 else "black")
        ax.set_xticks(range(table.shape[1]), [f"Gen {c}" for c in table.columns], fontsize=6)
        ax.set_yticks(range(table.shape[0]), [_label(m, d, many) for m, d in table.index],
                      fontsize=7)
        ax.set_title("overall (prompt-weighted, Fig. 8)" if col == "overall_prompts" else col,
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fig9_points(mcd: pd.DataFrame, mgg: pd.DataFrame, dataset_types: dict[str, str]
                ) -> tuple[pd.DataFrame, str]:
    """Fig. 9's points: per model, MGG (``overall_prompts`` of the MGG rows) and MCD_avg from the
    caption chains only (Table 1, Exps. 2-7: sets of type ``captions`` or ``chains``, never the
    GenEval chains of Exp. 1), averaged over those sets.

    Returns:
        Columns ``model, mcd, mgg``, and the MCD column used: ``MCD_avg`` (the paper's), or
        ``MCD_avg_all_experiments`` when no model has the paper's (named on the axis).
    """
    scores = mgg[mgg["generation"] == "MGG"] if not mgg.empty else mgg
    if scores.empty or mcd.empty:
        return pd.DataFrame(columns=["model", "mcd", "mgg"]), "MCD_avg"
    captions = mcd[mcd["dataset"].map(lambda d: dataset_types.get(d) != "geneval")]
    column = "MCD_avg" if captions["MCD_avg"].notna().any() else "MCD_avg_all_experiments"
    x = captions.groupby("model", as_index=False)[column].mean().rename(columns={column: "mcd"})
    y = scores.groupby("model", as_index=False)["overall_prompts"].mean() \
        .rename(columns={"overall_prompts": "mgg"})
    return pd.merge(x, y, on="model").dropna(), column


def plot_mgg_vs_mcd(mcd: pd.DataFrame, mgg: pd.DataFrame, path,
                    dataset_types: dict[str, str] | None = None) -> None:
    """MGG (y, prompt-weighted) against MCD_avg of the caption chains (x), one point per model
    (Fig. 9)."""
    both, column = fig9_points(mcd, mgg, dataset_types or {})
    if both.empty:
        return _empty(path, "MGG against MCD_avg needs a model with both: MCD from a caption or "
                      "chains set and MGG from a GenEval prompt set (type: geneval) scored by a "
                      "detector.")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.scatter(both["mcd"], both["mgg"])
    for _, r in both.iterrows():
        ax.annotate(r["model"], (r["mcd"], r["mgg"]), fontsize=7)
    ax.set_xlabel(f"{column} (caption chains)" + (" — roundtrip's, not the paper's"
                                                  if column != "MCD_avg" else ""))
    ax.set_ylabel("MGG (prompt-weighted)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_strip(roots: dict[tuple[str, str], Path], item: str, chain: str, generations: int,
               path) -> None:
    """One row per model: generation 0..G of one item, images as thumbnails, texts wrapped."""
    from roundtrip.core.imaging import read_image, to_uint8
    from roundtrip.datasets import chain_layout as layout

    if not roots:
        return _empty(path, "No chains to show.")
    plt = _plt()
    cols = generations + 1
    fig, axes = plt.subplots(len(roots), cols, figsize=(1.9 * cols, 1.6 * len(roots)),
                             squeeze=False)
    for r, ((model, dataset), root) in enumerate(roots.items()):
        for g in range(cols):
            ax = axes[r, g]
            ax.set_xticks([])
            ax.set_yticks([])
            if g == 0:
                ax.set_ylabel(model, fontsize=7)
            if r == 0:
                ax.set_title(f"gen {g}", fontsize=7)
            if layout.modality_at(chain, g) == "image":
                p = layout.find_image(root, chain, g, item)
                if p is not None:
                    ax.imshow(to_uint8(read_image(p)))
                else:
                    ax.text(0.5, 0.5, "(failed)", ha="center", va="center", fontsize=6)
            else:
                f = layout.text_file(root, chain, g)
                text = layout.read_texts(root, chain, g).get(item, "(failed)") if f.is_file() \
                    else "(missing)"
                ax.text(0.02, 0.98, textwrap.fill(text[:160], 28), ha="left", va="top",
                        fontsize=5, transform=ax.transAxes)
    fig.suptitle(f"{chain} chains of item {item}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["ARROWS", "fig9_points", "plot_mgg", "plot_mgg_vs_mcd", "plot_sdr", "plot_similarity", "plot_strip"]
