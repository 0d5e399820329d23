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

    Raises:
        ValueError: the two tensors differ in shape.
    """
    from torchmetrics.functional.image import structural_similarity_index_measure

    _check(reconstruction, original)
    return float(structural_similarity_index_measure(reconstruction.float(), original.float()))


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
