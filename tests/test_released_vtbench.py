"""Released-code parity of VTBench's "VTBench eval." columns: the numbers the authors' released
code printed on inputs these tests build, and roundtrip's computation of the same inputs.

The authors' released code: github.com/xingjianleng/VTBench @ 01368b3 (``environment.yml``
pins torchmetrics 1.7.1, pillow 11.2.1, numpy 1.26.4, python-levenshtein 0.27.1). It ran in an
environment of its own with those pins, plus transformers 4.52.3, torch-fidelity 0.3.0 and
scipy 1.15.3 (imported by ``evaluate_images.py``), on Python 3.11 with torch 2.14.1 and
torchvision 0.29.1: the pins python 3.10, torch 2.5.1 and torchvision 0.20.1 were not honoured
(torchvision's ``Resize`` of a PIL image is Pillow's bilinear resize in both).

* Image metrics: ``python tests/test_released_vtbench.py OUT`` writes each case of
  :data:`CASES` as ``OUT/<case>/original`` and ``OUT/<case>/reconstructed`` (PNG files of one
  name in both); then, in ``evaluations/``, for each case::

      python evaluate_images.py --original_dir OUT/<case>/original \
          --reconstructed_dir OUT/<case>/reconstructed/ --output_dir RESULT/<case> \
          --metrics psnr ssim --batch_size 16 --num_workers 8

  (``examples/submit.sh``'s options; ``--image_size`` left at its default 256). The values are
  those of the ``metrics.csv`` it wrote (its printout rounds them to 4 decimals). LPIPS and FID
  were not run: their pretrained weights (AlexNet, Inception) cannot be had offline here.
* Text metrics: ``CharacterErrorRate(ocr)`` and ``WordErrorRate(ocr)`` of
  ``evaluations/character_error_rate.py`` and ``word_error_rate.py`` with a stub ``ocr`` whose
  ``predict`` returns the designed strings of :data:`OCR_CASES` (the original's reading for the
  target image, the reconstruction's for the prediction), one ``update`` per case with all its
  pairs, then ``compute()``.
* Preprocessing: ``src/data_processing.py``'s ``pil_to_tensor(img, target_image_size=S,
  lock_ratio=True, center_crop=True, padding=False, standardize=False)`` of scikit-image photos
  saved as PNG, the tensor times 255 rounded to 8 bits; the first 16 hex digits of the SHA-256
  of the ``(S, S, 3)`` bytes.
"""
from __future__ import annotations

import functools
import hashlib
import io
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skimage.data
import skimage.metrics
import torch
import yaml
from PIL import Image

from roundtrip.core.protocols import prepare, resize_shorter_then_crop
from roundtrip.core.recon_items import ReconItem
from roundtrip.evals.vtbench import released
from roundtrip.evals.vtbench.image_quality import ImageQualityScorer
from roundtrip.evals.vtbench.text import released_text_rows
from roundtrip.metrics.text import raw_text_errors
from roundtrip.models.base import ModelInfo

REPO = Path(__file__).resolve().parent.parent


def _rgb(a: np.ndarray) -> np.ndarray:
    return np.repeat(a[..., None], 3, axis=2) if a.ndim == 2 else a[..., :3]


def _jpeg(img: np.ndarray, quality: int) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def astronaut_x4() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A 512 px model's pair: astronaut (512 x 512) and its PIL bicubic x4 down and up."""
    x = skimage.data.astronaut()
    small = Image.fromarray(x).resize((128, 128), Image.BICUBIC)
    return {"astronaut.png": (x, np.asarray(small.resize((512, 512), Image.BICUBIC)))}


