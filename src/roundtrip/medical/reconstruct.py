"""Volumes through 2D and 3D models, and their fidelity (MediBench pillar 1).

Intensities are mapped to ``[0, 1]`` for I/O and metrics and to ``[-1, 1]`` at the encoder
(MediBench Appendix A), with MONAI's intensity transforms. Inputs are padded to a multiple of the
model's downsample factor (MONAI ``DivisiblePad``) and cropped back after decoding.

- **Slice-wise** (:func:`reconstruct_slicewise`): any 2D adapter, slices along a configurable axis,
  replicated to 3 channels when the model needs RGB, batched; the output is preallocated and
  filled batch by batch, so memory is one volume plus one batch whatever the depth.
- **Native 3D** (:func:`reconstruct_volume_3d`): a 3D adapter (MONAI AutoencoderKL/VQVAE with
  ``spatial_dims: 3``) through MONAI's sliding-window inference, so memory is bounded by the
  window, not the volume.
- **Fidelity** (:func:`fidelity`): PSNR over all voxels (float64 MSE, data range 1) and SSIM in
  2D or 3D with MONAI's ``SSIMMetric`` (Gaussian window 11, sigma 1.5, K1 0.01, K2 0.03).
"""
from __future__ import annotations

import numpy as np
import torch

from ..metrics.image_quality import mse, psnr_from_mse
from ..models import Adapter


#: Volumes in [0, 1] live on a grid of 2**-16 steps (like 16-bit images): then the map to
#: [-1, 1] and back is exact in float32, so the identity model scores PSNR = inf, SSIM = 1.
GRID = 2.0 ** 16


def on_grid(x: np.ndarray) -> np.ndarray:
    """``x`` clipped to ``[0, 1]`` and rounded to the :data:`GRID` (float32)."""
    return (np.round(np.clip(x, 0.0, 1.0) * GRID) / GRID).astype(np.float32)


def to_unit_range(volume: np.ndarray, mode: str = "minmax",
                  window: tuple[float, float] | None = None,
                  percentiles: tuple[float, float] = (0.5, 99.5)) -> np.ndarray:
    """Map intensities to ``[0, 1]`` (float32) with MONAI transforms.

    Args:
        volume: any-shape array of intensities (HU for CT, arbitrary units for MRI).
        mode: ``minmax`` (``ScaleIntensity``), ``percentiles`` (``ScaleIntensityRangePercentiles``,
            clipped; robust to a few hot voxels) or ``window`` (``ScaleIntensityRange`` over
            ``window``, clipped; CT windows such as ``(-1000, 1000)`` HU). The result is on
            the :data:`GRID`.

    Raises:
        ValueError: unknown mode, or ``window`` missing/empty for ``mode="window"``.
    """
    from monai.transforms import ScaleIntensity, ScaleIntensityRange, ScaleIntensityRangePercentiles

    t = torch.as_tensor(np.asarray(volume, dtype=np.float32))
    if mode == "minmax":
        out = ScaleIntensity(minv=0.0, maxv=1.0)(t)
    elif mode == "percentiles":
        lo, hi = percentiles
        out = ScaleIntensityRangePercentiles(lower=lo, upper=hi, b_min=0.0, b_max=1.0, clip=True)(t)
    elif mode == "window":
        if not window or window[1] <= window[0]:
            raise ValueError(f"window must be (low, high) with low < high, got {window}")
        out = ScaleIntensityRange(a_min=window[0], a_max=window[1], b_min=0.0, b_max=1.0,
                                  clip=True)(t)
    else:
        raise ValueError(f"unknown intensity mode {mode!r}; use minmax, percentiles or window")
    return on_grid(np.asarray(out, dtype=np.float32))


def _divisible(x: torch.Tensor, k: int) -> tuple[torch.Tensor, tuple[slice, ...]]:
    """Pad the spatial dims of ``[B, C, *spatial]`` at their end to multiples of ``k`` (MONAI
    ``DivisiblePad``, edge values: a constant would draw an artificial border the model then has
    to reconstruct); returns the crop that undoes it."""
    from monai.transforms import DivisiblePad

    spatial = x.shape[2:]
    if k <= 1 or all(s % k == 0 for s in spatial):
        return x, tuple(slice(0, s) for s in spatial)
    pad = DivisiblePad(k=k, mode="edge", method="end")
    padded = torch.stack([pad(item) for item in x])
    return padded, tuple(slice(0, s) for s in spatial)


