"""The statistics of the comparison of two checkpoints (roundtrip.metrics.paired) against SciPy
and statsmodels on known data, and by simulation: a planted difference is covered by the 95 %
interval in at least 93 % of 200 trials (a per-item number, a right/wrong outcome, a set-level
number), and a model against a copy of itself under another seed gets no row "better" or
"worse" after correction in at least 94 % of 200 trials."""
import math

import numpy as np
import pytest
from scipy import stats

from roundtrip.metrics.paired import (BETTER, BINARY, EQUIVALENT, INCONCLUSIVE, MCNEMAR, WORSE,
                                      WILCOXON, WILCOXON_CLUSTERS, PairedSettings,
                                      benjamini_yekutieli, detectable_difference, holm,
                                      item_weights, paired_items, paired_items_many, paired_set,
                                      verdict)

#: Fewer resamples in the simulations (the intervals' coverage does not need 10,000).
SIM = 1000


def _bca(b, c, seed=0, resamples=10_000, confidence=0.95):
    return stats.bootstrap((b, c), lambda x, y, axis=-1: (y - x).mean(axis=axis), paired=True,
                           vectorized=True, batch=2000, method="BCa", n_resamples=resamples,
                           confidence_level=confidence, rng=np.random.default_rng(seed))


def test_continuous_interval_test_and_effect_are_scipys():
    rng = np.random.default_rng(0)
    hardness = rng.normal(30, 5, 60)  # items differ a lot; the two systems alike on each
    b = hardness + rng.normal(0, 0.3, 60)
    c = hardness + 0.2 + rng.normal(0, 0.3, 60)
    r = paired_items(b, c, settings=PairedSettings(seed=7))
    ref = _bca(b, c, seed=7)
    assert r.test == WILCOXON and r.n == r.clusters == 60
    assert r.difference == pytest.approx(np.mean(c - b))
    assert (r.ci_low, r.ci_high) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)
    assert r.se == pytest.approx(ref.standard_error)
    assert r.p == pytest.approx(stats.wilcoxon(c - b).pvalue)
    assert r.effect == pytest.approx(np.mean(c - b) / np.std(c - b, ddof=1))
    # the 90 % interval of the equivalence test: the same resamples at 1 - 2 alpha
    eq = _bca(b, c, seed=7, confidence=0.90)
    assert (r.eq_low, r.eq_high) == pytest.approx(tuple(eq.confidence_interval), abs=1e-12)
    # paired: far narrower than either system's own interval, and it resolves the +0.2
    own = stats.bootstrap((c,), np.mean, method="percentile", rng=np.random.default_rng(0))
    assert r.ci_high - r.ci_low < 0.2 * np.ptp(own.confidence_interval)
    assert r.ci_low > 0
    # the detectable difference: (z_0.975 + z_0.8) times the bootstrap standard error
    assert r.detectable == pytest.approx((1.959964 + 0.841621) * r.se, rel=1e-5)
    assert detectable_difference(2.0) == pytest.approx(5.6031, abs=1e-3)


def test_items_without_finite_values_are_dropped_and_counted():
    r = paired_items([0.0, 2.0, 1.0, math.nan, 3.0], [1.0, math.inf, 3.0, 5.0, 3.5])
    assert r.n == 3 and r.not_finite == 2 and r.difference == pytest.approx(3.5 / 3)
    with pytest.raises(ValueError, match="one length"):
        paired_items([1.0, 2.0], [1.0])
    same = paired_items([1.0, 2.0, 3.0], [1.5, 2.5, 3.5])  # every difference 0.5
    assert (same.ci_low, same.ci_high, same.se) == (0.5, 0.5, 0.0)
    none = paired_items([1.0, 2.0], [1.0, 2.0])
    assert none.p == 1.0 and none.ties == 2 and none.difference == 0.0


def test_binary_outcomes_get_the_exact_mcnemar_test():
    from statsmodels.stats.contingency_tables import mcnemar

    rng = np.random.default_rng(1)
    b = (rng.random(80) < 0.55).astype(float)
    c = b.copy()
    flip = rng.random(80)
    c[(b == 1) & (flip < 0.10)] = 0.0   # right -> wrong
    c[(b == 0) & (flip < 0.45)] = 1.0   # wrong -> right
    r = paired_items(b, c, kind=BINARY)
    n10 = int(((b == 1) & (c == 0)).sum())
    n01 = int(((b == 0) & (c == 1)).sum())
    assert r.test == MCNEMAR and r.flips == (n10, n01)
    table = [[int(((b == 1) & (c == 1)).sum()), n10], [n01, int(((b == 0) & (c == 0)).sum())]]
    assert r.p == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert r.p == pytest.approx(stats.binomtest(n01, n01 + n10, 0.5).pvalue)
    assert r.baseline == pytest.approx(b.mean()) and r.candidate == pytest.approx(c.mean())
    with pytest.raises(ValueError, match="0 \\(wrong\\) or 1"):
        paired_items([0.0, 0.5], [1.0, 1.0], kind=BINARY)


