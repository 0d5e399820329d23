"""Question sets of VISTA-Bench: the release TSV and VLMEvalKit's multiple-choice TSVs.

Two formats are read as they are:

- **the VISTA-Bench release** (dataset type ``vista_release``): a TSV with ``index, question,
  hint, A``…``H, answer, image, question_image, question_type, category, subfield, source,
  font, size``, beside ``images/`` and ``questions/`` folders. ``question_image`` is the rendered
  question (the manifest's image); ``image`` the item's own picture, empty or ``nan`` for
  unimodal items. Both may be paths (relative to the TSV's folder) or base64.
- **VLMEvalKit's MCQ TSVs** (MMBench style; ``questions: my.tsv`` of a ``vista_questions`` set):
  ``index, image`` (base64) or ``image_path, question, hint, A``…, ``answer, category,
  l2-category, split``. An ``image`` of a few characters names the ``index`` of the row whose
  image it shares (as MMBench stores repeated images). Their questions are rendered by our
  renderer at every configured (style, size).

Rows without any option are open questions (scored by exact match). A row that cannot be used
(no question, an answer that is not an option, an undecodable image) becomes a
:class:`~roundtrip.datasets.rendered.questions.QuestionError` naming the row: one item is lost,
not the set.

Every question dict has ``id, question, hint, options [(letter, text)], answer, category,
subfield, source`` (the source benchmark, ``""`` when unknown), ``images`` (a list of
``(H, W, 3)`` arrays, the item's own pictures).
"""
from __future__ import annotations

import ast
import base64
import binascii
import json
import logging
import re
import string
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import ImageReadError, decode_image, read_image, write_png

log = logging.getLogger(__name__)

LETTERS = tuple(string.ascii_uppercase[:8])  # A..H
_MISSING = {"", "nan", "none", "null"}


class QuestionError(ValueError):
    """A question that cannot be used (the message names the line or row)."""


def question_id(value, fallback: str = "") -> str:
    """A question's id as item ids carry it: runs of characters other than letters, digits,
    ``_`` and ``-`` become ``_``; ``fallback`` when nothing is left."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(value).strip()) or fallback


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) \
        or str(value).strip().lower() in _MISSING


def read_tsv(path: str | Path) -> pd.DataFrame:
    """A TSV as strings (nothing parsed as numbers or NaN), so that ids and answers stay as
    written.

    Raises:
        FileNotFoundError: no such file; ValueError: not a TSV with an ``index`` and a
            ``question`` column.
    """
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in ("index", "question") if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a question TSV: no column {missing}")
    return df


def _decode(value: str, base: Path, what: str) -> np.ndarray:
    """An image given as a path (relative to ``base``) or as base64."""
    value = value.strip()
    candidate = Path(value) if len(value) < 1024 else None
    if candidate is not None and not candidate.is_absolute():
        candidate = base / candidate
    if candidate is not None and candidate.is_file():
        return read_image(candidate)
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise QuestionError(f"{what}: neither a file under {base} nor base64") from exc
    try:
        return decode_image(data, what)
    except ImageReadError as exc:
        raise QuestionError(f"{what}: {exc}") from exc


def _image_values(value: str) -> list[str]:
    """One or several images in a cell (VLMEvalKit writes several as a Python list literal)."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        try:
            parsed = ast.literal_eval(value)
            return [str(v) for v in parsed]
        except (ValueError, SyntaxError):
            pass
    return [value]


def _options(row: dict) -> list[tuple[str, str]]:
    return [(k, str(row[k]).strip()) for k in LETTERS if k in row and not _blank(row[k])]


def _row_question(row: dict, n: int, base: Path, images_by_index: dict[str, str],
                  image_columns: tuple[str, ...]) -> dict:
    """One question from a TSV row (shared by both formats)."""
    qid = question_id(row.get("index", ""), f"row{n}")
    question = str(row.get("question", "")).strip()
    if not question:
        raise QuestionError(f"row {n} (index {qid}): no question")
    options = _options(row)
    answer = str(row.get("answer", "")).strip()
    if options and answer not in dict(options):
        raise QuestionError(f"row {n} (index {qid}): answer {answer!r} is not one of the "
                            f"options {[k for k, _ in options]}")
    if not options and not answer:
        raise QuestionError(f"row {n} (index {qid}): an open question without an answer")
    images = []
    for col in image_columns:
        value = row.get(col, "")
        if _blank(value):
            continue
        for k, v in enumerate(_image_values(str(value))):
            if len(v) <= 64 and v in images_by_index and col == "image":  # MMBench reference
                v = images_by_index[v]
            images.append(_decode(v, base, f"row {n} (index {qid}) {col}[{k}]"))
    hint = "" if _blank(row.get("hint")) else str(row["hint"]).strip()
    category = str(row.get("category", "")).strip()
    subfield = str(row.get("subfield") or row.get("l2-category") or "").strip()
    source = "" if _blank(row.get("source")) else str(row["source"]).strip()
    return {"id": qid, "question": question, "hint": hint, "options": options, "answer": answer,
            "category": category, "subfield": subfield, "source": source, "images": images}


