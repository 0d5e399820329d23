"""CHD (CHD paper, Sec. 4.1, Eq. 14) recomputed from the items' token grids under item weights,
for the paired comparison of two checkpoints (:mod:`roundtrip.tables.compare`): the set-level
number gets a paired bootstrap interval (:func:`roundtrip.metrics.paired.paired_set`).

Each item's unigram and right/down co-occurrence counts are kept per item; a weighting sums
them, normalizes as :class:`roundtrip.metrics.tokens.TokenHistogram` does over a set, and takes
the Hellinger distances of :func:`roundtrip.metrics.tokens.chd`: at unit weights the value is
the one ``token_set.csv`` holds. Keys whose counts are the same in every item are merged with
their multiplicity (exact: most token pairs occur in one item only), so the cost per resample
grows with the distinct count patterns, not with the distinct pairs.
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


def _symmetric(per_item: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray) -> np.ndarray:
    """Counts of one direction's pairs ``(u, v)`` split half to ``(u, v)``, half to ``(v, u)``
    (Eq. 12's symmetrization), over the symmetric key space ``keys``."""
    dense = np.zeros((len(per_item), len(keys)))
    for i, (k, n) in enumerate(per_item):
        u, v = np.divmod(k, _PAIR_BASE)
        np.add.at(dense[i], np.searchsorted(keys, k), n / 2)
        np.add.at(dense[i], np.searchsorted(keys, v * _PAIR_BASE + u), n / 2)
    return dense


def _merged(blocks: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The blocks (``[n, K]`` counts over one key space) with the keys whose count columns are
    the same in every block merged into one, and each merged key's multiplicity: a sum over
    keys of ``f(counts of the key)`` is the sum over merged keys of multiplicity times ``f``,
    exactly. Most pairs of tokens occur in one item only, so this shrinks ``K`` by far."""
    stacked = np.vstack(blocks)
    if not stacked.shape[1]:
        return blocks, np.zeros(0)
    unique, counts = np.unique(stacked, axis=1, return_counts=True)
    rows = np.cumsum([0] + [len(b) for b in blocks])
    return [unique[a:b] for a, b in zip(rows[:-1], rows[1:])], counts.astype(np.float64)


class _SideCounts:
    """One side's per-item counts, real and reconstructed, over shared key spaces with equal
    columns merged (:func:`_merged`): unigrams; right and down pairs, symmetrized."""

    def __init__(self, real: list[dict], fake: list[dict], uni_keys: np.ndarray,
                 pair_keys: np.ndarray):
        (self.real_uni, self.fake_uni), self.uni_m = _merged(
            [_dense([c["unigram"] for c in real], uni_keys),
             _dense([c["unigram"] for c in fake], uni_keys)])
        blocks, self.pair_m = _merged([_symmetric([c[d] for c in side], pair_keys)
                                       for side in (real, fake) for d in ("right", "down")])
        self.real_pairs, self.fake_pairs = blocks[:2], blocks[2:]


def _distribution(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Weighted counts over merged keys (``[B, U]``, the weights times the counts) normalized by
    their total over all keys (each merged key ``m`` times)."""
    total = x @ m
    return x / np.where(total > 0, total, 1.0)[:, None]


def _cooccurrence(w: np.ndarray, directions: list[np.ndarray], m: np.ndarray) -> np.ndarray:
    """Eq. 10-12 under weights: each direction normalized over its pairs, averaged over the
    directions that have pairs."""
    counts = [w @ d for d in directions]
    present = [(x @ m > 0) for x in counts]
    k = np.maximum(present[0].astype(int) + present[1].astype(int), 1)[:, None]
    return sum(_distribution(x, m) for x in counts) / k


def _hellinger(p: np.ndarray, q: np.ndarray, m: np.ndarray) -> np.ndarray:
    d = np.sqrt(p)
    d -= np.sqrt(q)
    d *= d
    return np.minimum(1.0, np.sqrt((d @ m) / 2))


def weighted_chd(side: _SideCounts, w: np.ndarray) -> np.ndarray:
    """CHD = (CHD-1D + CHD-2D) / 2 (Eq. 9, 13, 14) between the weighted real and reconstructed
    sets of one side, ``[B]`` for weights ``[B, n]``."""
    out = np.empty(len(w))
    for s in range(0, len(w), 1024):
        wb = np.asarray(w[s:s + 1024], np.float64)
        d1 = _hellinger(_distribution(wb @ side.real_uni, side.uni_m),
                        _distribution(wb @ side.fake_uni, side.uni_m), side.uni_m)
        d2 = _hellinger(_cooccurrence(wb, side.real_pairs, side.pair_m),
                        _cooccurrence(wb, side.fake_pairs, side.pair_m), side.pair_m)
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
    # the vocabulary only offsets residual levels: any bound above every id gives the same keys
    vocab = int(max(int(np.asarray(g).max()) for g in grids)) + 1 if grids else 1
    counts = [([_item_counts(g, vocab) for g in real], [_item_counts(g, vocab) for g in fake])
              for real, fake in sides]
    uni, pairs = set(), set()
    for real, fake in counts:
        for c in (*real, *fake):
            uni.update(c["unigram"][0].tolist())
            for d in ("right", "down"):
                k = c[d][0]
                u, v = np.divmod(k, _PAIR_BASE)
                pairs.update(k.tolist())
                pairs.update((v * _PAIR_BASE + u).tolist())
    uni_keys = np.array(sorted(uni), np.int64)
    pair_keys = np.array(sorted(pairs), np.int64)
    built = [_SideCounts(real, fake, uni_keys, pair_keys) for real, fake in counts]

    def statistic(w):
        return np.stack([weighted_chd(side, w) for side in built], axis=-1)
    return statistic
