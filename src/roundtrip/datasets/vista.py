"""Question sets of VISTA-Bench: the release TSV and VLMEvalKit's multiple-choice TSVs.

Two formats are read as they are:

- **the VISTA-Bench release** (dataset type ``vista_release``): a TSV with ``index, question,
  hint, A``…``H, answer, image, question_image, question_type, category, subfield, source,
  font, size``, beside ``images/`` and ``questions/`` folders. ``question_image`` is the rendered
  question (the manifest's image); ``image`` the item's own pictures, empty or ``nan`` for
  unimodal items. Both may be paths (relative to the TSV's folder) or base64. Read as the
  authors' released code reads it (github.com/2223884741/VISTA-Bench @ ffd7e6e,
  ``VLMEvalKit/utils/convert_data_file.py`` and VLMEvalKit's TSV loading): an ``image`` cell
  may list several pictures separated by ``;``, ``,``, ``，`` or ``；``; an option cell that
  pandas reads as missing (:data:`PANDAS_NA`: empty, ``nan``, ``None``, ``NA``, ...) is no
  option; texts are kept as written; a row whose answer names no option (a blank one, or
  ``I`` beyond ``H``) is kept and can never be answered right, as the release scores it; the
  ``source`` column (MMMU, MMLU and SEED-Bench tags, and MMBench's own per-question provenance:
  tags and URLs) becomes the source benchmark (:func:`source_benchmark`), the raw value kept
  as ``source_raw``.
- **VLMEvalKit's MCQ TSVs** (MMBench style; ``questions: my.tsv`` of a ``vista_questions`` set):
  ``index, image`` (base64) or ``image_path, question, hint, A``…, ``answer, category,
  l2-category, split``. An ``image`` of a few characters names the ``index`` of the row whose
  image it shares (as MMBench stores repeated images). Their questions are rendered by our
  renderer at every configured (style, size).

Rows without any option are open questions. A row that cannot be used (no question, an
undecodable or missing image; in an MCQ TSV also an answer that is not an option) becomes a
:class:`QuestionError` naming its line in the TSV (a quoted cell may span lines): one item is
lost, not the set, and it keeps its category, modality and source.

Every question dict has ``id, question, hint, options [(letter, text)], answer, category,
subfield, source`` (the source benchmark: ``MMBench``, ``SEED-Bench``, ``MMMU``, ``MMLU``, or
``""`` when unknown), ``images`` (a list of ``(H, W, 3)`` arrays, the item's own pictures).
"""
from __future__ import annotations

import ast
import base64
import binascii
import csv
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
#: What ``pandas.read_csv`` reads as missing by default (its ``na_values``, pandas 2.x; exact,
#: case-sensitive, not stripped): how the release's VLMEvalKit loading tells an empty option.
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                       "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                       "nan", "null"})
#: Separators of several pictures in one release ``image`` cell (the authors' converter,
#: ``convert_data_file.py``, ``MULTI_SPLIT_RE``).
MULTI_IMAGE_SPLIT = re.compile(r"\s*[;,，；]\s*")
#: The four source benchmarks of VISTA-Bench (Fig. 2).
SOURCE_BENCHMARKS = ("MMBench", "SEED-Bench", "MMMU", "MMLU")


class QuestionError(ValueError):
    """A question that cannot be used (the message names the line or row)."""


