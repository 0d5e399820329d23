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
* torchmetrics' default SSIM (``StructuralSimilarityIndexMeasure()``) differs only in what reads
  the same filtered moments: every pixel of the image reflect-padded by 5, clamped variances and
  the data range of the update (:data:`REFLECT_OWN_RANGE`). :func:`ssim_conventions` computes
  several such conventions from one filtering of a pair.
* On the CPU the Gaussian moments are filtered by OpenCV's separable filter
  (``cv2.sepFilter2D``) and every other step runs in numpy, in the calling thread: the values
  are the same bits at any thread count (OpenCV's or PyTorch's). On a GPU they are PyTorch's
  element-wise operations (:func:`_blur_valid`).
* :func:`mse_levels`, the MSE of two 8- or 16-bit images (VTBench's scorer's ``mse`` and
  ``psnr``), is exact: the squared differences of the integer levels summed in int64, then
  divided once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

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
    d = np.subtract(x, y, dtype=np.float64)  # both cast to float64 first, no float64 copies
    np.multiply(d, d, out=d)
    return float(np.mean(d))


def sse_levels(a: np.ndarray, b: np.ndarray) -> int:
    """Sum of squared differences of two integer images in their own levels, exactly (summed
    in int64): :func:`mse_levels`'s numerator, and the released evaluator's squared error of
    two 8-bit copies (:meth:`roundtrip.evals.vtbench.released.ReleasedPSNR.level_stats`).

    Args:
        a, b: arrays of one shape, both ``uint8`` or both ``uint16``.

    Returns:
        The sum, in squared levels (at most ``N vmax^2``).

    Raises:
        ValueError: shapes or dtypes differ, or a dtype is not ``uint8``/``uint16``.
    """
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {a.shape} vs {b.shape}")
    if a.dtype != b.dtype or a.dtype not in (np.uint8, np.uint16):
        raise ValueError("integer levels need two uint8 or two uint16 arrays, "
                         f"got {a.dtype}, {b.dtype}")
    # a squared 8-bit difference fits int32 (at most 65025), a 16-bit one needs int64. Blocks
    # of _SSE_BLOCK values keep the differences in the CPU cache (0.5x the time of one pass
    # over a 1024 x 1024 RGB pair); integer sums are exact in any order.
    fa, fb = a.reshape(-1), b.reshape(-1)
    d = np.empty(min(_SSE_BLOCK, fa.size), np.int32 if a.dtype == np.uint8 else np.int64)
    total = 0
    for start in range(0, fa.size, _SSE_BLOCK):
        block = d[:min(_SSE_BLOCK, fa.size - start)]
        np.subtract(fa[start:start + len(block)], fb[start:start + len(block)], out=block,
                    dtype=block.dtype)
        np.multiply(block, block, out=block)
        total += int(np.add.reduce(block, dtype=np.int64))
    return total


#: Values per block of :func:`sse_levels` (1 MB of int32 differences).
_SSE_BLOCK = 1 << 18


