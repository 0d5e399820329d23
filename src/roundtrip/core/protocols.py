"""Reconstruction protocols (VTBench Task 1 and Appendix E; TokBench's pad/unpad).

A dataset's ``protocol`` decides what a model sees and what its reconstruction is compared with:

| protocol | model input | reference for metrics |
|---|---|---|
| ``native`` | the image at its own size, padded (symmetric) to a multiple of the model's downsample factor; the output is cropped back. Fixed-size models: ``unsupported`` unless the size is native. | the original |
| ``native_resize`` | (optional, labelled) the image resized to the model's native size, reconstructed, resized back | the original |
| ``model_size`` | center crop to a square, resized to the model's native size (``size`` for any-size models) | the resized crop |
| ``fixed_1024`` | 1024 x 1024 (other sizes: center crop and resize, recorded); fixed-size models without 1024 are ``unsupported`` | the 1024 x 1024 input |
| ``fixed`` | (MediBench App. A) the image resized to the dataset's ``size`` x ``size`` whatever the model's native size; a non-square image is center-cropped to a square first (MedMNIST images are square: no crop); fixed-size models without that size are ``unsupported`` | the resized input |

Resizing is bicubic with antialiasing (``torch.nn.functional.interpolate``) on ``[0, 1]`` floats.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from roundtrip.core.imaging import from_unit, same_pixels, to_unit

PROTOCOLS = ("native", "native_resize", "model_size", "fixed_1024", "fixed")
DEFAULT_ANY_SIZE = 256


@dataclass
class Prepared:
    """Input of one item under a protocol.

    Attributes:
        x: float32 ``(H', W', 3)`` in ``[0, 1]``, the model input.
        restore: maps the ``(H', W', 3)`` output to the geometry of the reference.
        reference: integer image to score against, or ``None`` for the dataset original
            (also when the protocol leaves the image as it is, e.g. ``model_size`` on an image
            already at the model's size: its reference would be a copy).
    """
    x: np.ndarray
    restore: Callable[[np.ndarray], np.ndarray]
    reference: np.ndarray | None = None


def resize(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bicubic, antialiased resize of a float ``(H, W, 3)`` array in ``[0, 1]``."""
    if tuple(x.shape[:2]) == tuple(size):
        return x
    t = torch.from_numpy(np.ascontiguousarray(x)).permute(2, 0, 1)[None]
    t = F.interpolate(t, size=size, mode="bicubic", antialias=True, align_corners=False)
    return t[0].permute(1, 2, 0).clamp(0, 1).numpy()


def center_square(x: np.ndarray) -> np.ndarray:
    """Largest centered square crop."""
    h, w = x.shape[:2]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return x[top:top + s, left:left + s]


def pad_to_multiple(x: np.ndarray, m: int) -> tuple[np.ndarray, Callable]:
    """Symmetric padding at the bottom/right to multiples of ``m``; returns the un-padder."""
    h, w = x.shape[:2]
    ph, pw = (-h) % m, (-w) % m
    if ph == 0 and pw == 0:
        return x, lambda y: y
    mode = "symmetric" if ph <= h and pw <= w else "edge"
    return np.pad(x, ((0, ph), (0, pw), (0, 0)), mode=mode), lambda y: y[:h, :w]


def _native_size(info, size: int | None) -> tuple[int, int]:
    if info.native_sizes:
        return tuple(info.native_sizes[0])
    return (size or DEFAULT_ANY_SIZE,) * 2


def prepare(image: np.ndarray, protocol: str, info, size: int | None = None) -> Prepared | str:
    """Apply ``protocol`` to an integer ``(H, W, 3)`` image for a model described by ``info``.

    Args:
        info: the model's :class:`~roundtrip.models.base.ModelInfo`.
        size: target side for ``model_size``/``native_resize`` when the model accepts any size.

    Returns:
        :class:`Prepared`, or a string: the reason the item is unsupported.

    Raises:
        ValueError: unknown protocol.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {PROTOCOLS}")
    x = to_unit(image)
    h, w = x.shape[:2]
    natives = [tuple(s) for s in info.native_sizes]
    if protocol == "native_resize":
        target = _native_size(info, size)
        return Prepared(resize(x, target), lambda y: resize(y, (h, w)))
    reference = None
    if protocol == "model_size" or protocol == "fixed" or (
            protocol == "fixed_1024" and (h, w) != (1024, 1024)):
        target = {"model_size": _native_size(info, size), "fixed_1024": (1024, 1024),
                  "fixed": (size or DEFAULT_ANY_SIZE,) * 2}[protocol]
        # The model sees exactly the stored (rounded) reference, so identity scores PSNR = inf.
        reference = from_unit(resize(center_square(x), target), image.dtype)
        if same_pixels(reference, image):
            reference = None  # already at the target size: the original, with no copy on disk
        else:
            x = to_unit(reference)
    hh, ww = x.shape[:2]
    if info.fixed_size and (hh, ww) not in natives:
        sizes = ", ".join(f"{a}x{b}" for a, b in natives)
        return f"fixed-size model (accepts {sizes}); input is {hh}x{ww} under protocol {protocol}"
    padded, unpad = pad_to_multiple(x, max(1, int(info.downsample)))
    return Prepared(padded, unpad, reference)
