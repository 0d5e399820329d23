"""Fidelity of volumes and 2D medical images (MediBench pillar 1): PSNR and MONAI's SSIM.

PSNR over all voxels (float64 MSE, data range 1) and SSIM in 2D or 3D with MONAI's
``SSIMMetric`` (Gaussian window 11, sigma 1.5, K1 0.01, K2 0.03), MediBench Sec. 3.1.
"""
from __future__ import annotations

import numpy as np
import torch

from roundtrip.metrics.image_quality import mse, psnr_from_mse


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
