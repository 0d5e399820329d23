"""VTBench's set-level numbers recomputed from items, for the paired comparison of two
checkpoints (:mod:`roundtrip.tables.compare`): each function takes the two sides' aligned
per-item rows (:class:`roundtrip.tables.compare.Side`) and returns the vectorized statistic of
item weights ``[B, n] -> [B, 2]`` (baseline, candidate) that
:func:`roundtrip.metrics.paired.paired_set` resamples."""
from __future__ import annotations

import numpy as np


def released_psnr(baseline, candidate):
    """PSNR (VTBench eval.) of a weighted set: ``10 log10(R^2 / (SSE / N))`` with SSE and N the
    weighted sums of the items' ``mse_vtbench * n_values_vtbench`` and ``n_values_vtbench`` and
    ``R`` from ``min(0, min ref_min_vtbench)`` to ``max(0, max ref_max_vtbench)`` over the drawn
    items (torchmetrics' states start at 0: :class:`~roundtrip.evals.vtbench.released
    .ReleasedPSNR`; VTBench Sec. 4.1, the released evaluator). dB; inf where SSE is 0.

    Raises:
        KeyError: a side's ``image_quality.csv`` lacks the released evaluator's columns.
    """
    sides = []
    for side in (baseline, candidate):
        f = side.frame
        nv = f["n_values_vtbench"].to_numpy(float)
        sides.append((f["mse_vtbench"].to_numpy(float) * nv, nv,
                      f["ref_min_vtbench"].to_numpy(float), f["ref_max_vtbench"].to_numpy(float)))

    def statistic(w):
        out = []
        for sse, nv, lo, hi in sides:
            drawn = w > 0
            top = np.maximum(np.where(drawn, hi, -np.inf).max(axis=1), 0.0)
            bottom = np.minimum(np.where(drawn, lo, np.inf).min(axis=1), 0.0)
            with np.errstate(divide="ignore"):
                out.append(10 * np.log10((top - bottom) ** 2 / ((w @ sse) / (w @ nv))))
        return np.stack(out, axis=-1)
    return statistic


def released_cer(baseline, candidate):
    """CER (VTBench eval.) of a weighted set: the weighted sum of the items' ``edits_vtbench``
    over that of ``chars_vtbench`` (the released evaluator sums the edits over the set; 0 where
    the originals' OCR is empty, as it returns)."""
    sides = [(s.frame["edits_vtbench"].to_numpy(float), s.frame["chars_vtbench"].to_numpy(float))
             for s in (baseline, candidate)]

    def statistic(w):
        out = []
        for edits, chars in sides:
            den = w @ chars
            with np.errstate(invalid="ignore", divide="ignore"):
                out.append(np.where(den > 0, (w @ edits) / np.where(den > 0, den, 1), 0.0))
        return np.stack(out, axis=-1)
    return statistic


def weighted_fid(real: np.ndarray, fake: np.ndarray, w: np.ndarray) -> np.ndarray:
    """FID (Heusel et al. 2017) between two feature sets of the same ``n`` items under item
    weights: the means and (frequency-weighted, unbiased) covariances of each set, and
    ``||mu_r - mu_f||^2 + tr C_r + tr C_f - 2 tr sqrt(C_r C_f)``. The trace of the square root
    is the nuclear norm of ``A_r A_f^T`` (``C = A^T A``), an ``n x n`` matrix: the cost is
    ``B n^3``, not ``B d^3``. Equals :func:`roundtrip.metrics.distribution.fid` (torch-fidelity)
    at unit weights.

    Args:
        real, fake: float ``[n, d]`` features; w: weights ``[B, n]`` (>= 0, each row summing
            to more than 1).

    Returns:
        ``[B]`` FIDs.
    """
    real = np.asarray(real, np.float64)
    fake = np.asarray(fake, np.float64)
    out = np.empty(len(w))
    grams = {k: x @ y.T for k, (x, y) in {"rr": (real, real), "ff": (fake, fake),
                                           "rf": (real, fake)}.items()}
    for start in range(0, len(w), 256):
        wb = np.asarray(w[start:start + 256], np.float64)
        total = wb.sum(axis=1)

        def centred(g, wl, wr):
            gw_r = g @ wr.T  # [n, B]: G w_r
            wg_l = wl @ g    # [B, n]: w_l^T G
            both = np.einsum("bi,ij,bj->b", wl, g, wr)
            return (g[None] - gw_r.T[:, :, None] / total[:, None, None]
                    - wg_l[:, None, :] / total[:, None, None]
                    + both[:, None, None] / total[:, None, None] ** 2)
        crr = centred(grams["rr"], wb, wb)
        cff = centred(grams["ff"], wb, wb)
        crf = centred(grams["rf"], wb, wb)
        scale = 1.0 / (total - 1.0)
        tr_r = np.einsum("bi,bii->b", wb, crr) * scale
        tr_f = np.einsum("bi,bii->b", wb, cff) * scale
        mean = np.einsum("bi,ij,bj->b", wb, grams["rr"] - grams["rf"] - grams["rf"].T
                         + grams["ff"], wb) / total ** 2
        sw = np.sqrt(wb)
        m = sw[:, :, None] * crf * sw[:, None, :] * scale[:, None, None]
        nuclear = np.linalg.svd(m, compute_uv=False).sum(axis=1)
        out[start:start + len(wb)] = mean + tr_r + tr_f - 2 * nuclear
    return out


