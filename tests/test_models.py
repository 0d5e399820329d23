"""Codec adapters behind the common interface, and the registry's config errors."""
import io

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from roundtrip.models import build_model
from roundtrip.models.codecs import _from_uint8, _to_uint8


@pytest.fixture(scope="module")
def batch():
    img = skimage.data.astronaut()[:256, :384]
    return img, _from_uint8(img[None])


def test_uint8_mapping_is_lossless(batch):
    img, x = batch
    assert x.dtype == torch.float32 and x.min() >= -1 and x.max() <= 1
    assert np.array_equal(_to_uint8(x)[0], img)


def test_identity_is_exact(batch):
    img, x = batch
    m = build_model("identity", {"type": "identity"})
    assert torch.equal(m.reconstruct(x), x)
    assert m.info().family == "codec" and m.latent_shape(256, 384) == (3, 256, 384)


@pytest.mark.parametrize("fmt,kind", [("JPEG", "jpeg"), ("WEBP", "webp")])
def test_lossy_codecs_match_direct_pillow_calls(batch, fmt, kind):
    img, x = batch
    m = build_model("c", {"type": kind, "quality": 30})
    out = _to_uint8(m.reconstruct(x))[0]
    buf = io.BytesIO()
    extra = {"subsampling": 2} if kind == "jpeg" else {"method": 4}
    Image.fromarray(img).save(buf, format=fmt, quality=30, **extra)
    ref = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    assert np.array_equal(out, ref)
    assert not np.array_equal(out, img)


def test_jpeg_quality_orders_error(batch):
    _, x = batch
    err = {q: float((build_model("j", {"type": "jpeg", "quality": q}).reconstruct(x) - x)
                    .abs().mean()) for q in (10, 50, 95)}
    assert err[10] > err[50] > err[95] > 0


def test_resample_shapes_and_degradation(batch):
    _, x = batch
    m4 = build_model("b4", {"type": "resample", "factor": 4})
    m8 = build_model("b8", {"type": "resample", "factor": 8})
    assert m4.encode(x)["low"].shape == (1, 3, 64, 96)
    assert m4.latent_shape(256, 384) == (3, 64, 96) and m4.info().downsample == 4
    y4, y8 = m4.reconstruct(x), m8.reconstruct(x)
    assert y4.shape == x.shape and y4.min() >= -1 and y4.max() <= 1
    assert (y8 - x).pow(2).mean() > (y4 - x).pow(2).mean() > 0


@pytest.mark.parametrize("spec,match", [
    ({"type": "nope"}, r"models\.m\.type: unknown model type 'nope'"),
    ({"type": "jpeg", "quality": 0}, r"models\.m: quality must be in 1\.\.100"),
    ({"type": "resample", "factor": 1}, r"models\.m: factor must be > 1"),
    ({"type": "jpeg", "quality": 50, "factor": 2}, r"models\.m: .*factor"),
])
def test_bad_specs_name_the_key(spec, match):
    with pytest.raises(ValueError, match=match):
        build_model("m", spec)
