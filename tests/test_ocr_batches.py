"""Reading several images in one Tesseract process: the same texts as one process per image,
per-image failures, and ocr_items over paths and arrays in several languages."""
import numpy as np
import pytest
import pytesseract.pytesseract as pt
import skimage.data
from conftest import requires_tesseract

from roundtrip.core.imaging import write_png
from roundtrip.readers import ocr_items, read_in_batches, read_many
from roundtrip.readers.tesseract import TesseractOCR


@pytest.fixture(autouse=True)
def one_thread_per_tesseract(monkeypatch):
    monkeypatch.setenv("OMP_THREAD_LIMIT", "1")  # as TesseractOCR sets it


def rgb(gray: np.ndarray) -> np.ndarray:
    return np.repeat(gray[..., None], 3, axis=-1)


@pytest.fixture(scope="module")
def rendered():
    """Renders of roundtrip's renderer, (H, W, 3) uint8: English and Simplified Chinese."""
    from roundtrip.render import RenderItem, RenderSettings, render_items

    zh = "视觉分词器把图像压缩成离散的标记序列。"
    res = render_items([RenderItem("en", "What is 53 - 25?\nA. 26\nB. 28", size_pt=16),
                        RenderItem("zh", zh, lang="zh", size_pt=16)], RenderSettings())
    assert all(r.error == "" for r in res)
    return {r.item_id: rgb(r.image) if r.image.ndim == 2 else r.image for r in res}


@pytest.fixture()
def runs(monkeypatch):
    """The input file of every tesseract process started through pytesseract."""
    calls, real = [], pt.run_tesseract

    def counted(input_filename, *args, **kwargs):
        calls.append(input_filename)
        return real(input_filename, *args, **kwargs)

    monkeypatch.setattr(pt, "run_tesseract", counted)
    return calls


PAGE = rgb(skimage.data.page())
BLANK = np.full((48, 64, 3), 255, np.uint8)


@requires_tesseract
def test_read_many_is_read_image_by_image(rendered, runs):
    ocr = TesseractOCR()
    images = [PAGE, rendered["en"], BLANK, PAGE.astype(np.uint16) * 257, PAGE[:100]]
    expected = [ocr.read(image, "eng") for image in images]
    runs.clear()
    assert ocr.read_many(images, "eng") == expected
    assert len(runs) == 1 and expected[2] == "" and "markers" in expected[3]
    zh = [rendered["zh"], BLANK, rendered["zh"][:, :400]]
    assert ocr.read_many(zh, "chi_sim") == [ocr.read(image, "chi_sim") for image in zh]
    assert "图像" in ocr.read_many(zh, "chi_sim")[0].replace(" ", "")


@requires_tesseract
def test_batches_are_capped_and_a_bad_batch_is_read_image_by_image(runs):
    ocr = TesseractOCR(psm=6)
    ocr.batch_size = 2
    crops = [PAGE[:60], PAGE[60:120], PAGE[120:]]
    expected = [ocr.read(image, "eng") for image in crops]
    runs.clear()
    assert ocr.read_many(crops, "eng") == expected and len(runs) == 2
    # an image PIL cannot take: its own error; the others are still read in one process
    ocr.batch_size = 64
    runs.clear()
    out = ocr.read_many([crops[0], np.zeros((8, 8, 3), np.float64), crops[2]], "eng")
    assert out[0] == expected[0] and out[2] == expected[2] and isinstance(out[1], TypeError)
    assert len(runs) == 1
    # the legacy engine's modes are not batched (its adaptive classifier spans pages)
    runs.clear()
    assert TesseractOCR(psm=6, oem=3).read_many(crops[:2], "eng") == expected[:2]
    assert len(runs) == 2
    # no page separator: one page for three images, so they are read one by one
    flat = TesseractOCR(psm=6, config="-c page_separator=")
    assert flat.read_many(crops, "eng") == expected


@requires_tesseract
def test_a_failing_batch_falls_back(monkeypatch):
    ocr = TesseractOCR(psm=6)
    crops = [PAGE[:60], PAGE[60:120]]
    expected = [ocr.read(image, "eng") for image in crops]
    real = pt.run_tesseract

    def fail_on_lists(input_filename, *args, **kwargs):
        if input_filename.endswith(".txt"):
            raise pt.TesseractError(1, "Image file x cannot be read!")
        return real(input_filename, *args, **kwargs)

    monkeypatch.setattr(pt, "run_tesseract", fail_on_lists)
    assert ocr.read_many(crops, "eng") == expected


class Flaky:
    """An engine without read_many whose reading fails on dark images."""

    def read(self, image, lang="eng"):
        if image.mean() < 128:
            raise RuntimeError("too dark")
        return f"{lang}:{image.shape[0]}"