def question_id(value, fallback: str = "") -> str:
    """A question's id as item ids carry it: runs of characters other than letters, digits,
    ``_`` and ``-`` become ``_``; ``fallback`` when nothing is left."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(value).strip()) or fallback


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) \
        or str(value).strip().lower() in _MISSING


def record_lines(path: str | Path) -> list[int]:
    """The line (1-based; line 1 is the header) on which each record of a TSV starts, as
    :func:`read_tsv` parses it (a quoted cell may span lines; blank lines are skipped)."""
    starts, previous = [], 0
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        for record in reader:
            if record:
                starts.append(previous + 1)
            previous = reader.line_num
    return starts[1:]


def _lines(path: Path, n: int) -> list[str]:
    """``line N`` of each of the ``n`` records, or ``record k`` where the file's records could
    not be told apart the way pandas parses them."""
    try:
        starts = record_lines(path)
    except (OSError, UnicodeDecodeError, csv.Error):
        starts = []
    if len(starts) != n:
        return [f"record {k}" for k in range(1, n + 1)]
    return [f"line {k}" for k in starts]


def source_benchmark(raw: str, default: str = "") -> str:
    """The source benchmark (:data:`SOURCE_BENCHMARKS`) a ``source`` value names: ``mmlu…``,
    ``mmmu…``, ``seed…`` (``SEED-I``) and ``mmbench…`` (case-insensitive); anything else
    non-empty is ``default`` (the release: ``MMBench``, whose rows carry MMBench's own
    per-question provenance, e.g. ``scienceqa``, ``COCO train2014`` or an image URL); an empty
    value is ``""``."""
    low = str(raw).strip().lower()
    if not low or low in _MISSING:
        return ""
    for prefix, name in (("mmlu", "MMLU"), ("mmmu", "MMMU"), ("seed", "SEED-Bench"),
                         ("mmbench", "MMBench")):
        if low.startswith(prefix):
            return name
    return default


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


def _row_question(row: dict, where: str, base: Path, images_by_index: dict[str, str],
                  source: str = "") -> dict:
    """One question from a row of a VLMEvalKit MCQ TSV; ``where``: its line."""
    qid = question_id(row.get("index", ""), where.replace(" ", ""))
    question = str(row.get("question", "")).strip()
    if not question:
        raise QuestionError(f"{where} (index {qid}): no question")
    options = _options(row)
    answer = str(row.get("answer", "")).strip()
    if options and answer not in dict(options):
        raise QuestionError(f"{where} (index {qid}): answer {answer!r} is not one of the "
                            f"options {[k for k, _ in options]}")
    if not options and not answer:
        raise QuestionError(f"{where} (index {qid}): an open question without an answer")
    images = []
    for col in ("image", "image_path"):
        value = row.get(col, "")
        if _blank(value):
            continue
        for k, v in enumerate(_image_values(str(value))):
            if len(v) <= 64 and v in images_by_index and col == "image":  # MMBench reference
                v = images_by_index[v]
            images.append(_decode(v, base, f"{where} (index {qid}) {col}[{k}]"))
    hint = "" if _blank(row.get("hint")) else str(row["hint"]).strip()
    category = str(row.get("category", "")).strip()
    subfield = str(row.get("subfield") or row.get("l2-category") or "").strip()
    raw = "" if _blank(row.get("source")) else str(row["source"]).strip()
    return {"id": qid, "question": question, "hint": hint, "options": options, "answer": answer,
            "category": category, "subfield": subfield,
            "source": source or source_benchmark(raw), "source_raw": raw, "images": images}


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
    lines = _lines(path, len(rows))
    if limit:
        rows = rows[:limit]
    by_index = {str(r["index"]).strip(): r.get("image", "") for r in df.to_dict("records")
                if len(str(r.get("image", ""))) > 64}
    # a TSV of one benchmark (MMBench_DEV_EN.tsv, SEEDBench_IMG.tsv, MMMU_DEV_VAL.tsv,
    # MMLU.tsv) names its source benchmark in its file name; MMBench's source column is a
    # per-question provenance, not a benchmark
    source = source_benchmark(path.stem.replace("SEEDBench", "seed"))
    out: list[dict | QuestionError] = []
    for where, row in zip(lines, rows):
        try:
            out.append(_row_question(row, where, path.parent, by_index, source))
        except QuestionError as exc:
            out.append(exc)
    return out


# -- the VISTA-Bench release ---------------------------------------------------------------------
RELEASE_KEYS = ("path", "limit")


def prompt_text(q: dict) -> str:
    """The pure-text form of a question: the question, then one ``X. option`` line each."""
    return q["question"].rstrip() + "".join(f"\n{k}. {v}" for k, v in q["options"])


def question_extra(q: dict) -> dict:
    """The manifest columns of a question (the VISTA evaluation reads them back): ``question``
    as written, ``question_text`` (:func:`prompt_text`), ``source`` the source benchmark and
    ``source_raw`` the TSV's value; ``modality`` is ``multimodal`` when the question has
    pictures of its own, else ``unimodal`` (VISTA-Bench §3.1: unimodal items carry no external
    image)."""
    return {"question_id": q["id"], "question_text": prompt_text(q), "question": q["question"],
            "answer": q["answer"], "category": q["category"], "subfield": q.get("subfield", ""),
            "hint": q.get("hint", ""), "options": json.dumps(q["options"], ensure_ascii=False),
            "source": q.get("source", ""), "source_raw": q.get("source_raw", ""),
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
    from roundtrip.core.hashing import path_fingerprint

    return path_fingerprint(Path(spec["path"]).parent)


def _release_images(value: str) -> list[str]:
    """The pictures of a release ``image`` cell: none where it is empty or ``nan``/``none``/
    ``null``; else the cell without surrounding brackets, split on :data:`MULTI_IMAGE_SPLIT`,
    backslashes as slashes, repeats dropped (the authors' converter,
    ``process_multi_paths_field_to_bracket_string``)."""
    raw = value.strip()
    if raw.lower() in _MISSING:
        return []
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1].strip()
    parts = [p.strip().replace("\\", "/") for p in MULTI_IMAGE_SPLIT.split(raw)]
    return list(dict.fromkeys(p for p in parts if p))


def _release_text(value) -> str:
    """A text cell as the release reads it: as written, ``""`` where pandas reads it as
    missing."""
    return "" if value is None or str(value) in PANDAS_NA else str(value)


def release_question(row: dict, where: str, base: Path) -> dict:
    """One question from a release row, read as the release reads it (module docstring).

    Args:
        row: the TSV row (every cell a string, as written).
        where: the row's place for messages (``line N``).
        base: the TSV's folder (image paths are relative to it).

    Returns:
        The question dict (module docstring); ``options`` and texts as written; ``answer``
        as written, possibly naming no option.

    Raises:
        QuestionError: no question; a picture that is neither a file nor base64.
    """
    qid = question_id(row.get("index", ""), where.replace(" ", ""))
    question = _release_text(row.get("question"))
    if not question.strip():
        raise QuestionError(f"{where} (index {qid}): no question")
    options = [(k, str(row[k])) for k in LETTERS if k in row and _release_text(row[k])]
    images = [_decode(v, base, f"{where} (index {qid}) image[{k}]")
              for k, v in enumerate(_release_images(str(row.get("image") or "")))]
    return {"id": qid, "question": question, "hint": _release_text(row.get("hint")),
            "options": options, "answer": _release_text(row.get("answer")),
            **release_labels(row), "images": images}


def release_labels(row: dict) -> dict:
    """The labels of a release row that a failed row keeps too: ``category``, ``subfield``,
    ``source`` (the benchmark, :func:`source_benchmark`; every release row comes from one of
    the four, and the MMBench rows carry MMBench's per-question provenance, a tag, a URL or
    nothing: ``MMBench``), ``source_raw`` and ``modality`` (``multimodal`` where the ``image``
    cell names a picture)."""
    raw = str(row.get("source") or "").strip()
    return {"category": str(row.get("category", "")).strip(),
            "subfield": str(row.get("subfield", "")).strip(),
            "source": source_benchmark(raw, default="MMBench") or "MMBench", "source_raw": raw,
            "modality": "multimodal" if _release_images(str(row.get("image") or ""))
            else "unimodal"}


def as_converted(text: str) -> str:
    """A text as the release's evaluation reads it: every backslash doubled. The authors'
    converter (``convert_data_file.py``) writes the TSV the evaluation reads with
    ``escapechar="\\"``; Python 3.10 and later then escape each backslash, and VLMEvalKit reads
    the file back without an escape character (Python 3.9 and earlier quoted such cells
    instead: no change)."""
    return text.replace("\\", "\\\\")


def converted_columns(q: dict) -> dict:
    """The manifest's ``question``, ``hint`` and ``options`` of a release question as the
    release's evaluation reads them (:func:`as_converted`): what the release-layout prompts
    send and the release's extraction matches against. ``question_text`` (the ground truth of
    the render) keeps the texts as written."""
    return {"question": as_converted(q["question"]), "hint": as_converted(q["hint"]),
            "options": json.dumps([(k, as_converted(v)) for k, v in q["options"]],
                                  ensure_ascii=False)}


def build_release(name: str, spec: dict, out_dir: str | Path) -> list:
    """Items of a ``vista_release`` set: one per TSV row, the question image as the item image.

    Every row becomes an item, as every row of the release is asked and scored (the real TSV:
    1,500 items, 300/300/400/500 per category); a row whose answer names no option is kept
    (it can never be answered right) and logged.

    Args:
        spec: ``path`` (the TSV), optional ``limit`` (first N rows).

    Returns:
        ``Item`` list; ``extra`` holds :func:`question_extra` (``question``, ``hint`` and
        ``options`` as the release's evaluation reads them, :func:`converted_columns`),
        ``text`` (the pure-text prompt as written: the ground truth of the question image),
        ``font`` and ``font_size_pt`` from the row, and the item images (written by
        :func:`write_item_images`). A row that cannot be used is an error item with its own
        reason (naming its TSV line) that keeps its category, subfield, source and modality.

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
    rows = df.to_dict("records")
    lines = _lines(path, len(rows))
    rows = rows[: spec.get("limit") or None]
    items, unanswerable = [], []
    for where, row in zip(lines, rows):
        qid = question_id(row.get("index", ""), where.replace(" ", ""))
        # the release renders each question once (App. B.2): every row is its Table 1 render
        extra = {"lang": "eng", "font": str(row.get("font", "")).strip(),
                 "font_size_pt": pd.to_numeric(row.get("size", ""), errors="coerce"),
                 "question_id": qid, "table1": "1"}
        try:
            q = release_question(row, where, path.parent)
            image = _release_question_image(row, where, qid, path.parent)
        except (QuestionError, ImageReadError) as exc:
            labels = release_labels(row)
            items.append(Item(qid, "vista_release", reason=str(exc),
                              extra=extra | labels | {"hint": _release_text(row.get("hint"))}))
            continue
        if q["options"] and q["answer"] not in dict(q["options"]):
            unanswerable.append(qid)
        extra |= question_extra(q) | converted_columns(q) | {"text": prompt_text(q),
                                                             "_images": q["images"]}
        items.append(Item(qid, "vista_release", image=image, extra=extra))
    if unanswerable:
        log.warning("dataset %s: %d rows whose answer names no option, kept and never right "
                    "(as the release scores them): index %s", name, len(unanswerable),
                    ", ".join(unanswerable))
    write_item_images(items, out_dir)
    log.info("dataset %s: %d rows of %s", name, len(items), path)
    return items


def _release_question_image(row: dict, where: str, qid: str, base: Path) -> np.ndarray:
    """The question image of a release row (one picture).

    Raises:
        QuestionError: none, several, or one that cannot be read.
    """
    names = _release_images(str(row.get("question_image") or ""))
    if len(names) != 1:
        raise QuestionError(f"{where} (index {qid}): "
                            + ("no question_image" if not names else
                               f"{len(names)} question images; one is expected"))
    return _decode(names[0], base, f"{where} (index {qid}) question_image")