def _smooth(rng, shape, lo: int, hi: int) -> np.ndarray:
    """A smooth uint8 image spanning exactly [lo, hi]: blurred noise stretched to the range."""
    h, w = shape
    base = rng.random((h // 8, w // 8, 3))
    up = np.asarray(Image.fromarray((base * 255).astype(np.uint8)).resize((w, h), Image.BICUBIC),
                    dtype=np.float64)
    up = (up - up.min()) / (up.max() - up.min())
    return np.round(lo + up * (hi - lo)).astype(np.uint8)


def _noisy(rng, x: np.ndarray, sigma: float) -> np.ndarray:
    return np.clip(np.round(x + rng.normal(0, sigma, x.shape)), 0, 255).astype(np.uint8)


def value_range() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Four 256 x 256 originals in [0.25, 0.85] (uint8 64..217), reconstructions with noise."""
    rng = np.random.default_rng(0)
    out = {}
    for i in range(4):
        x = _smooth(rng, (256, 256), 64, 217)
        out[f"{i:03d}.png"] = (x, _noisy(rng, x, 6.0))
    return out


def batch_ranges() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Twenty 256 x 256 pairs whose value ranges differ (image i spans [10 + 2 i, 215 + 2 i]),
    so a batch of 16's range is not any pair's own: the released SSIM's data range per update.
    Names are not in item order (``k{19 - i}``), so sorted file-name order matters."""
    rng = np.random.default_rng(1)
    out = {}
    for i in range(20):
        x = _smooth(rng, (256, 256), 10 + 2 * i, 215 + 2 * i)
        out[f"k{19 - i:02d}.png"] = (x, _noisy(rng, x, 5.0))
    return out


def photos() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """scikit-image photographs at their own sizes (non-square: the released resize squashes
    them to 256 x 256) with seeded noise."""
    rng = np.random.default_rng(2)
    out = {}
    for name in ("chelsea", "coffee", "rocket", "camera"):
        x = _rgb(getattr(skimage.data, name)())
        out[f"{name}.png"] = (x, _noisy(rng, x, 10.0))
    return out


def textures_jpeg() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The default run's ``textures`` (brick, grass, gravel; 512 x 512 gray as RGB) through
    JPEG q75 (Pillow's encoder, as the ``jpeg_q75`` model)."""
    return {f"{n}.png": (_rgb(getattr(skimage.data, n)()), _jpeg(_rgb(getattr(skimage.data, n)()),
                                                                   75))
            for n in ("brick", "grass", "gravel")}


CASES = {"astronaut_x4": astronaut_x4, "value_range": value_range,
         "batch_ranges": batch_ranges, "photos": photos, "textures_jpeg": textures_jpeg}


def write(root: Path) -> None:
    """Every case as two folders of PNGs under ``root/<case>``."""
    for case, build in CASES.items():
        for name, (x, y) in build().items():
            for folder, img in (("original", x), ("reconstructed", y)):
                (root / case / folder).mkdir(parents=True, exist_ok=True)
                Image.fromarray(img).save(root / case / folder / name)


#: Designed OCR outputs ``(OCR of the original, OCR of the reconstruction)`` per case.
OCR_CASES = {
    "short_and_perfect": [("ab", ""), ("The quick brown fox jumps over the lazy dog while the "
                                        "five boxing wizards jump quickly at dawn!!!!", None)],
    "cat_mat": [("the cat sat on the mat", "the dog sat on the hat")],
    "layout": [("Hello  world\n", "Hello world"), ("two\nlines here", "two lines here")],
    "empty_reference": [("", "noise"), ("word", "ward")],
}


#: ``metrics.csv`` of the released evaluator per case: (PSNR, SSIM).
RELEASED_IMAGE_METRICS = {
    "astronaut_x4": (29.892934799194336, 0.9471791386604309),
    "value_range": (31.15172576904297, 0.887344479560852),
    "batch_ranges": (34.07231521606445, 0.9498825073242188),
    "photos": (36.78671646118164, 0.9070540070533752),
    "textures_jpeg": (47.988319396972656, 0.9981819987297058),
}
#: ``compute()`` of the released CharacterErrorRate and WordErrorRate per OCR case.
RELEASED_TEXT_RATES = {
    "short_and_perfect": (0.019999999552965164, 0.10526315867900848),
    "cat_mat": (0.1818181872367859, 0.6666666865348816),
    "layout": (0.1111111119389534, 0.0),
    "empty_reference": (1.5, 6.0),
}
#: pil_to_tensor of a scikit-image photo at size S: (name, S, sha256[:16] of the 8-bit result).
RELEASED_PREPROCESSING = [("chelsea", 256, "2dd7166cdeb0b28d"), ("coffee", 1024, "f91549b2b99929e2"),
                          ("astronaut", 256, "f12c4ee1d753e7b9"), ("camera", 384, "709b4b99c6735f3e"),
                          ("chelsea", 512, "8be5d5c5debe0511")]


@functools.cache
def scored(case: str) -> tuple[pd.DataFrame, pd.Series, list]:
    """roundtrip's image-quality scorer on a case's pairs in memory, delivered in the case's
    order (not the released sorted order): its per-item frame, its set values by metric and
    its records."""
    items = [ReconItem(name[:-4], "ok", "", None, None, x, y)
             for name, (x, y) in CASES[case]().items()]
    scorer = ImageQualityScorer(None, {})
    records = scorer.score(items)
    out = scorer.finish([i.without_images() for i in items], records)
    return out["image_quality"], out["set"].set_index("metric")["value"], records


@pytest.mark.parametrize("case", list(RELEASED_IMAGE_METRICS))
def test_image_metrics_equal_the_released_evaluator(case):
    """Every case: roundtrip's ``psnr_vtbench`` and ``ssim_vtbench`` (set value and the mean of
    the per-item values) are the released evaluator's, to float32 accumulation (PSNR 1e-5 dB,
    SSIM 2e-7)."""
    per_item, values, _ = scored(case)
    psnr, ssim = RELEASED_IMAGE_METRICS[case]
    assert values["psnr_vtbench"] == pytest.approx(psnr, abs=1e-5)
    assert values["ssim_vtbench"] == pytest.approx(ssim, abs=2e-7)
    assert per_item["ssim_vtbench"].mean() == pytest.approx(ssim, abs=2e-7)


def test_finding_1_evaluated_size():
    """Both images are resized to 256 x 256 before every metric: a 512 px model's astronaut
    (bicubic x4 down and up) is 29.89 dB / 0.9472 for the released evaluator, 25.38 dB at the
    model's size (roundtrip's earlier reading, kept as ``psnr_range``); roundtrip's SSIM there
    (data range 1, valid region) is 0.8182 where the option ``ssim_scored_size`` is on (the
    default) and NaN where it is off, which changes no other column."""
    per_item, values, _ = scored("astronaut_x4")
    assert values["psnr_vtbench"] == pytest.approx(29.8929, abs=1e-4)
    assert values["ssim_vtbench"] == pytest.approx(0.9472, abs=1e-4)
    assert values["psnr_range"] == pytest.approx(25.3784, abs=1e-4)
    x, y = astronaut_x4()["astronaut.png"]
    assert per_item["ssim"].iloc[0] == pytest.approx(
        skimage.metrics.structural_similarity(x, y, data_range=255, channel_axis=-1,
                                              gaussian_weights=True, sigma=1.5,
                                              use_sample_covariance=False), abs=1e-5)
    items = [ReconItem("astronaut", "ok", "", None, None, x, y)]
    scorer = ImageQualityScorer(None, {"ssim_scored_size": False})
    off = scorer.finish([i.without_images() for i in items], scorer.score(items))["image_quality"]
    assert math.isnan(off["ssim"].iloc[0])
    pd.testing.assert_frame_equal(off.drop(columns="ssim"), per_item.drop(columns="ssim"))
    assert values["image_size"] == 512
    view = released.evaluated_view(astronaut_x4()["astronaut.png"][0])
    expected = Image.fromarray(skimage.data.astronaut()).resize((256, 256), Image.BILINEAR)
    assert np.array_equal(view, np.asarray(expected))


def test_finding_2_psnr_range_starts_at_zero():
    """torchmetrics 1.7.1's ``PeakSignalNoiseRatio()`` keeps ``min_target``/``max_target``
    states that start at 0.0: originals in [0.25, 0.85] (64..217) give R = 217/255, not
    153/255: 31.15 dB released, 28.12 dB with max - min (20 log10(217/153) = 3.04 dB apart)."""
    _, values, _ = scored("value_range")
    assert values["psnr_vtbench"] == pytest.approx(31.1517, abs=1e-4)
    assert values["psnr_range"] == pytest.approx(28.1164, abs=1e-4)
    psnr = released.ReleasedPSNR()
    for x, y in value_range().values():
        psnr.update(released.as_tensor(y), released.as_tensor(x))
    assert psnr.data_range == pytest.approx(217 / 255)


def test_finding_3_ssim_range_per_batch_of_16():
    """The SSIM's data range is taken per update, over the 16 pairs of a batch in sorted
    file-name order: 0.94988 released, 0.94853 with each pair's own range (roundtrip's earlier
    reading); batching the same pairs in the order given (k19, k18, ...) gives 0.94982."""
    per_item, values, records = scored("batch_ranges")
    assert values["ssim_vtbench"] == pytest.approx(0.9498825, abs=2e-7)
    assert per_item["ssim_pair_range"].mean() == pytest.approx(0.9485278, abs=1e-6)
    names = per_item["item_id"].tolist()
    assert names[:2] == ["k19", "k18"]
    assert [names[i] for i in released.released_order(names)][:3] == ["k00", "k01", "k02"]
    unsorted, _ = released.released_ssim_set([r["ssim_ranges"] for r in records])
    assert unsorted == pytest.approx(0.9498200, abs=2e-7)


def test_ssim_at_ranges_is_torchmetrics_per_range():
    """A pair's SSIM at a batch's range equals torchmetrics' SSIM given that data range."""
    from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

    x, y = batch_ranges()["k10.png"]
    k0, values = released.ssim_at_ranges(y, x)
    assert k0 == max(int(y.max()) - int(y.min()), int(x.max()) - int(x.min()))
    for k in (k0, (k0 + 255) // 2, 255):
        r = float(torch.tensor(float(k)).div(255))
        expected = float(tm_ssim(released.as_tensor(y), released.as_tensor(x), data_range=r))
        assert values[k - k0] == pytest.approx(expected, abs=2e-7)


def test_pair_range_column_is_torchmetrics_ssim_of_each_pair_alone():
    """``ssim_pair_range`` is torchmetrics' default SSIM of the 256 px copies with each pair
    as its own update (its own data range), the first of the pair's batch ranges from the
    same filtering: the released evaluator's SSIM of a batch of one. Equal to torchmetrics'
    to 5e-7 (its range ``max - min`` of float32 values against ``k0 / 255``, which matters
    most where the range is a few levels: 2.4e-7 on the patch) on photographs
    at their own sizes, a 12 px near-flat patch and a small JPEG crop; two constant images
    have no value under their own range (0 / 0): NaN, as torchmetrics'."""
    from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

    def column(pairs):
        items = [ReconItem(n[:-4], "ok", "", None, None, x, y) for n, (x, y) in pairs.items()]
        scorer = ImageQualityScorer(None, {})
        return scorer.finish([i.without_images() for i in items],
                             scorer.score(items))["image_quality"]["ssim_pair_range"]

    def alone(x, y):
        vx, vy = released.evaluated_view(x), released.evaluated_view(y)
        return float(tm_ssim(released.as_tensor(vy), released.as_tensor(vx)))

    camera, rocket = _rgb(skimage.data.camera()), skimage.data.rocket()[100:164, 200:296]
    small = {"patch.png": (camera[:12, :12], camera[1:13, :12]),
             "crop.png": (rocket, _jpeg(rocket, 10))}
    for pairs in (photos(), batch_ranges(), small):
        values = column(pairs)
        for value, (x, y) in zip(values, pairs.values()):
            assert value == pytest.approx(alone(x, y), abs=5e-7)
    per_item, _, records = scored("batch_ranges")
    assert per_item["ssim_pair_range"].tolist() == [float(r["ssim_ranges"][1][0]) for r in records]
    flat = {"flat.png": (np.full((16, 16, 3), 255, np.uint8), np.full((16, 16, 3), 254, np.uint8))}
    assert math.isnan(column(flat)[0])
    assert math.isnan(float(tm_ssim(*(released.as_tensor(a) for a in flat["flat.png"]))))


def test_files_scored_with_a_decoding_thread_give_the_same_rows(tmp_path):
    """``score_image_quality_files`` with two torch threads decodes the next pairs' PNGs in a
    thread while it scores: its two frames are, to the bit, the scorer's on the pairs in
    memory at one thread (every column: roundtrip's sums run in one thread's order at any
    thread count), an unreadable reconstruction an error row with its reason."""
    from roundtrip.core.manifest import Item, write_dataset
    from roundtrip.evals.vtbench.image_quality import score_image_quality_files

    pairs = {**photos(), **value_range()}
    write_dataset([Item(name[:-4], "test", image=x) for name, (x, _) in pairs.items()],
                  tmp_path / "ds")
    (tmp_path / "r").mkdir()
    for name, (_, y) in pairs.items():
        Image.fromarray(y).save(tmp_path / "r" / name)
    (tmp_path / "r" / "001.png").write_bytes(b"not a png")
    pd.DataFrame({"item_id": [n[:-4] for n in pairs], "status": "ok", "reason": ""}).to_csv(
        tmp_path / "status.csv", index=False)
    items = [ReconItem(name[:-4], "ok", "", None, None, x, y) for name, (x, y) in pairs.items()
             if name != "001.png"]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        scorer = ImageQualityScorer(None, {})
        expected = scorer.finish([i.without_images() for i in items], scorer.score(items))
        torch.set_num_threads(2)
        per_item, set_rows = score_image_quality_files(tmp_path / "ds/manifest.csv",
                                                       tmp_path / "status.csv", tmp_path / "r")
    finally:
        torch.set_num_threads(before)
    broken = per_item["item_id"] == "001"
    assert per_item.loc[broken, "status"].item() == "error"
    assert "cannot decode 001.png" in per_item.loc[broken, "reason"].item()
    pd.testing.assert_frame_equal(per_item[~broken].reset_index(drop=True),
                                  expected["image_quality"], check_exact=True, check_dtype=False)
    assert set_rows.loc[set_rows["metric"] == "psnr_pooled", "value"].item() == \
        expected["set"].loc[expected["set"]["metric"] == "psnr_pooled", "value"].item()


@pytest.mark.parametrize("case", list(RELEASED_TEXT_RATES))
def test_finding_4_cer_wer_of_a_set(case):
    """The released CER of a set is sum(edits) / sum(characters of the original's OCR); its WER
    the character distance of the space-joined word lists over the word count."""
    rates = released.ReleasedTextRates()
    for original, text in OCR_CASES[case]:
        rates.add(released.released_text_counts(original, original if text is None else text))
    cer, wer = RELEASED_TEXT_RATES[case]
    assert rates.rates()["cer"] == pytest.approx(cer, rel=1e-7)
    assert rates.rates()["wer"] == pytest.approx(wer, rel=1e-7)


def test_finding_4_worked_cases():
    """"ab" read as "" beside a perfect 98-character line: released CER 0.02, roundtrip's
    per-item mean 0.50. "the cat sat on the mat" read as "the dog sat on the hat": released WER
    0.667 (4 characters over 6 words), Eq. 4's word-level WER 0.333 (``wer_words``)."""
    short, perfect = OCR_CASES["short_and_perfect"]
    assert len(short[0]) + len(perfect[0]) == 100
    assert np.mean([raw_text_errors(short[0], short[1])[0],
                    raw_text_errors(perfect[0], perfect[0])[0]]) == 0.5
    rates = released.ReleasedTextRates()
    rates.add(released.released_text_counts(*OCR_CASES["cat_mat"][0]))
    assert rates.rates() == pytest.approx({"cer": 4 / 22, "wer": 4 / 6, "wer_words": 2 / 6})
    # the per-item text file and the set rows
    per_item = pd.DataFrame({"item_id": ["a", "b", "c"], "status": "ok", "reason": ""})
    readings = {"a": ("ab", "", "ok", ""), "b": (perfect[0], perfect[0], "ok", ""),
                "c": ("x", "", "error", "OCR timed out")}
    rows, set_rows = released_text_rows(per_item, readings)
    values = set_rows.set_index("metric")
    assert values.loc["cer_vtbench", "value"] == pytest.approx(0.02)
    assert values.loc["cer_vtbench", "n"] == 2 and "OCR timed out" in values.loc["cer_vtbench",
                                                                                  "note"]
    assert rows["cer_vtbench"].tolist()[:2] == [1.0, 0.0] and math.isnan(rows["cer_vtbench"][2])
    assert "released OCR: OCR timed out" in rows["reason"][2]


class _StubEngine:
    """An OCR engine that reads a designed text from an image's mean level and counts reads."""
    deterministic = True

    def __init__(self):
        self.shapes = []

    def check(self, langs):
        return "stub"

    def read(self, image, lang="eng"):
        self.shapes.append(image.shape[:2])
        return "the cat sat on the mat" if image.mean() > 100 else "the dog sat on the hat"


def test_text_scorer_reads_the_released_views(tmp_path, monkeypatch):
    """The text scorer reads both 256 px images at 1024 px: the original's reading comes from
    the originals' file when the reference is the dataset's file, an identical view is not read
    again, and the set's CER/WER are the released sums."""
    from roundtrip.core.recon_items import ReconContext
    from roundtrip.evals.vtbench.text import TextScorer

    bright = np.full((300, 200, 3), 200, np.uint8)
    Image.fromarray(bright).save(tmp_path / "a.png")
    Image.fromarray(bright).save(tmp_path / "b.png")
    pd.DataFrame({"item_id": ["a", "b"], "path": ["a.png", "b.png"], "kind": "image",
                  "width": 200, "height": 300, "status": "ok", "reason": ""}).to_csv(
        tmp_path / "manifest.csv", index=False)
    pd.DataFrame({"item_id": ["a", "b"], "status": "ok", "reason": ""}).to_csv(
        tmp_path / "status.csv", index=False)
    for name in ("ocr.csv", "view.csv"):
        pd.DataFrame({"item_id": ["a", "b"], "text": "the cat sat on the mat", "status": "ok",
                      "reason": ""}).to_csv(tmp_path / name, index=False)
    ctx = ReconContext("m", tmp_path / "manifest.csv", tmp_path / "status.csv", tmp_path)
    scorer = TextScorer(ctx, {"engines": {"stub": {}}, "ocr_original": {"stub": str(tmp_path / "ocr.csv")},
                              "ocr_original_vtbench": {"stub": str(tmp_path / "view.csv")},
                              "lang": "eng", "normalization": {}})
    engine = _StubEngine()
    monkeypatch.setattr(scorer, "_built", lambda: {"stub": engine})
    dark = np.full((300, 200, 3), 20, np.uint8)
    items = [ReconItem("a", "ok", "", tmp_path / "a.png", None, bright, bright,
                       {"path": "a.png"}),
             ReconItem("b", "ok", "", tmp_path / "b.png", None, bright, dark, {"path": "b.png"})]
    records = scorer.score(items)
    # b's reconstruction read at its own size and at 1024 px; nothing else
    assert engine.shapes == [(300, 200), (1024, 1024)]
    assert records[1]["stub@vtbench"] == ("the cat sat on the mat", "the dog sat on the hat",
                                          "ok", "")
    out = scorer.finish([i.without_images() for i in items], records)
    values = out["text_set_stub"].set_index("metric")["value"]
    assert values["cer_vtbench"] == pytest.approx(4 / 44)  # b: 4 edits; a and b: 22 chars each
    assert values["wer_vtbench"] == pytest.approx(4 / 12)
    assert values["wer_words_vtbench"] == pytest.approx(2 / 12)
    assert out["text_stub"]["cer"].tolist() == pytest.approx([0.0, 4 / 22])
    assert list(out["ocr_vtbench_stub"]["item_id"]) == ["a", "b"]


def test_finding_5_ocr_view_and_preset_reader():
    """The released OCR reads the 256 px image resized to 1024 x 1024 with Pillow's default
    filter (bicubic); ``(x / 255 * 255).to(uint8)`` in float32 keeps every 8-bit level. The
    preset's OCR engine is the released model and prompt run in process, at most 1024 tokens,
    one image per call, the model folder's decoding settings."""
    levels = torch.arange(256, dtype=torch.uint8)
    assert torch.equal((levels.float().div(255) * 255).clamp(0, 255).to(torch.uint8), levels)
    view = released.evaluated_view(skimage.data.chelsea())
    bicubic = Image.fromarray(view).resize((1024, 1024), Image.BICUBIC)
    assert np.array_equal(released.ocr_view(view), np.asarray(bicubic))
    preset = yaml.safe_load((REPO / "configs/papers/vtbench.yaml").read_text())
    engine = preset["ocr"]["engines"]["gemma3"]
    assert engine["model"] == released.OCR_MODEL == "google/gemma-3-12b-it"
    assert " ".join(engine["prompt"].split()) == released.OCR_PROMPT
    assert engine["type"] == "transformers" and engine["decoding"] == "model"
    assert engine["max_new_tokens"] == released.OCR_MAX_NEW_TOKENS and engine["batch_size"] == 1
    assert engine["image_size"] == [released.OCR_SIZE] * 2
    assert preset["tables"]["ocr_engine"] == "gemma3"


@pytest.mark.parametrize("name,size,digest", RELEASED_PREPROCESSING)
def test_finding_6_preprocessing_is_the_released_loader(name, size, digest):
    """The paper protocols resize the shorter side (Lanczos) and then center-crop, byte for
    byte the released ``pil_to_tensor``; ``model_size`` gives that image to the model."""
    image = _rgb(getattr(skimage.data, name)())
    out = resize_shorter_then_crop(image, (size, size))
    assert hashlib.sha256(out.tobytes()).hexdigest()[:16] == digest
    fixed = ModelInfo(family="VQ", native_sizes=[(size, size)], downsample=8, fixed_size=True)
    p = prepare(image, "model_size", fixed)
    assert np.array_equal(p.reference if p.reference is not None else image, out)


def test_finding_8_docs_say_what_the_code_does():
    """The VTBench page states the released convention and lists each deviation."""
    text = " ".join((REPO / "docs/evaluations/vtbench.md").read_text().split())
    for wrong in ("the resize step is the identity", "one pair per update",
                  "R` = max - min of the originals over the set (torchmetrics"):
        assert wrong not in text
    for said in ("256 x 256", "batches of 16", "max(0, max) - min(0, min)",
                 "Σ edits / Σ characters", "google/gemma-3-12b-it", "Lanczos",
                 "each language apart"):
        assert said in text, said


if __name__ == "__main__":
    write(Path(sys.argv[1]))


def test_level_stats_are_the_exact_pair_stats():
    """``ReleasedPSNR.level_stats`` of two 8-bit views: the exact sum of squared errors of the
    levels over 255^2 (a fraction of integers, one rounding), within 1e-7 relative of
    ``pair_stats`` of the float32 ``ToTensor`` values, with the same count and the same
    original min and max; other dtypes and shapes are refused."""
    from fractions import Fraction

    for x, y in photos().values():
        vx, vy = released.evaluated_view(x), released.evaluated_view(y)
        got = released.ReleasedPSNR.level_stats(vy, vx)
        ref = released.ReleasedPSNR.pair_stats(released.as_tensor(vy), released.as_tensor(vx))
        d = vy.astype(np.int64) - vx.astype(np.int64)
        assert got[0] == float(Fraction(int((d * d).sum()), 255 ** 2))
        assert got[0] == pytest.approx(ref[0], rel=1e-7) and got[1:] == ref[1:]
    with pytest.raises(ValueError, match="uint8"):
        released.ReleasedPSNR.level_stats(vy.astype(np.uint16), vx.astype(np.uint16))
    with pytest.raises(ValueError, match="one size"):
        released.ReleasedPSNR.level_stats(vy[:10], vx)
