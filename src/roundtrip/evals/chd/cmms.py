"""Code Mixture Model Score (CMMS): a no-reference quality score learned from token sequences.

Following "Evaluating Generative Models via One-Dimensional Code Distributions", Sec. 4.2:

* **Degradations** of clean training images, each with a severity ``p`` in [0, 0.3]:
  uniform token injection (each token replaced by a uniform code with probability ``p``, Eq. 15);
  semantic fragment swapping (token blocks exchanged between two images, each receiving the
  other's block, or between two non-overlapping regions of one image; :func:`swap_fragment`);
  pixel-space
  distortions before tokenization (Gaussian blur sigma 0.5-3 px, JPEG quality 90-10, Gaussian
  noise sigma 0.01-0.1, occlusion of 10-40 % of the area, photometric changes of sharpness,
  contrast, brightness and saturation).
* **Target** ``q(p) = exp(-20 p)`` (Eq. 16).
* **Regressor**: token embedding + sinusoidal positions, Transformer encoder, global average
  pooling, 2-layer MLP, sigmoid output in [0, 1] (paper: width 512, 2 layers, 8 heads; AdamW,
  lr 1e-4, weight decay 0.01, batch 512, 200 epochs on ImageNet-1K, Sec. 5.2).
* **Epochs**: each epoch draws a fresh pool of crops, the training images visited in a random
  order (one crop per image when the pool is as large as the set, :func:`epoch_images`), each
  crop tokenized clean and under fresh pixel distortions (:func:`build_training_tokens`); its
  batches pass over the pool, one sequence per crop (:func:`pass_batches`).

What the paper leaves open and roundtrip fixes (documented choices): pixel-space distortion
parameters are mapped linearly from a severity ``s`` in [0, 1] to their range, and the target's
``p`` is proportional to the distortion's strength, 0.3 at the strongest setting
(:func:`pixel_severity`: JPEG 90 gets ``p = 0.033``, not the clean crop's 0); "fragments" is a
pixel-space version of fragment swapping (pairs of square blocks, 1/8 of the shorter side,
exchanged until 5-40 % of the area has moved: what the token-space swap does to a 1D sequence,
done where a 2D tokenizer sees it); for token fragment swapping, ``p`` is the share of an
image's positions that receive moved tokens; each training
sequence carries one degradation family drawn uniformly; a crop's pixel versions cover the
pixel kinds in equal numbers (stratified, :func:`_pixel_kinds`); grids are flattened in raster
order;
residual models' levels are embedded separately and summed per position. Training may begin with
steps that bypass the Transformer blocks, set to identity maps (:func:`train_cmms`): a budget
choice for CPU runs, off by default.
"""
from __future__ import annotations

import io
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageFilter
from torch import nn

from roundtrip.core.checkpoint import load_checkpoint, save_checkpoint
from roundtrip.core.imaging import to_uint8
from roundtrip.core.progress import Progress
from roundtrip.core.protocols import resize_shorter_then_crop
from roundtrip.models import Adapter

log = logging.getLogger(__name__)

P_MAX = 0.3
FAMILIES = ("inject", "swap", "pixel")
PIXEL_KINDS = ("blur", "jpeg", "noise", "occlusion", "photometric", "fragments")


#: Strength of each pixel kind's mildest setting relative to its strongest (severity ``s = 0``
#: of :func:`pixel_degrade`): blur sigma 0.5 of 3 px, JPEG quality 90 = 10 of 90 quality steps
#: below 100, noise sigma 0.01 of 0.1, occlusion 10 % of 40 %, fragments 5 % of 40 % of the area;
#: photometric factors start at no change.
PIXEL_FLOOR = {"blur": 0.5 / 3, "jpeg": 10 / 90, "noise": 0.1, "occlusion": 0.25,
               "photometric": 0.0, "fragments": 0.05 / 0.4}


def pixel_severity(kind: str, s: float) -> float:
    """Eq. 16's ``p`` for a pixel distortion of severity ``s`` in [0, 1]: proportional to the
    distortion's strength, ``P_MAX`` at the strongest setting (roundtrip's mapping; the paper
    gives pixel distortions ranges, not a ``p``). The mildest versions (JPEG 90, 10 % occluded)
    are degraded and get ``p > 0``, a target below a clean crop's 1.0.

    Raises:
        KeyError: unknown ``kind``.
    """
    floor = PIXEL_FLOOR[kind]
    return P_MAX * (floor + (1 - floor) * float(s))


