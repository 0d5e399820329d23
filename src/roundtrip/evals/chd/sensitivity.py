"""Sensitivity of token statistics to degradation (the CHD paper's Figure 2), on any dataset.

Images (each whole, its shorter side resized and the centre square kept, plus random square
crops) are brought to the tokenizer size (:func:`~.cmms.resize_center_crop`), then degraded
at ``levels`` increasing levels of three kinds, and every version is tokenized by the reference
tokenizer:

* ``noise``: additive Gaussian noise, sigma = 0.2 * k / levels (intensities in [0, 1]);
* ``blur``: Gaussian blur, sigma = 3 * k / levels pixels (at the tokenizer size);
* ``shuffle``: the image is cut into an 8 x 8 grid of blocks and round(64 * k / levels) of them
  are permuted cyclically among their own positions.

Levels are nested (one noise field scaled; one block order, a growing prefix of it), so a level
only adds degradation to the previous one. At each level CHD compares the degraded set with the
clean set, and CMMS scores every degraded image; the tokens whose frequency shifts most are
followed over the levels (:func:`token_shifts`, the figure's middle panel). The paper's claim
(Fig. 2), checked by the tests: CHD rises with the level, for each kind. That CMMS falls
(Spearman(level, CMMS) <= -0.9) is roundtrip's target, not a number of the paper; whether a
small regressor meets it follows its training and seed (docs/benchmarks.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from PIL import Image, ImageFilter
from scipy.stats import spearmanr

from roundtrip.core.progress import Progress
from roundtrip.evals.chd.cmms import CMMS, resize_center_crop, tokenize
from roundtrip.metrics.tokens import TokenHistogram, chd
from roundtrip.models import Adapter

KINDS = ("noise", "blur", "shuffle")
GRID = 8  # shuffle: blocks per side


def sample_images(images: list[np.ndarray], size: int, crops_per_image: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Each image's centre square (shorter side resized to ``size``), plus ``crops_per_image``
    random square crops resized to ``size``: uint8 ``[N, size, size, 3]``
    (:func:`~.cmms.resize_center_crop`)."""
    out = []
    for img in images:
        out.append(resize_center_crop(img, size))
        short = min(img.shape[:2])
        for _ in range(crops_per_image):
            side = int(rng.integers(min(size, short), short + 1))
            y, x = rng.integers(0, img.shape[0] - side + 1), rng.integers(0, img.shape[1] - side + 1)
            out.append(resize_center_crop(img[y:y + side, x:x + side], size))
    return np.stack(out)


def parameter(kind: str, level: int, levels: int) -> float:
    """The distortion parameter of ``level`` (1..levels): noise/blur sigma or shuffled share."""
    frac = level / levels
    return {"noise": 0.2 * frac, "blur": 3.0 * frac, "shuffle": frac}[kind]


def degrade(images: np.ndarray, kind: str, level: int, levels: int, seed: int = 0) -> np.ndarray:
    """Nested degradation of a uint8 ``[N, s, s, 3]`` batch (see module docstring)."""
    rng = np.random.default_rng(seed)
    value = parameter(kind, level, levels)
    if kind == "noise":
        field = rng.standard_normal(images.shape)  # same field at every level
        x = images / 255.0 + value * field
        return np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)
    if kind == "blur":
        return np.stack([np.asarray(Image.fromarray(im).filter(ImageFilter.GaussianBlur(value)))
                         for im in images])
    if kind == "shuffle":
        n, s = images.shape[0], images.shape[1]
        b = s // GRID
        out = images.copy()
        count = int(round(GRID * GRID * value))
        for i in range(n):
            order = np.random.default_rng([seed, i]).permutation(GRID * GRID)[:count]
            if count < 2:
                continue
            src = np.roll(order, 1)  # cyclic: every chosen block moves
            for dst_idx, src_idx in zip(order, src):
                dy, dx = divmod(int(dst_idx), GRID)
                sy, sx = divmod(int(src_idx), GRID)
                out[i, dy * b:(dy + 1) * b, dx * b:(dx + 1) * b] = \
                    images[i, sy * b:(sy + 1) * b, sx * b:(sx + 1) * b]
        return out
    raise ValueError(f"unknown degradation {kind!r}; one of {KINDS}")


