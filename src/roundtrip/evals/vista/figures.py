"""The modality gap against font size and by font style (VISTA-Bench Fig. 3 style)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd


def plot_gap(curves: pd.DataFrame, out_png: str | Path) -> None:
    """Two panels: the gap (Acc_Text - Acc_VT, points; positive when VT is worse, VISTA-Bench
    App. D.1 and Figs. 8, 11) per font size, one line per (reader, model), and
    per font style, one marker series per (reader, model). Originals are drawn solid,
    reconstructions dashed.

    Args:
        curves: :func:`roundtrip.evals.vista.tables.gap_curves`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_size, ax_style) = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    for (reader, model, dataset), g in curves.groupby(["reader", "model", "dataset"], sort=False):
        label = f"{reader} / {model}" + (f" ({dataset})" if curves["dataset"].nunique() > 1
                                         else "")
        style = "-" if model == "original" else "--"
        sizes = g[g["kind"] == "size"]
        if len(sizes):
            x = [float(s.split()[0]) for s in sizes["group"]]
            ax_size.plot(x, sizes["gap"], style, marker="o", label=label)
        styles = g[g["kind"] == "style"]
        if len(styles):
            ax_style.plot(list(styles["group"]), styles["gap"], style, marker="s", label=label)
    for ax, title, xlabel in ((ax_size, "Gap by font size", "font size (pt)"),
                              (ax_style, "Gap by font style", "font style")):
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("Acc Text - Acc VT (points)")
        ax.grid(alpha=0.3)
    ax_style.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png)
    plt.close(fig)