def quality_target(p: np.ndarray | float) -> np.ndarray | float:
    """Eq. 16: ``exp(-20 p)`` for severity ``p`` in [0, 0.3] (1 = clean)."""
    return np.exp(-20.0 * np.asarray(p, dtype=np.float64))


# -- pixel space ------------------------------------------------------------------------------
def pixel_degrade(image: np.ndarray, kind: str, s: float, rng: np.random.Generator) -> np.ndarray:
    """One pixel-space distortion of severity ``s`` in [0, 1].

    Args:
        image: uint8 ``(H, W, 3)``.
        kind: one of :data:`PIXEL_KINDS`.

    Returns:
        uint8 ``(H, W, 3)``.

    Raises:
        ValueError: unknown ``kind`` or ``s`` outside [0, 1].
    """
    if not 0 <= s <= 1:
        raise ValueError(f"severity must be in [0, 1], got {s}")
    im = Image.fromarray(image)
    if kind == "blur":
        return np.asarray(im.filter(ImageFilter.GaussianBlur(0.5 + 2.5 * s)))
    if kind == "jpeg":
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=int(round(90 - 80 * s)))
        return np.asarray(Image.open(buf).convert("RGB"))
    if kind == "noise":
        sigma = 0.01 + 0.09 * s
        x = image / 255.0 + rng.normal(0, sigma, image.shape)
        return np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)
    if kind == "occlusion":
        h, w = image.shape[:2]
        area = (0.1 + 0.3 * s) * h * w
        aspect = rng.uniform(0.5, 2.0)
        bh = int(min(h, max(1, round(math.sqrt(area * aspect)))))
        bw = int(min(w, max(1, round(area / bh))))
        y, x = rng.integers(0, h - bh + 1), rng.integers(0, w - bw + 1)
        out = image.copy()
        out[y:y + bh, x:x + bw] = rng.integers(0, 256, 3, dtype=np.uint8)
        return out
    if kind == "photometric":
        for enhancer in (ImageEnhance.Sharpness, ImageEnhance.Contrast,
                         ImageEnhance.Brightness, ImageEnhance.Color):
            factor = 1 + rng.choice([-1, 1]) * rng.uniform(0.5, 1.0) * 0.8 * s
            im = enhancer(im).enhance(max(0.05, factor))
        return np.asarray(im)
    if kind == "fragments":
        return _swap_pixel_blocks(image, 0.05 + 0.35 * s, rng)
    raise ValueError(f"unknown pixel degradation {kind!r}; one of {PIXEL_KINDS}")


