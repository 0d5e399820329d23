"""Why items were not scored, in one line: the footnotes of every evaluation's tables.

Each table counts a label per failed item (``"error: timeout"``, ``"unsupported"``, a reason's
first word, ...) and prints the most common ones with their counts. The evaluations differ only
in how many they print, whether a count is shown, and whether the rest is summed up; those are
the parameters of :func:`summarize_reasons`, and each table keeps its own choice, because a
changed footnote is a changed table.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

#: When a label's count is printed as `` (Nx)``.
COUNTS = ("repeated", "always", "never")


def summarize_reasons(labels: Iterable[str], top: int = 3, counts: str = "repeated",
                      tail: bool = False) -> str:
    """The ``top`` most common ``labels``, most frequent first, joined by ``"; "``.

    Ties keep the order in which the labels first occur (``Counter.most_common``).

    Args:
        labels: one label per failed item (strings).
        top: how many distinct labels to print.
        counts: ``"repeated"``: ``"label (Nx)"`` for a label seen more than once, the bare label
            otherwise; ``"always"``: ``"label (Nx)"`` also for N = 1; ``"never"``: the labels alone.
        tail: append ``"; and N other reasons"`` when more than ``top`` distinct labels occur.

    Returns:
        The summary; ``""`` when ``labels`` is empty.

    Raises:
        ValueError: ``counts`` is not one of :data:`COUNTS`.
    """
    if counts not in COUNTS:
        raise ValueError(f"counts must be one of {COUNTS}, not {counts!r}")
    found = Counter(labels)
    parts = []
    for label, n in found.most_common(top):
        show = counts == "always" or (counts == "repeated" and n > 1)
        parts.append(f"{label} ({n}x)" if show else label)
    more = len(found) - top
    return "; ".join(parts) + (f"; and {more} other reasons" if tail and more > 0 else "")


def counted(count: int, total: int, what: str, labels: Iterable[str] = (), top: int = 2,
            counts: str = "always") -> str:
    """A footnote that counts items of one kind: ``"3 of 20 answers are errors: connection error
    (2x); timed out (1x)"``, the most common ``labels`` after a colon
    (:func:`summarize_reasons` with ``top`` and ``counts``), the bare count without labels.

    Args:
        count: items of the kind (>= 0).
        total: items the cell is over (>= ``count``).
        what: what the items are, after the count (``"answers are errors"``).
        labels: one label per item of the kind.

    Raises:
        ValueError: ``counts`` is not one of :data:`COUNTS`.
    """
    why = summarize_reasons(labels, top=top, counts=counts)
    return f"{count} of {total} {what}" + (f": {why}" if why else "")
