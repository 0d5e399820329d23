"""OCR backends that read the text in original and reconstructed images.

Tesseract (through pytesseract) is the offline default; VLM backends share the same interface
(``read(image) -> str``). OCR of the originals is computed once per dataset (model name
``original``) and reused by every model.
"""
from __future__ import annotations

import logging
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from .api.vlm import VlmOCR
from .imaging import ImageReadError, read_image

log = logging.getLogger(__name__)


class OCRUnavailable(RuntimeError):
    """The OCR engine or a language it needs is not installed; the message says how to fix it."""


def tesseract_package(lang: str) -> str:
    """Debian package that ships Tesseract data for ``lang`` (``chi_sim`` -> ``tesseract-ocr-chi-sim``)."""
    return "tesseract-ocr-" + lang.lower().replace("_", "-")


class TesseractOCR:
    """Tesseract 4/5 LSTM OCR.

    Args:
        psm: page segmentation mode (3 = automatic, Tesseract's default).
        oem: OCR engine mode (1 = LSTM only; 3 = default).
        config: extra command-line configuration passed to tesseract.

    Raises:
        OCRUnavailable: (from :meth:`check`) binary or language data missing.
    """

    name = "tesseract"

    def __init__(self, psm: int = 3, oem: int = 1, config: str = ""):
        self.psm, self.oem, self.extra = int(psm), int(oem), config

    def check(self, langs: list[str]) -> str:
        """Verify the binary and ``langs`` are installed; returns the Tesseract version."""
        import pytesseract

        if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
            raise OCRUnavailable(
                "tesseract is not installed: apt-get install tesseract-ocr "
                + " ".join(tesseract_package(lang) for lang in langs))
        have = set(pytesseract.get_languages(config=""))
        missing = [lang for lang in langs for part in lang.split("+") if part not in have]
        if missing:
            pkgs = " ".join(sorted({tesseract_package(p) for m in missing for p in m.split("+")
                                    if p not in have}))
            raise OCRUnavailable(f"Tesseract language data missing for {missing}: "
                                 f"apt-get install {pkgs}")
        return str(pytesseract.get_tesseract_version())

    def read(self, image: np.ndarray, lang: str = "eng") -> str:
        """Text of an ``(H, W, 3)`` ``uint8``/``uint16`` image (16-bit is reduced to 8-bit)."""
        import pytesseract

        if image.dtype == np.uint16:
            image = (image // 257).astype(np.uint8)
        cfg = f"--psm {self.psm} --oem {self.oem} {self.extra}".strip()
        return pytesseract.image_to_string(Image.fromarray(image), lang=lang, config=cfg)


#: OCR ``type`` -> engine class; ``vlm`` reads through an OpenAI-compatible chat endpoint.
OCR_TYPES = {"tesseract": TesseractOCR, "vlm": VlmOCR}


def build_ocr(name: str, spec: dict):
    """OCR engine from its ``ocr.engines.<name>`` config entry.

    Raises:
        ValueError: unknown type (message names the config key).
    """
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind not in OCR_TYPES:
        raise ValueError(f"ocr.engines.{name}.type: unknown OCR type {kind!r}; known: {sorted(OCR_TYPES)}")
    return OCR_TYPES[kind](**spec)


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
