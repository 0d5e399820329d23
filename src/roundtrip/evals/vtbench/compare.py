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


def released_fid(baseline, candidate):
    """FID (VTBench eval.: the 256 x 256 copies' Inception features, the third and fourth of
    each item's ``perceptual`` record) of a weighted set, per side
    (:func:`weighted_fid`).

    Raises:
        NotMeasured: no item of a side has features (the FID weights were missing).
        ValueError: some item of a side has no features in its score journal (its record
            failed).
    """
    from roundtrip.core.comparison import NotMeasured

    feats = []
    for side in (baseline, candidate):
        records = side.records("perceptual")
        if not any(isinstance(r, dict) and isinstance(r.get("features"), tuple)
                   for r in records.values()):
            raise NotMeasured(f"{side.name}/{side.dataset}: no Inception features")
        real, fake = [], []
        for item in side.frame["item_id"].astype(str):
            r = records.get(item)
            f = r.get("features") if isinstance(r, dict) else None
            if not isinstance(f, tuple) or len(f) < 4:
                raise ValueError(f"{side.name}/{side.dataset}/{item} has no Inception features "
                                 "in its score journal")
            real.append(f[2])
            fake.append(f[3])
        feats.append((np.stack(real), np.stack(fake)))

    def statistic(w):
        return np.stack([weighted_fid(r, f, w) for r, f in feats], axis=-1)
    return statistic
