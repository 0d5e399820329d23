"""What each section of the report holds: its tables (by name), its figures, and a short
definition of each metric with the paper and section it comes from. The sections come from the
registered evaluations (:meth:`roundtrip.workflow.plan.Plan.report_sections`)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """One evaluation's part of the report.

    Attributes:
        key: evaluation key; title: heading; paper: the paper it reproduces.
        name: the evaluation's name on the front page (what ran, what did not).
        tables: table-name prefixes (or full names) its body shows, in order.
        columns: table name -> the column names the body shows of it (the table appears whole
            in the appendix).
        all_tables: every table the evaluation wrote in this run; those the body does not show
            whole go to the appendix.
        figures: figure paths under ``results/figures/`` (``*`` patterns allowed), in order.
        definitions: ``(metric, definition, source)`` rows.
    """
    key: str
    title: str
    paper: str
    tables: tuple[str, ...]
    figures: tuple[str, ...] = ()
    columns: dict = field(default_factory=dict)
    all_tables: tuple[str, ...] = ()
    definitions: tuple[tuple[str, str, str], ...] = field(default=())
    name: str = ""


def tables_of(section: Section, available: list[str]) -> list[str]:
    """The available table names the section shows, in the section's order."""
    out = []
    for key in section.tables:
        out += [t for t in available if (t == key or (key.endswith("_") and t.startswith(key)))
                and t not in out]
    return out


def appendix_tables(section: Section, available: list[str]) -> list[str]:
    """The section's tables the appendix shows whole: those its body leaves out, and those the
    body shows only some columns of."""
    body = tables_of(section, available)
    return [t for t in section.all_tables if t in available
            and (t not in body or t in section.columns)]
