"""Items that failed, and models far slower at one input size, per (model, dataset), in one line
each: what the end of a run prints, what ``results/summary.rst`` and page 1 of the report say.

A reconstruction job records every item in ``status.csv`` (``item_id, status, reason, ...``,
:mod:`roundtrip.core.manifest`): ``ok``, ``unsupported`` (the protocol's size is not one a
fixed-size model takes: expected, not a failure) or ``error`` (the model or a file failed). The
tables count failed items in footnotes; this module puts them where a user looks first.
"""
from __future__ import annotations

import math
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
    for (model, dataset), status in _status_frames(status_files):
        if "status" not in status:
            continue
        errors = status[status["status"] == "error"]
        if errors.empty:
            continue
        reasons = errors["reason"] if "reason" in errors else pd.Series(["no reason recorded"])
        out.append(Failures(model, dataset, len(errors), len(status),
                            summarize_reasons(reasons.tolist(), top=TOP_REASONS, tail=True)))
    return out


#: A model is slow at an input size when its items there take this many times longer per pixel
#: than at another size of the same set...
SLOW_RATIO = 10.0
#: ... and at least this many seconds each (median): a model that is fast everywhere is not
#: named for timer noise.
SLOW_SECONDS = 1.0


@dataclass(frozen=True)
class Slowness:
    """A (model, dataset) whose items take far longer at one input size than at another.

    Attributes:
        model, dataset: the names in the config.
        slow_size, fast_size: model input sizes ``HxW`` (``status.csv``'s ``size``).
        slow_seconds, fast_seconds: median seconds per item at each (``status.csv``'s
            ``seconds``: the item's share of its batch's time in the model).
        ratio: how many times longer per pixel at ``slow_size``.
        items: items at ``slow_size``.
    """
    model: str
    dataset: str
    slow_size: str
    slow_seconds: float
    fast_size: str
    fast_seconds: float
    ratio: float
    items: int

    def line(self) -> str:
        """``"my_vae on photos: 3 items of 512x512 took 20.1 s each (median), 400x longer per
        pixel than at 256x256 (0.013 s): models.my_vae.item_timeout_s sets a limit"``."""
        return (f"{self.model} on {self.dataset}: {self.items} item"
                f"{'s' if self.items != 1 else ''} of {self.slow_size} took "
                f"{self.slow_seconds:.1f} s each (median), {self.ratio:.0f}x longer per pixel "
                f"than at {self.fast_size} ({self.fast_seconds:.3f} s): "
                f"models.{self.model}.item_timeout_s sets a limit")


def read_slowness(status_files: dict[tuple[str, str], str | Path]) -> list[Slowness]:
    """The (model, dataset) pairs of ``status_files`` whose items at one input size take at
    least :data:`SLOW_RATIO` times longer per pixel than at another size and at least
    :data:`SLOW_SECONDS` each (medians per size over the items with a recorded time); files
    without ``seconds`` and ``size`` columns (volumes, an earlier version) are passed over."""
    out = []
    for (model, dataset), status in _status_frames(status_files):
        if not {"seconds", "size"} <= set(status.columns):
            continue
        timed = status.assign(seconds=pd.to_numeric(status["seconds"], errors="coerce"))
        timed = timed[(timed["seconds"] > 0) & timed["size"].str.fullmatch(r"\d+x\d+")]
        if timed["size"].nunique() < 2:
            continue
        per_size = timed.groupby("size")["seconds"].agg(["median", "size"])
        pixels = [math.prod(int(v) for v in s.split("x")) for s in per_size.index]
        per_pixel = per_size["median"] / pixels
        slow, fast = per_pixel.idxmax(), per_pixel.idxmin()
        ratio = float(per_pixel[slow] / per_pixel[fast])
        if ratio >= SLOW_RATIO and per_size.loc[slow, "median"] >= SLOW_SECONDS:
            out.append(Slowness(model, dataset, slow, float(per_size.loc[slow, "median"]), fast,
                                float(per_size.loc[fast, "median"]), ratio,
                                int(per_size.loc[slow, "size"])))
    return out


def _status_frames(status_files: dict[tuple[str, str], str | Path]):
    """``((model, dataset), frame)`` of every readable status file, its cells as strings;
    missing or unreadable files are passed over (a job that did not run has its own message
    from Snakemake)."""
    for key, path in status_files.items():
        try:
            yield key, pd.read_csv(path, dtype=str, keep_default_na=False)
        except (OSError, ValueError):
            continue