def _histogram(grids: np.ndarray, vocab_size: int) -> TokenHistogram:
    h = TokenHistogram(vocab_size)
    for g in grids:
        h.add(g)
    return h


def degraded_tokens(tokenizer: Adapter, images: list[np.ndarray], size: int, levels: int = 10,
                    crops_per_image: int = 4, seed: int = 0, layout: list[int] | None = None,
                    progress: Progress | None = None) -> dict[tuple[str, int], np.ndarray]:
    """Token grids of the clean sample and of every (kind, level) version of it (the sets of the
    CHD paper's Figure 2; degradations as in the module docstring).

    Args:
        images: uint8/uint16 ``(H, W, 3)`` originals; each gives itself plus
            ``crops_per_image`` random square crops, resized to ``size`` x ``size`` pixels.
        levels: number of levels per kind (level ``k`` of ``levels``).
        layout: a 1D tokenizer's declared grid (:func:`~roundtrip.evals.chd.cmms.tokenize`).
        progress: counts each set tokenized (``1 + len(KINDS) * levels`` in all), if given.

    Returns:
        ``{("clean", 0): grids, (kind, level): grids, ...}``, int64 ``[N, h, w(, Q)]`` each.

    Raises:
        ValueError: the tokenizer has no discrete tokens.
    """
    clean = sample_images(images, size, crops_per_image, np.random.default_rng(seed))
    count = progress.add if progress is not None else (lambda: None)
    sets = {("clean", 0): tokenize(tokenizer, clean, layout=layout)}
    count()
    for kind in KINDS:
        for level in range(1, levels + 1):
            sets[(kind, level)] = tokenize(tokenizer, degrade(clean, kind, level, levels, seed),
                                           layout=layout)
            count()
    return sets


def score_sensitivity(sets: dict[tuple[str, int], np.ndarray], vocab_size: int,
                      cmms: CMMS | None) -> pd.DataFrame:
    """CHD vs the clean set and mean CMMS per (kind, level) of :func:`degraded_tokens` output.

    ``cmms`` is any callable from token grids to per-item scores (``None``: CMMS column NaN).

    Returns:
        Rows ``kind, level, parameter, chd, chd_1d, chd_2d, cmms, n_images`` (level 0 = clean).
    """
    clean_tokens = sets[("clean", 0)]
    reference = _histogram(clean_tokens, vocab_size)
    clean_cmms = float(np.mean(cmms(clean_tokens))) if cmms else np.nan
    levels = max(level for _, level in sets)
    rows = []
    for kind in KINDS:
        rows.append({"kind": kind, "level": 0, "parameter": 0.0, "chd": 0.0, "chd_1d": 0.0,
                     "chd_2d": 0.0, "cmms": clean_cmms, "n_images": len(clean_tokens)})
        for level in range(1, levels + 1):
            tokens = sets[(kind, level)]
            d = chd(reference, _histogram(tokens, vocab_size))
            rows.append({"kind": kind, "level": level, "parameter": parameter(kind, level, levels),
                         **d, "cmms": float(np.mean(cmms(tokens))) if cmms else np.nan,
                         "n_images": len(clean_tokens)})
    return pd.DataFrame(rows)


