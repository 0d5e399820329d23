"""Full-reference image quality: PSNR and SSIM.

Conventions (shared by every table in roundtrip):

* Images are RGB, float, values in ``[0, 1]``; ``data_range = 1``. No conversion to luma.
* PSNR (dB) = ``10 log10(1 / MSE)`` with MSE over all pixels and all three channels, in float64.
  Identical images give ``inf``. The *pooled* PSNR of a set uses the MSE over all values of all
  items, i.e. ``10 log10(sum(N_i) / sum(N_i MSE_i))``, which weights large images more and is
  robust to a single perfect item. Neither is VTBench's published figure: its released
  evaluator pools the squared error over the set with the data range of the originals
  (torchmetrics' default), :mod:`roundtrip.evals.vtbench.released`.
* SSIM follows Wang et al., "Image quality assessment: from error visibility to structural
  similarity" (IEEE TIP 2004): Gaussian window sigma = 1.5 truncated at 3.5 sigma (11 x 11),
  ``K1 = 0.01``, ``K2 = 0.03``, population (not sample) covariance, computed per channel on the
  valid region (no padding: the 5-pixel border is excluded) and averaged over pixels then
  channels. This equals ``skimage.metrics.structural_similarity(x, y, data_range=1,
  channel_axis=-1, gaussian_weights=True, sigma=1.5, use_sample_covariance=False)``.
"""
from __future__ import annotations

import math

import numpy as np
import torch

SSIM_SIGMA = 1.5
SSIM_TRUNCATE = 3.5
SSIM_K1, SSIM_K2 = 0.01, 0.03


