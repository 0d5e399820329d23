"""CHD (CHD paper, Sec. 4.1, Eq. 14) recomputed from the items' token grids under item weights,
for the paired comparison of two checkpoints (:mod:`roundtrip.tables.compare`): the set-level
number gets a paired bootstrap interval (:func:`roundtrip.metrics.paired.paired_set`).

Each item's unigram and right/down co-occurrence counts are kept per item; a weighting sums
them, normalizes as :class:`roundtrip.metrics.tokens.TokenHistogram` does over a set, and takes
the Hellinger distances of :func:`roundtrip.metrics.tokens.chd`: at unit weights the value is
the one ``token_set.csv`` holds. Memory and time grow with the distinct tokens and pairs of the
set (``B x K`` per batch of 256 resamples).
"""
from __future__ import annotations

import numpy as np

_PAIR_BASE = np.int64(1) << 31  # the key of pair (u, v), as roundtrip.metrics.tokens


def _item_counts(grid: np.ndarray, vocab: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Unigram, right and down pair keys and counts of one ``[h, w]`` / ``[h, w, Q]`` grid
    (level-offset vocabulary, as :meth:`~roundtrip.metrics.tokens.TokenHistogram.add`)."""
    g = np.asarray(grid)
    if g.ndim == 1:
        raise ValueError("1D token sequences have no CHD-2D, so no CHD (Sec. 4.1, Eq. 10)")
    if g.ndim == 2:
        g = g[..., None]
    tokens = g.astype(np.int64) + np.arange(g.shape[2], dtype=np.int64) * vocab
    keys = {"unigram": tokens.ravel(),
            "right": (tokens[:, :-1] * _PAIR_BASE + tokens[:, 1:]).ravel(),
            "down": (tokens[:-1, :] * _PAIR_BASE + tokens[1:, :]).ravel()}
    return {k: np.unique(v, return_counts=True) for k, v in keys.items()}


def _dense(per_item: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray) -> np.ndarray:
    out = np.zeros((len(per_item), len(keys)))
    for i, (k, c) in enumerate(per_item):
        out[i, np.searchsorted(keys, k)] = c
    return out


class _SetCounts:
    """Dense per-item counts of one side's real or reconstructed grids over a shared key space
    (unigrams; the symmetrized co-occurrence keys)."""

    def __init__(self, grids: list[np.ndarray], vocab: int, uni_keys: np.ndarray,
                 pair_keys: np.ndarray):
        counts = [_item_counts(g, vocab) for g in grids]
        self.unigram = _dense([c["unigram"] for c in counts], uni_keys)
        # each direction's keys scattered to the symmetric key space: (u, v) and (v, u)
        self.pairs = {}
        for d in ("right", "down"):
            dense = np.zeros((len(grids), len(pair_keys)))
            for i, c in enumerate(counts):
                k, n = c[d]
                u, v = np.divmod(k, _PAIR_BASE)
                np.add.at(dense[i], np.searchsorted(pair_keys, k), n / 2)
                np.add.at(dense[i], np.searchsorted(pair_keys, v * _PAIR_BASE + u), n / 2)
            self.pairs[d] = dense


def _normalize(x: np.ndarray) -> np.ndarray:
    total = x.sum(axis=1, keepdims=True)
    return np.divide(x, total, out=np.zeros_like(x), where=total > 0)


def _hellinger(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, np.sqrt(((np.sqrt(p) - np.sqrt(q)) ** 2).sum(axis=1) / 2))


def weighted_chd(real: _SetCounts, fake: _SetCounts, w: np.ndarray) -> np.ndarray:
    """CHD = (CHD-1D + CHD-2D) / 2 (Eq. 9, 13, 14) between the weighted real and reconstructed
    sets, ``[B]`` for weights ``[B, n]``."""
    out = np.empty(len(w))
    for s in range(0, len(w), 256):
        wb = np.asarray(w[s:s + 256], np.float64)
        d1 = _hellinger(_normalize(wb @ real.unigram), _normalize(wb @ fake.unigram))

        def cooc(side):
            parts = [_normalize(wb @ side.pairs[d]) for d in ("right", "down")]
            present = [(wb @ side.pairs[d]).sum(axis=1) > 0 for d in ("right", "down")]
            k = np.maximum(present[0].astype(int) + present[1].astype(int), 1)[:, None]
            return (parts[0] * present[0][:, None] + parts[1] * present[1][:, None]) / k
        d2 = _hellinger(cooc(real), cooc(fake))
        out[s:s + len(wb)] = (d1 + d2) / 2
    return out


def chd_from_tokens(baseline, candidate):
    """CHD of each side under item weights, from the ``tokens`` records of its score journals
    (``(real grid, reconstructed grid, cmms_reference, cmms)`` per item).

    Raises:
        ValueError: an item without token grids in a side's journal, or 1D sequences.
    """
    sides = []
    for side in (baseline, candidate):
        records = side.records("tokens")
        real, fake = [], []
        for item in side.frame["item_id"].astype(str):
            r = records.get(item)
            if not isinstance(r, tuple) or len(r) < 2:
                raise ValueError(f"{side.name}/{side.dataset}/{item} has no token grids in its "
                                 "score journal")
            real.append(np.asarray(r[0]))
            fake.append(np.asarray(r[1]))
        sides.append((real, fake))
    grids = [g for real, fake in sides for g in (*real, *fake)]
    vocab = int(max(int(np.asarray(g).max()) for g in grids)) + 1 if grids else 1
    # the vocabulary only offsets residual levels: any bound above every id gives the same keys
    uni, pairs = set(), set()
    counts = [_item_counts(g, vocab) for g in grids]
    for c in counts:
        uni.update(c["unigram"][0].tolist())
        for d in ("right", "down"):
            k = c[d][0]
            u, v = np.divmod(k, _PAIR_BASE)
            pairs.update(k.tolist())
            pairs.update((v * _PAIR_BASE + u).tolist())
    uni_keys = np.array(sorted(uni), np.int64)
    pair_keys = np.array(sorted(pairs), np.int64)
    built = [(_SetCounts(real, vocab, uni_keys, pair_keys),
              _SetCounts(fake, vocab, uni_keys, pair_keys)) for real, fake in sides]

    def statistic(w):
        return np.stack([weighted_chd(r, f, w) for r, f in built], axis=-1)
    return statistic

