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
        tables: table-name prefixes (or full names) it shows, in order.
        figures: figure paths under ``results/figures/`` (``*`` patterns allowed), in order.
        definitions: ``(metric, definition, source)`` rows.
    """
    key: str
    title: str
    paper: str
    tables: tuple[str, ...]
    figures: tuple[str, ...] = ()
    definitions: tuple[tuple[str, str, str], ...] = field(default=())


def tables_of(section: Section, available: list[str]) -> list[str]:
    """The available table names the section shows, in the section's order."""
    out = []
    for key in section.tables:
        out += [t for t in available if (t == key or (key.endswith("_") and t.startswith(key)))
                and t not in out]
    return out
