"""Multiple-choice questions rendered at (font style, size) pairs (VISTA-Bench, Sec. 4 and App. B).

The questions (``questions:``) come from

- a JSONL file, one question per line: ``id``, ``question``, ``options`` (a list, lettered A, B,
  C, ... in order, or a ``{"A": ...}`` mapping; empty or absent for an open question),
  ``answer`` (a letter, or the answer text of an open question) and optional ``category``,
  ``subfield``, ``hint``; ``builtin`` is a sample shipped with roundtrip;
- a VLMEvalKit multiple-choice TSV (``*.tsv``; :func:`roundtrip.datasets.vista.load_mcq_tsv`),
  whose item images are kept beside the renders (``item_images/``);
- ``family``: ``count`` questions of the offline family with exactly computable answers
  (:mod:`roundtrip.readers.question_family`, seeded by ``seed``).

Each question is rendered once per (style, size) pair; every manifest row names its font and
size and keeps the pure-text prompt (``question_text``) for the text-only condition.

The pairs follow the paper's two sweeps by default (``grid: paper``): sizes vary in Arial, styles
vary at 16 pt; ``grid: full`` renders every style at every size.
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


@dataclass(frozen=True)
class QuestionsSpec:
    """Config of a ``vista_questions`` dataset (see module docstring)."""
    questions: str = BUILTIN
    styles: tuple[str, ...] = ("arial", "times", "cambria", "brush")
    sizes: tuple[float, ...] = (9, 16, 32, 48)
    grid: str = "paper"
    style_sweep_pt: float = 16
    size_sweep_style: str = "arial"
    limit: int | None = None
    count: int = 4
    seed: int = 0


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
            "subfield": str(q.get("subfield", "")), "hint": str(q.get("hint", "")), "images": []}


def build_questions(spec: QuestionsSpec, settings: RenderSettings) -> list:
    """Render every question at every pair.

    Returns:
        ``roundtrip.datasets.Item`` list, item id ``{question id}__{style}_{size}pt``; images
        ``(H, width, 3)`` uint8 (height follows the text); ``extra``: ``text`` (ground truth),
        ``lang`` (eng), ``font``, ``font_family``, ``font_size_pt`` and the question's columns
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
    render, meta = [], []
    for k, q in enumerate(questions):
        for style, size in grid:
            tag = f"{style}_{size:g}pt"
            if isinstance(q, QuestionError):
                meta.append((f"line{k + 1:04d}__{tag}", None, style, size, str(q)))
                continue
            item_id = f"{q['id']}__{tag}"
            meta.append((item_id, q, style, size, ""))
            render.append(RenderItem(item_id, prompt_text(q), style=style, size_pt=size))
    results = {r.item_id: r for r in render_items(render, settings)}
    items = []
    for item_id, q, style, size, error in meta:
        extra = {"lang": "eng", "font": style, "font_family": resolve_font(style).family,
                 "font_size_pt": size}
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
