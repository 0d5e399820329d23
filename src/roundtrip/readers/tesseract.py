"""Tesseract OCR (through pytesseract): the offline reader of original and reconstructed images.

Readers share one interface, ``read(image, lang) -> str`` (:mod:`roundtrip.readers`).
"""
from __future__ import annotations

import shutil

import numpy as np
from PIL import Image


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
