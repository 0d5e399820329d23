"""GenEval's scoring rules on detections (Ghosh et al. 2023, Sec. 3; used per generation by
The Telephone Game's Multi-Generation GenEval, UCF-UM Sec. 3.3).

A prompt's metadata (GenEval's ``evaluation_metadata.jsonl``) is ``tag`` (the task), ``include``
(a list of ``{class, count, color?, position?: [relation, index]}``) and ``exclude`` (a list of
``{class, count}``). An image is correct when, for each include entry in order:

- at least ``count`` objects of the class are detected (the most confident ``count`` are the
  entry's objects);
- with ``color``: exactly ``count`` of those objects are classified as that colour;
- with ``position``: each of the entry's objects stands in ``relation`` (``left of``,
  ``right of``, ``above``, ``below``) to every object of the include entry at ``index``;

and, for each exclude entry, fewer than ``count`` objects of the class are detected (counting
prompts carry ``exclude: count + 1``, which makes the count exact).

:func:`relative_position` follows GenEval's rule: centres compared after shrinking the offset by
0.1 of the summed box sizes per axis, the remaining offset normalized, and a relation kept when
its component exceeds 0.5 in magnitude. No file I/O; detections in, verdicts out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The six GenEval tasks in UCF-UM Fig. 11's order: (a) single object, (b) two objects,
#: (c) counting, (d) positioning, (e) colors, (f) color attribute.
TASKS = ("single_object", "two_object", "counting", "position", "colors", "color_attr")
#: GenEval's colour names (CLIP zero-shot classes).
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
#: Share of the summed box sizes removed from the centre offset before reading a relation.
POSITION_THRESHOLD = 0.1


@dataclass(frozen=True)
class Detection:
    """One detected object.

    Attributes:
        label: class name, as in the prompt's metadata.
        score: detector confidence in [0, 1].
        box: ``(x0, y0, x1, y1)`` in pixels, y downwards.
        color: the colour classified on the object's crop (one of :data:`COLORS`), or None when
            no colour was asked for.
    """
    label: str
    score: float
    box: tuple[float, float, float, float]
    color: str | None = None


def shrunk_offset(a: tuple, b: tuple, threshold: float = POSITION_THRESHOLD
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The centre offset of box ``a`` from box ``b`` and the same offset shrunk towards 0 by
    ``threshold`` times the two boxes' summed size, per axis (GenEval's first step in reading a
    relation).

    Args:
        a, b: ``(x0, y0, x1, y1)`` boxes in pixels (y downwards).
        threshold: share of the summed widths (heights) removed from the x (y) offset.

    Returns:
        ``(offset, shrunk)``: float64 arrays ``[dx, dy]`` in pixels, ``a``'s centre minus
        ``b``'s; ``shrunk`` is ``max(|offset| - threshold * size, 0) * sign(offset)``.
    """
    ca = np.array([(a[0] + a[2]) / 2, (a[1] + a[3]) / 2])
    cb = np.array([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2])
    size = np.abs([a[2] - a[0], a[3] - a[1]]) + np.abs([b[2] - b[0], b[3] - b[1]])
    offset = ca - cb
    return offset, np.maximum(np.abs(offset) - threshold * size, 0) * np.sign(offset)


def relations_of(dx: float, dy: float, cut: float = 0.5) -> set[str]:
    """The relations an offset ``(dx, dy)`` (y downwards) reads as: each component beyond
    ``cut`` in magnitude names one (``left of``/``right of`` for x, ``above``/``below`` for y)."""
    out = set()
    if dx < -cut:
        out.add("left of")
    if dx > cut:
        out.add("right of")
    if dy < -cut:
        out.add("above")
    if dy > cut:
        out.add("below")
    return out


def relative_position(a: tuple, b: tuple, threshold: float = POSITION_THRESHOLD) -> set[str]:
    """Relations of box ``a`` to box ``b`` (GenEval): a subset of ``{"left of", "right of",
    "above", "below"}``; empty when the boxes overlap too much to tell.

    The :func:`shrunk_offset` divided by the length of the unshrunk offset, each component read
    against 0.5 (:func:`relations_of`): a relation needs its axis to carry most of the offset.

    Args:
        a, b: ``(x0, y0, x1, y1)`` boxes in pixels (y downwards).
        threshold: share of the summed widths (heights) removed from the x (y) offset.
    """
    offset, revised = shrunk_offset(a, b, threshold)
    if np.all(np.abs(revised) < 1e-3):
        return set()
    dx, dy = revised / np.linalg.norm(offset)
    return relations_of(dx, dy)


def score_prompt(metadata: dict, detections: list[Detection]) -> tuple[bool, str]:
    """GenEval's verdict for one image.

    Args:
        metadata: ``{tag, include, exclude?}`` of the prompt (GenEval's format).
        detections: the image's detections above the detector threshold (any order).

    Returns:
        ``(correct, reason)``: the reason names the first rule that failed ("" when correct).

    Raises:
        KeyError: an include entry without ``class``.
    """
    by_class: dict[str, list[Detection]] = {}
    for d in sorted(detections, key=lambda d: -d.score):
        by_class.setdefault(d.label, []).append(d)
    groups: list[list[Detection] | None] = []
    for req in metadata.get("include", []):
        cls, count = req["class"], int(req.get("count", 1))
        found = by_class.get(cls, [])[:count]
        if len(found) < count:
            return False, f"expected {count} {cls}, found {len(found)}"
        if "color" in req:
            hits = sum(d.color == req["color"] for d in found)
            if hits != count:
                seen = ", ".join(str(d.color) for d in found)
                return False, f"expected {count} {req['color']} {cls}, colours found: {seen}"
        if "position" in req:
            relation, index = req["position"]
            target = groups[index] if index < len(groups) else None
            if not target:
                return False, f"no target object for '{cls} {relation}'"
            for d in found:
                for t in target:
                    if relation not in relative_position(d.box, t.box):
                        return False, f"{cls} is not {relation} {t.label}"
        groups.append(found)
    for req in metadata.get("exclude", []):
        cls, count = req["class"], int(req["count"])
        n = len(by_class.get(cls, []))
        if n >= count:
            return False, f"expected fewer than {count} {cls}, found {n}"
    return True, ""


def task_accuracies(tags: list[str], correct: list[bool]) -> dict[str, float]:
    """Accuracy per task and the two overall scores of one generation.

    ``overall`` is GenEval's: the unweighted mean of the task accuracies present.
    ``overall_prompts`` is the accuracy over all prompts (what the authors' MGG code prints).

    Returns:
        task -> accuracy in [0, 1] (tasks without prompts are absent), plus ``overall`` and
        ``overall_prompts`` (NaN without prompts).

    Raises:
        ValueError: lists of different lengths.
    """
    if len(tags) != len(correct):
        raise ValueError(f"{len(tags)} tags but {len(correct)} verdicts")
    out: dict[str, float] = {}
    for tag in dict.fromkeys(tags):
        values = [c for t, c in zip(tags, correct) if t == tag]
        out[tag] = float(np.mean(values))
    tasks = [v for k, v in out.items()]
    out["overall"] = float(np.mean(tasks)) if tasks else math.nan
    out["overall_prompts"] = float(np.mean(correct)) if correct else math.nan
    return out
