"""Tables for the PDF: read back from the Markdown files the table engine writes (formatted
cells, confidence intervals, footnote marks and notes as the reader sees them), and split by
columns where they are wider than the page, the label columns repeated in every part.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: Column headers that label rows; repeated in every part of a split table.
LABEL_HEADERS = {"model", "dataset", "reader", "chain", "direction", "backbone", "generation",
                 "form", "modality", "kind", "engine", "item", "block", "row"}


@dataclass
class MdTable:
    """A table as written to ``results/tables/{name}.md``.

    Attributes:
        marked: indices of rows printed in grey (published numbers beside the run's own).
    """
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    marked: set[int] = field(default_factory=set)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def read_markdown(path: str | Path) -> MdTable:
    """Parse one of our Markdown tables: ``### title``, a pipe table, then notes.

    Raises:
        ValueError: the file holds no pipe table.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    title, header, rows, notes = "", None, [], []
    for line in lines:
        if line.startswith("### ") and not title:
            title = line[4:].strip()
        elif line.startswith("|"):
            if set(line.replace("|", "").strip()) <= set("-: "):
                continue  # the separator row
            if header is None:
                header = _cells(line)
            else:
                rows.append(_cells(line))
        elif line.strip() and header is not None:
            notes.append(line.strip())
        elif line.strip() and not title:
            title = line.strip()
    if header is None:
        raise ValueError(f"{path}: no table found")
    width = len(header)
    rows = [(r + [""] * width)[:width] for r in rows]
    return MdTable(title or Path(path).stem, header, rows, notes)


def label_columns(header: list[str]) -> int:
    """How many leading columns label the rows (at least 1)."""
    n = 0
    for h in header:
        if h.strip().lower() in LABEL_HEADERS:
            n += 1
        else:
            break
    return max(1, n)


def column_widths(table: MdTable, char_pt: float, min_pt: float = 28, max_pt: float = 170
                  ) -> list[float]:
    """Width of each column in points: its longest cell (or header word) at ``char_pt`` per
    character, clipped to ``[min_pt, max_pt]`` (longer cells wrap)."""
    widths = []
    for j, h in enumerate(table.header):
        # header words are bold and must not break inside a word: 1.25 x the cell width
        head = max([len(w) for w in h.split()] + [1]) * 1.25
        longest = max([head] + [len(r[j]) for r in table.rows])
        widths.append(min(max_pt, max(min_pt, longest * char_pt + 6)))
    return widths


def squeeze_widths(table: MdTable, widths: list[float], char_pt: float, page_width: float,
                   min_pt: float = 28) -> list[float] | None:
    """Column widths that fit ``page_width`` by wrapping long cells: each column keeps at least
    its longest word (or number, which must not break), and gives up the same share of what it
    has beyond that; None where even the longest words do not fit."""
    words = []
    for j, h in enumerate(table.header):
        # a bold header word is about a tenth wider than the same word in a cell (a few
        # wide letters may still wrap it, which beats splitting the table)
        longest = max([len(w) for w in h.split()] + [1]) * 1.1
        for r in table.rows:
            longest = max([longest] + [len(w) for w in r[j].split()])
        words.append(min(widths[j], max(min_pt, longest * char_pt + 6)))
    spare, need = sum(widths) - sum(words), page_width - sum(words)
    if need < 0:
        return None
    if spare <= 0:
        return list(widths)
    k = min(1.0, need / spare)
    return [w + (full - w) * k for w, full in zip(words, widths)]


def split_columns(widths: list[float], labels: int, page_width: float) -> list[list[int]]:
    """Column index groups that fit ``page_width``, each starting with the ``labels`` label
    columns; every column appears in exactly one group (none is cut)."""
    label_w = sum(widths[:labels])
    parts, current, used = [], [], label_w
    for j in range(labels, len(widths)):
        if current and used + widths[j] > page_width:
            parts.append(list(range(labels)) + current)
            current, used = [], label_w
        current.append(j)
        used += widths[j]
    if current or not parts:
        parts.append(list(range(labels)) + current)
    return parts


def column_groups(table: MdTable, labels: int) -> list[tuple[str | None, str]]:
    """``(group, column)`` of each column after the ``labels`` label columns: our Markdown
    headers name a grouped column ``group: column`` (e.g. ``posters: CER``); the group is the
    part before the last ``": "``, None for a column of its own."""
    out = []
    for h in table.header[labels:]:
        group, sep, column = h.rpartition(": ")
        out.append((group, column) if sep else (None, h))
    return out


def keep_columns(table: MdTable, columns: tuple[str, ...] | list[str]) -> MdTable:
    """The table with only the label columns, the ungrouped ones and the grouped columns whose
    name is in ``columns``, and the notes those cells still refer to (the appendix shows the
    table whole, with every note)."""
    labels = label_columns(table.header)
    wanted = set(columns)
    keep = list(range(labels)) + [labels + j for j, (g, c) in
                                  enumerate(column_groups(table, labels))
                                  if g is None or c in wanted]
    rows = [[r[j] for j in keep] for r in table.rows]
    return MdTable(table.title, [table.header[j] for j in keep], rows,
                   _notes_in(table.notes, [table.header[j] for j in keep] + sum(rows, [])),
                   set(table.marked))


def _notes_in(notes: list[str], cells: list[str]) -> list[str]:
    """The notes a shortened table still needs: those without a footnote number, and numbered
    ones (``[k] ...``) whose mark is in one of ``cells``."""
    marks = set(re.findall(r"\[(\d+)\]", " ".join(cells)))
    out = []
    for note in notes:
        m = re.match(r"\[(\d+)\]", note)
        if m is None or m.group(1) in marks:
            out.append(note)
    return out


def stack_groups(table: MdTable) -> tuple[MdTable, int, list[int]] | None:
    """The column groups of a wide table as blocks of rows: one row per (group, row), headed by
    the label columns, the ungrouped columns, ``group`` and the group's columns (the union over
    groups, in order; ``–`` where a group lacks one). This is the "split by dataset with a
    repeated header" layout of a paper's table, in one table.

    Returns:
        ``(stacked table, its label column count, index of the first row of each block)``, or
        None where the table has fewer than two groups.
    """
    labels = label_columns(table.header)
    groups = column_groups(table, labels)
    names = list(dict.fromkeys(g for g, _ in groups if g is not None))
    if len(names) < 2:
        return None
    own = [labels + j for j, (g, _) in enumerate(groups) if g is None]
    columns = list(dict.fromkeys(c for g, c in groups if g is not None))
    where = {(g, c): labels + j for j, (g, c) in enumerate(groups) if g is not None}
    header = table.header[:labels] + [table.header[j] for j in own] + ["group"] + columns
    rows, starts, marked = [], [], set()
    for name in names:
        starts.append(len(rows))
        for i, r in enumerate(table.rows):
            if i in table.marked:
                marked.add(len(rows))
            rows.append(r[:labels] + [r[j] for j in own] + [name] +
                        [r[where[(name, c)]] if (name, c) in where else "–" for c in columns])
    stacked = MdTable(table.title, header, rows, list(table.notes), marked)
    return stacked, labels + len(own) + 1, starts


def published_table(cells, title: str, run_cells=None) -> MdTable:
    """A paper's published table, laid out as printed: one row per (row group, row), one column
    per (column group, column), each cell the number as the paper prints it.

    Args:
        cells: the table's published cells (:func:`roundtrip.tables.published.read_published`
            rows: ``row_group``, ``row``, ``column_group``, ``column``, ``printed``).
        title: the heading.
        run_cells: this run's numbers for the same cells where it ran the paper's data and
            protocol (same columns; ``printed`` formatted as the paper's precision); their rows
            come first, the published rows after them, greyed (``marked``) and labelled
            ``(published)``.

    Returns:
        The table; grouped columns are headed ``column group: column`` (so a wide one stacks).
    """
    frames = [(run_cells, False)] if run_cells is not None and len(run_cells) else []
    frames.append((cells, bool(frames)))
    blocks = any((f["row_group"].fillna("") != "").any() for f, _ in frames)
    columns: list[tuple[str, str]] = []
    rows: list[tuple[tuple, dict]] = []
    for frame, published in frames:
        frame = frame.fillna("")
        index: dict[tuple, dict] = {}
        for _, c in frame.iterrows():
            key = (c["row_group"], c["row"] + (" (published)" if published else ""), published)
            if key not in index:
                index[key] = {}
                rows.append((key, index[key]))
            col = (c["column_group"], c["column"])
            if col not in columns:
                columns.append(col)
            index[key][col] = str(c["printed"])
    header = (["block", "row"] if blocks else ["row"]) + [
        f"{g}: {c}" if g else c for g, c in columns]
    body, marked = [], set()
    for (group, row, published), values in rows:
        if published:
            marked.add(len(body))
        body.append(([group] if blocks else []) + [row] +
                    [values.get(col, "–") for col in columns])
    return MdTable(title, header, body, [], marked)
