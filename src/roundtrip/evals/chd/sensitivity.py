"""Sensitivity of token statistics to degradation (the CHD paper's Figure 2), on any dataset.

Images (each whole, plus random square crops) are resized to the tokenizer size, then degraded
at ``levels`` increasing levels of three kinds, and every version is tokenized by the reference
tokenizer:

* ``noise``: additive Gaussian noise, sigma = 0.2 * k / levels (intensities in [0, 1]);
* ``blur``: Gaussian blur, sigma = 3 * k / levels pixels (at the tokenizer size);
* ``shuffle``: the image is cut into an 8 x 8 grid of blocks and round(64 * k / levels) of them
  are permuted cyclically among their own positions.

Levels are nested (one noise field scaled; one block order, a growing prefix of it), so a level
only adds degradation to the previous one. At each level CHD compares the degraded set with the
clean set, and CMMS scores every degraded image. The paper's claim (Fig. 2), checked by the tests:
CHD rises monotonically and CMMS falls, for each kind. The -0.9 bound on Spearman(level, CMMS) the
tests use is roundtrip's target, not a number of the paper.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from PIL import Image, ImageFilter
from scipy.stats import spearmanr

from roundtrip.evals.chd.cmms import CMMS, to_square, tokenize
from roundtrip.metrics.tokens import TokenHistogram, chd
from roundtrip.models import Adapter

KINDS = ("noise", "blur", "shuffle")
GRID = 8  # shuffle: blocks per side


def sample_images(images: list[np.ndarray], size: int, crops_per_image: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Each image resized whole, plus ``crops_per_image`` random square crops: uint8 ``[N, s, s, 3]``."""
    out = []
    for img in images:
        out.append(to_square(img, size))
        short = min(img.shape[:2])
        for _ in range(crops_per_image):
            side = int(rng.integers(min(size, short), short + 1))
            y, x = rng.integers(0, img.shape[0] - side + 1), rng.integers(0, img.shape[1] - side + 1)
            out.append(to_square(img[y:y + side, x:x + side], size))
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
                    crops_per_image: int = 4, seed: int = 0, layout: list[int] | None = None
                    ) -> dict[tuple[str, int], np.ndarray]:
    """Token grids of the clean sample and of every (kind, level) version of it (the sets of the
    CHD paper's Figure 2; degradations as in the module docstring).

    Args:
        images: uint8/uint16 ``(H, W, 3)`` originals; each gives itself plus
            ``crops_per_image`` random square crops, resized to ``size`` x ``size`` pixels.
        levels: number of levels per kind (level ``k`` of ``levels``).
        layout: a 1D tokenizer's declared grid (:func:`~roundtrip.evals.chd.cmms.tokenize`).

    Returns:
        ``{("clean", 0): grids, (kind, level): grids, ...}``, int64 ``[N, h, w(, Q)]`` each.

    Raises:
        ValueError: the tokenizer has no discrete tokens.
    """
    clean = sample_images(images, size, crops_per_image, np.random.default_rng(seed))
    sets = {("clean", 0): tokenize(tokenizer, clean, layout=layout)}
    for kind in KINDS:
        for level in range(1, levels + 1):
            sets[(kind, level)] = tokenize(tokenizer, degrade(clean, kind, level, levels, seed),
                                           layout=layout)
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


def plot(df: pd.DataFrame, path: str) -> None:
    """Two panels (CHD and mean CMMS vs level, one line per kind) saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from roundtrip.report.style import colours

    colour = colours(df["kind"])  # the headline figure's colours
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), dpi=120)
    for kind, g in df.groupby("kind", sort=False):
        axes[0].plot(g["level"], g["chd"], marker="o", label=kind, color=colour[kind])
        axes[1].plot(g["level"], g["cmms"], marker="o", label=kind, color=colour[kind])
    axes[0].set(xlabel="degradation level", ylabel="CHD vs clean set", title="CHD")
    axes[1].set(xlabel="degradation level", ylabel="mean CMMS", title="CMMS")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