def weighted_kid(real: np.ndarray, fake: np.ndarray, w: np.ndarray) -> np.ndarray:
    """KID (Binkowski et al. 2018, Sec. 3: the unbiased estimator of MMD^2 with the cubic
    polynomial kernel ``k(x, y) = (x . y / d + 1)^3``; torch-fidelity's ``kid_kernel="poly"``
    with its default degree, gamma and coef0) between the features of the same ``n`` items,
    as a function of item weights ``w`` (a bootstrap resample: item ``i`` drawn ``w_i`` times,
    ``N = sum w``).

    At unit weights it is the estimator on the whole set: with ``K`` the kernel matrices,
    ``mean_{i != j} K_xx + mean_{i != j} K_yy - 2 mean_{i, j} K_xy``, which is
    torch-fidelity's KID with one subset as large as the set and the mean of its per-subset
    estimate over every pair of subsets of any one size: the value the run's KID
    (:func:`roundtrip.metrics.distribution.kid`, the mean over ``kid_subsets`` random subsets)
    estimates, without its Monte Carlo error.

    On a resample, two copies of one item are one item, not two samples: the unbiased
    estimator leaves an item paired with itself out (the diagonal of ``K_xx`` and ``K_yy``),
    and so it leaves out every pair of copies of one item (Hoeffding 1948: a U-statistic
    averages over pairs of distinct draws). Counting them (the estimator on the set with the
    copies written out) adds ``k(x_i, x_i)``, which in 2,048 dimensions is several times any
    ``k(x_i, x_j)``, and moves every resample's value away from the set's. So, over the pairs
    of distinct items, with their weights ``w_i w_j``::

        mean_{i != j} K_xx = (w^T K_xx w - sum_i w_i^2 K_xx[i, i]) / (N^2 - sum_i w_i^2)

    (the same for ``K_yy``), and the cross term keeps the estimator's share ``1 / N`` of an
    item's original paired with its own reconstruction::

        mean K_xy = (sum_i w_i K_xy[i, i] / N) / N + (1 - 1 / N) mean_{i != j} K_xy

    The mean of this over every resample of ``n`` draws is the set's KID (each term's mean is
    the set's term). The cost is ``B n^2``.

    Args:
        real, fake: float ``[n, d]`` features (row ``i`` of both: item ``i``);
        w: weights ``[B, n]`` (>= 0; a 1-D ``[n]`` is one weighting).

    Returns:
        ``[B]`` KIDs (may be slightly negative: the estimator is unbiased); NaN where fewer
        than two distinct items have weight.
    """
    real = np.asarray(real, np.float64)
    fake = np.asarray(fake, np.float64)
    w = np.atleast_2d(np.asarray(w, np.float64))
    d = real.shape[1]
    kxx, kyy, kxy = ((x @ y.T / d + 1.0) ** 3 for x, y in
                     ((real, real), (fake, fake), (real, fake)))
    total = w.sum(axis=1)
    squares = (w * w).sum(axis=1)
    distinct = total * total - squares  # weight of the pairs of two distinct items

    def between(k):  # mean of k over the pairs of two distinct items
        return (np.einsum("bi,bi->b", w @ k, w) - (w * w) @ np.diag(k)) / distinct
    with np.errstate(invalid="ignore", divide="ignore"):
        own = (w @ np.diag(kxy)) / total  # an item's original with its own reconstruction
        cross = own / total + (1.0 - 1.0 / total) * between(kxy)
        out = between(kxx) + between(kyy) - 2.0 * cross
    return np.where(distinct > 0, out, np.nan)


def _features(side, first: int) -> tuple[np.ndarray, np.ndarray]:
    """``(real [n, 2048], fake [n, 2048])`` of a side's items, in its frame's order: the
    features ``first`` and ``first + 1`` of each item's ``perceptual`` record (0: at the scored
    size; 2: of the 256 x 256 copies, :func:`roundtrip.evals.vtbench.perceptual._feature_pair`).

    Raises:
        NotMeasured: no item of the side has features (the FID weights were missing).
        ValueError: some item of the side has no features in its score journal (its record
            failed).
    """
    from roundtrip.core.comparison import NotMeasured

    records = side.records("perceptual")
    if not any(isinstance(r, dict) and isinstance(r.get("features"), tuple)
               for r in records.values()):
        raise NotMeasured(f"{side.name}/{side.dataset}: no Inception features")
    real, fake = [], []
    for item in side.frame["item_id"].astype(str):
        r = records.get(item)
        f = r.get("features") if isinstance(r, dict) else None
        if not isinstance(f, tuple) or len(f) < first + 2:
            raise ValueError(f"{side.name}/{side.dataset}/{item} has no Inception features "
                             "in its score journal")
        real.append(f[first])
        fake.append(f[first + 1])
    return np.stack(real), np.stack(fake)


def released_fid(baseline, candidate):
    """FID (VTBench eval.: the 256 x 256 copies' Inception features, the third and fourth of
    each item's ``perceptual`` record) of a weighted set, per side
    (:func:`weighted_fid`).

    Raises:
        NotMeasured: no item of a side has features (the FID weights were missing).
        ValueError: some item of a side has no features in its score journal (its record
            failed).
    """
    feats = [_features(side, 2) for side in (baseline, candidate)]

    def statistic(w):
        return np.stack([weighted_fid(r, f, w) for r, f in feats], axis=-1)
    return statistic


def kid(baseline, candidate):
    """KID (roundtrip's, at the scored size: the first and second features of each item's
    ``perceptual`` record, as :func:`roundtrip.evals.vtbench.perceptual.feature_sets` gives the
    run's KID) of a weighted set, per side (:func:`weighted_kid`: the whole set's estimate,
    which the table's mean over random subsets estimates, and a resample's copies of one item
    one item).

    Raises:
        NotMeasured: no item of a side has features (the FID weights were missing).
        ValueError: some item of a side has no features in its score journal (its record
            failed).
    """
    feats = [_features(side, 0) for side in (baseline, candidate)]

    def statistic(w):
        return np.stack([weighted_kid(r, f, w) for r, f in feats], axis=-1)
    return statistic
