"""Codebook Histogram Distance (CHD) between two sets of token grids.

Definitions from "Evaluating Generative Models via One-Dimensional Code Distributions", Sec. 4.1:

* CHD-1D (Eq. 8-9): Hellinger distance between the unigram histograms of the two sets, each
  normalized over all tokens of the set; ``H(p, q) = ||sqrt(p) - sqrt(q)||_2 / sqrt(2)``, in [0, 1].
* CHD-2D (Eq. 10-13): for each displacement in ``D = {(1, 0), (0, 1)}`` (right and down
  neighbours on the token grid) the directed co-occurrence histogram of ``(c(p), c(p + d))``
  pairs, normalized by the number of valid pairs of the set; symmetrized
  ``(h(u, v) + h(v, u)) / 2``; averaged over ``D``; stored sparsely (observed pairs only);
  Hellinger distance between the two sets.
* CHD (Eq. 14) = (CHD-1D + CHD-2D) / 2: 0 for identical sets, 1 for disjoint vocabularies.

The paper tokenizes with a 1D TiTok and defines Eq. 10 on a 2D token grid, rejecting adjacency
along the sequence as "an artificial order" (Sec. 4.1). roundtrip uses any discrete tokenizer of
the model zoo with its 2D grid. A 1D tokenizer's sequence ``[n]`` has no 2D neighbours: it adds to
CHD-1D only, and CHD-2D and CHD (Eq. 14 needs both) are NaN with :data:`CHD_2D_SEQUENCE_REASON`,
unless the caller lays the sequence out on the tokenizer's declared grid first
(``metrics.tokens.layout``). Residual models (``[h, w, Q]`` grids) count each quantizer level as
its own vocabulary (level ``l`` code ``c`` is token ``l * V + c``); pairs are formed within a
level.

Counting streams: :class:`TokenHistogram` compacts its counts as it goes, so memory grows with the
number of distinct tokens and pairs, not with the number of images.
"""
from __future__ import annotations

import math

import numpy as np

_PAIR_BASE = np.int64(1) << 31  # pair (u, v) -> u * 2^31 + v; token ids stay below 2^31

#: Why CHD-2D (and so CHD) is not computed on 1D token sequences (Sec. 4.1, Eq. 10).
CHD_2D_SEQUENCE_REASON = ("n/a: CHD-2D (Eq. 10) counts right/down neighbours on a 2D token grid; "
                          "a 1D tokenizer's sequence has none (set metrics.tokens.layout to the "
                          "tokenizer's declared grid, if it has one); CHD (Eq. 14) needs CHD-2D")