def token_shifts(sets: dict[tuple[str, int], np.ndarray], vocab_size: int, top: int = 3
                 ) -> pd.DataFrame:
    """The middle panel of the CHD paper's Figure 2: how the frequencies of the tokens most
    sensitive to each degradation shift with its level.

    A token's frequency is its share of all tokens of a set (Eq. 8, the unigram histogram CHD-1D
    compares); for each kind, the ``top`` tokens whose frequency moves most (absolute change)
    between the clean set and the strongest level are followed over every level.

    Args:
        sets: :func:`degraded_tokens` output.
        vocab_size: the tokenizer's codebook size (a residual level ``l``'s code ``c`` is token
            ``l * vocab_size + c``, as in :class:`~roundtrip.metrics.tokens.TokenHistogram`).

    Returns:
        Rows ``kind, token, rank, level, frequency, shift`` (``shift`` = frequency minus the
        clean frequency; level 0 = clean, shift 0), ``rank`` 1 for the most shifted token.
    """
    def frequencies(grids: np.ndarray) -> dict[int, float]:
        keys, probs = _histogram(grids, vocab_size).unigram_distribution()
        return dict(zip(keys.tolist(), probs.tolist()))

    clean = frequencies(sets[("clean", 0)])
    levels = max(level for _, level in sets)
    rows = []
    for kind in KINDS:
        by_level = {0: clean} | {lv: frequencies(sets[(kind, lv)]) for lv in range(1, levels + 1)}
        last = by_level[levels]
        change = {t: abs(last.get(t, 0.0) - clean.get(t, 0.0)) for t in set(clean) | set(last)}
        chosen = sorted(change, key=lambda t: (-change[t], t))[:top]
        for rank, token in enumerate(chosen, 1):
            for level, freq in by_level.items():
                f = freq.get(token, 0.0)
                rows.append({"kind": kind, "token": token, "rank": rank, "level": level,
                             "frequency": f, "shift": f - clean.get(token, 0.0)})
    return pd.DataFrame(rows, columns=["kind", "token", "rank", "level", "frequency", "shift"])


def run_sensitivity(tokenizer: Adapter, cmms: CMMS | None, images: list[np.ndarray], size: int,
                    levels: int = 10, crops_per_image: int = 4, seed: int = 0,
                    layout: list[int] | None = None) -> pd.DataFrame:
    """:func:`degraded_tokens` then :func:`score_sensitivity` (the rule's one call)."""
    sets = degraded_tokens(tokenizer, images, size, levels, crops_per_image, seed, layout)
    return score_sensitivity(sets, tokenizer.info().codebook_size, cmms)


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per kind over levels 1..L: Spearman(level, CHD), Spearman(level, CMMS), CHD monotone."""
    out = []
    for kind, g in df[df["level"] > 0].groupby("kind", sort=False):
        out.append({"kind": kind,
                    "spearman_chd": float(spearmanr(g["level"], g["chd"]).statistic),
                    "spearman_cmms": float(spearmanr(g["level"], g["cmms"]).statistic),
                    "chd_monotone": bool(np.all(np.diff(g["chd"].to_numpy()) > 0))})
    return pd.DataFrame(out)


def plot(df: pd.DataFrame, path: str, shifts: pd.DataFrame | None = None) -> None:
    """The CHD paper's Figure 2 as a PNG, one colour per kind, against the level: CHD vs the
    clean set (left), the frequency shifts of the most sensitive tokens (middle, as the paper's
    middle panel, from :func:`token_shifts`; left out when ``shifts`` is None) and mean CMMS
    (right, roundtrip's addition)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from roundtrip.report.style import colours

    colour = colours(df["kind"])  # the headline figure's colours
    panels = 3 if shifts is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.5 * panels, 3.4), dpi=120)
    chd_ax, cmms_ax = axes[0], axes[-1]
    for kind, g in df.groupby("kind", sort=False):
        chd_ax.plot(g["level"], g["chd"], marker="o", label=kind, color=colour[kind])
        cmms_ax.plot(g["level"], g["cmms"], marker="o", label=kind, color=colour[kind])
    chd_ax.set(xlabel="degradation level", ylabel="CHD vs clean set", title="CHD")
    cmms_ax.set(xlabel="degradation level", ylabel="mean CMMS", title="CMMS")
    if shifts is not None:
        styles = ("-", "--", ":", "-.")
        for (kind, rank, token), g in shifts.groupby(["kind", "rank", "token"], sort=False):
            axes[1].plot(g["level"], g["shift"] * 100, marker=".", color=colour.get(kind),
                         linestyle=styles[(rank - 1) % len(styles)], label=f"{kind}: token {token}")
        axes[1].axhline(0, color="0.6", linewidth=0.8)
        axes[1].set(xlabel="degradation level", ylabel="frequency shift (% of all tokens)",
                    title="Most shifted tokens")
        axes[1].legend(fontsize="x-small")
    for ax in axes:
        ax.grid(alpha=0.3)
    chd_ax.legend()
    cmms_ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
