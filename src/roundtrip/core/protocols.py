"""Reconstruction protocols (VTBench Task 1 and Appendix E; TokBench's pad/unpad).

A dataset's ``protocol`` decides what a model sees and what its reconstruction is compared with:

| protocol | model input | reference for metrics |
|---|---|---|
| ``native`` | the image at its own size, padded (symmetric) to a multiple of the model's downsample factor; the output is cropped back. Fixed-size models: ``unsupported`` unless the size is native. | the original |
| ``native_resize`` | (optional, labelled) the image resized to the model's native size, reconstructed, resized back | the original |
| ``model_size`` | the shorter side resized to the model's native size (``size`` for any-size models), then center-cropped to a square | the resized crop |
| ``fixed_1024`` | 1024 x 1024 (other sizes: shorter side resized to 1024, then center-cropped, recorded); fixed-size models without 1024 are ``unsupported`` | the 1024 x 1024 input |
| ``fixed`` | (MediBench App. A) the image resized to the dataset's ``size`` x ``size`` whatever the model's native size; a non-square image is center-cropped to a square first (MedMNIST images are square: no crop); fixed-size models without that size are ``unsupported`` | the resized input |

``model_size`` and ``fixed_1024`` resize first and crop second, with Pillow's Lanczos filter on the
8-bit image (:func:`resize_shorter_then_crop`): the order and filter of the authors' released
loader of VTBench (github.com/xingjianleng/VTBench @ 01368b3, ``src/data_processing.py``,
``pil_to_tensor`` with ``lock_ratio`` and ``center_crop``), which produced its published inputs.
``fixed`` and ``native_resize`` resize bicubic with antialiasing
(``torch.nn.functional.interpolate``) on ``[0, 1]`` floats, ``fixed`` after a center crop.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from PIL import Image

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


def resize_shorter_then_crop(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize so the image covers ``size`` (scale ``max(W' / W, H' / H)``, new sides rounded
    half to even), Lanczos, then crop ``size`` at the center (offsets rounded down).

    The order, rounding and filter of ``pil_to_tensor(img, target_image_size, lock_ratio=True,
    center_crop=True)`` in the authors' released VTBench code (github.com/xingjianleng/VTBench @
    01368b3, ``src/data_processing.py``): a ``uint8`` image is resized by Pillow in RGB, as
    there, so the result is theirs byte for byte (tested); a ``uint16`` image, which Pillow
    cannot resize in RGB, is resized per channel in Pillow's 32-bit float mode and rounded.

    Args:
        image: ``(H, W, 3)`` ``uint8`` or ``uint16``.
        size: ``(H', W')`` in pixels.

    Returns:
        ``(H', W', 3)`` of the input's dtype; the input itself when it already is ``size``.
    """
    h, w = image.shape[:2]
    th, tw = size
    if (h, w) == (th, tw):
        return image
    scale = max(tw / w, th / h)
    new = (round(w * scale), round(h * scale))  # Pillow's (width, height)
    if image.dtype == np.uint8:
        resized = np.asarray(Image.fromarray(image).resize(new, Image.LANCZOS))
    else:
        planes = [np.asarray(Image.fromarray(image[..., c].astype(np.float32), mode="F")
                             .resize(new, Image.LANCZOS)) for c in range(image.shape[2])]
        vmax = np.iinfo(image.dtype).max
        resized = np.clip(np.rint(np.stack(planes, axis=-1)), 0, vmax).astype(image.dtype)
    top, left = (resized.shape[0] - th) // 2, (resized.shape[1] - tw) // 2
    return np.ascontiguousarray(resized[top:top + th, left:left + tw])


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
        if protocol == "fixed":
            reference = from_unit(resize(center_square(x), target), image.dtype)
        else:
            reference = resize_shorter_then_crop(image, target)
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
