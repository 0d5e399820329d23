"""Tesseract OCR on a real scanned page, and the missing-language message."""
import numpy as np
import pytest
import skimage.data
from conftest import requires_tesseract

from roundtrip.core.imaging import write_png
from roundtrip.readers import build_ocr, ocr_items
from roundtrip.readers.tesseract import OCRUnavailable, TesseractOCR, tesseract_package


@requires_tesseract
def test_reads_the_bundled_page():
    page = np.repeat(skimage.data.page()[..., None], 3, axis=-1)
    text = TesseractOCR().read(page, lang="eng")
    assert "markers" in text and "background" in text


@requires_tesseract
def test_missing_language_names_the_package():
    with pytest.raises(OCRUnavailable, match="tesseract-ocr-zzz"):
        TesseractOCR().check(["eng", "zzz"])


@requires_tesseract
def test_ocr_items_records_failures(tmp_path):
    page = np.repeat(skimage.data.page()[..., None], 3, axis=-1)
    write_png(tmp_path / "p.png", page)
    (tmp_path / "bad.png").write_bytes(b"junk")
    df = ocr_items(TesseractOCR(), [("p", tmp_path / "p.png", "eng"),
                                   ("bad", tmp_path / "bad.png", "eng")], threads=2)
    assert df["item_id"].tolist() == ["p", "bad"]
    assert df.loc[0, "status"] == "ok" and "markers" in df.loc[0, "text"]
    assert df.loc[1, "status"] == "error" and "bad.png" in df.loc[1, "reason"]


def test_registry_and_package_names():
    assert tesseract_package("chi_sim") == "tesseract-ocr-chi-sim"
    assert isinstance(build_ocr("t", {"type": "tesseract", "psm": 6}), TesseractOCR)
    with pytest.raises(ValueError, match=r"ocr\.engines\.t\.type"):
        build_ocr("t", {"type": "gemma"})
