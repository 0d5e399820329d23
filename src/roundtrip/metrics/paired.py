"""Paired comparison of a baseline and a candidate measured on the same items: the difference,
its confidence interval, a test, an effect size, the smallest difference the items could have
shown, and a verdict.

Every function here is pure (arrays in, numbers out) and uses the libraries' own procedures:

- the confidence interval is SciPy's bootstrap (:func:`scipy.stats.bootstrap` with
  ``paired=True`` and ``method="BCa"``, Efron 1987; 10,000 resamples by default), over items or,
  for nested items, over clusters (a volume's slices, a chain's generations, a question's
  renders are resampled together: Field & Welsh 2007). Resampling the items of both systems
  together is the paired bootstrap of Koehn 2004 and Berg-Kirkpatrick et al. 2012;
- per-item continuous metrics (PSNR, CER, ...): Wilcoxon's signed-rank test
  (:func:`scipy.stats.wilcoxon`; Demsar 2006 recommends it for comparing two systems over many
  items), on cluster means where items are nested; the effect size is Cohen's d_z (the mean
  difference over the standard deviation of the differences, Cohen 1988);
- per-item binary outcomes (an answer right or wrong): the exact McNemar test, a binomial test
  of the discordant pairs (:func:`scipy.stats.binomtest`; Dietterich 1998 recommends it for
  comparing two classifiers on one test set), with the counts that flipped each way;
- set-level numbers (FID, CHD, a pooled PSNR or CER): the set number is recomputed on every
  bootstrap resample of the shared items (item weights, :func:`paired_set`), and the test is the
  paired bootstrap's p-value (Berg-Kirkpatrick et al. 2012, Alg. 1: the share of resamples whose
  difference lies at least as far from the observed one as the observed one lies from 0);
- many rows: Holm's step-down correction (Holm 1979; :func:`holm`, statsmodels) within a family,
  and the Benjamini-Yekutieli false discovery rate under any dependence (Benjamini & Yekutieli
  2001; :func:`benjamini_yekutieli`, SciPy) across all rows;
- equivalence: two one-sided tests (Schuirmann 1987) as the (1 - 2 alpha) bootstrap interval
  lying within the margin;
- the minimal detectable difference at a power (0.8) and alpha (0.05): ``(z_{1-alpha/2} +
  z_power)`` times the bootstrap standard error (the normal approximation of Cohen 1988, ch. 2;
  Bloom 1995).

Differences are always candidate minus baseline, in the metric's units (times ``scale``).
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: The kinds of a compared row.
CONTINUOUS, BINARY, SET = "continuous", "binary", "set"
KINDS = (CONTINUOUS, BINARY, SET)
#: The verdicts of a row: the candidate is better, worse, equivalent within the row's margin, or
#: nothing can be said at this n.
BETTER, WORSE, EQUIVALENT, INCONCLUSIVE = "better", "worse", "equivalent", "inconclusive"
VERDICTS = (BETTER, WORSE, EQUIVALENT, INCONCLUSIVE)

#: The tests, as the ``test`` column names them.
WILCOXON = "Wilcoxon signed-rank"
WILCOXON_CLUSTERS = "Wilcoxon signed-rank on cluster means"
MCNEMAR = "exact McNemar"
BOOTSTRAP_P = "paired bootstrap"


@dataclass(frozen=True)
class PairedSettings:
    """How rows are compared.

    Attributes:
        resamples: bootstrap resamples (>= 100; 10,000 by default).
        confidence: level of the reported interval, in (0, 1); ``alpha = 1 - confidence`` is
            also the level of the tests and of the equivalence test (a (1 - 2 alpha) interval).
        power: the power at which :attr:`Paired.detectable` is computed, in (0, 1).
        seed: seed of the resampling generator (the same seed gives the same numbers).
    """
    resamples: int = 10_000
    confidence: float = 0.95
    power: float = 0.8
    seed: int = 0

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence


@dataclass
class Paired:
    """One paired comparison (candidate minus baseline).

    Attributes:
        kind: :data:`CONTINUOUS`, :data:`BINARY` or :data:`SET`.
        n: items compared (both values finite).
        clusters: resampled units (clusters of nested items; ``n`` without clusters).
        baseline, candidate: the two values on those items (means; shares of right answers
            for binary outcomes; the set number for set-level metrics), in the metric's units.
        difference: ``candidate - baseline``.
        ci_low, ci_high: BCa bootstrap interval of the difference at the settings' confidence
            (NaN with fewer than 2 units).
        eq_low, eq_high: the (1 - 2 alpha) interval, for the equivalence test.
        se: bootstrap standard error of the difference.
        test: the test that gave ``p`` (:data:`WILCOXON`, :data:`WILCOXON_CLUSTERS`,
            :data:`MCNEMAR`, :data:`BOOTSTRAP_P`).
        p: its two-sided p-value, in [0, 1] (NaN with no unit).
        effect: Cohen's d_z of the per-item (per-cluster) differences; NaN for set numbers and
            where the differences do not vary.
        ties: items whose difference is exactly 0 (Wilcoxon leaves them out).
        flips: binary outcomes: ``(right -> wrong, wrong -> right)`` from baseline to candidate.
        detectable: the smallest difference these units detect with the settings' power at
            alpha (same units as ``difference``).
        not_finite: items dropped because a value is not finite (PSNR = inf of an exact copy).
    """
    kind: str
    n: int
    clusters: int
    baseline: float
    candidate: float
    difference: float
    ci_low: float
    ci_high: float
    eq_low: float
    eq_high: float
    se: float
    test: str
    p: float
    effect: float = math.nan
    ties: int = 0
    flips: tuple[int, int] | None = None
    detectable: float = math.nan
    not_finite: int = 0


@functools.lru_cache(maxsize=64)
def _z(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


def detectable_difference(se: float, settings: PairedSettings = PairedSettings()) -> float:
    """The minimal detectable difference of a two-sided test at ``settings.alpha`` with
    ``settings.power``: ``(z_{1-alpha/2} + z_power) * se`` (Cohen 1988, ch. 2; Bloom 1995),
    in the units of ``se`` (NaN where ``se`` is)."""
    if not math.isfinite(se):
        return math.nan
    return (_z(1 - settings.alpha / 2) + _z(settings.power)) * se


def _bootstrap(data: tuple, statistic, settings: PairedSettings) -> tuple[np.ndarray, ...]:
    """BCa intervals at the confidence and at 1 - 2 alpha, standard errors and the bootstrap
    distribution of ``statistic`` (vectorized, ``axis=-1``) over the paired ``data`` (arrays
    whose last axis is the units; leading axes are independent sets compared at once); a
    percentile interval from the same resamples where BCa is undefined (every jackknife value
    equal). Returns ``(low, high, eq_low, eq_high, se, distribution)``, each of the leading
    shape (the distribution with the resamples last)."""
    from scipy import stats

    rng = np.random.default_rng(settings.seed)
    common = dict(paired=True, vectorized=True, batch=2000, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DegenerateDataWarning: handled below
        res = stats.bootstrap(data, statistic, n_resamples=settings.resamples, method="BCa",
                              confidence_level=settings.confidence, rng=rng, **common)
        out = []
        for level in (settings.confidence, 1 - 2 * settings.alpha):
            ci = stats.bootstrap(data, statistic, n_resamples=0, bootstrap_result=res,
                                 method="BCa", confidence_level=level, rng=rng, **common
                                 ).confidence_interval if level != settings.confidence \
                else res.confidence_interval
            low, high = np.asarray(ci.low, float), np.asarray(ci.high, float)
            bad = ~(np.isfinite(low) & np.isfinite(high))
            if bad.any():
                pct = stats.bootstrap(data, statistic, n_resamples=0, bootstrap_result=res,
                                      method="percentile", confidence_level=level, rng=rng,
                                      **common).confidence_interval
                low = np.where(bad, pct.low, low)
                high = np.where(bad, pct.high, high)
            out += [low, high]
    return (*out, np.asarray(res.standard_error, float),
            np.asarray(res.bootstrap_distribution, float))


def _clusters(clusters, n: int) -> tuple[np.ndarray, int]:
    """Cluster index per item (0..k-1, in order of first appearance) and k; every item its own
    cluster where ``clusters`` is None."""
    if clusters is None:
        return np.arange(n), n
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise ValueError(f"clusters must give one label per item: {labels.shape} vs ({n},)")
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # renumber by first appearance
    return order[inverse], len(first)


def _pairs(baseline, candidate, clusters) -> tuple[np.ndarray, np.ndarray, object, int]:
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    if b.shape != c.shape or b.ndim != 1:
        raise ValueError(f"paired values must be two 1-D arrays of one length: {b.shape} vs "
                         f"{c.shape}")
    keep = np.isfinite(b) & np.isfinite(c)
    if clusters is not None:
        clusters = np.asarray(clusters)[keep]
    return b[keep], c[keep], clusters, int((~keep).sum())


def _empty(kind: str, not_finite: int, test: str) -> Paired:
    nan = math.nan
    return Paired(kind, 0, 0, nan, nan, nan, nan, nan, nan, nan, nan, test, nan,
                  not_finite=not_finite)


def _check_kind(kind: str, values: np.ndarray) -> None:
    if kind not in (CONTINUOUS, BINARY):
        raise ValueError(f"paired_items compares {CONTINUOUS!r} or {BINARY!r} values, not "
                         f"{kind!r} (set-level numbers: paired_set)")
    if kind == BINARY and not np.isin(values, (0.0, 1.0)).all():
        raise ValueError("binary outcomes must be 0 (wrong) or 1 (right)")


def paired_items(baseline, candidate, clusters=None, kind: str = CONTINUOUS,
                 settings: PairedSettings = PairedSettings()) -> Paired:
    """Compare two systems' per-item values (candidate minus baseline).

    Args:
        baseline, candidate: 1-D float arrays of one length, item ``i`` of both measured on the
            same item; pairs where either is NaN or infinite are dropped (counted in
            ``not_finite``). For ``kind`` :data:`BINARY`, values 0 (wrong) or 1 (right).
        clusters: None, or one label per item: items with the same label are resampled
            together (nested items) and the test runs on cluster means.
        kind: :data:`CONTINUOUS` or :data:`BINARY`.
        settings: resamples, confidence, power, seed.

    Returns:
        :class:`Paired`; the interval is [d, d] where every difference is the same ``d``, NaN
        with fewer than 2 units.

    Raises:
        ValueError: arrays of different shapes, ``clusters`` of another length, a binary value
            other than 0 or 1, an unknown ``kind``.
    """
    from scipy import stats

    b, c, labels, dropped = _pairs(baseline, candidate, clusters)
    _check_kind(kind, np.concatenate([b, c]))
    if clusters is None:
        if not len(b):
            return _empty(kind, dropped, MCNEMAR if kind == BINARY else WILCOXON)
        out = paired_items_many(b[None], c[None], kind, settings)[0]
        out.not_finite = dropped
        return out
    n = len(b)
    if n == 0:
        return _empty(kind, dropped, WILCOXON_CLUSTERS)
    index, k = _clusters(labels, n)
    d = c - b
    flips = (int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())) \
        if kind == BINARY else None
    sum_b = np.bincount(index, weights=b, minlength=k)
    sum_c = np.bincount(index, weights=c, minlength=k)
    count = np.bincount(index, minlength=k).astype(np.float64)
    units = (sum_c - sum_b) / count  # cluster mean differences

    def statistic(sb, sc, cnt, axis=-1):
        return (sc - sb).sum(axis=axis) / cnt.sum(axis=axis)
    diff = float(d.mean())
    if k < 2:
        low = high = eq_low = eq_high = se = math.nan
    elif np.ptp(units) == 0 and np.ptp(count) == 0:
        low = high = eq_low = eq_high = diff
        se = 0.0
    else:
        low, high, eq_low, eq_high, se = map(float, _bootstrap((sum_b, sum_c, count),
                                                               statistic, settings)[:5])
    sd = float(np.std(units, ddof=1)) if k > 1 else math.nan
    effect = float(units.mean() / sd) if sd and math.isfinite(sd) else math.nan
    if not np.any(units != 0):
        p = 1.0
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = float(stats.wilcoxon(units).pvalue)
    return Paired(kind, n, k, float(b.mean()), float(c.mean()), diff, low, high, eq_low, eq_high,
                  se, WILCOXON_CLUSTERS, p, effect, int((d == 0).sum()), flips,
                  detectable_difference(se, settings), dropped)


def paired_items_many(baseline, candidate, kind: str = CONTINUOUS,
                      settings: PairedSettings = PairedSettings()) -> list[Paired]:
    """:func:`paired_items` (independent items) on many sets of items of one size at once, one
    bootstrap for all: the rows of 2-D arrays (simulations; the rows of one comparison that
    share their items). Each row gets the interval, test and effect :func:`paired_items` gives
    it alone (the resamples' item indices are shared between rows).

    Args:
        baseline, candidate: float ``[T, n]``, every value finite (drop the others first).
        kind, settings: as :func:`paired_items`.

    Raises:
        ValueError: arrays of different or non-2-D shapes, a value that is not finite, a
            binary value other than 0 or 1, an unknown ``kind``.
    """
    from scipy import stats

    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    if b.shape != c.shape or b.ndim != 2:
        raise ValueError(f"paired values must be two [T, n] arrays of one shape: {b.shape} vs "
                         f"{c.shape}")
    if not (np.isfinite(b).all() and np.isfinite(c).all()):
        raise ValueError("paired_items_many takes finite values only (paired_items drops the "
                         "others)")
    _check_kind(kind, np.concatenate([b.ravel(), c.ravel()]))
    rows, n = b.shape
    d = c - b
    diff = d.mean(axis=1) if n else np.full(rows, np.nan)
    nan = np.full(rows, np.nan)
    if n < 2:
        low = high = eq_low = eq_high = se = nan
    else:
        # the pairs resampled together are their differences resampled: one array to index
        def statistic(x, axis=-1):
            return x.mean(axis=axis)
        low, high, eq_low, eq_high, se, _ = _bootstrap((d,), statistic, settings)
        flat = np.ptp(d, axis=1) == 0  # every difference the same: [d, d]
        low, high, eq_low, eq_high = (np.where(flat, diff, x)
                                      for x in (low, high, eq_low, eq_high))
        se = np.where(flat, 0.0, se)
    sd = d.std(axis=1, ddof=1) if n > 1 else nan
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(sd > 0, diff / np.where(sd > 0, sd, 1), np.nan)
    p_rank = np.ones(rows)  # Wilcoxon on every row with a nonzero difference at once
    moved = np.any(d != 0, axis=1)
    if kind != BINARY and moved.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p_rank[moved] = stats.wilcoxon(d[moved], axis=-1).pvalue
    out = []
    for t in range(rows):
        if kind == BINARY:
            n10 = int(((b[t] == 1) & (c[t] == 0)).sum())
            n01 = int(((b[t] == 0) & (c[t] == 1)).sum())
            flips = (n10, n01)
            p = 1.0 if n10 + n01 == 0 else float(stats.binomtest(n01, n10 + n01, 0.5).pvalue)
        else:
            flips, p = None, float(p_rank[t])
        out.append(Paired(kind, n, n, float(b[t].mean()), float(c[t].mean()), float(diff[t]),
                          float(low[t]), float(high[t]), float(eq_low[t]), float(eq_high[t]),
                          float(se[t]), MCNEMAR if kind == BINARY else WILCOXON, p,
                          float(effect[t]), int((d[t] == 0).sum()), flips,
                          detectable_difference(float(se[t]), settings)))
    return out


def item_weights(resamples, n_items: int, members: np.ndarray | None = None) -> np.ndarray:
    """How often each item is drawn in each resample: ``resamples`` ``[..., m]`` of unit
    indices (items, or clusters with ``members`` giving each item's cluster) -> float weights
    ``[..., n_items]``."""
    idx = np.asarray(resamples)
    lead = idx.shape[:-1]
    flat = idx.reshape(-1, idx.shape[-1])
    units = n_items if members is None else int(members.max()) + 1
    offsets = (np.arange(flat.shape[0]) * units)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * units
                         ).reshape(flat.shape[0], units).astype(np.float64)
    if members is not None:
        counts = counts[:, members]
    return counts.reshape(*lead, n_items)


def paired_set(statistic: Callable[[np.ndarray], np.ndarray], n_items: int, clusters=None,
               settings: PairedSettings = PairedSettings()) -> Paired:
    """Compare a set-level number of two systems, recomputed on bootstrap resamples of their
    shared items (the paired bootstrap of Koehn 2004, Berg-Kirkpatrick et al. 2012).

    Args:
        statistic: item weights ``[B, n_items]`` (float counts; all ones is the set itself) ->
            ``[B, 2]`` of (baseline, candidate) set values under each weighting. It must be
            vectorized over ``B`` and accept weights with zeros.
        n_items: shared items.
        clusters: None or one label per item (clusters are resampled whole).
        settings: resamples, confidence, power, seed.

    Returns:
        :class:`Paired` of kind :data:`SET`, with the bootstrap p-value (Berg-Kirkpatrick et al.
        2012): ``(1 + #{|d* - d| >= |d|}) / (B + 1)``, never below ``2 / 2^k`` for ``k`` units
        (the smallest p of the exact sign-flip test on ``k`` pairs: a few items take a few
        distinct resamples, and their bootstrap distribution is far too narrow).
    """
    if n_items == 0:
        return _empty(SET, 0, BOOTSTRAP_P)
    index, k = _clusters(None if clusters is None else np.asarray(clusters), n_items)
    members = None if clusters is None else index
    observed = np.asarray(statistic(np.ones((1, n_items))), dtype=np.float64).reshape(2)
    diff = float(observed[1] - observed[0])

    def stat(units, axis=-1):
        units = np.moveaxis(np.asarray(units), axis, -1)
        w = item_weights(units.astype(np.int64), n_items, members)
        flat = w.reshape(-1, n_items)
        values = np.asarray(statistic(flat), dtype=np.float64).reshape(-1, 2)
        return (values[:, 1] - values[:, 0]).reshape(w.shape[:-1])

    if k < 2 or not math.isfinite(diff):
        low = high = eq_low = eq_high = se = p = math.nan
    elif diff == 0 and not np.any(stat(np.random.default_rng(settings.seed).integers(
            0, k, (16, k))) != 0):  # the same set number under 16 weightings
        low = high = eq_low = eq_high = se = 0.0  # (a model against its rerun): no resampling
        p = 1.0
    else:
        *bounds, dist = _bootstrap((np.arange(k),), stat, settings)
        low, high, eq_low, eq_high, se = map(float, bounds)
        dist = dist[np.isfinite(dist)]
        if se == 0 or not len(dist):
            p = 1.0 if diff == 0 else (0.0 if se == 0 else math.nan)
            if se == 0:
                low = high = eq_low = eq_high = diff
        else:
            p = float((1 + np.sum(np.abs(dist - diff) >= abs(diff))) / (len(dist) + 1))
            # k units take few distinct resamples: no test on k pairs is surer than the exact
            # sign-flip (randomization) test's smallest two-sided p, 2 / 2^k
            p = max(p, min(1.0, 2.0 ** (1 - k)))
    return Paired(SET, n_items, k, float(observed[0]), float(observed[1]), diff, low, high,
                  eq_low, eq_high, se, BOOTSTRAP_P, p,
                  detectable=detectable_difference(se, settings))


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979) of one family of tests
    (:func:`statsmodels.stats.multitest.multipletests`, ``method="holm"``); NaN stays NaN and
    is not counted in the family."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        import gc

        from statsmodels.stats.multitest import multipletests

        # statsmodels' Holm calls gc.collect(), which scans every object of the process (0.2 s
        # in a comparison's process); frozen objects are not scanned
        gc.freeze()
        try:
            out[ok] = multipletests(p[ok], method="holm")[1]
        finally:
            gc.unfreeze()
    return out


def benjamini_yekutieli(p) -> np.ndarray:
    """Benjamini-Yekutieli adjusted p-values, controlling the false discovery rate under any
    dependence between the tests (Benjamini & Yekutieli 2001, Thm. 1.3;
    :func:`scipy.stats.false_discovery_control`, ``method="by"``); NaN stays NaN and is not
    counted."""
    from scipy import stats

    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="by")
    return out


def resolution(digits: int) -> float:
    """The step of a value printed with ``digits`` decimals (``10^-digits``): a difference
    smaller than half of it prints as 0."""
    return 10.0 ** -int(digits)


def verdict(result: Paired, p_adjusted: float, higher_is_better: bool, margin: float,
            digits: int, alpha: float = 0.05) -> str:
    """The row's verdict.

    - :data:`BETTER` / :data:`WORSE`: the adjusted p is at most ``alpha``, the interval
      excludes 0, and the difference does not print as 0 at ``digits`` decimals (it is at
      least half of :func:`resolution`); the direction follows ``higher_is_better``;
    - :data:`EQUIVALENT`: otherwise, where the (1 - 2 alpha) interval lies within
      ``[-margin, margin]`` (two one-sided tests, Schuirmann 1987);
    - :data:`INCONCLUSIVE`: neither.

    Args:
        result: the comparison.
        p_adjusted: its p-value after correction for the other rows (or the raw p of a single
            comparison).
        higher_is_better: the metric's direction (:data:`roundtrip.metrics.METRICS`).
        margin: the equivalence margin, >= 0, in the metric's units.
        digits: the decimals the metric is printed with.
    """
    d = result.difference
    if not math.isfinite(d):
        return INCONCLUSIVE
    excludes = (math.isfinite(result.ci_low) and math.isfinite(result.ci_high)
                and (result.ci_low > 0 or result.ci_high < 0))
    shown = abs(d) >= resolution(digits) / 2
    if math.isfinite(p_adjusted) and p_adjusted <= alpha and excludes and shown:
        return BETTER if (d > 0) == bool(higher_is_better) else WORSE
    if (math.isfinite(result.eq_low) and math.isfinite(result.eq_high)
            and -margin <= result.eq_low and result.eq_high <= margin):
        return EQUIVALENT
    return INCONCLUSIVE