def mse(x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error over all values, float64.

    Raises:
        ValueError: shapes differ.
    """
    if x.shape != y.shape:
        raise ValueError(f"shape mismatch: {x.shape} vs {y.shape}")
    d = x.astype(np.float64) - y.astype(np.float64)
    return float(np.mean(d * d))


def psnr_from_mse(m: float, data_range: float = 1.0) -> float:
    """PSNR in dB from an MSE; ``inf`` for ``m == 0``."""
    if m == 0:
        return math.inf
    return 10.0 * math.log10(data_range ** 2 / m)


def psnr(x: np.ndarray, y: np.ndarray, data_range: float = 1.0) -> float:
    """PSNR in dB between two images of equal shape with values in ``[0, data_range]``."""
    return psnr_from_mse(mse(x, y), data_range)


def pooled_psnr(mses: np.ndarray, n_values: np.ndarray, data_range: float = 1.0) -> float:
    """PSNR of a whole set from per-item MSEs and value counts (see module docstring)."""
    mses, n_values = np.asarray(mses, np.float64), np.asarray(n_values, np.float64)
    if len(mses) == 0:
        return math.nan
    return psnr_from_mse(float(np.sum(mses * n_values) / np.sum(n_values)), data_range)


def _gaussian_kernel(sigma: float, truncate: float, dtype) -> torch.Tensor:
    radius = int(truncate * sigma + 0.5)
    t = torch.arange(-radius, radius + 1, dtype=dtype)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return k / k.sum()


def _blur_valid(z: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Separable ``valid`` filtering of ``[N, H, W]`` by the 1-D kernel ``k`` along H then W.

    Accumulates shifted slices instead of calling ``conv2d``: for float64 on CPU, conv2d falls
    back to an im2col path whose buffer is ``len(k)`` times the input (1.8 GB for a 1-megapixel
    RGB pair); this uses only the output's memory and gives the same sums.
    """
    win = k.numel()
    h, w = z.shape[-2] - win + 1, z.shape[-1] - win + 1
    rows = z[:, 0:h, :] * k[0]
    for i in range(1, win):
        rows += z[:, i:i + h, :] * k[i]
    out = rows[:, :, 0:w] * k[0]
    for j in range(1, win):
        out += rows[:, :, j:j + w] * k[j]
    return out


def ssim_batch(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0,
               sigma: float = SSIM_SIGMA, dtype=torch.float64) -> torch.Tensor:
    """SSIM of each pair in a batch (definition in the module docstring).

    Args:
        x, y: ``[B, C, H, W]`` tensors in ``[0, data_range]``; H and W at least 11.
        dtype: computation precision: float64 matches scikit-image to ~1e-12, float32 to
            ~1e-5 at about 4x the speed (the workflow's scoring uses float32).

    Returns:
        ``[B]`` float64 tensor of mean SSIM over channels and the valid region.

    Raises:
        ValueError: shapes differ or the image is smaller than the window.
    """
    if x.shape != y.shape or x.ndim != 4:
        raise ValueError(f"expected equal [B, C, H, W] shapes, got {tuple(x.shape)}, {tuple(y.shape)}")
    k = _gaussian_kernel(sigma, SSIM_TRUNCATE, dtype).to(x.device)
    win = k.numel()
    b, c, h, w = x.shape
    if h < win or w < win:
        raise ValueError(f"image {h}x{w} smaller than the {win}x{win} SSIM window")
    x = x.to(dtype).reshape(b * c, h, w)
    y = y.to(dtype).reshape(b * c, h, w)
    # Variances as E[z^2] - E[z]^2 cancel catastrophically in float32 where the image is flat
    # and bright (white paper: 1 - 1). They are shift-invariant, so compute them on values
    # centered by the pair's per-channel mean; the means get the shift back for the luminance
    # term. float32 then agrees with float64 to ~1e-5 (test) at 4x the speed.
    shift = ((x.mean(dim=(1, 2)) + y.mean(dim=(1, 2))) / 2)[:, None, None]
    x, y = x - shift, y - shift
    c1, c2 = (SSIM_K1 * data_range) ** 2, (SSIM_K2 * data_range) ** 2
    # The SSIM map is built in strips of output rows so that each strip's intermediates stay
    # in the CPU cache (half the time of whole-image passes on a 1-megapixel image). Every
    # value is an element-wise function of its window, computed in the same order either
    # way, so the map and its mean are the same bits.
    s = _empty_in_layout_of(x, (b * c, h - win + 1, w - win + 1))
    for r0 in range(0, s.shape[1], _SSIM_STRIP):
        r1 = min(s.shape[1], r0 + _SSIM_STRIP)
        xs, ys = x[:, r0:r1 + win - 1], y[:, r0:r1 + win - 1]
        mx0, my0 = _blur_valid(xs, k), _blur_valid(ys, k)
        vx = _blur_valid(xs * xs, k) - mx0 * mx0
        vy = _blur_valid(ys * ys, k) - my0 * my0
        cxy = _blur_valid(xs * ys, k) - mx0 * my0
        mx, my = mx0 + shift, my0 + shift
        s[:, r0:r1] = (((2 * mx * my + c1) * (2 * cxy + c2))
                       / ((mx * mx + my * my + c1) * (vx + vy + c2)))
    return s.mean(dim=(1, 2)).view(b, c).mean(dim=1).to(torch.float64)


def _empty_in_layout_of(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """An empty tensor of ``shape`` whose dimensions lie in memory in the order of ``x``'s
    strides, as PyTorch lays out an element-wise result of ``x`` (e.g. channels innermost for
    an ``(H, W, C)`` array seen as ``[C, H, W]``). The mean over it then sums in the order it
    would over the whole-image map."""
    order = sorted(range(x.dim()), key=lambda d: x.stride(d), reverse=True)
    empty = torch.empty([shape[d] for d in order], dtype=x.dtype, device=x.device)
    return empty.permute([order.index(d) for d in range(x.dim())])


#: Output rows per strip of :func:`ssim_batch` (128 rows of a 1024-pixel-wide RGB image in
#: float32: about 1.5 MB per intermediate).
_SSIM_STRIP = 128


def ssim(x: np.ndarray, y: np.ndarray, data_range: float = 1.0) -> float:
    """SSIM of two ``(H, W, 3)`` (or ``(H, W)``) arrays in ``[0, data_range]``."""
    tx = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    ty = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64))
    if tx.ndim == 2:
        tx, ty = tx[None, None], ty[None, None]
    else:
        tx, ty = tx.permute(2, 0, 1)[None], ty.permute(2, 0, 1)[None]
    return float(ssim_batch(tx, ty, data_range)[0])
