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


# -- RapidOCR: the PP-OCRv4 models inside the rapidocr-onnxruntime wheel, offline ---------------
def test_rapidocr_reads_the_bundled_page_in_8_and_16_bit():
    from rapidfuzz.distance import Levenshtein

    engine = build_ocr("rapid", {"type": "rapidocr"})
    page = skimage.data.page()
    rgb = np.repeat(page[..., None], 3, axis=2)
    text = engine.read(rgb, lang="eng")
    assert "segmentation" in text and "background" in text
    # one line per text line of the page, top to bottom
    assert text.splitlines()[0].replace(" ", "").startswith("Region-based")
    assert engine.read(rgb.astype(np.uint16) * 257, lang="eng") == text
    ref = ("Region-based segmentation Let us first determine markers of the coins and the "
           "background. These markers are pixels that we can label unambiguously as either "
           "object or background.")
    hyp = " ".join(text.split())[:len(ref)]
    assert Levenshtein.normalized_distance(ref.replace(" ", ""), hyp.replace(" ", "")) < 0.1


def test_rapidocr_languages_and_errors(tmp_path):
    engine = build_ocr("rapid", {"type": "rapidocr"})
    assert engine.check(["eng", "chi_sim", "eng+chi_sim"])  # the package version
    with pytest.raises(OCRUnavailable, match=r"no recognizer for \['kor'\].*ocr\.engines\.rapid\."
                                             r"rec_models\.kor"):
        engine.check(["kor"])
    with pytest.raises(OCRUnavailable, match="kor"):
        engine.read(np.zeros((32, 32, 3), np.uint8), lang="kor")
    own = build_ocr("r", {"type": "rapidocr", "rec_models": {
        "kor": {"model": str(tmp_path / "k.onnx"), "keys": str(tmp_path / "k.txt")}}})
    assert "kor" in own.languages()
    with pytest.raises(OCRUnavailable, match=r"ocr\.engines\.r\.rec_models\.kor\.model: .*k\.onnx"):
        own.check(["kor"])
    with pytest.raises(ValueError, match=r"ocr\.engines\.bad: rec_models\.kor: needs 'model'"):
        build_ocr("bad", {"type": "rapidocr", "rec_models": {"kor": {"model": "x"}}})
    # a blank image has no text: an empty reading, not an error
    assert engine.read(np.full((64, 64, 3), 255, np.uint8), lang="eng") == ""


def test_reading_order_joins_boxes_into_lines():
    from roundtrip.readers.rapidocr import reading_order

    def box(x0, y0, x1, y1):
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], float)

    boxes = [(box(120, 52, 200, 70), "world"), (box(10, 10, 100, 30), "Title"),
             (box(10, 50, 100, 72), "hello"), (box(110, 12, 150, 28), "line")]
    assert reading_order(boxes) == "Title line\nhello world"
    assert reading_order([]) == ""
