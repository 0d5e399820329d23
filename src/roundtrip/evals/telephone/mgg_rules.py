"""MGG's verdict rules as the authors' released code applies them (The Telephone Game, Sec. 3.3;
the authors' released code, github.com/mollahsabbir/Semantic-Drift-in-Unified-Models @ 4f1d253,
``semantic-drift/mgg.py``, functions ``evaluate_image`` and ``relative_position``), the code that
produced Figs. 8 and 11. They read GenEval's metadata (``tag``, ``include``, ``exclude``) but
differ from GenEval's own rules (:func:`roundtrip.metrics.geneval.score_prompt`):

- **Queries.** One OWLv2 query per ``include`` entry, ``a photo of a [<color> ]<class>``: the
  colour is part of the query and no classifier checks it (GenEval: one query per class, CLIP
  colour on the object's crop). A detection of query ``i`` is an object of entry ``i``'s class.
- **Counts.** Every detection of the class with a score >= the threshold counts; an entry is met
  by at least ``count`` of them (GenEval: the ``count`` most confident are the entry's objects).
- **Position.** *Every* counted box of the entry must stand in the relation to *some* counted
  box of the target entry; a relation is read from the :func:`~roundtrip.metrics.geneval
  .shrunk_offset` in pixels against 0.5 (GenEval divides by the offset's length first, so the
  relation's axis must carry most of the offset). "A cat above a dog" far to its side is above
  here, not in GenEval.
- **Exclude.** Counts the detections of its class among the queried (``include``) classes: an
  excluded class that no ``include`` entry names is never detected, so never fails.

No file I/O; metadata and detections in, verdicts out.
"""
from __future__ import annotations

from roundtrip.metrics.geneval import POSITION_THRESHOLD, Detection, relations_of, shrunk_offset

#: The released code's detection threshold (``--threshold``, default 0.1).
THRESHOLD = 0.1
#: The released code's OWLv2 query template.
QUERY = "a photo of a {}"


def queries_of(metadata: dict) -> list[str]:
    """The detector queries, one per ``include`` entry, in order: ``a photo of a <class>``, or
    ``a photo of a <color> <class>`` when the entry has a colour.

    Raises:
        KeyError: an include entry without ``class``.
    """
    out = []
    for req in metadata.get("include", []):
        name = f"{req['color']} {req['class']}" if "color" in req else req["class"]
        out.append(QUERY.format(name))
    return out


def query_classes(metadata: dict) -> list[str]:
    """The class a detection of each query (:func:`queries_of`) is an object of."""
    return [req["class"] for req in metadata.get("include", [])]


def pixel_relations(a: tuple, b: tuple, threshold: float = POSITION_THRESHOLD) -> set[str]:
    """Relations of box ``a`` to box ``b`` as the released code reads them: the shrunk centre
    offset (:func:`~roundtrip.metrics.geneval.shrunk_offset`), in pixels, against 0.5 per axis.

    Args:
        a, b: ``(x0, y0, x1, y1)`` boxes in pixels (y downwards).
        threshold: share of the summed widths (heights) removed from the x (y) offset.

    Returns:
        A subset of ``{"left of", "right of", "above", "below"}``.
    """
    _, (dx, dy) = shrunk_offset(a, b, threshold)
    return relations_of(dx, dy)


def verdict(metadata: dict, detections: list[Detection], threshold: float = THRESHOLD
            ) -> tuple[bool, str]:
    """The released code's MGG verdict for one image.

    Args:
        metadata: ``{tag, include, exclude?}`` of the prompt (GenEval's format).
        detections: what the detector returned for :func:`queries_of` (the detector keeps scores
            above its threshold), each labelled with its query's class (:func:`query_classes`);
            boxes in pixels.
        threshold: detections of a lower score do not count towards an ``include`` entry
            (``exclude`` counts every detection of its class, as the released code does).

    Returns:
        ``(correct, reason)``: the reasons of every rule that failed, ``"; "``-joined ("" when
        correct).

    Raises:
        KeyError: an include entry without ``class``; IndexError: a position naming an entry
            that does not exist.
    """
    by_class: dict[str, list[Detection]] = {}
    for d in detections:
        by_class.setdefault(d.label, []).append(d)
    reasons: list[str] = []
    groups: list[list[tuple] | None] = []
    for req in metadata.get("include", []):
        cls, count = req["class"], int(req.get("count", 1))
        found = by_class.get(cls, [])
        # the released code matches each box to the detections by value and keeps it when any
        # detection with that very box scores enough
        strong = {tuple(d.box) for d in found if d.score >= threshold}
        boxes = [d.box for d in found if tuple(d.box) in strong]
        if len(boxes) < count:
            reasons.append(f"expected {count} {cls} scoring >= {threshold:g}, found {len(boxes)}")
            groups.append(None)
            continue
        if "position" in req:
            relation, index = req["position"]
            target = groups[index]
            if not target:
                reasons.append(f"no {relation} target for {cls}")
            elif not all(any(relation in pixel_relations(a, b) for b in target) for a in boxes):
                reasons.append(f"a {cls} is not {relation} any target")
        groups.append(boxes)
    for req in metadata.get("exclude", []):
        cls, count = req["class"], int(req.get("count", 999))
        n = len(by_class.get(cls, []))
        if n >= count:
            reasons.append(f"expected fewer than {count} {cls}, found {n}")
    return not reasons, "; ".join(reasons)
