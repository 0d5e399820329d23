"""Result tables in the papers' layouts: one row per model, metric columns grouped by dataset.

Each table is written three ways from the same cells:

* ``{name}.csv``: numbers only, one column per (dataset, metric) for the mean, plus
  ``.ci_low``/``.ci_high`` (bootstrap 95% CI) and ``.n`` (items scored), and a ``notes`` column;
* ``{name}.md`` and ``{name}.tex``: ``mean [low, high]`` cells, numbered footnotes.

A cell that could not be computed reads ``n/a`` with a footnote saying why; a cell computed on
fewer items than the dataset has carries a footnote with the count and the reasons. Never blank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.metrics import METRICS
from roundtrip.metrics.stats import Summary, bootstrap_mean
from roundtrip.tables.reasons import summarize_reasons


@dataclass
class Column:
    """A table column: ``metric`` of ``dataset``, shown as ``label`` with ``digits`` decimals."""
    dataset: str
    metric: str
    label: str
    digits: int
    source: str = "item"  # "item": bootstrap over per-item values; "set": a set-level value
    group: str = ""       # header shown for the dataset group (default: the dataset name)
    file: str = ""        # which metric file of the (model, dataset) (default: ``source``)
    show_n: bool = False  # set cells: print the sample count beside the value
    spread: str = ""      # set cells: metric printed as "± spread" (e.g. kid_std)

    @property
    def file_kind(self) -> str:
        return self.file or self.source

    @property
    def heading(self) -> str:
        return self.group or self.dataset


def metric_column(dataset: str, metric: str, **kwargs) -> Column:
    """A :class:`Column` of ``metric`` of ``dataset``, its label and printed precision taken from
    :data:`roundtrip.metrics.METRICS`; ``kwargs`` are the other :class:`Column` fields.

    Raises:
        KeyError: a metric the registry does not declare.
    """
    info = METRICS[metric]
    return Column(dataset, metric, info.label, info.digits, **kwargs)


@dataclass
class Cell:
    """A summary and its footnotes; ``dash`` marks "every item unsupported" (VTBench's "–")."""
    summary: Summary
    notes: list[str] = field(default_factory=list)
    dash: bool = False
    spread: float = math.nan


@dataclass
class Table:
    """Cells by ``(model, column index)``; footnotes are numbered in order of first use."""
    name: str
    title: str
    models: list[str]
    columns: list[Column]
    cells: dict[tuple[str, int], Cell] = field(default_factory=dict)
    row_label: str = "Model"
    #: notes on the whole table (e.g. a metric left out because its weights are missing),
    #: printed under it and repeated in every CSV row's ``notes``
    notes: list[str] = field(default_factory=list)


def _reason_summary(per_item: pd.DataFrame, metric: str | None) -> str:
    """Most common reasons among the rows without a ``metric`` value (or not ``ok``, if None)."""
    bad = per_item[per_item[metric].isna()] if metric else per_item[per_item["status"] != "ok"]
    labels = (f"{s}: {r}" if r else s for s, r in zip(bad["status"], bad["reason"]))
    return summarize_reasons(labels, top=3, counts="repeated", tail=True)


def exact_note(values, metric: str = "psnr", unit: str = "dB") -> str:
    """The footnote of a mean that exact reconstructions make infinite: ``"k of n items
    reconstructed exactly (PSNR = inf); mean of the other m: x dB"``, or ``""`` when no value is
    ``+inf``. NaN values (items not scored) are not counted.

    Args:
        values: the per-item values (array-like of float).
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    k = int(np.isposinf(v).sum())
    if not k:
        return ""
    note = f"{k} of {len(v)} items reconstructed exactly ({metric.upper()} = inf)"
    if k < len(v):
        note += f"; mean of the other {len(v) - k}: {v[np.isfinite(v)].mean():.2f} {unit}".rstrip()
    return note


def item_cell(per_item: pd.DataFrame | None, metric: str, missing_reason: str = "",
              n_boot: int = 1000, confidence: float = 0.95, seed: int = 0) -> Cell:
    """Cell summarizing per-item ``metric`` values (NaN rows count as not scored)."""
    if per_item is None:
        return Cell(Summary(math.nan, math.nan, math.nan, 0), [missing_reason or "not computed"])
    s = bootstrap_mean(per_item[metric].to_numpy(dtype=float), n_boot, confidence, seed)
    n_all = len(per_item)
    if n_all and s.n == 0 and (per_item["status"] == "unavailable").all():
        return Cell(s, [str(per_item["reason"].iloc[0])])  # e.g. the metric's weights are missing
    notes = []
    if s.n < n_all:
        notes.append(f"{s.n} of {n_all} items scored; not scored: {_reason_summary(per_item, metric)}")
    if metric == "psnr" and (exact := exact_note(per_item[metric])):
        notes.append(exact)  # an inf mean is explained, and the pooled PSNR stays finite
    dash = n_all > 0 and s.n == 0 and bool((per_item["status"] == "unsupported").all())
    return Cell(s, notes, dash)


def format_value(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimals; ``n/a`` for NaN, ``inf``/``-inf`` for infinities."""
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def format_count(n: float) -> str:
    """A parameter count as tables print it: ``83.7M``, ``28.8K`` (one decimal, so a small
    model's count does not read ``0.0M``), ``1.2B``, ``512``; ``n/a`` for NaN."""
    if math.isnan(n):
        return "n/a"
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{suffix}"
    return f"{int(n)}"


def _cell_text(cell: Cell, col: Column) -> str:
    if cell.dash:
        return "–"
    s, digits = cell.summary, col.digits
    text = format_value(s.mean, digits)
    if math.isnan(s.mean):
        return text
    if not math.isnan(s.ci_low):
        text += f" [{format_value(s.ci_low, digits)}, {format_value(s.ci_high, digits)}]"
    if not math.isnan(cell.spread):
        text += f" ± {format_value(cell.spread, digits)}"
    if col.show_n:
        text += f" (n={s.n})"
    return text


def _footnotes(table: Table) -> tuple[dict[tuple[str, int], list[int]], list[str]]:
    numbers: dict[str, int] = {}
    marks: dict[tuple[str, int], list[int]] = {}
    for model in table.models:
        for j, col in enumerate(table.columns):
            for note in table.cells[(model, j)].notes:
                # same note for several models: one footnote; "n/a: ..." notes (a metric that
                # could not run at all, e.g. missing weights) hold for every dataset alike
                text = note if note.startswith("n/a:") else f"{col.dataset}: {note}"
                if text not in numbers:
                    numbers[text] = len(numbers) + 1
                marks.setdefault((model, j), []).append(numbers[text])
    return marks, list(numbers)


def to_csv_frame(table: Table) -> pd.DataFrame:
    """Numeric wide frame (see module docstring). A table without rows keeps its header: the
    columns a row would have (spreads left out), so that readers of an empty optional table
    see its columns and no row, not an empty file."""
    if not table.models:
        empty = Cell(Summary(math.nan, math.nan, math.nan, 0))
        probe = Table(table.name, table.title, ["-"], table.columns, row_label=table.row_label,
                      cells={("-", j): empty for j in range(len(table.columns))})
        return to_csv_frame(probe).iloc[0:0]
    rows = []
    for model in table.models:
        row, notes = {table.row_label.lower(): model}, []
        for j, col in enumerate(table.columns):
            cell, key = table.cells[(model, j)], f"{col.dataset}.{col.metric}"
            row[key] = cell.summary.mean
            if col.source == "item":
                row[f"{key}.ci_low"] = cell.summary.ci_low
                row[f"{key}.ci_high"] = cell.summary.ci_high
            if not math.isnan(cell.spread):
                row[f"{key}.{col.spread}"] = cell.spread
            row[f"{key}.n"] = cell.summary.n
            notes += [f"{col.dataset}.{col.metric}: {n}" for n in cell.notes]
        row["notes"] = " | ".join(notes + [f"table: {n}" for n in table.notes])
        rows.append(row)
    return pd.DataFrame(rows)


def to_markdown(table: Table) -> str:
    """GitHub-flavoured Markdown table with a two-level header folded into ``dataset: metric``."""
    marks, notes = _footnotes(table)
    header = [table.row_label] + [f"{c.heading}: {c.label}" for c in table.columns]
    lines = [f"### {table.title}", "", "| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * len(table.columns)) + "|"]
    for model in table.models:
        cells = [model]
        for j, col in enumerate(table.columns):
            text = _cell_text(table.cells[(model, j)], col)
            m = marks.get((model, j))
            cells.append(text + (" " + "".join(f"[{k}]" for k in m) if m else ""))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Cells: mean over items [95% bootstrap CI].")
    lines += [f"Note: {n}" for n in table.notes]
    lines += [f"[{i}] {n}" for i, n in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"


_TEX_ESCAPE = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
               "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
               "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text."""
    return "".join(_TEX_ESCAPE.get(ch, ch) for ch in str(text))


def to_latex(table: Table) -> str:
    """booktabs LaTeX table: dataset groups as ``\\multicolumn`` headers, footnotes below."""
    marks, notes = _footnotes(table)
    groups: list[tuple[str, int]] = []
    for col in table.columns:
        if groups and groups[-1][0] == col.heading:
            groups[-1] = (col.heading, groups[-1][1] + 1)
        else:
            groups.append((col.heading, 1))
    out = [r"\begin{table}[t]", r"\centering", r"\small",
           rf"\caption{{{tex_escape(table.title)}}}", rf"\label{{tab:{table.name}}}",
           r"\begin{tabular}{l" + "r" * len(table.columns) + "}", r"\toprule",
           " & ".join([""] + [rf"\multicolumn{{{n}}}{{c}}{{{tex_escape(d)}}}" for d, n in groups])
           + r" \\",
           " & ".join([tex_escape(table.row_label)] + [tex_escape(c.label) for c in table.columns])
           + r" \\",
           r"\midrule"]
    for model in table.models:
        cells = [tex_escape(model)]
        for j, col in enumerate(table.columns):
            text = tex_escape(_cell_text(table.cells[(model, j)], col))
            m = marks.get((model, j))
            cells.append(text + (rf"$^{{{','.join(map(str, m))}}}$" if m else ""))
        out.append(" & ".join(cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", "",
            r"\par\footnotesize Cells: mean over items [95\% bootstrap CI]."]
    out += [rf"\par\footnotesize Note: {tex_escape(n)}" for n in table.notes]
    out += [rf"\par\footnotesize $^{{{i}}}$ {tex_escape(n)}" for i, n in enumerate(notes, 1)]
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


def write_table(table: Table, out_dir: str | Path) -> list[Path]:
    """Write ``{name}.csv``, ``.md`` and ``.tex`` into ``out_dir``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{table.name}.{ext}" for ext in ("csv", "md", "tex")]
    to_csv_frame(table).to_csv(paths[0], index=False)
    paths[1].write_text(to_markdown(table))
    paths[2].write_text(to_latex(table))
    return paths


def metric_files(paths_by_kind: dict[str, list]) -> dict[tuple[str, str, str], str]:
    """The ``files`` argument of :func:`build_table` from metric files laid out as
    ``results/metrics/{model}/{dataset}/<file>``: ``(model, dataset, kind) -> path``.

    Args:
        paths_by_kind: file kind (a :attr:`Column.file_kind`) -> that kind's paths.
    """
    return {(Path(p).parent.parent.name, Path(p).parent.name, kind): str(p)
            for kind, paths in paths_by_kind.items() for p in paths}


def read_per_item(path: str | Path) -> pd.DataFrame:
    """A per-item metric CSV: ids, status and reason as strings, empty metric cells as NaN."""
    return pd.read_csv(path, dtype={"item_id": str, "reason": str, "status": str},
                       keep_default_na=False, na_values=[""])


def _set_cell(path: str | Path, metric: str, spread: str = "") -> Cell:
    """Cell of a set-level file (``metric, value, n[, note]``); ``note`` explains a NaN value."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    row = df[df["metric"] == metric]
    if row.empty:
        return Cell(Summary(math.nan, math.nan, math.nan, 0), [f"{metric} not in {path}"])
    value, n = float(row["value"].iloc[0]), int(row["n"].iloc[0])
    note = row["note"].iloc[0] if "note" in row else ""
    notes = [str(note)] if isinstance(note, str) and note else []
    if not notes and not n:
        notes = ["no item could be scored"]
    if math.isinf(value) and value > 0:  # e.g. pooled PSNR with a pooled MSE of 0
        notes.append(f"every one of the {n} items reconstructed exactly ({metric} = inf)")
    sd = df[df["metric"] == spread]["value"] if spread else pd.Series(dtype=float)
    return Cell(Summary(value, math.nan, math.nan, n), notes,
                spread=float(sd.iloc[0]) if len(sd) else math.nan)


def build_table(name: str, title: str, models: list[str], columns: list[Column],
                files: dict[tuple[str, str, str], str | pd.DataFrame],
                bootstrap: dict | None = None,
                row_label: str = "Model", unavailable: dict[str, str] | None = None,
                not_run: dict[tuple[str, str], str] | None = None) -> Table:
    """Fill a :class:`Table` from metric files.

    Args:
        files: ``(model, dataset, kind) -> path``; kind is a column's :attr:`Column.file_kind`:
            ``item`` (the per-item image-quality CSV; its status column also explains empty set
            cells), ``set`` (``metric, value, n[, note]`` CSV), or any other per-item or set
            file named by columns (``lpips``, ``distribution``, ...). A per-item entry may be
            the frame itself instead of its path (e.g. rows pooled over datasets).
        bootstrap: ``{"samples": int, "confidence": float, "seed": int}``.
        unavailable: ``file kind -> reason`` for metric files that were not computed at all
            (e.g. missing weights); their cells read n/a with the reason as footnote.
        not_run: ``(model, dataset) -> reason`` for pairs the config does not run
            (``datasets.<name>.models``); their cells read n/a with the reason.
    """
    b = {"samples": 1000, "confidence": 0.95, "seed": 0} | (bootstrap or {})
    table = Table(name, title, models, columns, row_label=row_label)
    cache: dict[str, pd.DataFrame] = {}

    def per_item(source: str | pd.DataFrame) -> pd.DataFrame:
        if isinstance(source, pd.DataFrame):
            return source
        if source not in cache:  # read each file once (setdefault would read it every time)
            cache[source] = read_per_item(source)
        return cache[source]

    for model in models:
        for j, col in enumerate(columns):
            path = files.get((model, col.dataset, col.file_kind))
            if (model, col.dataset) in (not_run or {}):
                cell = item_cell(None, col.metric, not_run[(model, col.dataset)])
            elif path is None:
                reason = (unavailable or {}).get(col.file_kind, "not computed for this dataset")
                cell = item_cell(None, col.metric, reason)
            elif col.source == "set":
                cell = _set_cell(path, col.metric, col.spread)
                item_path = files.get((model, col.dataset, "item"))
                if item_path is not None and cell.summary.n == 0:
                    df = per_item(item_path)
                    if len(df) and (df["status"] == "unsupported").all():
                        cell = Cell(cell.summary, [f"0 of {len(df)} items scored; not scored: "
                                                   + _reason_summary(df, None)], dash=True)
            else:
                df = per_item(path)
                cell = item_cell(df, col.metric, n_boot=b["samples"],
                                 confidence=b["confidence"], seed=b["seed"])
            table.cells[(model, j)] = cell
    return table


def write_frame(df: pd.DataFrame, name: str, title: str, notes: list[str], out_dir: str | Path,
                digits: dict[str, int] | None = None, csv_frame: pd.DataFrame | None = None
                ) -> list[Path]:
    """Write a descriptive table (no confidence intervals) as CSV, Markdown and LaTeX.

    Args:
        df: one row per entry; numbers are formatted with ``digits[column]`` decimals in md/tex.
        notes: footnotes printed under the table (numbered).
        csv_frame: numbers for the CSV when ``df`` holds formatted cells (e.g. "31.2/0.871");
            default ``df`` itself.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    digits = digits or {}

    def fmt(col, v):
        if isinstance(v, float):
            return format_value(v, digits.get(col, 4)) if not math.isnan(v) else "–"
        return str(v)

    cells = [[fmt(c, v) for c, v in zip(df.columns, row)] for row in df.itertuples(index=False)]
    paths = [out_dir / f"{name}.{ext}" for ext in ("csv", "md", "tex")]
    (df if csv_frame is None else csv_frame).to_csv(paths[0], index=False)
    md = [f"### {title}", "", "| " + " | ".join(df.columns) + " |",
          "|" + "|".join("---" for _ in df.columns) + "|"]
    md += ["| " + " | ".join(r) + " |" for r in cells]
    md += [""] + [f"[{i}] {n}" for i, n in enumerate(notes, 1)]
    paths[1].write_text("\n".join(md) + "\n")
    tex = [r"\begin{table}[t]", r"\centering", r"\small", rf"\caption{{{tex_escape(title)}}}",
           rf"\label{{tab:{name}}}", r"\begin{tabular}{l" + "r" * (len(df.columns) - 1) + "}",
           r"\toprule", " & ".join(tex_escape(c) for c in df.columns) + r" \\", r"\midrule"]
    tex += [" & ".join(tex_escape(c) for c in r) + r" \\" for r in cells]
    tex += [r"\bottomrule", r"\end{tabular}"]
    tex += [rf"\par\footnotesize $^{{{i}}}$ {tex_escape(n)}" for i, n in enumerate(notes, 1)]
    tex.append(r"\end{table}")
    paths[2].write_text("\n".join(tex) + "\n")
    return paths
