"""Tables for the PDF: read back from the Markdown files the table engine writes (formatted
cells, confidence intervals, footnote marks and notes as the reader sees them), and split by
columns where they are wider than the page, the label columns repeated in every part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: Column headers that label rows; repeated in every part of a split table.
LABEL_HEADERS = {"model", "dataset", "reader", "chain", "direction", "backbone", "generation",
                 "form", "modality", "kind", "engine", "item"}


@dataclass
class MdTable:
    """A table as written to ``results/tables/{name}.md``."""
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


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
