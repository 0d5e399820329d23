"""Readers: image -> text. One registry for every component that reads an image.

- OCR engines (config ``ocr.engines.<name>.type``): ``tesseract`` (:mod:`.tesseract`, offline),
  ``rapidocr`` (:mod:`.rapidocr`, PP-OCRv4 in ONNX Runtime, offline), ``vlm`` (:mod:`.vlm`, a
  chat model on an OpenAI-compatible endpoint) and ``transformers`` (:mod:`.transformers_vlm`,
  a chat VLM run in process, batched);
- render judges (config ``audit.judge.type``): ``vlm``, ``transformers``;
- question answerers of VISTA-Bench (config ``vista.readers.<name>.type``): ``vlm``, ``ocr_llm``,
  ``ocr_solver`` (:mod:`.answerers`; the offline question family in :mod:`.question_family`).

An OCR engine has ``read(image, lang) -> str`` for an ``(H, W, 3)`` uint8/uint16 image, and may
have ``read_many(images, lang)`` to read several at once (Tesseract: one process for a batch);
:func:`read_many` reads a list through either, :func:`read_in_batches` groups many images by
language into batches, and :func:`ocr_items` runs an engine over many files or arrays and
records every failure as a row.
OCR of the originals is computed once per dataset (model name ``original``) and reused by every
model.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import read_image
from roundtrip.core.progress import Progress
from roundtrip.core.registry import build_registered
from roundtrip.readers.answerers import ANSWERER_TYPES, build_answerer
from roundtrip.readers.rapidocr import RapidOCR
from roundtrip.readers.tesseract import (READ_ERRORS, OCRUnavailable, TesseractOCR,
                                         tesseract_package)
from roundtrip.readers.transformers_vlm import TransformersJudge, TransformersOCR
from roundtrip.readers.vlm import VlmJudge, VlmOCR

log = logging.getLogger(__name__)

#: OCR ``type`` -> engine class; ``vlm`` reads through an OpenAI-compatible chat endpoint,
#: ``transformers`` runs the VLM in the job's process.
OCR_TYPES = {"tesseract": TesseractOCR, "rapidocr": RapidOCR, "vlm": VlmOCR,
             "transformers": TransformersOCR}
#: Keys of an ``ocr.engines`` entry that belong to the workflow, not to the engine's constructor.
WORKFLOW_KEYS = ("datasets",)
#: render judge ``type`` -> judge class (VISTA-Bench App. B.3).
JUDGE_TYPES = {"vlm": VlmJudge, "transformers": TransformersJudge}


def build_ocr(name: str, spec: dict):
    """OCR engine from its ``ocr.engines.<name>`` config entry.

    Raises:
        ValueError: unknown type or bad arguments (the message names the config key).
    """
    spec = {k: v for k, v in spec.items() if k not in WORKFLOW_KEYS}
    engine = build_registered(OCR_TYPES, spec, f"ocr.engines.{name}", "OCR")
    engine.config_key = f"ocr.engines.{name}"  # error messages name the entry
    return engine


def read_many(engine, images: list[np.ndarray], lang: str) -> list[str | Exception]:
    """Texts of ``(H, W, 3)`` uint8/uint16 images in ``lang``, one entry per image, in order.

    Uses the engine's own ``read_many`` when it has one (Tesseract: one process per batch),
    else ``engine.read`` image by image. An image that cannot be read gives, in its place, the
    exception that reading it raised (one of :data:`READ_ERRORS`); other exceptions propagate.
    """
    if hasattr(engine, "read_many"):
        return engine.read_many(images, lang)
    out: list[str | Exception] = []
    for image in images:
        try:
            out.append(engine.read(image, lang=lang))
        except READ_ERRORS as exc:
            out.append(exc)
    return out


def read_in_batches(engine, jobs: list[tuple[str, object]],
                    load: Callable[[object], np.ndarray] = lambda image: image,
                    threads: int = 1, progress: Progress | None = None) -> list[str | Exception]:
    """Read ``(lang, source)`` jobs in batches of one language; one entry per job, in order.

    ``load(source)`` gives the ``(H, W, 3)`` image (the default: the source is the image); it
    runs in the batch's thread, so only ``threads`` batches of images are in memory at once.
    Batches hold at most the engine's ``batch_size`` images (1 without ``read_many``) and are
    split so that ``threads`` of them run in parallel.

    Args:
        progress: counts each job read (a long OCR job reports items done and time left).

    Returns:
        Each job's text, or the exception that loading (:data:`READ_ERRORS`, e.g.
        ``ImageReadError``) or reading its image raised.
    """
    out: list[str | Exception | None] = [None] * len(jobs)

    def run(batch: list[int]) -> None:
        loaded = []
        for i in batch:
            try:
                loaded.append((i, load(jobs[i][1])))
            except READ_ERRORS as exc:
                out[i] = exc
        texts = read_many(engine, [image for _, image in loaded], jobs[batch[0]][0])
        for (i, _), text in zip(loaded, texts, strict=True):
            out[i] = text
        if progress is not None:
            progress.add(len(batch))

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(run, _batches(engine, [lang for lang, _ in jobs], threads)))
    return out


def _batches(engine, langs: list[str], threads: int) -> list[list[int]]:
    """Job indices grouped by language (first-seen order), cut into batches of equal size."""
    groups: dict[str, list[int]] = {}
    for i, lang in enumerate(langs):
        groups.setdefault(lang, []).append(i)
    cap = getattr(engine, "batch_size", 1) if hasattr(engine, "read_many") else 1
    out = []
    for idx in groups.values():
        size = max(1, min(cap, math.ceil(len(idx) / max(1, threads))))
        out += [idx[k:k + size] for k in range(0, len(idx), size)]
    return out


def ocr_items(engine, items: list[tuple[str, Path | np.ndarray, str]],
              threads: int = 1, progress: Progress | None = None) -> pd.DataFrame:
    """Run OCR over ``(item_id, image, lang)`` triples; ``image`` is a file path or an
    ``(H, W, 3)`` uint8/uint16 array.

    Items of one language are read in batches (:func:`read_in_batches`; Tesseract runs one
    process per batch instead of one per image), ``threads`` batches at a time.

    Returns:
        A DataFrame ``item_id, text, status, reason`` in input order; an unreadable file or an
        OCR failure of an image is a row with ``status=error`` and the reason, never an
        exception.
    """
    texts = read_in_batches(engine, [(lang, image) for _, image, lang in items], _image_of,
                            threads, progress)
    rows = []
    for (item_id, _, _), text in zip(items, texts, strict=True):
        if isinstance(text, Exception):
            log.warning("OCR of %s failed: %s", item_id, text)
            rows.append({"item_id": item_id, "text": "", "status": "error", "reason": str(text)})
        else:
            rows.append({"item_id": item_id, "text": text, "status": "ok", "reason": ""})
    return pd.DataFrame(rows, columns=["item_id", "text", "status", "reason"])


def _image_of(source: Path | str | np.ndarray) -> np.ndarray:
    return source if isinstance(source, np.ndarray) else read_image(source)


__all__ = ["ANSWERER_TYPES", "JUDGE_TYPES", "OCR_TYPES", "OCRUnavailable", "READ_ERRORS",
           "RapidOCR", "TesseractOCR", "TransformersJudge", "TransformersOCR", "VlmJudge",
           "VlmOCR",
           "build_answerer", "build_ocr", "ocr_items", "read_in_batches", "read_many",
           "tesseract_package"]
