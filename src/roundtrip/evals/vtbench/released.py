"""The convention of VTBench's released evaluator (``evaluations/evaluate_images.py`` of the
authors' repository), from which the published Tables 1-3 come, computed with torchmetrics.

The paper (Sec. 4.1) names PSNR, SSIM, LPIPS and FID without their parameters; the released
evaluator fixes them through torchmetrics' defaults:

* both images at the evaluated size (roundtrip's protocols already give the reference and the
  reconstruction one size, so no resize happens here; a size mismatch is an error);
* **PSNR** ``PeakSignalNoiseRatio()`` updated with every (reconstruction, original) pair of the
  set and computed once (:class:`ReleasedPSNR`): one MSE over all values of the set, with ``data_range`` = the max minus the
  min of the originals over the set (torchmetrics' behaviour when ``data_range`` is not given):
  ``10 log10(R^2 / (sum_i SSE_i / sum_i N_i))``, ``R = max_i max(x_i) - min_i min(x_i)``;
* **SSIM** ``StructuralSimilarityIndexMeasure()`` defaults (Gaussian 11 x 11, sigma 1.5, K1 0.01,
  K2 0.03, reflect-padded, ``data_range`` per update from the pair's own ranges), one pair per
  update, the mean over pairs;
* **LPIPS** AlexNet fed the [0, 1] tensors without ``normalize`` (see
  :meth:`roundtrip.metrics.perceptual.LPIPS.__call__`, ``input_range="as_signed"``);
* **FID** on uint8 images (roundtrip's FID already feeds uint8, :mod:`.perceptual`).

Images are float32 ``[1, 3, H, W]`` tensors in [0, 1] (``torchvision``'s ``ToTensor`` range).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F


def _check(reconstruction: torch.Tensor, original: torch.Tensor) -> None:
    if reconstruction.shape != original.shape or reconstruction.ndim != 4:
        raise ValueError("the released evaluator compares images of one size: got "
                         f"{tuple(reconstruction.shape)} and {tuple(original.shape)}")


class ReleasedPSNR:
    """PSNR of a set as VTBench's released evaluator computes it, streaming.

    The evaluator's torchmetrics ``PeakSignalNoiseRatio()`` (no ``data_range``) accumulated the
    sum of squared errors, the value count and the min and max of the targets (the originals)
    over every ``update``, then computed ``10 log10(R^2 / (SSE / N))`` with ``R = max - min``.
    Current torchmetrics (>= 1.0) requires ``data_range``, so the same accumulation is kept here
    and equals ``PeakSignalNoiseRatio(data_range=R)`` updated with the same pairs (tested).
    ``update`` takes one pair at a time, so memory does not grow with the set.
    """

    def __init__(self):
        self.sse, self.count, self.n = 0.0, 0, 0
        self.lo, self.hi = math.inf, -math.inf

    def update(self, reconstruction: torch.Tensor, original: torch.Tensor) -> None:
        """Add one pair: float ``[1, 3, H, W]`` in [0, 1] (the original is torchmetrics' target).

        Raises:
            ValueError: the two tensors differ in shape.
        """
        self.add(self.pair_stats(reconstruction, original))

    @staticmethod
    def pair_stats(reconstruction: torch.Tensor, original: torch.Tensor) -> tuple:
        """``(sse, count, lo, hi)`` of one pair, what :meth:`update` adds: the sum of squared
        errors (float64), the value count, and the min and max of the original.

        Raises:
            ValueError: the two tensors differ in shape.
        """
        _check(reconstruction, original)
        diff = reconstruction.double() - original.double()
        return (float((diff * diff).sum()), diff.numel(), float(original.min()),
                float(original.max()))

    def add(self, stats: tuple) -> None:
        """Add one pair's :meth:`pair_stats` (pairs added in the same order give the same
        bytes as :meth:`update`)."""
        sse, count, lo, hi = stats
        self.sse += sse
        self.count += count
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.n += 1

    @property
    def data_range(self) -> float:
        """Max minus min of the originals seen so far (NaN before any update)."""
        return self.hi - self.lo if self.n else math.nan

    def compute(self) -> float:
        """PSNR in dB; NaN for an empty set, inf when every pair is identical."""
        if not self.n:
            return math.nan
        if self.sse == 0.0:
            return math.inf
        return 10.0 * math.log10(self.data_range ** 2 / (self.sse / self.count))


def released_ssim(reconstruction: torch.Tensor, original: torch.Tensor) -> float:
    """SSIM of one pair with torchmetrics' defaults (the released evaluator's per-image value).

    torchmetrics' ``structural_similarity_index_measure(preds, target)`` with every default
    (Gaussian 11 x 11, sigma 1.5, K1 0.01, K2 0.03, reflect padding, ``data_range`` = the larger
    of the two tensors' max minus min, mean of the SSIM map), computed here with the same tensor
    operations in the same order (one convolution filters all planes), so the value is bit for
    bit torchmetrics' on CPU (checked against torchmetrics 1.x in
    ``tests/test_paper_vtbench.py``). It does not call torchmetrics because importing it (it
    loads torchvision, transformers and scipy.signal) cost 4.6 s in each reconstruction job,
    more than the SSIMs of a small set.

    Args:
        reconstruction: ``[B, C, H, W]`` (``preds``), any float dtype, computed in float32;
            ``B`` images averaged.
        original: same shape (``target``), also computed in float32.

    Raises:
        ValueError: the two tensors differ in shape or are not 4D, or ``H`` or ``W`` is at most
            5 (reflect padding by 5 needs more).
    """
    _check(reconstruction, original)
    if min(reconstruction.shape[-2:]) <= 5:
        raise ValueError("SSIM's 11 x 11 window reflect-pads by 5: images need more than 5 "
                         f"pixels a side, got {tuple(reconstruction.shape[-2:])}")
    preds = reconstruction.float()
    target = original.float()
    pad, size, sigma = 5, 11, 1.5  # torchmetrics: int(3.5 * sigma + 0.5) * 2 + 1 = 11
    data_range = max(preds.max() - preds.min(), target.max() - target.min())
    c1 = pow(0.01 * data_range, 2)
    c2 = pow(0.03 * data_range, 2)
    preds = F.pad(preds, (pad, pad, pad, pad), mode="reflect")
    target = F.pad(target, (pad, pad, pad, pad), mode="reflect")
    dist = torch.arange(start=(1 - size) / 2, end=(1 + size) / 2, step=1, dtype=preds.dtype)
    gauss = torch.exp(-torch.pow(dist / sigma, 2) / 2)
    gauss = (gauss / gauss.sum()).unsqueeze(dim=0)
    channel = preds.size(1)
    stacked = torch.cat((preds, target, preds * preds, target * target, preds * target))
    # torchmetrics filters [5B, C, H, W] with C groups; every (map, channel) plane is filtered
    # on its own either way, so the planes are folded into the channels of one depthwise
    # convolution: oneDNN's CPU kernel then fills its 8-channel blocks (2.3x faster on a
    # 1024 px image) and sums each window in the same order (the same bits; tested).
    maps, planes = stacked.shape[0], stacked.shape[0] * channel
    kernel = torch.matmul(gauss.t(), gauss).expand(planes, 1, size, size)
    filtered = F.conv2d(stacked.reshape(1, planes, *stacked.shape[-2:]), kernel, groups=planes)
    mu_p, mu_t, e_pp, e_tt, e_pt = filtered.reshape(maps, channel, *filtered.shape[-2:]).split(
        preds.shape[0])
    mu_p_sq, mu_t_sq, mu_pt = mu_p.pow(2), mu_t.pow(2), mu_p * mu_t
    var_p = torch.clamp(e_pp - mu_p_sq, min=0.0)
    var_t = torch.clamp(e_tt - mu_t_sq, min=0.0)
    cov = e_pt - mu_pt
    upper = 2 * cov + c2
    lower = var_p + var_t + c2
    ssim_map = ((2 * mu_pt + c1) * upper) / ((mu_p_sq + mu_t_sq + c1) * lower)
    return float(torch.mean(ssim_map.reshape(ssim_map.shape[0], -1).mean(-1)))


def pooled_released_psnr(per_item: pd.DataFrame) -> tuple[float, int]:
    """The released evaluator's PSNR of several sets pooled (e.g. the four languages of Table 3's
    multilingual block), from per-item ``mse``, ``n_values``, ``ref_min``, ``ref_max`` (values of
    the originals in [0, 1]) of the scored (``status == "ok"``) rows.

    Equals :class:`ReleasedPSNR` updated with every pair of the pooled sets (tested).

    Returns:
        ``(PSNR in dB, pairs pooled)``; NaN with 0 pairs.
    """
    ok = per_item[per_item["status"] == "ok"].dropna(subset=["mse", "ref_min", "ref_max"])
    if ok.empty:
        return math.nan, 0
    n = ok["n_values"].to_numpy(dtype=np.float64)
    sse = float((ok["mse"].to_numpy(dtype=np.float64) * n).sum())
    if sse == 0.0:
        return math.inf, len(ok)
    data_range = float(ok["ref_max"].max() - ok["ref_min"].min())
    return 10.0 * math.log10(data_range ** 2 / (sse / n.sum())), len(ok)
