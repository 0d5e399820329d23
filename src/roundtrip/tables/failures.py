"""Items that failed, per (model, dataset), in one line each: what the end of a run prints, what
``results/summary.rst`` and page 1 of the report say.

A reconstruction job records every item in ``status.csv`` (``item_id, status, reason, ...``,
:mod:`roundtrip.core.manifest`): ``ok``, ``unsupported`` (the protocol's size is not one a
fixed-size model takes: expected, not a failure) or ``error`` (the model or a file failed). The
tables count failed items in footnotes; this module puts them where a user looks first.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from roundtrip.tables.reasons import summarize_reasons

#: How many distinct reasons a line names.
TOP_REASONS = 2


@dataclass(frozen=True)
class Failures:
    """Failed items of one (model, dataset).

    Attributes:
        model, dataset: the names in the config.
        failed: items with status ``error``.
        total: items in ``status.csv``.
        reasons: the most common reasons, with counts (:func:`summarize_reasons`).
    """
    model: str
    dataset: str
    failed: int
    total: int
    reasons: str

    def line(self) -> str:
        """``"my_vq on my_photos: 5 of 8 items failed: model returned 168x256 for 172x256: check
        models.my_vq.downsample (4) (5x)"``."""
        return (f"{self.model} on {self.dataset}: {self.failed} of {self.total} items failed: "
                f"{self.reasons}")


def read_failures(status_files: dict[tuple[str, str], str | Path]) -> list[Failures]:
    """The (model, dataset) pairs of ``status_files`` (``(model, dataset) -> status.csv``) with
    at least one failed item, in the given order; missing or unreadable files are passed over
    (a job that did not run has its own message from Snakemake).
    """
    out = []
    for (model, dataset), path in status_files.items():
        try:
            status = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (OSError, ValueError):
            continue
        if "status" not in status:
            continue
        errors = status[status["status"] == "error"]
        if errors.empty:
            continue
        reasons = errors["reason"] if "reason" in errors else pd.Series(["no reason recorded"])
        out.append(Failures(model, dataset, len(errors), len(status),
                            summarize_reasons(reasons.tolist(), top=TOP_REASONS, tail=True)))
    return out