def load_mcq_tsv(path: str | Path, limit: int | None = None) -> list[dict | QuestionError]:
    """Questions of a VLMEvalKit multiple-choice TSV (module docstring).

    Returns:
        One question dict or :class:`QuestionError` per row, in file order.

    Raises:
        FileNotFoundError, ValueError: the file is missing or not a question TSV.
    """
    path = Path(path)
    df = read_tsv(path)
    rows = df.to_dict("records")
    if limit:
        rows = rows[:limit]
    by_index = {str(r["index"]).strip(): r.get("image", "") for r in df.to_dict("records")
                if len(str(r.get("image", ""))) > 64}
    out: list[dict | QuestionError] = []
    for n, row in enumerate(rows, start=2):  # line 1 is the header
        try:
            out.append(_row_question(row, n, path.parent, by_index, ("image", "image_path")))
        except QuestionError as exc:
            out.append(exc)
    return out


# -- the VISTA-Bench release ---------------------------------------------------------------------
RELEASE_KEYS = ("path", "limit")


def prompt_text(q: dict) -> str:
    """The pure-text form of a question: the question, then one ``X. option`` line each."""
    return q["question"].rstrip() + "".join(f"\n{k}. {v}" for k, v in q["options"])


def question_extra(q: dict) -> dict:
    """The manifest columns of a question (the VISTA evaluation reads them back); ``modality``
    is ``multimodal`` when the question has pictures of its own, else ``unimodal`` (VISTA-Bench
    §3.1: unimodal items carry no external image)."""
    return {"question_id": q["id"], "question_text": prompt_text(q), "answer": q["answer"],
            "category": q["category"], "subfield": q.get("subfield", ""),
            "hint": q.get("hint", ""), "options": json.dumps(q["options"], ensure_ascii=False),
            "source": q.get("source", ""),
            "modality": "multimodal" if q.get("images") else "unimodal"}


def write_item_images(items: list, out_dir: str | Path) -> None:
    """Write the item images that builders left in ``extra["_images"]`` to
    ``out_dir/item_images/{question_id}_{k}.png`` (once per question) and name them in the
    ``item_images`` column (``|``-separated paths relative to ``out_dir``)."""
    out_dir = Path(out_dir)
    written: dict[str, str] = {}
    for it in items:
        extra = it.extra or {}
        images = extra.pop("_images", None) or []
        qid = extra.get("question_id", it.item_id)
        if qid not in written:
            rels = []
            for k, im in enumerate(images):
                rel = f"item_images/{qid}_{k}.png"
                (out_dir / "item_images").mkdir(parents=True, exist_ok=True)
                write_png(out_dir / rel, im)
                rels.append(rel)
            written[qid] = "|".join(rels)
        extra["item_images"] = written[qid]
        it.extra = extra


def release_fingerprint(spec: dict) -> str:
    """Fingerprint of a ``vista_release`` set (dataset registry): the TSV and the images/,
    questions/ folders beside it."""
    from roundtrip.datasets.folder import path_fingerprint

    return path_fingerprint(Path(spec["path"]).parent)


def build_release(name: str, spec: dict, out_dir: str | Path) -> list:
    """Items of a ``vista_release`` set: one per TSV row, the question image as the item image.

    Args:
        spec: ``path`` (the TSV), optional ``limit`` (first N rows).

    Returns:
        ``Item`` list; ``extra`` holds :func:`question_extra`, ``text`` (the pure-text prompt:
        the ground truth of the question image), ``font`` and ``font_size_pt`` from the row,
        and the item images (written by :func:`write_item_images`). A bad row is an error item
        with its reason.

    Raises:
        FileNotFoundError: ``datasets.<name>.path`` does not exist.
    """
    from roundtrip.core.manifest import Item

    path = Path(spec["path"])
    if not path.is_file():
        raise FileNotFoundError(f"datasets.{name}.path: no such file {path}")
    df = read_tsv(path)
    if "question_image" not in df.columns:
        raise ValueError(f"datasets.{name}.path: {path} has no question_image column; a "
                         "VLMEvalKit MCQ TSV is read by a vista_questions set instead")
    rows = df.to_dict("records")[: spec.get("limit") or None]
    items = []
    for n, row in enumerate(rows, start=2):
        qid = question_id(row.get("index", ""), f"row{n}")
        font = str(row.get("font", "")).strip()
        size = pd.to_numeric(row.get("size", ""), errors="coerce")
        # the release renders each question once (App. B.2): every row is its Table 1 render
        extra = {"lang": "eng", "font": font, "font_size_pt": size, "question_id": qid,
                 "table1": "1"}
        try:
            q = _row_question(row, n, path.parent, {}, ("image",))
            if _blank(row.get("question_image")):
                raise QuestionError(f"row {n} (index {qid}): no question_image")
            image = _decode(str(row["question_image"]), path.parent,
                            f"row {n} (index {qid}) question_image")
        except (QuestionError, ImageReadError) as exc:
            items.append(Item(qid, "vista_release", reason=str(exc), extra=extra))
            continue
        extra |= question_extra(q) | {"text": prompt_text(q), "_images": q["images"]}
        items.append(Item(qid, "vista_release", image=image, extra=extra))
    write_item_images(items, out_dir)
    log.info("dataset %s: %d rows of %s", name, len(items), path)
    return items
