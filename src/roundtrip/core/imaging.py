"""Image file I/O with one canonical in-memory form.

Every image entering roundtrip becomes an ``H x W x 3`` RGB array of ``uint8`` or ``uint16``
(the bit depth of the source is kept), whatever the file held:

* EXIF orientation is applied (a phone photo stored sideways is read upright);
* grayscale is replicated to three channels;
* alpha is composited over white (tokenizers and the papers' metrics work on RGB);
* palette, bilevel and CMYK images are converted to RGB;
* 16-bit PNGs are read with pypng, because Pillow silently truncates 16-bit RGB to 8 bits;
* a plain 8-bit RGB PNG (nothing but its header, image data and end chunks, as roundtrip and
  Pillow write them) is decoded by imagecodecs (libpng with zlib-ng) to the same pixels in
  about 0.5x Pillow's time.

Files are written as PNG (lossless) at the same bit depth, so reconstructions are stored exactly.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import png  # pypng
from PIL import Image, ImageOps, UnidentifiedImageError

#: File extensions treated as images when scanning a folder (lower case, with dot).
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif"})

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: zlib level of PNGs written once per model (reconstructions): fast, same pixels.
FAST_PNG = 1
#: Default of config ``limits.max_pixels``: larger images are refused before decoding (a
#: 1.7 MB PNG can declare 30000 x 30000 pixels: 5.4 GB as 16-bit RGB).
DEFAULT_MAX_PIXELS = 100_000_000
_limits = {"max_pixels": DEFAULT_MAX_PIXELS}
# Pillow's own bomb check raises at twice its limit inside Image.open, with a message that does
# not give the size; roundtrip checks every header against limits.max_pixels instead.
Image.MAX_IMAGE_PIXELS = None


class ImageReadError(ValueError):
    """A file could not be decoded as an image; the message says why, in one stable line."""


def set_max_pixels(max_pixels: int) -> None:
    """The pixel limit (width x height) every later :func:`decode_image` applies before
    decoding; the workflow sets it from config ``limits.max_pixels``.

    Raises:
        ValueError: ``max_pixels`` < 1.
    """
    if int(max_pixels) < 1:
        raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
    _limits["max_pixels"] = int(max_pixels)


def one_line(text: object) -> str:
    """A reason fit for a manifest cell and a footnote: one line, no object addresses (which
    change between runs), at most 300 characters."""
    import re

    line = " ".join(str(text).split())
    line = re.sub(r"<([\w.]+) object at 0x[0-9a-fA-F]+>", r"<\1>", line)
    return line if len(line) <= 300 else line[:297] + "..."


def _check_pixels(width: int, height: int, path: Path) -> None:
    limit = _limits["max_pixels"]
    if width * height > limit:
        raise ImageReadError(f"{path.name}: declares {width} x {height} pixels "
                             f"({width * height / 1e6:.0f} MP), above limits.max_pixels "
                             f"({limit / 1e6:.0f} MP); not decoded")


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as canonical RGB.

    Args:
        path: image file (PNG, JPEG, TIFF, BMP, WebP, GIF: first frame).

    Returns:
        ``uint8`` or ``uint16`` array of shape ``(H, W, 3)``; 16-bit only for 16-bit sources.

    Raises:
        ImageReadError: the file is missing, truncated, not an image, or of an unsupported mode.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageReadError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return decode_image(data, path)


def decode_image(data: bytes, path: str | Path = "image") -> np.ndarray:
    """Decode an image file's bytes as canonical RGB, as :func:`read_image` does.

    Args:
        data: the bytes of a PNG, JPEG, TIFF, BMP, WebP or GIF file.
        path: the name error messages give (a path, or e.g. ``row 3 image``).

    Returns:
        ``uint8`` or ``uint16`` array of shape ``(H, W, 3)``.

    Raises:
        ImageReadError: not a decodable image, or larger than ``limits.max_pixels``
            (:func:`set_max_pixels`; checked from the header, before decoding).
    """
    path = Path(path)
    if data[:8] == _PNG_SIGNATURE and _png_bit_depth(data) == 16:
        _check_pixels(*_png_size(data), path)
        return _read_png16(data, path)
    if _plain_rgb8_png(data):
        _check_pixels(*_png_size(data), path)
        image = _decode_plain_png(data)
        if image is not None:
            return image
    try:
        with Image.open(io.BytesIO(data)) as im:
            _check_pixels(*im.size, path)  # the header only: nothing is decoded yet
            im.load()
            im = ImageOps.exif_transpose(im)
            return _pil_to_rgb(im, path)
    except ImageReadError:  # the pixel limit: already the item's reason
        raise
    except UnidentifiedImageError as exc:  # its message holds a BytesIO's address
        raise ImageReadError(f"cannot decode {path.name}: not a recognised image format "
                             "(PNG, JPEG, TIFF, BMP, WebP, GIF)") from exc
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageReadError(f"cannot decode {path.name}: {one_line(exc)}") from exc


def _plain_rgb8_png(data: bytes) -> bool:
    """Whether ``data`` is a PNG of 8-bit RGB (colour type 2), not interlaced, whose chunks
    are ``IHDR``, one or more ``IDAT`` and ``IEND`` at the end of the data: the files whose
    pixels the PNG specification fixes with nothing left for a decoder to apply (any other
    chunk, such as transparency, gamma, a colour profile, EXIF orientation, animation or text,
    sends the file to Pillow, whose reading is the canonical one). Reads the chunk headers only
    (about 20 for a 1024 x 1024 file in 64 KB data chunks)."""
    # IHDR: length 13, then width, height, bit depth (byte 24), colour type, compression,
    # filter and interlace method (bytes 25 to 28)
    if len(data) < 45 or data[:16] != _PNG_SIGNATURE + b"\x00\x00\x00\rIHDR":
        return False
    if data[24:29] != b"\x08\x02\x00\x00\x00":
        return False
    pos, end, chunks = 33, len(data), 0
    while pos + 12 <= end:
        kind = data[pos + 4:pos + 8]
        pos += 12 + int.from_bytes(data[pos:pos + 4], "big")
        if kind != b"IDAT":
            return kind == b"IEND" and chunks > 0 and pos == end
        chunks += 1
    return False


def _decode_plain_png(data: bytes) -> np.ndarray | None:
    """imagecodecs' decoding (libpng with zlib-ng) of a :func:`_plain_rgb8_png` file as
    ``(H, W, 3)`` ``uint8`` RGB: the pixels Pillow decodes (tested on photographs, scans, noise
    and odd sizes at every zlib level), in about 0.6x OpenCV's time and 0.5x Pillow's for a
    1024 x 1024 photograph (zlib-ng's inflate; ``benchmarks/image_quality_steps.py``), with
    Python's lock released, so threads decode side by side. None where it cannot decode the
    file (damaged data: Pillow then decodes it or says why). Integer-exact: no kernel level or
    thread count changes a pixel."""
    import imagecodecs

    try:
        image = imagecodecs.png_decode(data)
    except (imagecodecs.PngError, ValueError, RuntimeError):
        return None
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        return None
    return image


def _png_bit_depth(data: bytes) -> int:
    # IHDR is always the first chunk: signature(8) length(4) type(4) width(4) height(4) depth(1)
    return data[24] if len(data) > 24 else 0


def _png_size(data: bytes) -> tuple[int, int]:
    # IHDR: width at bytes 16-19, height at 20-23, big-endian
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _read_png16(data: bytes, path: Path) -> np.ndarray:
    import zlib

    try:
        width, height, rows, info = png.Reader(bytes=data).asDirect()
        arr = np.vstack([np.asarray(r, dtype=np.uint16) for r in rows])
    except (png.Error, ValueError, zlib.error, EOFError) as exc:
        raise ImageReadError(f"cannot decode 16-bit PNG {path.name}: {one_line(exc)}") from exc
    planes = info["planes"]
    arr = arr.reshape(height, width, planes)
    has_alpha = info.get("alpha", False)
    color = arr[..., : planes - 1] if has_alpha else arr
    if color.shape[-1] == 1:
        color = np.repeat(color, 3, axis=-1)
    if has_alpha:
        color = _composite_white(color, arr[..., -1:], 65535)
    return np.ascontiguousarray(color, dtype=np.uint16)


def _pil_to_rgb(im: Image.Image, path: Path) -> np.ndarray:
    mode = im.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(im)
        if arr.min() < 0 or arr.max() > 65535:
            raise ImageReadError(f"{path.name}: integer image outside 16-bit range")
        return np.repeat(arr.astype(np.uint16)[..., None], 3, axis=-1)
    if mode == "F":
        raise ImageReadError(f"{path.name}: floating-point images are not supported; save as 8/16-bit")
    if mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in im.info):
        rgba = np.asarray(im.convert("RGBA"))
        return _composite_white(rgba[..., :3], rgba[..., 3:], 255).astype(np.uint8)
    return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()


def _composite_white(color: np.ndarray, alpha: np.ndarray, vmax: int) -> np.ndarray:
    a = alpha.astype(np.float64) / vmax
    out = color.astype(np.float64) * a + vmax * (1.0 - a)
    return np.rint(out)


def write_png(path: str | Path, image: np.ndarray, compress_level: int = 6) -> None:
    """Write an ``(H, W, 3)`` ``uint8`` or ``uint16`` array losslessly as PNG.

    Args:
        compress_level: zlib level 0-9; any level stores the same pixels. 6 (zlib's default)
            for dataset images (Pillow's encoder, its adaptive row filters: the smallest
            files), :data:`FAST_PNG` for files written once per model and read back by its
            scorers (a 1024² reconstruction: 0.28 s at 6, about 4x less at 1, files
            about 1.5x larger). 8-bit images at that level are encoded by imagecodecs
            (libpng with zlib-ng) with every row's filter "Up": on 60 of the default run's
            reconstructions that writes in 0.52x Pillow's time at level 1 and decodes in 0.87x
            (Paeth rows, which Pillow mostly picks, are the slowest to undo), for files 2 %
            larger.

    Raises:
        ValueError: wrong shape or dtype.
    """
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected (H, W, 3) image, got shape {image.shape}")
    path = Path(path)
    if image.dtype == np.uint8 and compress_level == FAST_PNG and _write_up_filtered(path, image):
        return
    if image.dtype == np.uint8:
        Image.fromarray(image, "RGB").save(path, format="PNG", compress_level=compress_level)
    elif image.dtype == np.uint16:
        h, w, _ = image.shape
        writer = png.Writer(width=w, height=h, greyscale=False, bitdepth=16,
                            compression=compress_level)
        with open(path, "wb") as fh:
            writer.write(fh, image.reshape(h, w * 3))
    else:
        raise ValueError(f"expected uint8 or uint16, got {image.dtype}")


def _write_up_filtered(path: Path, image: np.ndarray) -> bool:
    """Write ``image`` (``(H, W, 3)`` ``uint8``) as a :data:`FAST_PNG` PNG by imagecodecs with
    every row filtered "Up"; False, with nothing written, where imagecodecs cannot (its output
    buffer is sized from an estimate that some shapes of incompressible data exceed), so that
    the caller writes it with Pillow: the same pixels either way."""
    import imagecodecs

    try:
        data = imagecodecs.png_encode(np.ascontiguousarray(image), level=FAST_PNG,
                                      filter=imagecodecs.PNG.FILTER.UP)
    except imagecodecs.PngError:
        return False
    path.write_bytes(data)
    return True


def same_pixels(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two images are the same array: shape, dtype and every value equal (a lossless
    reconstruction, or a protocol's copy that changed nothing)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def to_unit(image: np.ndarray) -> np.ndarray:
    """Integer image -> ``float32`` in ``[0, 1]`` (divides by 255 or 65535 by dtype)."""
    return image.astype(np.float32) / np.float32(np.iinfo(image.dtype).max)


def to_uint8(image: np.ndarray) -> np.ndarray:
    """8- or 16-bit integer image -> ``uint8`` of the same shape (16-bit rounded to nearest,
    i.e. ``round(v / 257)``); a ``uint8`` input is returned as is."""
    return image if image.dtype == np.uint8 else from_unit(to_unit(image), np.uint8)


def from_unit(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``float`` in ``[0, 1]`` (clipped) -> integer image of ``dtype``, rounding to nearest."""
    vmax = np.iinfo(dtype).max
    return np.rint(np.clip(x, 0.0, 1.0) * vmax).astype(dtype)