def _swap_pixel_blocks(image: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Exchange pairs of random square blocks until about ``share`` of the area has moved."""
    h, w = image.shape[:2]
    side = max(2, min(h, w) // 8)
    out = image.copy()
    for _ in range(max(1, int(round(share * h * w / (2 * side * side))))):
        ay, by = rng.integers(0, h - side + 1, 2)
        ax, bx = rng.integers(0, w - side + 1, 2)
        a = out[ay:ay + side, ax:ax + side].copy()
        out[ay:ay + side, ax:ax + side] = out[by:by + side, bx:bx + side]
        out[by:by + side, bx:bx + side] = a
    return out


# -- token space ------------------------------------------------------------------------------
def inject_tokens(grid: np.ndarray, p: float, vocab_size: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Eq. 15: replace each token by a uniform code with probability ``p`` (all levels alike)."""
    mask = rng.random(grid.shape) < p
    return np.where(mask, rng.integers(0, vocab_size, grid.shape), grid)


def _block_shape(h: int, w: int, area: float, rng: np.random.Generator) -> tuple[int, int]:
    """A block of about ``area`` tokens (aspect drawn in [0.7, 1.4]) that fits twice without
    overlap on an ``h x w`` grid: its height is at most ``h // 2`` or its width at most ``w // 2``.

    Raises:
        ValueError: the grid has fewer than 2 tokens (no two disjoint blocks).
    """
    if h * w < 2:
        raise ValueError(f"a {h} x {w} grid has no two disjoint blocks")
    bh = int(min(h, max(1, round(math.sqrt(area) * rng.uniform(0.7, 1.4)))))
    bw = int(min(w, max(1, round(area / bh))))
    if 2 * bh > h and 2 * bw > w:  # two such blocks overlap wherever they are: halve one side
        if w >= 2 and (h < 2 or w / bw >= h / bh):
            bw = w // 2
            bh = int(min(h, max(1, round(area / bw))))
        else:
            bh = h // 2
            bw = int(min(w, max(1, round(area / bh))))
    return bh, bw


def _partnered_origin(h: int, w: int, bh: int, bw: int,
                      rng: np.random.Generator) -> tuple[int, int]:
    """A uniformly drawn top-left corner of a ``bh x bw`` block for which a second, disjoint
    block exists (a block at row ``y`` has a disjoint partner above or below iff ``y >= bh`` or
    ``y <= h - 2 bh``; likewise for columns). Needs ``2 bh <= h`` or ``2 bw <= w``."""
    ys, xs = np.meshgrid(np.arange(h - bh + 1), np.arange(w - bw + 1), indexing="ij")
    ok = (ys >= bh) | (ys <= h - 2 * bh) | (xs >= bw) | (xs <= w - 2 * bw)
    cand = np.argwhere(ok)
    y, x = cand[rng.integers(len(cand))]
    return int(y), int(x)


def _disjoint_origin(h: int, w: int, bh: int, bw: int, y: int, x: int,
                     rng: np.random.Generator) -> tuple[int, int]:
    """A uniformly drawn top-left corner of a ``bh x bw`` block that shares no token with the
    block at ``(y, x)`` (one exists when ``2 bh <= h`` or ``2 bw <= w``)."""
    ys, xs = np.meshgrid(np.arange(h - bh + 1), np.arange(w - bw + 1), indexing="ij")
    free = (np.abs(ys - y) >= bh) | (np.abs(xs - x) >= bw)
    cand = np.argwhere(free)
    sy, sx = cand[rng.integers(len(cand))]
    return int(sy), int(sx)


def swap_fragment(grid: np.ndarray, other: np.ndarray | None, p: float,
                  rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """Semantic fragment swapping (Sec. 4.2): exchange token blocks between two images, or
    between two distant regions of one image.

    * Between images (``other`` given, same shape as ``grid``): a block covering about ``p`` of
      the grid is cut from each at independently drawn places, and each image receives the
      other's block; both are returned.
    * Within one image (``other is None``): two blocks of about ``p / 2`` of the grid each, that
      share no token, are exchanged, so that about ``p`` of the positions hold moved content.

    Args:
        grid, other: int token grids ``[h, w]`` or ``[h, w, Q]`` (a 1D sequence as ``[1, n]``).
        p: severity in [0, ``P_MAX``].

    Returns:
        ``(new grid, new other or None, p)``: ``p`` is the share of ``grid``'s positions that
        received moved tokens (Eq. 16's severity; 0 when ``p <= 0``).

    Raises:
        ValueError: ``other`` of another shape; a grid with fewer than 2 tokens.
    """
    if grid.ndim == 1:  # a 1D sequence: blocks are runs along it
        out, out_other, p = swap_fragment(grid[None], None if other is None else other[None],
                                          p, rng)
        return out[0], None if out_other is None else out_other[0], p
    if other is not None and other.shape != grid.shape:
        raise ValueError(f"fragment swap between grids of shapes {grid.shape} and {other.shape}")
    h, w = grid.shape[:2]
    if p <= 0:
        return grid.copy(), None if other is None else other.copy(), 0.0
    if other is not None:
        bh = int(min(h, max(1, round(math.sqrt(p * h * w) * rng.uniform(0.7, 1.4)))))
        bw = int(min(w, max(1, round(p * h * w / bh))))
        y, x = rng.integers(0, h - bh + 1), rng.integers(0, w - bw + 1)
        sy, sx = rng.integers(0, h - bh + 1), rng.integers(0, w - bw + 1)
        out, out_other = grid.copy(), other.copy()
        out[y:y + bh, x:x + bw] = other[sy:sy + bh, sx:sx + bw]
        out_other[sy:sy + bh, sx:sx + bw] = grid[y:y + bh, x:x + bw]
        return out, out_other, bh * bw / (h * w)
    bh, bw = _block_shape(h, w, p * h * w / 2, rng)
    y, x = _partnered_origin(h, w, bh, bw, rng)
    sy, sx = _disjoint_origin(h, w, bh, bw, y, x, rng)
    out = grid.copy()
    out[y:y + bh, x:x + bw] = grid[sy:sy + bh, sx:sx + bw]
    out[sy:sy + bh, sx:sx + bw] = grid[y:y + bh, x:x + bw]
    return out, None, 2 * bh * bw / (h * w)


# -- tokenization -----------------------------------------------------------------------------
def resize_center_crop(image: np.ndarray, size: int) -> np.ndarray:
    """uint8 ``(size, size, 3)`` from an 8/16-bit RGB image: the shorter side resized to
    ``size``, then the centred ``size`` x ``size`` square
    (:func:`roundtrip.core.protocols.resize_shorter_then_crop`, Pillow's Lanczos), the standard
    resize + centre crop that makes the CHD paper's 256 x 256 inputs (Sec. 4.1). The aspect
    ratio is kept, never squashed: a 300 x 600 image keeps its middle half. A ``size`` x
    ``size`` uint8 image is returned as it is.
    """
    return resize_shorter_then_crop(to_uint8(image), (size, size))


@torch.no_grad()
def tokenize(model: Adapter, images: np.ndarray, batch_size: int = 32,
             layout: tuple[int, int] | list[int] | None = None) -> np.ndarray:
    """Token grids of uint8 images through a discrete tokenizer.

    Args:
        images: uint8 ``[N, H, W, 3]`` of one size.
        layout: ``(h, w)``, the 2D grid a one-dimensional tokenizer declares for its ``n = h w``
            tokens (raster order); None keeps sequences as they are.

    Returns:
        int64 ``[N, h, w]`` or ``[N, h, w, Q]``. A one-dimensional tokenizer's sequences
        (TiTok-style, the CHD paper's own setting) come back as ``[N, n]``, or as ``[N, h, w]``
        with ``layout``: CHD-2D needs a 2D grid (Sec. 4.1, Eq. 10; :mod:`roundtrip.metrics.tokens`),
        CMMS reads the sequence in order.

    Raises:
        ValueError: the model has no discrete tokens, returns ids of another rank, or ``layout``
            does not hold its ``n`` tokens.
    """
    out = []
    for start in range(0, len(images), batch_size):
        x = torch.from_numpy(images[start:start + batch_size]).permute(0, 3, 1, 2).float()
        x = (x / 127.5 - 1).to(model.device)
        tok = model.checked_tokens(model.encode(x), len(x))  # OutputError: ids beyond the codebook
        if tok is None:
            raise ValueError(f"{model.name or type(model).__name__} has no discrete tokens")
        if tok.ndim == 2 and layout is not None:
            h, w = layout
            if h * w != tok.shape[1]:
                raise ValueError(f"metrics.tokens.layout {h} x {w} does not hold the "
                                 f"tokenizer's {tok.shape[1]} tokens")
            tok = tok.reshape(tok.shape[0], h, w)
        if tok.ndim not in (2, 3, 4):
            raise ValueError(f"token ids must be [B, n], [B, h, w] or [B, h, w, Q], got "
                             f"shape {tuple(tok.shape)}")
        out.append(tok.cpu().numpy().astype(np.int64))
    return np.concatenate(out)


# -- the regressor ----------------------------------------------------------------------------
@dataclass
class CMMSConfig:
    """Architecture of :class:`CMMSRegressor` (saved with the weights)."""
    vocab_size: int
    levels: int = 1
    d_model: int = 512
    layers: int = 2
    heads: int = 8


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    """Transformer sine/cosine position table, float32 ``[length, dim]``."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return table


class CMMSRegressor(nn.Module):
    """Token grid -> quality in [0, 1].

    Input: int64 ``[B, h, w]``, ``[B, h, w, Q]`` or ``[B, n]`` (a 1D tokenizer's sequences);
    output float32 ``[B]``.
    """

    def __init__(self, cfg: CMMSConfig):
        super().__init__()
        if cfg.d_model % cfg.heads or cfg.d_model % 2:
            raise ValueError(f"d_model ({cfg.d_model}) must be even and divisible by heads "
                             f"({cfg.heads})")
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size * cfg.levels, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.heads, 4 * cfg.d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_model), nn.GELU(),
                                  nn.Linear(cfg.d_model, 1))

    def forward(self, grids: torch.Tensor, bypass_blocks: bool = False) -> torch.Tensor:
        """Scores in [0, 1] of int64 ``[B, h, w]`` / ``[B, h, w, Q]`` grids -> float32 ``[B]``.

        ``bypass_blocks`` skips the Transformer blocks (the first training phase, see
        :func:`train_cmms`); it equals the full forward pass while the blocks are identity maps
        (:func:`identity_blocks`).

        Raises:
            ValueError: the grids' token levels differ from ``cfg.levels``.
        """
        if grids.ndim == 2:  # [B, n] sequences of a 1D tokenizer: a 1 x n grid
            grids = grids[:, None, :]
        if grids.ndim == 3:
            grids = grids[..., None]
        b, h, w, q = grids.shape
        if q != self.cfg.levels:
            raise ValueError(f"expected {self.cfg.levels} token level(s), got {q}")
        offsets = torch.arange(q, device=grids.device) * self.cfg.vocab_size
        # scaled as in Vaswani et al. so token identity, not the (constant) positions, dominates
        x = self.embed(grids.reshape(b, h * w, q) + offsets).sum(dim=2) * math.sqrt(self.cfg.d_model)
        x = x + sinusoidal_positions(h * w, self.cfg.d_model).to(x.device)
        if not bypass_blocks:
            x = self.encoder(x)
        pooled = self.norm(x).mean(dim=1)  # normalize per token, then pool
        return torch.sigmoid(self.head(pooled)).squeeze(-1)


def identity_blocks(model: CMMSRegressor) -> CMMSRegressor:
    """Zero the last layer of every residual branch (attention output projection, second FFN
    layer), in place, so each pre-norm Transformer block maps its input to itself (the zero-init
    residual branches of Fixup, Zhang et al. 2019, and ReZero, Bachlechner et al. 2020).

    Returns:
        ``model`` itself, for chaining.
    """
    with torch.no_grad():
        for block in model.encoder.layers:
            for out in (block.self_attn.out_proj, block.linear2):
                out.weight.zero_()
                out.bias.zero_()
    return model


@dataclass
class TrainSettings:
    """CMMS training (config ``metrics.tokens.cmms``).

    ``bypass_steps`` optimizer steps with the Transformer blocks bypassed come before ``steps``
    full steps (see :func:`train_cmms`); 0 trains the full model throughout, as the paper does.
    The ``bypass_steps + steps`` steps are split evenly over ``epochs``; each epoch draws a pool
    of ``crops`` fresh crops (:func:`build_training_tokens`), each tokenized clean and under
    ``pixel_variants`` fresh pixel distortions, and its batches pass over that pool
    (:func:`pass_batches`).
    """
    steps: int = 2000
    bypass_steps: int = 0
    batch_size: int = 64
    lr: float = 1e-4
    weight_decay: float = 0.01
    crops: int = 256
    pixel_variants: int = 6
    seed: int = 0
    epochs: int = 1


def _pixel_kinds(n: int, rng: np.random.Generator) -> list[str]:
    """The distortion kinds of one crop's ``n`` pixel versions, stratified: every kind once per
    round of :data:`PIXEL_KINDS`, the last partial round drawn without replacement, in random
    order. With 6 versions and 6 kinds every crop is seen under every kind; drawn independently,
    a third of the crops ((5/6)^6) would have no version of a given kind. roundtrip's choice
    (the paper does not say how kinds are drawn; docs/design.md, "Stratified pixel kinds"; its
    effect over seeds: docs/benchmarks.md).

    Returns:
        ``n`` names from :data:`PIXEL_KINDS`.
    """
    k = len(PIXEL_KINDS)
    kinds = [PIXEL_KINDS[i] for _ in range(n // k) for i in range(k)]
    kinds += [PIXEL_KINDS[i] for i in rng.choice(k, n % k, replace=False)]
    return [kinds[i] for i in rng.permutation(n)]


def epoch_images(n_images: int, crops: int, rng: np.random.Generator) -> np.ndarray:
    """Which training image each of an epoch's ``crops`` crops is cut from: the images in a
    random order (a permutation), then in a new one when ``crops`` exceeds their number, so
    every image is visited once per ``n_images`` crops. With ``crops`` equal to the number of
    images (the paper's "one crop per ImageNet training image" per epoch, Sec. 5.2), each image
    gives exactly one crop; drawn with replacement, only 1 - 1/e (about 63 %) of them would.

    Returns:
        int64 ``[crops]`` image indices.

    Raises:
        ValueError: no image, or ``crops`` < 1.
    """
    if n_images < 1 or crops < 1:
        raise ValueError(f"an epoch needs images and crops (got {n_images} images, {crops} crops)")
    rounds = -(-crops // n_images)
    return np.concatenate([rng.permutation(n_images) for _ in range(rounds)])[:crops]


def build_training_tokens(tokenizer: Adapter, images: Sequence[np.ndarray], size: int,
                          settings: TrainSettings, layout: list[int] | None = None,
                          epoch: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The crop pool of one epoch: ``settings.crops`` random crops, one per image in a random
    order (:func:`epoch_images`), each tokenized clean and under ``pixel_variants`` pixel
    distortions whose kinds are stratified over :data:`PIXEL_KINDS` (:func:`_pixel_kinds`);
    ``layout`` as in :func:`tokenize`. Each epoch's crops, flips and distortions are drawn
    afresh from the seed ``[settings.seed, epoch]``: the same pool for the same seed and epoch.

    Returns:
        ``(tokens int32 [crops, 1 + variants, h, w(, Q)], p [crops, 1 + variants])``; column 0
        is clean.
    """
    rng = np.random.default_rng([settings.seed, epoch])
    crops, severities, tokens = [], [], []
    progress = Progress(settings.crops, f"CMMS training crops of epoch {epoch + 1}",
                        unit="crops")
    for index in epoch_images(len(images), settings.crops, rng):
        img = images[int(index)]
        side = int(rng.integers(min(size, min(img.shape[:2])), min(img.shape[:2]) + 1))
        y = rng.integers(0, img.shape[0] - side + 1)
        x = rng.integers(0, img.shape[1] - side + 1)
        crop = resize_center_crop(img[y:y + side, x:x + side], size)
        if rng.random() < 0.5:
            crop = np.ascontiguousarray(crop[:, ::-1])
        variants, ps = [crop], [0.0]
        for kind in _pixel_kinds(settings.pixel_variants, rng):
            s = float(rng.uniform(0, 1))
            variants.append(pixel_degrade(crop, kind, s, rng))
            ps.append(pixel_severity(kind, s))
        crops.append(np.stack(variants))
        severities.append(ps)
        if len(crops) == _CROP_CHUNK:  # tokenize as we go: pixels of all crops need not fit
            tokens.append(_tokenize_crops(tokenizer, crops, size, layout))
            progress.add(len(crops))
            crops = []
    if crops:
        tokens.append(_tokenize_crops(tokenizer, crops, size, layout))
        progress.add(len(crops))
    progress.finish()
    return np.concatenate(tokens), np.asarray(severities)


#: Crops tokenized together by :func:`build_training_tokens`: 32 crops of 7 versions are 7
#: batches of :func:`tokenize`'s 32 images, the batches of tokenizing all crops at once.
_CROP_CHUNK = 32


def _tokenize_crops(tokenizer: Adapter, crops: list[np.ndarray], size: int,
                    layout: list[int] | None) -> np.ndarray:
    """``[k, V, size, size, 3]`` crop versions -> int32 tokens ``[k, V, ...]``."""
    stacked = np.stack(crops)
    n, v = stacked.shape[:2]
    tokens = tokenize(tokenizer, stacked.reshape(n * v, size, size, 3), layout=layout)
    # int32 holds any codebook: half the memory of an epoch's pool (ImageNet: 1.3 GB, not 2.6)
    return tokens.reshape(n, v, *tokens.shape[1:]).astype(np.int32)


def pass_batches(n: int, batch: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Crop indices of successive batches, in passes over a pool of ``n`` crops: each pass
    visits every crop once, in a fresh random order, in batches of ``batch`` (a pass's last
    batch holds the remainder, as a data loader that keeps its last batch does).

    Yields:
        int64 index arrays of length ``batch`` or less, without end.
    """
    while True:
        order = rng.permutation(n)
        for start in range(0, n, batch):
            yield order[start:start + batch]


def _training_batch(tokens: np.ndarray, p_pixel: np.ndarray, vocab_size: int,
                    crops: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One batch, one sequence per crop of ``crops``: each crop gets one family (token
    injection, fragment swap or pixel). A swap between two crops pairs a crop with the next
    one of the batch, and both swapped crops are sequences of the batch; the last crop of a
    batch swaps within itself."""
    v = tokens.shape[1]
    families = FAMILIES[:2] + (FAMILIES[2:] if v > 1 else ())
    grids, targets = [], []
    k = 0
    while k < len(crops):
        i, family = crops[k], families[rng.integers(len(families))]
        k += 1
        if family == "pixel":
            j = rng.integers(1, v)
            grids.append(tokens[i, j])
            targets.append(p_pixel[i, j])
            continue
        p = 0.0 if rng.random() < 0.1 else float(rng.uniform(0, P_MAX))
        if family == "inject":
            grids.append(inject_tokens(tokens[i, 0], p, vocab_size, rng))
        else:  # between this crop and the next (both enter the batch) or within one
            partner = rng.random() < 0.5 and k < len(crops)
            other = tokens[crops[k], 0] if partner else None
            k += bool(partner)
            grid, swapped, p = swap_fragment(tokens[i, 0], other, p, rng)
            grids.append(grid)
            if swapped is not None:
                grids.append(swapped)
                targets.append(p)
        targets.append(p)
    return np.stack(grids).astype(np.int64), quality_target(np.asarray(targets))


def train_cmms(tokens: np.ndarray, p_pixel: np.ndarray, cfg: CMMSConfig,
               settings: TrainSettings, device: str | torch.device = "cpu",
               next_pool: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None,
               progress: Progress | None = None) -> tuple[CMMSRegressor, list[float]]:
    """Train the regressor on degraded token sequences (MSE to ``exp(-20 p)``, AdamW).

    The steps are split evenly over ``settings.epochs`` epochs. Epoch 0 trains on the pool
    ``(tokens, p_pixel)``, epoch ``e`` on ``next_pool(e)`` (the same pool for every epoch when
    ``next_pool`` is None). Within an epoch, batches pass over the pool (:func:`pass_batches`),
    one sequence per crop (:func:`_training_batch`): with ``ceil(crops / batch_size)`` steps per
    epoch, as the paper preset has, every crop is used once per epoch.

    Two phases on one optimizer and one stream of batches:

    1. ``settings.bypass_steps`` steps with the Transformer blocks bypassed. The blocks are
       first made identity maps (:func:`identity_blocks`), so this trains the token embedding,
       final LayerNorm and MLP head of the very model that phase 2 continues from, at a small
       fraction of a full step's cost (no attention over the sequence). roundtrip's choice, not
       the paper's: at a CPU budget it buys the many steps that the embedding needs
       (docs/design.md, "CMMS training in two phases").
    2. ``settings.steps`` steps of the full model.

    Args:
        tokens: int ``[crops, 1 + variants, h, w(, Q)]`` from :func:`build_training_tokens`.
        p_pixel: float ``[crops, 1 + variants]`` severities (column 0 clean).
        next_pool: epoch -> its ``(tokens, p_pixel)`` (:func:`build_training_tokens` with that
            epoch), called at the start of epochs 1, 2, ...
        progress: counts the steps of both phases (:func:`fit_cmms` opens it before the
            training tokens are built); default: a tracker of its own.

    Returns:
        ``(model in eval mode, per-step training loss of both phases)``.

    Raises:
        ValueError: bad architecture (see :class:`CMMSRegressor`), or ``epochs`` < 1.
    """
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed + 1)
    model = CMMSRegressor(cfg).to(device)
    if settings.bypass_steps:
        identity_blocks(model)  # so that phase 1 trains the same function phase 2 starts from
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    history = []
    model.train()
    total = settings.bypass_steps + settings.steps
    if settings.epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {settings.epochs}")
    own = progress is None
    progress = progress or Progress(total, "train CMMS", unit="steps")
    for epoch in range(settings.epochs):
        if epoch and next_pool is not None:
            tokens, p_pixel = next_pool(epoch)
        batches = pass_batches(len(tokens), settings.batch_size, rng)
        for step in range(epoch * total // settings.epochs,
                          (epoch + 1) * total // settings.epochs):
            grids, target = _training_batch(tokens, p_pixel, cfg.vocab_size, next(batches), rng)
            pred = model(torch.from_numpy(grids).to(device),
                         bypass_blocks=step < settings.bypass_steps)
            loss = torch.mean((pred - torch.from_numpy(target).float().to(device)) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(float(loss.detach()))
            progress.add()
            if step % 500 == 0 or step == total - 1:
                log.info("CMMS epoch %d/%d, step %d/%d%s: loss %.5f", epoch + 1, settings.epochs,
                         step + 1, total,
                         " (blocks bypassed)" if step < settings.bypass_steps else "", history[-1])
    if own:
        progress.finish()
    return model.eval(), history


def fit_cmms(tokenizer: Adapter, images: Sequence[np.ndarray], size: int, options: dict,
             device: str | torch.device = "cpu", seed: int | None = None,
             layout: list[int] | None = None) -> tuple[CMMSRegressor, list[float]]:
    """Training tokens from ``images`` and a regressor trained on them, from the config's
    ``metrics.tokens.cmms`` options (schema defaults filled in).

    Args:
        tokenizer: the discrete reference tokenizer.
        images: uint8/uint16 ``(H, W, 3)`` training images (a sequence read by index).
        size: tokenizer input side in pixels.
        options: ``d_model, layers, heads`` and the :class:`TrainSettings` fields (``epochs``:
            fresh crops and pixel distortions per epoch).
        seed: overrides ``options["seed"]`` (crops, distortions, batches, initial weights).
        layout: a 1D tokenizer's declared grid (:func:`tokenize`).

    Returns:
        ``(model in eval mode, per-step training loss)`` as :func:`train_cmms`.

    Raises:
        ValueError: the tokenizer has no discrete tokens, or a bad architecture
            (``d_model`` odd or not divisible by ``heads``).
        KeyError: ``d_model``, ``layers`` or ``heads`` missing from ``options``.
    """
    settings = TrainSettings(**{f.name: options[f.name] for f in fields(TrainSettings)
                                if f.name in options})
    if seed is not None:
        settings = replace(settings, seed=seed)
    # one tracker for the whole job: the training tokens are built before the first step
    with Progress(settings.bypass_steps + settings.steps, "train CMMS", unit="steps") as progress:
        tokens, p = build_training_tokens(tokenizer, images, size, settings, layout)
        levels = tokens.shape[-1] if tokens.ndim == 5 else 1
        cfg = CMMSConfig(tokenizer.info().codebook_size, levels, options["d_model"],
                         options["layers"], options["heads"])
        log.info("CMMS training tokens %s per epoch from %d images; %s; %s", tokens.shape,
                 len(images), cfg, settings)

        def next_pool(epoch: int) -> tuple[np.ndarray, np.ndarray]:
            return build_training_tokens(tokenizer, images, size, settings, layout, epoch)
        return train_cmms(tokens, p, cfg, settings, device, next_pool, progress)


def save_cmms(model: CMMSRegressor, path: str | Path, meta: dict) -> None:
    """Checkpoint with the architecture and ``meta`` (reference tokenizer, size, history...),
    the same bytes for the same weights (:func:`roundtrip.core.checkpoint.save_checkpoint`).

    Raises:
        TypeError: ``meta`` is not JSON-serializable (no time or host belongs in it).
    """
    save_checkpoint(path, model.state_dict(), {"config": asdict(model.cfg), "meta": meta})


class CMMS:
    """A trained CMMS regressor loaded from :func:`save_cmms` output.

    Raises:
        FileNotFoundError: no checkpoint at ``path``.
    """

    def __init__(self, path: str | Path, device: str | torch.device = "cpu"):
        state, ckpt = load_checkpoint(path)
        self.model = CMMSRegressor(CMMSConfig(**ckpt["config"]))
        self.model.load_state_dict(state)
        self.model = self.model.eval().to(device)
        self.meta, self.device = ckpt["meta"], torch.device(device)

    @torch.no_grad()
    def __call__(self, grids: np.ndarray, batch_size: int = 64) -> np.ndarray:
        """Scores in [0, 1] (higher = better) of int ``[N, h, w(, Q)]`` token grids -> ``[N]``."""
        out = [self.model(torch.from_numpy(np.asarray(grids[i:i + batch_size], np.int64))
                          .to(self.device)).cpu().numpy()
               for i in range(0, len(grids), batch_size)]
        return np.concatenate(out) if out else np.zeros(0)