def test_engines_without_read_many_read_one_by_one():
    dark, light = np.zeros((4, 4, 3), np.uint8), np.full((5, 4, 3), 255, np.uint8)
    out = read_many(Flaky(), [light, dark, light], "eng")
    assert out[0] == out[2] == "eng:5" and isinstance(out[1], RuntimeError)
    jobs = [("eng", light), ("hin", light), ("eng", dark), ("hin", light[:2])]
    out = read_in_batches(Flaky(), jobs, threads=2)
    assert out[:2] == ["eng:5", "hin:5"] and str(out[2]) == "too dark" and out[3] == "hin:2"


@requires_tesseract
def test_ocr_items_mixes_paths_arrays_and_languages(tmp_path, rendered, runs):
    ocr = TesseractOCR()
    write_png(tmp_path / "page.png", PAGE)
    write_png(tmp_path / "zh.png", rendered["zh"])
    (tmp_path / "bad.png").write_bytes(b"junk")
    items = [("zh_path", tmp_path / "zh.png", "chi_sim"), ("page", tmp_path / "page.png", "eng"),
             ("bad", tmp_path / "bad.png", "eng"), ("en", rendered["en"], "eng"),
             ("zh_array", rendered["zh"], "chi_sim"), ("float", np.zeros((4, 4, 3)), "eng"),
             ("blank", BLANK, "eng")]
    runs.clear()
    df = ocr_items(ocr, items, threads=1)
    assert list(df.columns) == ["item_id", "text", "status", "reason"]
    assert df["item_id"].tolist() == [i for i, _, _ in items]
    assert len(runs) == 2  # one process per language
    by_id = df.set_index("item_id")
    assert by_id.loc["zh_path", "text"] == by_id.loc["zh_array", "text"] == \
        ocr.read(rendered["zh"], "chi_sim")
    assert by_id.loc["page", "text"] == ocr.read(PAGE, "eng")
    assert by_id.loc["en", "text"] == ocr.read(rendered["en"], "eng")
    assert (by_id.loc["blank", "text"], by_id.loc["blank", "status"]) == ("", "ok")
    assert by_id.loc["bad", "status"] == "error" and "bad.png" in by_id.loc["bad", "reason"]
    assert by_id.loc["float", "status"] == "error" and by_id.loc["float", "reason"]
    assert (df["status"] == "ok").sum() == 5
    # two threads: the same rows
    assert ocr_items(ocr, items, threads=2).equals(df)


@requires_tesseract
def test_audit_and_telephone_read_in_batches_with_the_same_texts(rendered, runs):
    from roundtrip.core.manifest import Item
    from roundtrip.datasets.rendered.audit import AuditSettings, _upscaled, audit_items
    from roundtrip.evals.telephone.unified import RenderOCR, one_paragraph

    en, zh = rendered["en"], rendered["zh"]
    h = en.shape[0] // 2
    poster = Item("poster", "x", image=en, extra={
        "title": "What", "slogan": "A. 26", "title_box": f"0 0 {en.shape[1]} {h}",
        "slogan_box": f"0 {h} {en.shape[1]} {en.shape[0]}"})
    items = [Item("zh", "x", image=zh, extra={"text": "视觉", "lang": "chi_sim"}), poster,
             Item("none", "x", image=None, reason="render failed: no font"),
             Item("en", "x", image=en, extra={"text": "What is 53 - 25?"})]
    runs.clear()
    audit = audit_items(items, AuditSettings(threads=1)).set_index("item_id")
    assert len(runs) == 2  # eng (three regions) and chi_sim (one region: a single read)
    ocr = TesseractOCR(psm=6)
    up = lambda im: _upscaled(im, 2)  # noqa: E731
    assert audit.loc["en", "ocr_text"] == ocr.read(up(en), "eng")
    assert audit.loc["zh", "ocr_text"] == ocr.read(up(zh), "chi_sim")
    halves = [ocr.read(up(en[max(0, y0 - 8):y1 + 8]), "eng") for y0, y1 in ((0, h), (h, 10**6))]
    assert audit.loc["poster", "ocr_text"] == "\n".join(halves)
    assert audit.loc["none", "status"] == "error" and "no font" in audit.loc["none", "reason"]

    pair = RenderOCR()
    texts = pair.i2t([en, np.zeros((4, 4, 3), np.float64), en[:h]])
    assert texts[0] == one_paragraph(TesseractOCR(psm=6).read(en, "eng"))
    assert isinstance(texts[1], TypeError) and texts[2] == one_paragraph(ocr.read(en[:h], "eng"))


@requires_tesseract
def test_read_gives_pytesseracts_own_texts(rendered):
    """TesseractOCR writes Tesseract's input PNG itself (a faster zlib level): the texts are
    pytesseract's own for the same image, alpha channel included (laid on white)."""
    import pytesseract
    from PIL import Image

    ocr = TesseractOCR(psm=6)
    rgba = np.dstack([rendered["en"], np.where(rendered["en"][..., 0] < 128, 255, 40)])
    rgba = rgba.astype(np.uint8)
    for image in (PAGE, rendered["en"], rgba):
        own = pytesseract.image_to_string(Image.fromarray(image), config="--psm 6 --oem 1")
        assert ocr.read(image) == own
        assert ocr.read_many([image, image]) == [own, own]
    assert "markers" in ocr.read(PAGE)
