"""Set-level summaries: mean with a percentile bootstrap confidence interval (the paired
comparison of two systems is :mod:`roundtrip.metrics.paired`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Summary:
    """Mean of a per-item metric with its bootstrap CI and the number of items used."""
    mean: float
    ci_low: float
    ci_high: float
    n: int


def bootstrap_mean(values, n_boot: int = 1000, confidence: float = 0.95, seed: int = 0) -> Summary:
    """Mean and percentile-bootstrap CI (Efron & Tibshirani 1993, ch. 13).

    Resamples items with replacement ``n_boot`` times and takes the empirical
    ``(1-confidence)/2`` and ``(1+confidence)/2`` quantiles of the resampled means, as order
    statistics (no interpolation, so ``inf`` values, e.g. PSNR of identical images, stay valid).
    NaN values are dropped first. Fewer than 2 values give a NaN interval.

    Args:
        values: 1-D array-like of floats.
        n_boot: number of resamples (>= 1).
        confidence: in ``(0, 1)``.
        seed: seed of the resampling generator (results are reproducible).
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    n = len(v)
    if n == 0:
        return Summary(math.nan, math.nan, math.nan, 0)
    mean = float(np.mean(v))
    if n < 2:
        return Summary(mean, math.nan, math.nan, n)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    with np.errstate(invalid="ignore"):
        means = np.sort(v[idx].mean(axis=1))
    alpha = (1.0 - confidence) / 2.0
    lo = means[max(0, int(math.floor(alpha * n_boot)))]
    hi = means[min(n_boot - 1, int(math.ceil((1.0 - alpha) * n_boot)) - 1)]
    return Summary(mean, float(lo), float(hi), n)