class _SparseCounter:
    """Counts of int64 keys, compacted with ``np.unique`` once enough keys are pending."""

    def __init__(self, compact_every: int = 1 << 20):
        self.keys = np.zeros(0, np.int64)
        self.counts = np.zeros(0, np.int64)
        self._pending: list[np.ndarray] = []
        self._n_pending = 0
        self._compact_every = compact_every

    def add(self, keys: np.ndarray) -> None:
        self._pending.append(keys.astype(np.int64, copy=False).ravel())
        self._n_pending += keys.size
        if self._n_pending >= self._compact_every:
            self._compact()

    def _compact(self) -> None:
        if not self._pending:
            return
        new_keys, new_counts = np.unique(np.concatenate(self._pending), return_counts=True)
        keys = np.concatenate([self.keys, new_keys])
        counts = np.concatenate([self.counts, new_counts])
        self.keys, inverse = np.unique(keys, return_inverse=True)
        self.counts = np.bincount(inverse, weights=counts, minlength=len(self.keys)).astype(np.int64)
        self._pending, self._n_pending = [], 0

    def distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted unique keys and their probabilities (empty arrays when nothing was counted)."""
        self._compact()
        total = self.counts.sum()
        return self.keys, (self.counts / total if total else self.counts.astype(float))


class TokenHistogram:
    """Unigram and right/down co-occurrence counts of one set of token grids.

    Args:
        vocab_size: codebook size V (per quantizer level); token ids must be in ``[0, V)``.

    Raises:
        ValueError: from :meth:`add`, for ids outside ``[0, V)`` or grids that are not 1D/2D/3D.
    """

    def __init__(self, vocab_size: int):
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        self.vocab_size = int(vocab_size)
        self.unigram = _SparseCounter()
        self.pairs = {"right": _SparseCounter(), "down": _SparseCounter()}
        self.n_grids = 0
        self.n_sequences = 0  # of n_grids, the 1D sequences (no 2D neighbours)

    def add(self, grid: np.ndarray) -> None:
        """Count one token grid: int ``[h, w]`` or ``[h, w, Q]`` (Q residual levels), or one
        sequence ``[n]`` of a 1D tokenizer (unigrams only: it has no 2D neighbours)."""
        grid = np.asarray(grid)
        sequence = grid.ndim == 1
        if sequence:
            grid = grid[None, :]
        if grid.ndim == 2:
            grid = grid[..., None]
        if grid.ndim != 3:
            raise ValueError(f"token grid must be [n], [h, w] or [h, w, Q], got shape {grid.shape}")
        if grid.size and (grid.min() < 0 or grid.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got "
                             f"[{grid.min()}, {grid.max()}]")
        levels = np.arange(grid.shape[2], dtype=np.int64) * self.vocab_size
        tokens = grid.astype(np.int64) + levels  # level-offset vocabulary
        self.unigram.add(tokens)
        self.n_grids += 1
        if sequence:
            self.n_sequences += 1
            return
        self.pairs["right"].add(tokens[:, :-1] * _PAIR_BASE + tokens[:, 1:])
        self.pairs["down"].add(tokens[:-1, :] * _PAIR_BASE + tokens[1:, :])

    def unigram_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 8: sorted token ids and their share of all tokens of the set."""
        return self.unigram.distribution()

    def cooccurrence_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 10-12: sorted pair keys ``u * 2^31 + v`` and the symmetrized co-occurrence,
        averaged over the displacements that have pairs (a 1-wide grid has no right pairs)."""
        keys, probs = [], []
        directions = [c.distribution() for c in self.pairs.values()]
        directions = [(k, p) for k, p in directions if len(k)]
        for k, p in directions:
            u, v = np.divmod(k, _PAIR_BASE)
            share = p / 2 / len(directions)
            keys += [k, v * _PAIR_BASE + u]
            probs += [share, share]
        if not keys:
            return np.zeros(0, np.int64), np.zeros(0)
        out_keys, inverse = np.unique(np.concatenate(keys), return_inverse=True)
        return out_keys, np.bincount(inverse, weights=np.concatenate(probs),
                                     minlength=len(out_keys))


def hellinger(p: tuple[np.ndarray, np.ndarray], q: tuple[np.ndarray, np.ndarray]) -> float:
    """Hellinger distance ``||sqrt(p) - sqrt(q)||_2 / sqrt(2)`` of two sparse distributions.

    Args:
        p, q: ``(sorted unique keys, probabilities)``; keys absent from one side count as 0.

    Returns:
        A float in [0, 1]; NaN if either distribution is empty.
    """
    (kp, vp), (kq, vq) = p, q
    if not len(kp) or not len(kq):
        return math.nan
    keys = np.union1d(kp, kq)
    dense_p, dense_q = np.zeros(len(keys)), np.zeros(len(keys))
    dense_p[np.searchsorted(keys, kp)] = vp
    dense_q[np.searchsorted(keys, kq)] = vq
    total = float(np.sum((np.sqrt(dense_p) - np.sqrt(dense_q)) ** 2))
    return min(1.0, math.sqrt(total / 2))


def chd(a: TokenHistogram, b: TokenHistogram) -> dict[str, float]:
    """CHD-1D, CHD-2D and CHD (Eq. 9, 13, 14) between two sets; symmetric in ``a``, ``b``.

    CHD-2D and CHD are NaN when either set holds 1D sequences (:data:`CHD_2D_SEQUENCE_REASON`).

    Raises:
        ValueError: the two histograms use different vocabulary sizes.
    """
    if a.vocab_size != b.vocab_size:
        raise ValueError(f"vocabulary sizes differ: {a.vocab_size} vs {b.vocab_size}")
    d1 = hellinger(a.unigram_distribution(), b.unigram_distribution())
    if a.n_sequences or b.n_sequences:
        return {"chd": math.nan, "chd_1d": d1, "chd_2d": math.nan}
    d2 = hellinger(a.cooccurrence_distribution(), b.cooccurrence_distribution())
    return {"chd": (d1 + d2) / 2, "chd_1d": d1, "chd_2d": d2}
