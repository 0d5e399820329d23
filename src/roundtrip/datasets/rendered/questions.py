"""Multiple-choice questions rendered at (font style, size) pairs (VISTA-Bench, Sec. 4 and App. B).

The questions (``questions:``) come from

- a JSONL file, one question per line: ``id``, ``question``, ``options`` (a list, lettered A, B,
  C, ... in order, or a ``{"A": ...}`` mapping; empty or absent for an open question),
  ``answer`` (a letter, or the answer text of an open question) and optional ``category``,
  ``subfield``, ``hint``, ``source`` (the benchmark it comes from); ``builtin`` is a sample
  shipped with roundtrip;
- a VLMEvalKit multiple-choice TSV (``*.tsv``; :func:`roundtrip.datasets.vista.load_mcq_tsv`),
  whose item images are kept beside the renders (``item_images/``);
- ``family``: ``count`` questions of the offline family with exactly computable answers
  (:mod:`roundtrip.readers.question_family`, seeded by ``seed``).

Each question is rendered once per (style, size) pair; every manifest row names its font and
size and keeps the pure-text prompt (``question_text``) for the text-only condition.

The pairs follow the paper's two sweeps by default (``grid: paper``): sizes vary in Arial, styles
vary at 16 pt; ``grid: full`` renders every style at every size.

Besides the sweeps, every question gets one *Table 1 render* (``table1`` column ``1``): the
benchmark proper renders each question once, in a (font, size) drawn from the release's
distribution (App. B.2, Table 5), and Table 1 scores that one render per question. The
assignment (:func:`table1_assignment`) meets Table 5's shares as closely as the number of
questions allows (largest remainders; 1,500 questions give Table 5's counts exactly), shuffled
with ``seed``. With ``table1: table5`` (default) a pair outside the sweep grid is rendered for
that question only; ``table1: grid`` draws from Table 5 restricted to the grid's pairs.
"""
from __future__ import annotations

import json
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from roundtrip.render import RenderItem, RenderSettings, render_items, resolve_font

from roundtrip.datasets.vista import (
    QuestionError,
    load_mcq_tsv,
    prompt_text,
    question_extra,
    question_id,
)
from roundtrip.readers.question_family import generate

BUILTIN, FAMILY = "builtin", "family"

#: ``table1`` modes: ``table5`` draws each question's Table 1 render from all of Table 5 (pairs
#: outside the sweeps are rendered for it); ``grid`` from Table 5 restricted to the sweep pairs
#: (no extra renders, so a set that also feeds other tables keeps its items).
TABLE1_MODES = ("table5", "grid")
#: VISTA-Bench App. B.2, Table 5: renders of the release per (font style, size in pt); 1,500 in
#: all. Styles by roundtrip's names (arial, times = Times New Roman, cambria, brush = Brush
#: Script MT).
TABLE5_COUNTS: dict[tuple[str, float], int] = {
    ("arial", 9): 136, ("times", 9): 134, ("cambria", 9): 106, ("brush", 9): 186,
    ("arial", 16): 102, ("times", 16): 97, ("cambria", 16): 63, ("brush", 16): 133,
    ("arial", 32): 91, ("times", 32): 63, ("cambria", 32): 72, ("brush", 32): 84,
    ("arial", 48): 56, ("times", 48): 47, ("cambria", 48): 54, ("brush", 48): 76,
}


def table1_assignment(n: int, seed: int = 0, within: list | None = None
                      ) -> list[tuple[str, float]]:
    """One (style, size) per question, distributed as VISTA-Bench Table 5 (App. B.2).

    Args:
        n: number of questions (>= 0).
        seed: shuffles which question gets which pair.
        within: restrict Table 5 to these (style, size) pairs (its counts renormalised over
            them); None: all 16 pairs of Table 5.

    Returns:
        ``n`` pairs; pair ``p`` occurs ``floor(n * share_p)`` times plus one for the pairs with
        the largest remainders (ties in Table 5's order), so the counts sum to ``n`` and equal
        Table 5's for ``n = 1500``.

    Raises:
        ValueError: ``n`` is negative, or ``within`` holds no pair of Table 5.
    """
    import random

    if n < 0:
        raise ValueError(f"number of questions must be >= 0, got {n}")
    keep = None if within is None else {(st, float(sz)) for st, sz in within}
    weights = {p: c for p, c in TABLE5_COUNTS.items() if keep is None or p in keep}
    if not weights:
        raise ValueError(f"table1: grid: none of the rendered pairs {sorted(keep)} is a "
                         "(font, size) of VISTA-Bench Table 5; use table1: table5")
    total = sum(weights.values())
    exact = [(p, n * c / total) for p, c in weights.items()]
    counts = {p: int(x) for p, x in exact}
    left = n - sum(counts.values())
    by_remainder = sorted(range(len(exact)), key=lambda i: -(exact[i][1] - int(exact[i][1])))
    for i in by_remainder[:left]:
        counts[exact[i][0]] += 1
    out = [p for p, c in counts.items() for _ in range(c)]
    random.Random(seed).shuffle(out)
    return out


@dataclass(frozen=True)
class QuestionsSpec:
    """Config of a ``vista_questions`` dataset (see module docstring)."""
    questions: str = BUILTIN
    styles: tuple[str, ...] = ("arial", "times", "cambria", "brush")
    sizes: tuple[float, ...] = (9, 16, 32, 48, 64)  # the size sweep of Sec. 2, Fig. 3
    grid: str = "paper"
    style_sweep_pt: float = 16
    size_sweep_style: str = "arial"
    limit: int | None = None
    count: int = 4
    seed: int = 0
    table1: str = "table5"


