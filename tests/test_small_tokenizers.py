"""The small trained tokenizers: seeded training, checkpoints, tokens per family."""
import pytest
import skimage.data
import torch

from roundtrip.core.checkpoint import load_checkpoint
from roundtrip.models import build_model
from roundtrip.stages.train import train_small_tokenizer

IMAGES = [skimage.data.astronaut(), skimage.data.coffee()]


@pytest.mark.parametrize("family,spec,token_shape", [
    ("continuous", {}, None),
    ("VQ", {"codebook_size": 64}, (1, 8, 12)),
    ("LFQ", {"latent_channels": 6}, (1, 8, 12)),
    ("BSQ", {"latent_channels": 6}, (1, 8, 12)),
    ("RVQ", {"codebook_size": 32, "num_quantizers": 3}, (1, 8, 12, 3)),
])
def test_train_and_load(tmp_path, family, spec, token_shape):
    spec = {"family": family, "channels": 16, **spec}
    summary = train_small_tokenizer(spec, IMAGES, tmp_path / "m.pt", steps=6, batch_size=4,
                                    crop=32, seed=3)
    assert summary["steps"] == 6 and summary["final_mse"] > 0
    model = build_model("tok", {"type": "small", **spec, "checkpoint": str(tmp_path / "m.pt")})
    x = torch.rand(1, 3, 32, 48) * 2 - 1
    z = model.encode(x)
    assert model.reconstruct(x).shape == x.shape
    tok = model.tokens(z)
    if token_shape is None:
        assert tok is None and model.info().codebook_size is None
    else:
        assert tuple(tok.shape) == token_shape and tok.dtype == torch.long
        assert 0 <= int(tok.min()) and int(tok.max()) < model.info().codebook_size
    assert model.latent_shape(32, 48) == (spec.get("latent_channels", 8), 8, 12)
    assert model.info().family == family


def test_training_is_seeded(tmp_path):
    spec = {"family": "VQ", "channels": 16, "codebook_size": 32}
    for name in ("a", "b"):
        train_small_tokenizer(spec, IMAGES, tmp_path / f"{name}.pt", steps=4, batch_size=4,
                              crop=32, seed=7)
    a, meta = load_checkpoint(tmp_path / "a.pt")
    b, _ = load_checkpoint(tmp_path / "b.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)
    # the file itself, not only the weights: nothing volatile (time, ids) is written
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert meta["summary"] == {"steps": 4, "final_mse": meta["history"][-1]["mse"], "seed": 7}


def test_bad_specs():
    with pytest.raises(ValueError, match="family"):
        build_model("t", {"type": "small", "family": "XYZ"})
    with pytest.raises(ValueError, match="power of two"):
        build_model("t", {"type": "small", "family": "VQ", "downsample": 6})
    with pytest.raises(FileNotFoundError, match="train_tokenizer"):
        build_model("t", {"type": "small", "family": "VQ", "checkpoint": "/nope.pt"}).load()
