"""Tesseract OCR (through pytesseract): the offline reader of original and reconstructed images.

Readers share one interface, ``read(image, lang) -> str`` (:mod:`roundtrip.readers`); Tesseract
also has ``read_many(images, lang)``, which reads several images in one ``tesseract`` process.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

log = logging.getLogger(__name__)

#: What reading one image may raise and a caller records for that image alone: a Tesseract
#: failure (``TesseractError`` is a ``RuntimeError``), a missing binary or file (``OSError``),
#: an image PIL cannot take (``TypeError``, ``ValueError``).
READ_ERRORS = (RuntimeError, OSError, TypeError, ValueError)


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
    #: The same image always reads the same (a reconstruction identical to its original is
    #: not read again: :class:`roundtrip.evals.vtbench.text.TextScorer`).
    deterministic = True
    #: Most images one ``tesseract`` process reads (:meth:`read_many`): bounds its memory, its
    #: temporary files and the time one failure costs (the batch is then read image by image).
    batch_size = 64

    def __init__(self, psm: int = 3, oem: int = 1, config: str = ""):
        self.psm, self.oem, self.extra = int(psm), int(oem), config
        # Without a limit each tesseract process starts one OpenMP thread per core, and they
        # spin: a 1024 px page of text took 11.6 s and 13.4 CPU-s instead of 1.85 s and 1.85
        # CPU-s on a 2-core machine, same text. Parallelism comes from the callers' batches
        # (roundtrip.readers.read_in_batches) and Snakemake's jobs; a user's own value wins.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

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

        with tempfile.TemporaryDirectory(prefix="tess_") as tmp:
            return pytesseract.image_to_string(_write_input(_pil(image), Path(tmp) / "0.png"),
                                               lang=lang, config=self._config())

    def read_many(self, images: list[np.ndarray], lang: str = "eng") -> list[str | Exception]:
        """Texts of several ``(H, W, 3)`` ``uint8``/``uint16`` images, one ``tesseract`` process
        per :attr:`batch_size` images.

        Each process loads the language model once, about 0.09 s per call on a 2-core machine:
        :func:`roundtrip.readers.ocr_items` over 70 small rendered questions took 3.1 s instead
        of 9.5 s with one process per image (1 thread; 1.6 s instead of 4.8 s with 2); dense
        1024 px pages, where recognition dominates, gain nothing and lose nothing.

        The texts are the same as :meth:`read`'s: each image is written the same way
        (:func:`_write_input`), Tesseract reads the list file with the same configuration,
        and its output, the pages' texts joined by a form feed, is split. Only the LSTM engine
        (``oem=1``, the default) is batched: the legacy engine's adaptive classifier would carry
        what it learnt on one page to the next, so other modes read image by image.

        Returns:
            One entry per image, in order: its text, or the exception (one of
            :data:`READ_ERRORS`) that :meth:`read` raised for it. When a batch fails or gives
            another number of pages than images, its images are read one by one, so that a bad
            image costs only itself. Nothing is raised for one image's failure; other
            exceptions propagate.
        """
        out: list[str | Exception] = []
        for start in range(0, len(images), self.batch_size):
            out += self._read_batch(images[start:start + self.batch_size], lang)
        return out

    def _config(self) -> str:
        return f"--psm {self.psm} --oem {self.oem} {self.extra}".strip()

    def _read_batch(self, images: list[np.ndarray], lang: str) -> list[str | Exception]:
        prepared = [_prepared(image) for image in images]
        ok = [i for i, image in enumerate(prepared) if not isinstance(image, Exception)]
        batch = len(ok) > 1 and self.oem == 1
        texts = self._run_list([prepared[i] for i in ok], lang) if batch else None
        out: list[str | Exception] = list(prepared)
        for k, i in enumerate(ok):
            out[i] = texts[k] if texts is not None else self._read_or_error(images[i], lang)
        return out

    def _read_or_error(self, image: np.ndarray, lang: str) -> str | Exception:
        try:
            return self.read(image, lang)
        except READ_ERRORS as exc:
            return exc

    def _run_list(self, images: list[Image.Image], lang: str) -> list[str] | None:
        """The per-page texts of one ``tesseract`` run over a list file of the images, or None
        when the run failed or gave another number of pages (the caller reads one by one)."""
        import pytesseract.pytesseract as pt

        try:
            with tempfile.TemporaryDirectory(prefix="tess_") as tmp:
                names = [_write_input(image, Path(tmp) / f"{k}.png")
                         for k, image in enumerate(images)]
                listing = Path(tmp) / "images.txt"
                listing.write_text("".join(f"{name}\n" for name in names), encoding="utf-8")
                pt.run_tesseract(str(listing), str(Path(tmp) / "out"), "txt", lang,
                                 self._config())
                texts = (Path(tmp) / "out.txt").read_bytes().decode(pt.DEFAULT_ENCODING)
        except READ_ERRORS as exc:
            log.info("Tesseract batch of %d images failed (%s); reading them one by one",
                     len(images), exc)
            return None
        pages = texts.split("\f")
        if len(pages) != len(images):
            log.info("Tesseract read %d pages from %d images; reading them one by one",
                     len(pages), len(images))
            return None
        return pages


def _write_input(image: Image.Image, path: Path) -> str:
    """Write ``image`` as Tesseract's input file and return its path.

    The pixels are those pytesseract's own ``save`` would write (``prepare``: an alpha channel
    is laid on white), in a PNG at zlib level :data:`~roundtrip.core.imaging.FAST_PNG` instead
    of its level 6: the same pixels reach Tesseract, several times faster (an upscaled
    2048 px render is written in a fraction of the time), so the texts do not change.
    """
    import pytesseract.pytesseract as pt

    from roundtrip.core.imaging import FAST_PNG

    image, _ = pt.prepare(image)
    image.save(path, format="PNG", compress_level=FAST_PNG)
    return str(path)


def _prepared(image: np.ndarray) -> Image.Image | Exception:
    try:
        return _pil(image)
    except (TypeError, ValueError) as exc:
        return exc


def _pil(image: np.ndarray) -> Image.Image:
    """The image as :meth:`TesseractOCR.read` gives it to Tesseract (16-bit reduced to 8-bit)."""
    if image.dtype == np.uint16:
        image = (image // 257).astype(np.uint8)
    return Image.fromarray(image)