def test_clusters_are_resampled_whole():
    """Three copies of each item (a question's renders that agree): resampled as clusters, the
    interval is the one of the items alone; taken as independent items it is too narrow."""
    rng = np.random.default_rng(2)
    b = rng.normal(0, 1, 30)
    c = b + 0.3 + rng.normal(0, 1, 30)
    alone = paired_items(b, c, settings=PairedSettings(seed=3))
    labels = np.repeat(np.arange(30), 3)
    nested = paired_items(np.repeat(b, 3), np.repeat(c, 3), labels, settings=PairedSettings(seed=3))
    naive = paired_items(np.repeat(b, 3), np.repeat(c, 3), settings=PairedSettings(seed=3))
    assert nested.test == WILCOXON_CLUSTERS and nested.clusters == 30 and nested.n == 90
    assert (nested.ci_low, nested.ci_high) == pytest.approx((alone.ci_low, alone.ci_high),
                                                            abs=1e-9)
    assert nested.p == pytest.approx(alone.p)
    assert naive.ci_high - naive.ci_low < 0.7 * (alone.ci_high - alone.ci_low)
    w = item_weights(np.array([[0, 0, 2]]), 6, np.array([0, 0, 1, 1, 2, 2]))
    assert w.tolist() == [[2, 2, 0, 0, 1, 1]]


def test_a_set_number_recomputed_from_weights_matches_the_per_item_mean():
    """A set-level statistic that is the mean gets the per-item comparison's interval (the same
    resamples), and the bootstrap p-value of Berg-Kirkpatrick et al. (2012)."""
    rng = np.random.default_rng(4)
    b = rng.normal(10, 2, 40)
    c = b + 0.5 + rng.normal(0, 1, 40)

    def mean_of(w):
        return np.stack([w @ b / w.sum(axis=1), w @ c / w.sum(axis=1)], axis=-1)
    s = paired_set(mean_of, 40, settings=PairedSettings(seed=5))
    r = paired_items(b, c, settings=PairedSettings(seed=5))
    assert s.difference == pytest.approx(r.difference)
    assert (s.ci_low, s.ci_high) == pytest.approx((r.ci_low, r.ci_high), abs=1e-9)
    assert s.baseline == pytest.approx(b.mean()) and 0 < s.p < 0.01


