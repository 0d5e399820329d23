"""Readers: image -> text. One registry for every component that reads an image.

- OCR engines (config ``ocr.engines.<name>.type``): ``tesseract`` (:mod:`.tesseract`, offline),
  ``rapidocr`` (:mod:`.rapidocr`, PP-OCRv4 in ONNX Runtime, offline) and ``vlm`` (:mod:`.vlm`, a
  chat model on an OpenAI-compatible endpoint);
- render judges (config ``audit.judge.type``): ``vlm``;
- question answerers of VISTA-Bench (config ``vista.readers.<name>.type``): ``vlm``, ``ocr_llm``,
  ``ocr_solver`` (:mod:`.answerers`; the offline question family in :mod:`.question_family`).

An OCR engine has ``read(image, lang) -> str`` for an ``(H, W, 3)`` uint8/uint16 image;
:func:`ocr_items` runs one over many files and records every failure as a row.
OCR of the originals is computed once per dataset (model name ``original``) and reused by every
model.
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.registry import build_registered
from roundtrip.readers.answerers import ANSWERER_TYPES, build_answerer
from roundtrip.readers.rapidocr import RapidOCR
from roundtrip.readers.tesseract import OCRUnavailable, TesseractOCR, tesseract_package
from roundtrip.readers.vlm import VlmJudge, VlmOCR

log = logging.getLogger(__name__)

#: OCR ``type`` -> engine class; ``vlm`` reads through an OpenAI-compatible chat endpoint.
OCR_TYPES = {"tesseract": TesseractOCR, "rapidocr": RapidOCR, "vlm": VlmOCR}
#: Keys of an ``ocr.engines`` entry that belong to the workflow, not to the engine's constructor.
WORKFLOW_KEYS = ("datasets",)
#: render judge ``type`` -> judge class (VISTA-Bench App. B.3).
JUDGE_TYPES = {"vlm": VlmJudge}


def build_ocr(name: str, spec: dict):
    """OCR engine from its ``ocr.engines.<name>`` config entry.

    Raises:
        ValueError: unknown type or bad arguments (the message names the config key).
    """
    spec = {k: v for k, v in spec.items() if k not in WORKFLOW_KEYS}
    engine = build_registered(OCR_TYPES, spec, f"ocr.engines.{name}", "OCR")
    engine.config_key = f"ocr.engines.{name}"  # error messages name the entry
    return engine


def ocr_items(engine, items: list[tuple[str, Path, str]], threads: int = 1) -> pd.DataFrame:
    """Run OCR over ``(item_id, image_path, lang)`` triples.

    Returns a DataFrame ``item_id, text, status, reason`` in input order; an unreadable image or
    an OCR failure is a row with ``status=error``, never an exception.
    """
    # Each tesseract process would otherwise spawn one OpenMP thread per core.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    def one(item):
        item_id, path, lang = item
        try:
            return {"item_id": item_id, "text": engine.read(read_image(path), lang=lang),
                    "status": "ok", "reason": ""}
        except (ImageReadError, RuntimeError, OSError) as exc:
            log.warning("OCR of %s failed: %s", item_id, exc)
            return {"item_id": item_id, "text": "", "status": "error", "reason": str(exc)}

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        rows = list(pool.map(one, items))
    return pd.DataFrame(rows, columns=["item_id", "text", "status", "reason"])


__all__ = ["ANSWERER_TYPES", "JUDGE_TYPES", "OCR_TYPES", "OCRUnavailable", "RapidOCR", "TesseractOCR",
           "VlmJudge", "VlmOCR",
           "build_answerer", "build_ocr", "ocr_items", "tesseract_package"]
