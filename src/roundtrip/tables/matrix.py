"""Matrix tables: rows (modalities, tasks) x columns (models), an ``Avg`` column over chosen
columns and an ``Average`` row over the rows (the layout of MediBench's Tables 1-6).

Each cell holds a tuple of numbers (e.g. PSNR and SSIM) and an optional note; Markdown and LaTeX
show the formatted tuple (``31.2/0.871``) with a numbered footnote, the CSV one numeric column
per (column, number), e.g. ``small_kl.psnr``.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.tables.engine import format_value, write_frame


class Notes:
    """Numbered footnotes of one table, one number per distinct text.

    Args:
        first: notes numbered before any cell's (1, 2, ...).
        sep: what :meth:`mark` puts before ``[k]`` (a space, or nothing where the mark follows
            text that ends in one).
    """

    def __init__(self, first: list[str] | None = None, sep: str = " "):
        self.texts: list[str] = list(first or [])
        self.sep = sep

    def mark(self, text: str) -> str:
        """``sep + "[k]"``: the number of ``text``, new texts numbered in order of first use."""
        if text not in self.texts:
            self.texts.append(text)
        return f"{self.sep}[{self.texts.index(text) + 1}]"


def nan_mean(values: list[float]) -> float:
    """Mean of the values that are not NaN; NaN when there are none."""
    v = [x for x in values if not math.isnan(x)]
    return float(np.mean(v)) if v else math.nan


def write_matrix(name: str, title: str, row_label: str, rows: list[str], columns: list[str],
                 cells: dict, numbers: tuple[str, ...], notes: Notes, out_dir: str | Path,
                 avg_columns: list[str], fmt, empty_note: str) -> list[Path]:
    """Assemble a matrix table: ``cells[(row, col)] = (values tuple, note text or "")``; with no
    rows, a one-cell ``n/a`` table whose footnote is ``empty_note``."""
    if not rows:
        return write_frame(pd.DataFrame({row_label: ["n/a"]}), name, title, [empty_note], out_dir)
    display, csv_rows = [], []
    for r in rows:
        drow, nrow = {row_label: r}, {row_label: r}
        for c in columns:
            vals, note = cells.get((r, c), ((math.nan,) * len(numbers), "not computed"))
            drow[c] = fmt(vals) + (notes.mark(f"{r}, {c}: {note}") if note else "")
            nrow |= {f"{c}.{k}": v for k, v in zip(numbers, vals)}
        avg = tuple(nan_mean([cells[(r, c)][0][i] for c in avg_columns if (r, c) in cells])
                    for i in range(len(numbers)))
        drow["Avg"] = fmt(avg) + _inf_mark(avg, notes)
        nrow |= {f"Avg.{k}": v for k, v in zip(numbers, avg)}
        display.append(drow)
        csv_rows.append(nrow)
    if rows:
        drow, nrow = {row_label: "Average"}, {row_label: "Average"}
        for c in columns + ["Avg"]:
            avg = tuple(nan_mean([n[f"{c}.{k}"] for n in csv_rows]) for k in numbers)
            drow[c] = fmt(avg) + _inf_mark(avg, notes)
            nrow |= {f"{c}.{k}": v for k, v in zip(numbers, avg)}
        display.append(drow)
        csv_rows.append(nrow)
    df = pd.DataFrame(display, columns=[row_label] + columns + ["Avg"])
    return write_frame(df, name, title, notes.texts, out_dir, csv_frame=pd.DataFrame(csv_rows))


#: The footnote of an average that an infinite cell (exact reconstructions) makes infinite.
INF_AVERAGE = "an average over a cell that reads inf is inf (exact reconstructions; the cell's note counts them)"


def _inf_mark(values: tuple, notes: Notes) -> str:
    return notes.mark(INF_AVERAGE) if any(math.isinf(v) for v in values) else ""


def tuple_formatter(digits=(2, 3)):
    """Formatter of a cell tuple: ``31.20/0.871`` (``n/a`` when every value is NaN)."""
    def fmt(vals):
        if all(math.isnan(v) for v in vals):
            return "n/a"
        return "/".join(format_value(v, d) for v, d in zip(vals, digits))
    return fmt
