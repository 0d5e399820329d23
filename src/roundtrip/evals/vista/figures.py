"""The modality gap against font size and by font style (VISTA-Bench Fig. 3 style)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: The y axis spans at least this many points around its data (gaps of 0 do not give an axis
#: of +-0.04).
MIN_SPAN = 20.0


def gap_limits(gaps) -> tuple[float, float]:
    """y limits (points) that hold 0 and every gap, padded by a tenth of their span; at least
    :data:`MIN_SPAN` wide, centred on the data when it is narrower; within [-105, 105] (a gap
    lies in [-100, 100]).

    Args:
        gaps: gap values in points (NaN ignored).
    """
    v = np.asarray(gaps, dtype=float)
    v = v[~np.isnan(v)]
    lo, hi = min(0.0, float(v.min()) if len(v) else 0.0), max(0.0, float(v.max()) if len(v) else 0.0)
    pad = 0.1 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    if hi - lo < MIN_SPAN:
        mid = (hi + lo) / 2
        lo, hi = mid - MIN_SPAN / 2, mid + MIN_SPAN / 2
    return max(lo, -105.0), min(hi, 105.0)


def plot_gap(curves: pd.DataFrame, out_png: str | Path) -> None:
    """Two panels: the gap (Acc_Text - Acc_VT, points; positive when VT is worse, VISTA-Bench
    App. D.1 and Figs. 8, 11) per font size, one line per (reader, model), and per font style,
    one marker series per (reader, model). Originals are drawn solid, reconstructions dashed.
    Groups without a gap (no question answered in both modes: outside the reader's scope, or
    not scored) are left out; a panel with none says so. The y axis holds 0 and every gap
    (:func:`gap_limits`); style names are written slanted so that they do not overlap.

    Args:
        curves: :func:`roundtrip.evals.vista.tables.gap_curves`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = curves[curves["gap"].notna()] if len(curves) else curves
    fig, (ax_size, ax_style) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=120)
    styles_seen: list[str] = []
    for (reader, model, dataset), g in drawn.groupby(["reader", "model", "dataset"], sort=False):
        label = f"{reader} / {model}" + (f" ({dataset})" if curves["dataset"].nunique() > 1
                                         else "")
        line = "-" if model == "original" else "--"
        sizes = g[g["kind"] == "size"]
        if len(sizes):
            x = [float(s.split()[0]) for s in sizes["group"]]
            ax_size.plot(x, sizes["gap"], line, marker="o", label=label)
        styles = g[g["kind"] == "style"]
        if len(styles):
            styles_seen += [s for s in styles["group"] if s not in styles_seen]
            ax_style.plot([styles_seen.index(s) for s in styles["group"]], styles["gap"], line,
                          marker="s", label=label)
    limits = gap_limits(drawn["gap"] if len(drawn) else [])
    for ax, title, xlabel, kind in ((ax_size, "Gap by font size", "font size (pt)", "size"),
                                    (ax_style, "Gap by font style", "font style", "style")):
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("Acc Text - Acc VT (points)")
        ax.set_ylim(*limits)
        ax.grid(alpha=0.3)
        if not len(drawn) or not (drawn["kind"] == kind).any():
            ax.text(0.5, 0.5, _why_empty(curves, kind), ha="center", va="center",
                    transform=ax.transAxes, fontsize=8,
                    bbox={"facecolor": "white", "edgecolor": "grey", "boxstyle": "round"})
            ax.set_xticks([])
    ax_style.set_xticks(range(len(styles_seen)), styles_seen, rotation=25, ha="right",
                        fontsize=8)
    if len(styles_seen):
        ax_style.set_xlim(-0.5, len(styles_seen) - 0.5)
    handles, labels = ax_size.get_legend_handles_labels()
    if not handles:
        handles, labels = ax_style.get_legend_handles_labels()
    if handles:  # below the panels: a legend inside would hide points
        fig.legend(handles, labels, loc="lower center", ncol=min(3, len(handles)), fontsize=7,
                   frameon=False)
    fig.tight_layout(rect=(0, 0.08 if handles else 0, 1, 1))
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png)
    plt.close(fig)


def _why_empty(curves: pd.DataFrame, kind: str) -> str:
    """The panel's text where it has no gap to draw."""
    mine = curves[curves["kind"] == kind] if len(curves) else curves
    if not len(mine):
        return f"No renders grouped by font {kind}\nin this run."
    return ("No gap to draw: no question\nwas scored in both modes\n(outside the reader's "
            "scope,\nor not scored: the tables' notes).")


__all__ = ["MIN_SPAN", "gap_limits", "plot_gap"]