def test_holm_and_benjamini_yekutieli_on_known_p_values():
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone
    assert holm(p)[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(holm(p)[4])
    # BY: BH's adjusted values (0.02, 0.02, 0.04, 0.04) times 1 + 1/2 + 1/3 + 1/4
    c = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert benjamini_yekutieli(p)[:4] == pytest.approx([0.02 * c, 0.04 * c, 0.04 * c, 0.02 * c])


def _result(d, lo, hi, eq=None, p=0.001):
    r = paired_items([0.0, 1.0, 2.0], [0.5, 1.0, 2.0])
    r.difference, r.ci_low, r.ci_high, r.p = d, lo, hi, p
    r.eq_low, r.eq_high = eq or (lo, hi)
    return r


@pytest.mark.parametrize("d, lo, hi, eq, p, higher, expected", [
    (0.5, 0.2, 0.8, None, 0.001, True, BETTER),
    (0.5, 0.2, 0.8, None, 0.001, False, WORSE),       # lower is better: a rise is worse
    (0.5, -0.1, 0.8, None, 0.001, True, INCONCLUSIVE),  # the interval spans 0
    (0.5, 0.2, 0.8, None, 0.2, True, INCONCLUSIVE),   # the (adjusted) test does not reject
    (0.001, 0.0008, 0.0012, None, 1e-6, True, EQUIVALENT),  # prints as 0.00: within 0.01
    (0.02, -0.05, 0.09, (-0.03, 0.07), 0.5, True, INCONCLUSIVE),  # wider than the margin
    (0.02, -0.05, 0.09, (-0.03, 0.07), 0.5, True, EQUIVALENT),  # margin 0.1 (below)
])
def test_verdicts(d, lo, hi, eq, p, higher, expected):
    margin = 0.1 if expected == EQUIVALENT and eq else 0.01
    assert verdict(_result(d, lo, hi, eq, p), p, higher, margin, 2) == expected


# -- simulations ----------------------------------------------------------------------------------
TRIALS = 200


def test_the_interval_covers_a_planted_difference():
    """200 trials each: PSNR-like items (+0.3 dB planted), right/wrong answers (+10 points
    planted, the candidate answering independently), a pooled PSNR (the candidate's squared
    errors 20 % larger on average: -10 log10(1.2 E[noise]) dB planted). The per-item trials
    run as one bootstrap (paired_items_many), the set-level ones one by one."""
    rng = np.random.default_rng(11)
    settings = PairedSettings(resamples=SIM)
    hard = rng.normal(30, 4, (TRIALS, 60))
    rows = paired_items_many(hard + rng.normal(0, 1, (TRIALS, 60)),
                             hard + 0.3 + rng.normal(0, 1, (TRIALS, 60)), settings=settings)
    covered = {"continuous": sum(r.ci_low <= 0.3 <= r.ci_high for r in rows)}
    b = (rng.random((TRIALS, 150)) < 0.6).astype(float)
    c = (rng.random((TRIALS, 150)) < 0.7).astype(float)
    rows = paired_items_many(b, c, BINARY, settings)
    covered["binary"] = sum(r.ci_low <= 0.1 <= r.ci_high for r in rows)
    assert rows[0].test == MCNEMAR and sum(rows[0].flips) == int((b[0] != c[0]).sum())
    truth = -10 * np.log10(1.2 * np.exp(0.1 ** 2 / 2))
    covered["set"] = 0
    for t in range(TRIALS):
        sse_b = rng.gamma(4, 1, 60)
        sse_c = sse_b * 1.2 * rng.lognormal(0, 0.1, 60)

        def pooled(w, sse_b=sse_b, sse_c=sse_c):
            n = w.sum(axis=1) * 1000.0
            return np.stack([-10 * np.log10(w @ sse_b / n), -10 * np.log10(w @ sse_c / n)],
                            axis=-1)
        r = paired_set(pooled, 60, settings=PairedSettings(resamples=SIM, seed=t))
        covered["set"] += r.ci_low <= truth <= r.ci_high
    assert all(v >= 0.93 * TRIALS for v in covered.values()), covered


def test_a_model_against_a_copy_of_itself_under_another_seed_changes_nothing():
    """Per trial, a model's two runs under different seeds (the same items, their own noise):
    four per-item rows (headline), a right/wrong row and a set-level row; Holm within the
    headline rows and Benjamini-Yekutieli across all six, as the comparison does; a row called
    better or worse in at most 6 % of 200 trials."""
    rng = np.random.default_rng(12)
    settings = PairedSettings(resamples=SIM)
    per_item = []
    for _ in range(4):
        hard = rng.normal(25, 3, (TRIALS, 40))
        per_item.append(paired_items_many(hard + rng.normal(0, 0.5, (TRIALS, 40)),
                                          hard + rng.normal(0, 0.5, (TRIALS, 40)),
                                          settings=settings))
    skill = rng.random((TRIALS, 120))
    binary = paired_items_many((rng.random((TRIALS, 120)) < skill).astype(float),
                               (rng.random((TRIALS, 120)) < skill).astype(float), BINARY, settings)
    flagged = 0
    for t in range(TRIALS):
        base = rng.gamma(4, 1, 40)
        sse = (base * rng.lognormal(0, 0.1, 40), base * rng.lognormal(0, 0.1, 40))
        pooled = paired_set(lambda w: np.stack([w @ sse[0], w @ sse[1]], axis=-1)
                            / w.sum(axis=1, keepdims=True), 40,
                            settings=PairedSettings(resamples=SIM, seed=t))
        results = [rows[t] for rows in per_item] + [binary[t], pooled]
        head = np.array([True] * 4 + [False, False])
        p = np.array([r.p for r in results])
        by = benjamini_yekutieli(p)
        hol = np.full(len(p), np.nan)
        # a headline row's adjusted p is the larger of the two: Holm's can change a verdict
        # only where BY's is at most alpha (statsmodels' Holm collects garbage on each call)
        if (by[head] <= 0.05).any():
            hol[head] = holm(p[head])
        adjusted = np.where(head, np.fmax(by, hol), by)
        verdicts = [verdict(r, a, True, 0.01, 2) for r, a in zip(results, adjusted)]
        flagged += any(v in (BETTER, WORSE) for v in verdicts)
    assert flagged <= 0.06 * TRIALS, flagged  # at least 94 % of trials: nothing changed