@torch.no_grad()
def reconstruct_slicewise(model: Adapter, volume01: np.ndarray, axis: int = 2,
                          batch_size: int = 16, channels: int = 3) -> np.ndarray:
    """Reconstruct a volume slice by slice through a 2D model.

    Args:
        model: a 2D adapter (inputs ``[B, C, H, W]`` in ``[-1, 1]``), on its device.
        volume01: float32 ``(X, Y, Z)`` in ``[0, 1]``.
        axis: slicing axis (2 = axial for RAS volumes).
        batch_size: slices per forward pass.
        channels: 3 to replicate each slice to RGB (natural-image VAEs), 1 for grayscale models;
            the output is the mean over the model's output channels.

    Returns:
        float32 ``(X, Y, Z)`` in ``[0, 1]`` on the :data:`GRID`, same shape as the input.

    Raises:
        ValueError: ``volume01`` is not 3D; anything the model raises propagates (the caller
            records it as the item's error).
    """
    if volume01.ndim != 3:
        raise ValueError(f"expected a 3D volume, got shape {volume01.shape}")
    slices = np.moveaxis(volume01, axis, 0)  # a view: no copy of the volume
    out = np.empty(slices.shape, dtype=np.float32)
    k = max(1, int(model.info().downsample))
    for start in range(0, slices.shape[0], batch_size):
        x = torch.from_numpy(np.ascontiguousarray(slices[start:start + batch_size]))[:, None]
        x = (x * 2.0 - 1.0).expand(-1, channels, -1, -1).contiguous()
        padded, crop = _divisible(x, k)
        y = model.reconstruct(padded.to(model.device)).float().cpu()
        y = y[(slice(None), slice(None)) + crop].mean(dim=1)
        out[start:start + len(y)] = on_grid(((y + 1.0) / 2.0).numpy())
    return np.moveaxis(out, 0, axis)


@torch.no_grad()
def reconstruct_volume_3d(model: Adapter, volume01: np.ndarray, roi_size: int | tuple = 64,
                          overlap: float = 0.25, sw_batch_size: int = 1) -> np.ndarray:
    """Reconstruct a volume through a 3D model with MONAI sliding-window inference.

    Args:
        model: a 3D adapter (inputs ``[B, 1, D, H, W]`` in ``[-1, 1]``).
        volume01: float32 ``(X, Y, Z)`` in ``[0, 1]``.
        roi_size: window side (or sides); a multiple of the model's downsample factor.
        overlap: window overlap; windows are blended with Gaussian weights.

    Returns:
        float32 ``(X, Y, Z)`` in ``[0, 1]``.
    """
    from monai.inferers import sliding_window_inference

    k = max(1, int(model.info().downsample))
    roi = (roi_size,) * 3 if isinstance(roi_size, int) else tuple(roi_size)
    if any(r % k for r in roi):
        raise ValueError(f"roi_size {roi} must be a multiple of the downsample factor {k}")
    x = torch.from_numpy(np.ascontiguousarray(volume01, dtype=np.float32))[None, None] * 2 - 1
    padded, crop = _divisible(x, k)
    y = sliding_window_inference(padded.to(model.device), roi, sw_batch_size, model.reconstruct,
                                 overlap=overlap, mode="gaussian")
    y = y[(0, 0) + crop].float().cpu()
    return on_grid(((y + 1.0) / 2.0).numpy())


def fidelity(x01: np.ndarray, y01: np.ndarray, spatial_dims: int) -> dict[str, float]:
    """PSNR (dB), SSIM and MSE of a pair in ``[0, 1]``: 2D images ``(H, W)`` or ``(H, W, C)``
    (``spatial_dims=2``) or volumes ``(X, Y, Z)`` (``spatial_dims=3``).

    PSNR = ``10 log10(1 / MSE)`` over all values (``inf`` when identical). SSIM: MONAI
    ``SSIMMetric(spatial_dims=...)`` (MediBench Sec. 3.1), channels averaged.

    Raises:
        ValueError: shapes differ, a bad ``spatial_dims``, or a side shorter than the 11-voxel
            SSIM window.
    """
    from monai.metrics import SSIMMetric

    if x01.shape != y01.shape:
        raise ValueError(f"shapes differ: {x01.shape} vs {y01.shape}")
    if spatial_dims not in (2, 3) or x01.ndim not in (spatial_dims, spatial_dims + 1):
        raise ValueError(f"spatial_dims={spatial_dims} does not fit shape {x01.shape}")
    if min(x01.shape[:spatial_dims]) < 11:
        raise ValueError(f"side {min(x01.shape[:spatial_dims])} is shorter than the 11-voxel "
                         "SSIM window")
    m = mse(x01, y01)

    def as_batch(a: np.ndarray) -> torch.Tensor:  # -> [1, C, *spatial]
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
        return t[None, None] if a.ndim == spatial_dims else torch.movedim(t, -1, 0)[None]

    metric = SSIMMetric(spatial_dims=spatial_dims, data_range=1.0)
    ssim = float(metric(as_batch(x01), as_batch(y01)).mean())
    return {"psnr": psnr_from_mse(m), "ssim": ssim, "mse": m}
