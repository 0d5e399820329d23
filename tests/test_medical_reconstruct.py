"""Volumes through 2D models slice by slice and through a 3D MONAI autoencoder with sliding
windows; 3D fidelity with MONAI's SSIM on nibabel's bundled MRI."""
import math

import numpy as np
import pytest
import torch

from roundtrip.datasets.volumes import GRID, bundled_nifti, load_volume, on_grid, to_unit_range
from roundtrip.metrics.fidelity import fidelity
from roundtrip.models import build_model
from roundtrip.stages.volumes import reconstruct_slicewise, reconstruct_volume_3d


@pytest.fixture(scope="module")
def mri():
    return to_unit_range(load_volume(bundled_nifti("anatomical.nii")).data, "percentiles")


def test_intensity_modes():
    hu = np.array([-2000.0, -1000.0, 0.0, 500.0, 3000.0], dtype=np.float32)
    np.testing.assert_allclose(to_unit_range(hu, "window", window=(-1000, 1000)),
                               [0, 0, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(to_unit_range(hu, "minmax"), (hu + 2000) / 5000, atol=1 / GRID)
    with pytest.raises(ValueError, match="window"):
        to_unit_range(hu, "window")
    x = on_grid(np.random.default_rng(0).random(1000))
    # the encoder map is exact on the grid
    assert np.array_equal(((torch.from_numpy(x) * 2 - 1 + 1) / 2).numpy(), x)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_identity_slicewise_is_exact_and_degraded_model_is_worse(mri, axis):
    ident = build_model("identity", {"type": "identity"})
    out = reconstruct_slicewise(ident, mri, axis=axis, batch_size=7)
    scores = fidelity(mri, out, spatial_dims=3)
    assert scores["psnr"] == math.inf and scores["ssim"] == pytest.approx(1.0, abs=1e-6)
    bicubic = build_model("b", {"type": "resample", "factor": 4})
    worse = fidelity(mri, reconstruct_slicewise(bicubic, mri, axis=axis), spatial_dims=3)
    assert 10 < worse["psnr"] < 40 and worse["ssim"] < 0.95


def test_slicewise_pads_to_the_downsample_factor_and_crops_back(mri, tmp_path):
    import skimage.data

    from roundtrip.stages.train import train_small_tokenizer

    path = tmp_path / "small.pt"
    spec = {"type": "small", "family": "continuous", "downsample": 8, "channels": 8}
    train_small_tokenizer(spec, [skimage.data.astronaut()], path, steps=3, batch_size=2, crop=32)
    model = build_model("small", spec | {"checkpoint": str(path)})
    assert mri.shape == (33, 41, 25)  # none a multiple of 8
    out = reconstruct_slicewise(model, mri, axis=2)
    assert out.shape == mri.shape and out.dtype == np.float32
    assert 0 <= out.min() and out.max() <= 1
    assert fidelity(mri, out, 3)["psnr"] < fidelity(mri, mri, 3)["psnr"]


def test_3d_monai_autoencoder_with_sliding_windows(mri, tmp_path):
    from monai.networks.nets import AutoencoderKL

    torch.manual_seed(0)
    net_args = {"spatial_dims": 3, "in_channels": 1, "out_channels": 1, "channels": [8, 8],
                "latent_channels": 2, "num_res_blocks": 1, "attention_levels": [False, False],
                "norm_num_groups": 4}
    ckpt = tmp_path / "kl3d.pt"
    torch.save(AutoencoderKL(**net_args).state_dict(), ckpt)
    model = build_model("kl3d", {"type": "monai_kl", "checkpoint": str(ckpt), "network": net_args})
    out = reconstruct_volume_3d(model, mri, roi_size=16, overlap=0.25)
    assert out.shape == mri.shape and np.isfinite(out).all()
    with pytest.raises(ValueError, match="multiple of the downsample factor"):
        reconstruct_volume_3d(model, mri, roi_size=15)


def test_fidelity_2d_matches_the_image_metrics():
    import skimage.data

    from roundtrip.metrics.image_quality import psnr, ssim

    x = skimage.data.camera()[:128, :128] / 255.0
    y = np.clip(x + np.random.default_rng(0).normal(0, 0.05, x.shape), 0, 1)
    got = fidelity(x, y, spatial_dims=2)
    assert got["psnr"] == pytest.approx(psnr(x, y), abs=1e-9)
    # MONAI's SSIM and ours (scikit-image's definition) differ only at the borders
    assert got["ssim"] == pytest.approx(ssim(x, y), abs=0.02)
    with pytest.raises(ValueError, match="spatial_dims"):
        fidelity(x, y, spatial_dims=3)