def pairs(spec: QuestionsSpec) -> list[tuple[str, float]]:
    """(style, size) pairs to render, without duplicates, in a stable order."""
    if spec.grid == "full":
        out = [(st, sz) for st in spec.styles for sz in spec.sizes]
    else:
        out = [(spec.size_sweep_style, sz) for sz in spec.sizes]
        out += [(st, spec.style_sweep_pt) for st in spec.styles]
    seen, unique = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    return unique


def load_questions(source: str, limit: int | None = None, count: int = 4, seed: int = 0
                   ) -> list[dict | QuestionError]:
    """Questions from ``source`` (module docstring): ``builtin``, ``family`` (``count``
    questions, ``seed``), a ``.tsv`` or a JSONL file.

    Returns:
        One entry per question: a dict with ``options`` as ``[(letter, text)]`` (see
        :mod:`roundtrip.datasets.vista`), or a :class:`QuestionError` for a line or row that
        cannot be used (the run records it per item).

    Raises:
        FileNotFoundError: the file does not exist.
    """
    if source == FAMILY:
        return generate(limit or count, seed)
    if str(source).lower().endswith(".tsv"):
        return load_mcq_tsv(source, limit)
    if source == BUILTIN:
        text = resources.files(__package__).joinpath("data", "vista_questions.jsonl").read_text(
            encoding="utf-8")
    else:
        text = Path(source).read_text(encoding="utf-8")
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(_question(json.loads(line), n))
        except (json.JSONDecodeError, QuestionError) as exc:
            out.append(QuestionError(f"line {n}: {exc}"))
        if limit and len(out) >= limit:
            break
    return out


def _question(q: dict, n: int) -> dict:
    if not isinstance(q, dict):
        raise QuestionError("not a JSON object")
    missing = [k for k in ("id", "question") if k not in q]
    if missing:
        raise QuestionError(f"missing {missing}")
    opts = q.get("options") or []
    if isinstance(opts, dict):
        opts = sorted(opts.items())
    elif isinstance(opts, list):
        opts = list(zip(string.ascii_uppercase, opts))
    else:
        raise QuestionError("options must be a list or a {letter: text} object")
    answer = str(q.get("answer", "")).strip()
    if not opts and not answer:
        raise QuestionError("an open question (no options) needs its answer")
    if opts and answer and answer not in dict(opts):
        raise QuestionError(f"answer {answer!r} is not one of the options")
    qid = question_id(q["id"])
    return {"id": qid, "question": str(q["question"]), "options": [(k, str(v)) for k, v in opts],
            "answer": answer, "category": str(q.get("category", "")),
            "subfield": str(q.get("subfield", "")), "hint": str(q.get("hint", "")),
            "source": str(q.get("source", "")), "images": []}


def build_questions(spec: QuestionsSpec, settings: RenderSettings) -> list:
    """Render every question at every pair, and at its Table 1 pair when that is not one.

    Returns:
        ``roundtrip.datasets.Item`` list, item id ``{question id}__{style}_{size}pt``; images
        ``(H, width, 3)`` uint8 (height follows the text); ``extra``: ``text`` (ground truth),
        ``lang`` (eng), ``font``, ``font_family``, ``font_size_pt``, ``table1`` (``1`` for the
        question's Table 1 render, module docstring) and the question's columns
        (:func:`roundtrip.datasets.vista.question_extra`: ``question_id``, ``question_text``,
        ``answer``, ``category``, ``subfield``, ``hint``, ``options``), and ``_images``, the
        item's own pictures (written by :func:`roundtrip.datasets.vista.write_item_images`).
        A question that cannot be rendered is an error item per pair, with the reason.

    Raises:
        UnknownFont: a configured style is not mapped.
    """
    import numpy as np

    from roundtrip.core.manifest import Item

    grid = pairs(spec)
    for style, _ in grid:
        resolve_font(style)
    questions = load_questions(spec.questions, spec.limit, spec.count, spec.seed)
    if spec.table1 not in TABLE1_MODES:
        raise ValueError(f"table1: {spec.table1!r} is not one of {TABLE1_MODES}")
    assigned = table1_assignment(len(questions), spec.seed,
                                 grid if spec.table1 == "grid" else None)
    for style, _ in assigned:
        resolve_font(style)
    render, meta = [], []
    for k, q in enumerate(questions):
        chosen = (assigned[k][0], float(assigned[k][1]))
        own = grid + ([chosen] if chosen not in {(st, float(sz)) for st, sz in grid} else [])
        for style, size in own:
            tag = f"{style}_{size:g}pt"
            table1 = "1" if (style, float(size)) == chosen else "0"
            if isinstance(q, QuestionError):
                meta.append((f"line{k + 1:04d}__{tag}", None, style, size, str(q), table1))
                continue
            item_id = f"{q['id']}__{tag}"
            meta.append((item_id, q, style, size, "", table1))
            render.append(RenderItem(item_id, prompt_text(q), style=style, size_pt=size))
    results = {r.item_id: r for r in render_items(render, settings)}
    items = []
    for item_id, q, style, size, error, table1 in meta:
        extra = {"lang": "eng", "font": style, "font_family": resolve_font(style).family,
                 "font_size_pt": size, "table1": table1}
        if q is not None:
            extra |= question_extra(q) | {"_images": q.get("images") or []}
        r = results.get(item_id)
        if error or r is None or r.error:
            items.append(Item(item_id, "xelatex", reason=error or (r.error if r else "not run"),
                              extra=extra))
            continue
        items.append(Item(item_id, "xelatex", image=np.repeat(r.image[..., None], 3, axis=2),
                          extra=extra | {"text": r.text}))
    return items
