"""Reconstruction protocols (VTBench Task 1, App. E) and their wiring through the harness."""
import math

import numpy as np
import pytest
import skimage.data
from PIL import Image

from roundtrip.core.imaging import read_image, to_unit
from roundtrip.core.protocols import (
    center_square,
    pad_to_multiple,
    prepare,
    resize,
    resize_shorter_then_crop,
)
from roundtrip.datasets import build_dataset
from roundtrip.evals.vtbench.image_quality import score_image_quality
from roundtrip.models import build_model
from roundtrip.models.base import ModelInfo
from roundtrip.stages.reconstruct import reconstruct_shard

CHELSEA = skimage.data.chelsea()  # 300 x 451
ANY8 = ModelInfo(family="continuous", downsample=8)
FIXED256 = ModelInfo(family="VQ", native_sizes=[(256, 256)], downsample=16, fixed_size=True)


def test_native_pads_to_multiple_and_crops_back():
    p = prepare(CHELSEA, "native", ANY8)
    assert p.x.shape == (304, 456, 3) and p.reference is None
    assert np.array_equal(p.x[:300, :451], to_unit(CHELSEA))
    assert np.array_equal(p.restore(p.x), to_unit(CHELSEA))
    # symmetric padding mirrors the border rows
    assert np.array_equal(p.x[300], p.x[299])


def test_a_protocol_that_leaves_the_image_as_it_is_keeps_the_original_as_reference():
    """model_size / fixed on a square image already at the target size: no reference copy
    (the harness would save one per item), the same model input; one pixel off the size and
    the resized reference is there."""
    square = CHELSEA[:256, :256]
    for protocol, size in (("model_size", 256), ("fixed", 256)):
        p = prepare(square, protocol, ANY8, size)
        assert p.reference is None and np.array_equal(p.x, to_unit(square))
    square16 = (square.astype(np.uint16) * 257)[:255, :255]
    assert prepare(square16, "model_size", ANY8, 255).reference is None
    p = prepare(square, "model_size", ANY8, 255)
    assert p.reference.shape == (255, 255, 3) and np.array_equal(p.x[:255, :255],
                                                                 to_unit(p.reference))


def test_native_marks_fixed_size_models_unsupported():
    reason = prepare(CHELSEA, "native", FIXED256)
    assert isinstance(reason, str) and "256x256" in reason and "300x451" in reason
    assert not isinstance(prepare(CHELSEA[:256, :256], "native", FIXED256), str)


def test_model_size_resizes_the_shorter_side_then_crops():
    """model_size and fixed_1024: the shorter side resized (Lanczos, 8-bit), then the center
    crop; the byte-for-byte match with the authors' loader is in test_released_vtbench.py."""
    p = prepare(CHELSEA, "model_size", FIXED256)
    assert p.x.shape == (256, 256, 3) and p.reference.shape == (256, 256, 3)
    assert np.array_equal(p.reference, resize_shorter_then_crop(CHELSEA, (256, 256)))
    assert np.array_equal(p.x, to_unit(p.reference))
    # 300 x 451 -> 256 x 385 (451 * 256 / 300 = 384.9, rounded), crop columns 64..320
    wide = np.asarray(Image.fromarray(CHELSEA).resize((385, 256), Image.LANCZOS))
    assert np.array_equal(p.reference, wide[:, 64:320])
    # the other order (crop, then bicubic) differs by up to 9 levels on the cat
    other = resize(center_square(to_unit(CHELSEA)), (256, 256))
    assert 0.03 < np.abs(p.x - other).max() < 0.04
    any_size = prepare(CHELSEA, "model_size", ANY8, size=128)
    assert any_size.x.shape == (128, 128, 3)
    # 16-bit images: per channel in float, within two 8-bit levels of the 8-bit path (Pillow
    # rounds the 8-bit path to 8 bits between its horizontal and vertical passes)
    deep = resize_shorter_then_crop(CHELSEA.astype(np.uint16) * 257, (256, 256))
    assert deep.dtype == np.uint16
    assert np.abs(deep / 257.0 - p.reference).max() <= 2.0
    # MediBench's fixed protocol keeps crop-then-bicubic
    fixed = prepare(CHELSEA, "fixed", ANY8, size=256)
    assert np.abs(fixed.x - other).max() <= 0.5 / 255 + 1e-6


def test_fixed_1024_and_native_resize():
    p = prepare(CHELSEA, "fixed_1024", ANY8)
    assert p.x.shape == (1024, 1024, 3) and p.reference.shape == (1024, 1024, 3)
    assert isinstance(prepare(CHELSEA, "fixed_1024", FIXED256), str)
    q = prepare(CHELSEA, "native_resize", FIXED256)
    assert q.x.shape == (256, 256, 3) and q.restore(q.x).shape == (300, 451, 3)
    with pytest.raises(ValueError, match="unknown protocol"):
        prepare(CHELSEA, "imagenet", ANY8)


def test_pad_modes():
    tiny = np.ones((3, 5, 3), np.float32)
    padded, unpad = pad_to_multiple(tiny, 16)  # padding larger than the image: edge mode
    assert padded.shape == (16, 16, 3) and unpad(padded).shape == (3, 5, 3)


@pytest.mark.parametrize("protocol", ["model_size", "fixed_1024"])
def test_harness_scores_against_the_protocol_reference(tmp_path, protocol):
    build_dataset("d", {"type": "skimage", "images": ["chelsea", "coins"]}, tmp_path / "ds")
    model = build_model("identity", {"type": "identity"})
    st = reconstruct_shard(model, tmp_path / "ds" / "manifest.csv", tmp_path / "r",
                           protocol=protocol, size=128)
    assert (st["reference"] == "ref/" + st["item_id"] + ".png").all()
    side = 128 if protocol == "model_size" else 1024
    assert read_image(tmp_path / "r" / "chelsea.png").shape == (side, side, 3)
    st.to_csv(tmp_path / "r" / "status.csv", index=False)
    scores = score_image_quality(tmp_path / "ds" / "manifest.csv", tmp_path / "r" / "status.csv",
                                 tmp_path / "r")
    assert (scores["psnr"] == math.inf).all()  # identity reproduces the protocol's reference
    assert np.allclose(scores["ssim"], 1.0)
