"""Bootstrap confidence intervals."""
import math

import numpy as np

from roundtrip.metrics.stats import bootstrap_mean


def test_ci_brackets_mean_and_has_normal_width():
    v = np.random.default_rng(3).normal(10.0, 2.0, 400)
    s = bootstrap_mean(v, n_boot=2000, seed=1)
    assert s.ci_low < s.mean < s.ci_high and s.n == 400
    expected = 2 * 1.96 * v.std(ddof=1) / math.sqrt(len(v))
    assert abs((s.ci_high - s.ci_low) - expected) / expected < 0.15


def test_reproducible_with_seed():
    v = np.arange(20.0)
    assert bootstrap_mean(v, seed=5) == bootstrap_mean(v, seed=5)
    a, b = bootstrap_mean(v, seed=5), bootstrap_mean(v, seed=6)
    assert (a.ci_low, a.ci_high) != (b.ci_low, b.ci_high)


def test_nan_dropped_and_small_samples():
    s = bootstrap_mean([1.0, math.nan, 3.0])
    assert s.n == 2 and s.mean == 2.0
    one = bootstrap_mean([4.0])
    assert one.mean == 4.0 and math.isnan(one.ci_low)
    none = bootstrap_mean([])
    assert none.n == 0 and math.isnan(none.mean)


def test_infinite_values_stay_valid():
    s = bootstrap_mean([math.inf, math.inf, math.inf])
    assert s.mean == math.inf and s.ci_low == math.inf and s.ci_high == math.inf