def mse_levels(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared error of two integer images in units of their full range, exactly:
    ``sum((a - b)^2) / (N vmax^2)`` with the sum in int64 and one correctly rounded division
    (Python's int / int), ``vmax`` = 255 (``uint8``) or 65535 (``uint16``). The same MSE as
    :func:`mse` of the images in [0, 1], without the rounding of each value to float32 and
    of each squared difference to float64 (they agree to about 1e-8 relative).

    Args:
        a, b: arrays of one shape, both ``uint8`` or both ``uint16``.

    Returns:
        float64 MSE in [0, 1].

    Raises:
        ValueError: shapes or dtypes differ, or a dtype is not ``uint8``/``uint16``.
    """
    sse = sse_levels(a, b)
    if a.size == 0:
        raise ValueError("mse_levels of empty arrays")
    vmax = int(np.iinfo(a.dtype).max)
    return sse / (a.size * vmax * vmax)


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
    RGB pair); this uses only the output's memory and gives the same sums. Each output value is
    ``(((z_0 k_0 + z_1 k_1) + z_2 k_2) + ...)`` with every product rounded, along H then W,
    whatever ``N``, the layout or the thread count (element-wise operations only).
    """
    win = k.numel()
    h, w = z.shape[-2] - win + 1, z.shape[-1] - win + 1
    rows = z[:, 0:h, :] * k[0]
    product = torch.empty_like(rows)
    for i in range(1, win):
        rows += torch.mul(z[:, i:i + h, :], k[i], out=product)
    out = rows[:, :, 0:w] * k[0]
    product = torch.empty_like(out)
    for j in range(1, win):
        out += torch.mul(rows[:, :, j:j + w], k[j], out=product)
    return out


@dataclass(frozen=True)
class SSIMConvention:
    """One reading of SSIM's filtered moments (Wang et al. 2004: Gaussian window sigma = 1.5,
    11 x 11, K1 = 0.01, K2 = 0.03, population covariance): the SSIM conventions in use differ
    only in the data range, the region averaged and a clamp, so that several of them can share
    one filtering (:func:`ssim_conventions`).

    Attributes:
        region: ``"valid"``: the windows that lie inside the image, ``(H - 10) x (W - 10)``
            values per channel (scikit-image's ``structural_similarity``); ``"reflect"``: every
            pixel, the image reflect-padded by 5 (``torch.nn.functional.pad(mode="reflect")``,
            torchmetrics' ``structural_similarity_index_measure``).
        data_range: ``L`` of ``c1 = (K1 L)^2`` and ``c2 = (K2 L)^2``: a number (1.0 for
            images in [0, 1]), or None for torchmetrics' default: the larger of the two
            batches' max - min (over the whole batch, in the computation's dtype).
        clamp_variance: variances below 0 (rounding) are set to 0 before the map, as
            torchmetrics does; scikit-image leaves them.
    """

    region: str = "valid"
    data_range: float | None = 1.0
    clamp_variance: bool = False

    def __post_init__(self):
        if self.region not in ("valid", "reflect"):
            raise ValueError(f"SSIM region must be 'valid' or 'reflect', got {self.region!r}")


#: roundtrip's SSIM (scikit-image's convention, data range 1).
VALID = SSIMConvention()
#: torchmetrics' default SSIM (``StructuralSimilarityIndexMeasure()``: reflect padding, clamped
#: variances, each update's own data range).
REFLECT_OWN_RANGE = SSIMConvention("reflect", None, True)


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
    return ssim_conventions(x, y, [SSIMConvention("valid", data_range)], sigma, dtype)[0]


def ssim_conventions(x: torch.Tensor, y: torch.Tensor, conventions: list[SSIMConvention],
                     sigma: float = SSIM_SIGMA, dtype=torch.float64) -> list[torch.Tensor]:
    """SSIM of each pair of a batch under several :class:`SSIMConvention` from one filtering:
    the Gaussian-filtered means, variances and covariance of a pair are computed once and read
    by every convention (a ``valid`` one reads the interior of a ``reflect`` one's maps: the
    same windows). Each value is the one its convention gives alone, to the bit (tested).

    The moments are filtered on values centered by the pair's per-channel mean (variances as
    E[z^2] - E[z]^2 cancel catastrophically in float32 where the image is flat and bright,
    white paper: 1 - 1; they are shift-invariant, and the means get the shift back for the
    luminance term): float32 agrees with float64 to ~1e-5 at a fraction of the time.

    Where the work runs: tensors on the CPU are filtered by OpenCV (``cv2.sepFilter2D``, the
    whole reflect-101-bordered plane, which is ``F.pad(mode="reflect")``), the rest in numpy,
    all in the calling thread (OpenCV runs this filter in the caller's thread: the same bits at
    any OpenCV or PyTorch thread count, tested), for a 1024 x 1024 RGB pair and two
    conventions in float32 in 0.38x the time of PyTorch's path (51 against 132 ms, and 104
    against 275 ms in a slower window, on the 2-core reference machine:
    ``benchmarks/image_quality_steps.py``).
    OpenCV's AVX2 kernels sum with fused multiply-adds, its kernels below AVX2 without, so the
    bits follow OpenCV's kernel level: ``reproducibility: portable`` pins it
    (:data:`roundtrip.core.compute.PORTABLE_ENV`). Tensors on another device (a GPU job's) are
    filtered by PyTorch (:func:`_blur_valid`). The two paths agree to 1e-12 in float64; in
    float32 they differ by the rounding of the filter's sums (measured: up to 2.2e-6 for
    ``VALID``, 6.6e-6 for ``REFLECT_OWN_RANGE`` on a near-black 1024 px photograph, where
    OpenCV's value is within 7e-7 of float64 and PyTorch's 5.9e-6 from it).

    Args:
        x, y: ``[B, C, H, W]`` tensors (for a ``reflect`` convention, ``y`` is torchmetrics'
            ``target``; the map is symmetric in the two).
        conventions: what to compute; at least one.
        sigma: the Gaussian window's sigma (window side ``2 int(3.5 sigma + 0.5) + 1``).
        dtype: computation precision (``torch.float32`` or ``torch.float64``).

    Returns:
        One ``[B]`` float64 tensor per convention, in order: the mean over channels of the mean
        over the region. On the CPU each plane's map is summed in float64 by numpy, in strips
        of rows in a fixed order (the same whatever the memory layout of ``x``); on another
        device a ``valid`` convention's mean is PyTorch's over the map laid out as ``x`` and a
        ``reflect`` one's is summed in float64 by numpy.

    Raises:
        ValueError: shapes differ or are not 4D; a side smaller than the window (``valid``) or
            not larger than its radius (``reflect``); no convention; another dtype.
    """
    if x.shape != y.shape or x.ndim != 4:
        raise ValueError(f"expected equal [B, C, H, W] shapes, got {tuple(x.shape)}, {tuple(y.shape)}")
    if not conventions:
        raise ValueError("ssim_conventions needs at least one convention")
    if dtype not in _NUMPY_DTYPES:
        raise ValueError(f"SSIM computes in torch.float32 or torch.float64, got {dtype}")
    win = 2 * int(SSIM_TRUNCATE * sigma + 0.5) + 1
    pad = win // 2
    b, c, h, w = x.shape
    padded = any(cv.region == "reflect" for cv in conventions)
    if any(cv.region == "valid" for cv in conventions) and (h < win or w < win):
        raise ValueError(f"image {h}x{w} smaller than the {win}x{win} SSIM window")
    if padded and min(h, w) <= pad:
        raise ValueError(f"SSIM's {win} x {win} window reflect-pads by {pad}: images need more "
                         f"than {pad} pixels a side, got {h}x{w}")
    if x.device.type == "cpu" and y.device.type == "cpu":
        return _ssim_conventions_cpu(x, y, conventions, sigma, dtype)
    return _ssim_conventions_torch(x, y, conventions, sigma, dtype)


#: The numpy dtype of each computation dtype :func:`ssim_conventions` accepts.
_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}

#: Values per strip of :func:`_ssim_conventions_cpu`'s maps (64 rows of a 1024-pixel-wide
#: plane, 256 KB per float32 intermediate: the strip's dozen intermediates stay in the CPU's
#: cache; whole planes took 1.8x the time, strips of 32 to 128 rows the same).
_SSIM_STRIP_VALUES = 1 << 16


def _ssim_conventions_cpu(x: torch.Tensor, y: torch.Tensor, conventions: list[SSIMConvention],
                          sigma: float, dtype) -> list[torch.Tensor]:
    """:func:`ssim_conventions` on the CPU (arguments checked there): per pair and channel,
    the plane and its shift, OpenCV's filtering of the five moments over the whole plane
    (reflect-101 border), then the maps of every convention in strips of rows, each strip's
    sum in float64 added in row order."""
    import cv2

    np_dtype = _NUMPY_DTYPES[dtype]
    k = _gaussian_kernel(sigma, SSIM_TRUNCATE, dtype).numpy()
    win = k.size
    pad = win // 2
    b, c, h, w = x.shape
    xn, yn = x.detach().to(dtype).numpy(), y.detach().to(dtype).numpy()
    consts = [_constants_np(cv, xn, yn, np_dtype) for cv in conventions]
    sums = [np.zeros((b, c)) for _ in conventions]
    rows = max(1, _SSIM_STRIP_VALUES // w)

    def blur(z: np.ndarray) -> np.ndarray:
        return cv2.sepFilter2D(z, -1, k, k, borderType=cv2.BORDER_REFLECT_101)

    for i in range(b):
        for ch in range(c):
            xp = np.array(xn[i, ch], dtype=np_dtype, order="C")
            yp = np.array(yn[i, ch], dtype=np_dtype, order="C")
            total = (np.add.reduce(xp, axis=None, dtype=np.float64)
                     + np.add.reduce(yp, axis=None, dtype=np.float64))
            shift = np_dtype(total / (2 * h * w))
            np.subtract(xp, shift, out=xp)
            np.subtract(yp, shift, out=yp)
            moments = [blur(xp), blur(yp), blur(xp * xp), blur(yp * yp), blur(xp * yp)]
            for r0 in range(0, h, rows):
                r1 = min(h, r0 + rows)
                terms = _ssim_terms([m[r0:r1] for m in moments], shift)
                a0, a1 = max(r0, pad) - r0, min(r1, h - pad) - r0
                for j, cv in enumerate(conventions):
                    c1, c2 = consts[j]
                    if cv.region == "reflect":
                        ssim_map = _ssim_map(terms, c1, c2, cv.clamp_variance)
                    elif a1 > a0:  # the map of whole rows (contiguous), read inside the border
                        ssim_map = _ssim_map([t[a0:a1] for t in terms], c1, c2,
                                             cv.clamp_variance)[:, pad:w - pad]
                    else:
                        continue
                    sums[j][i, ch] += np.add.reduce(ssim_map, axis=None, dtype=np.float64)
    out = []
    for j, cv in enumerate(conventions):
        count = h * w if cv.region == "reflect" else (h - win + 1) * (w - win + 1)
        value = torch.from_numpy(np.mean(sums[j] / count, axis=1))
        if cv.data_range is None and float(consts[j][1]) == 0.0:
            value = torch.full_like(value, math.nan)  # two constant batches: 0 / 0, as below
        out.append(value)
    return out


def _constants_np(cv: SSIMConvention, x: np.ndarray, y: np.ndarray, np_dtype) -> tuple:
    """:func:`_constants` of numpy arrays: ``(c1, c2)`` as scalars of ``np_dtype`` (a fixed
    range's Python constants rounded to it, as PyTorch rounds a Python scalar; torchmetrics'
    default range ``max(max - min)`` over the whole batch in ``np_dtype``, then
    ``(K dr)^2`` in ``np_dtype``).

    Raises:
        ValueError: a fixed range that is not positive.
    """
    if cv.data_range is not None:
        c1, c2 = _constants(cv, None, None)
        return np_dtype(c1), np_dtype(c2)
    data_range = max(np_dtype(x.max()) - np_dtype(x.min()), np_dtype(y.max()) - np_dtype(y.min()))
    k1, k2 = np_dtype(SSIM_K1) * data_range, np_dtype(SSIM_K2) * data_range
    return k1 * k1, k2 * k2


def _ssim_conventions_torch(x: torch.Tensor, y: torch.Tensor,
                            conventions: list[SSIMConvention], sigma: float,
                            dtype) -> list[torch.Tensor]:
    """:func:`ssim_conventions` by PyTorch's element-wise operations on the tensors' device
    (arguments checked there; the GPU path, and on the CPU the reference of earlier versions):
    the moments filtered in strips of rows by :func:`_blur_valid`."""
    k = _gaussian_kernel(sigma, SSIM_TRUNCATE, dtype).to(x.device)
    win = k.numel()
    pad = win // 2
    b, c, h, w = x.shape
    padded = any(cv.region == "reflect" for cv in conventions)
    x = x.to(dtype).reshape(b * c, h, w)
    y = y.to(dtype).reshape(b * c, h, w)
    consts = [_constants(cv, x, y) for cv in conventions]
    shift = ((x.mean(dim=(1, 2)) + y.mean(dim=(1, 2))) / 2)[:, None, None]
    valid_maps = {i: _empty_in_layout_of(x, (b * c, h - win + 1, w - win + 1))
                  for i, cv in enumerate(conventions) if cv.region == "valid"}
    x, y = x - shift, y - shift
    if padded:
        x = F.pad(x[None], (pad, pad, pad, pad), mode="reflect")[0]
        y = F.pad(y[None], (pad, pad, pad, pad), mode="reflect")[0]
    # The maps are built in strips of output rows so that each strip's intermediates stay in
    # the CPU cache (half the time of whole-image passes on a 1-megapixel image). Every value
    # is an element-wise function of its window, computed in the same order either way. Row r
    # of the filtered grid is image row r (reflect-padded) or r + pad (valid windows only).
    sums = {i: np.zeros(b * c) for i, cv in enumerate(conventions) if cv.region == "reflect"}
    offset = pad if padded else 0
    grid_h = x.shape[1] - win + 1
    for r0 in range(0, grid_h, _SSIM_STRIP):
        r1 = min(grid_h, r0 + _SSIM_STRIP)
        xs, ys = x[:, r0:r1 + win - 1], y[:, r0:r1 + win - 1]
        moments = [_blur_valid(z, k) for z in (xs, ys, xs * xs, ys * ys, xs * ys)]
        terms = _ssim_terms(moments, shift)
        for i, cv in enumerate(conventions):
            c1, c2 = consts[i]
            if cv.region == "valid":
                a0 = max(r0, offset) - r0
                a1 = min(r1, offset + h - win + 1) - r0
                if a1 > a0:
                    inner = [t[:, a0:a1, offset:offset + w - win + 1] for t in terms]
                    valid_maps[i][:, r0 + a0 - offset:r0 + a1 - offset] = _ssim_map(
                        inner, c1, c2, cv.clamp_variance)
            else:
                s = _ssim_map(terms, c1, c2, cv.clamp_variance).contiguous()
                # numpy's float64 sum of each plane: one thread, a fixed order
                sums[i] += np.add.reduce(s.cpu().numpy().reshape(b * c, -1), axis=1,
                                         dtype=np.float64)
    out = []
    for i, cv in enumerate(conventions):
        if cv.region == "valid":
            s = valid_maps[i]
            value = s.mean(dim=(1, 2)).view(b, c).mean(dim=1).to(torch.float64)
        else:
            value = torch.from_numpy((sums[i] / (h * w)).reshape(b, c).mean(axis=1))
        if cv.data_range is None and float(consts[i][1]) == 0.0:
            # both batches constant: every window is 0 / 0 (torchmetrics: NaN), which float
            # rounding of the moments would otherwise turn into an arbitrary number
            value = torch.full_like(value, math.nan)
        out.append(value.cpu())
    return out


def _constants(cv: SSIMConvention, x: torch.Tensor, y: torch.Tensor) -> tuple:
    """``(c1, c2)`` of a convention: Python floats for a fixed range, 0-d tensors in the
    computation's dtype for torchmetrics' default (its ``pow(k * data_range, 2)``, the range
    ``max(preds.max() - preds.min(), target.max() - target.min())`` with ``x`` as preds).

    Raises:
        ValueError: a fixed range that is not positive.
    """
    if cv.data_range is not None:
        if not cv.data_range > 0:
            raise ValueError(f"SSIM data_range must be positive, got {cv.data_range}")
        return (SSIM_K1 * cv.data_range) ** 2, (SSIM_K2 * cv.data_range) ** 2
    data_range = max(x.max() - x.min(), y.max() - y.min())
    return pow(SSIM_K1 * data_range, 2), pow(SSIM_K2 * data_range, 2)


def _ssim_terms(moments, shift) -> tuple:
    """The parts of the SSIM map that do not depend on the constants, from the filtered
    moments of centered values ``(mx0, my0, E[x^2], E[y^2], E[xy])`` (tensors or numpy arrays;
    the means get ``shift`` back): ``(2 mx my, mx^2 + my^2, 2 cov, var_x, var_y)``."""
    mx0, my0, exx, eyy, exy = moments
    vx, vy = exx - mx0 * mx0, eyy - my0 * my0
    cxy = exy - mx0 * my0
    mx, my = mx0 + shift, my0 + shift
    return 2 * mx * my, mx * mx + my * my, 2 * cxy, vx, vy


def _ssim_map(terms, c1, c2, clamp: bool) -> torch.Tensor:
    """``((2 mx my + c1)(2 cov + c2)) / ((mx^2 + my^2 + c1)(var_x + var_y + c2))`` of
    :func:`_ssim_terms` (tensors or numpy arrays), the variances first clamped at 0 when
    ``clamp`` (``clip``: NaN stays NaN in both)."""
    lum_num, lum_den, cs_num, vx, vy = terms
    if clamp:
        vx, vy = vx.clip(min=0), vy.clip(min=0)
    return ((lum_num + c1) * (cs_num + c2)) / ((lum_den + c1) * (vx + vy + c2))


def _empty_in_layout_of(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """An empty tensor of ``shape`` whose dimensions lie in memory in the order of ``x``'s
    strides, as PyTorch lays out an element-wise result of ``x`` (e.g. channels innermost for
    an ``(H, W, C)`` array seen as ``[C, H, W]``). The mean over it then sums in the order it
    would over the whole-image map."""
    order = sorted(range(x.dim()), key=lambda d: x.stride(d), reverse=True)
    empty = torch.empty([shape[d] for d in order], dtype=x.dtype, device=x.device)
    return empty.permute([order.index(d) for d in range(x.dim())])


#: Output rows per strip of :func:`_ssim_conventions_torch` (128 rows of a 1024-pixel-wide RGB
#: image in float32: about 1.5 MB per intermediate; 32 or 64 rows, or the five moment maps
#: filtered as one stack, were no faster).
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
