"""Image bytes in and out of API requests: PNG encoding for uploads (an image file sent as it is
where it already is an 8-bit RGB PNG), data URLs for chat messages, and decoding an answer at
the size the caller asked for (resized, and said so, when the API chose another size)."""
from __future__ import annotations

import base64
import io
import struct
from pathlib import Path

import numpy as np
from PIL import Image

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_bytes(image: np.ndarray) -> bytes:
    """``(H, W, 3)`` uint8/uint16 (or ``(H, W)``) image -> PNG bytes (16-bit reduced to 8-bit by
    ``// 257``), zlib's default level."""
    if image.dtype == np.uint16:
        image = (image // 257).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def image_data_url(png: bytes) -> str:
    """``data:image/png;base64,...`` for an image part of a chat message."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def is_rgb8_png(data: bytes) -> bool:
    """Whether ``data`` is a PNG of 8-bit RGB pixels (IHDR bit depth 8, colour type 2, PNG
    spec. 11.2.2): the file decodes to exactly the canonical RGB array of
    :func:`roundtrip.core.imaging.read_image`, so it can be sent as it is."""
    if len(data) < 33 or data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return False
    depth, colour = struct.unpack(">BB", data[24:26])
    return depth == 8 and colour == 2


class ImageFile:
    """An image file that a request carries, read when the request is built (off the event loop,
    by the worker that builds it) instead of when its question is.

    Args:
        path: the image file (any format :func:`roundtrip.core.imaging.read_image` reads).

    A request built from it is cheap to build and, for a cached answer, to look up: an 8-bit
    RGB PNG file is sent as it is (the same pixels :func:`roundtrip.core.imaging.read_image`
    gives); any other file is decoded to canonical RGB and encoded with :func:`png_bytes`.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"ImageFile({str(self.path)!r})"

    def png(self) -> bytes:
        """The PNG bytes sent for this image.

        Raises:
            ImageReadError: the file is missing or not a decodable image.
        """
        from roundtrip.core.imaging import ImageReadError, read_image

        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise ImageReadError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        return data if is_rgb8_png(data) else png_bytes(read_image(self.path))

    def array(self) -> np.ndarray:
        """The canonical RGB array (:func:`roundtrip.core.imaging.read_image`).

        Raises:
            ImageReadError: the file is missing or not a decodable image.
        """
        from roundtrip.core.imaging import read_image

        return read_image(self.path)


def decode_at_size(data: bytes, width: int, height: int) -> tuple[np.ndarray, str]:
    """An API's image answer as uint8 RGB ``(height, width, 3)``.

    gpt-image models answer only at a few sizes (1024x1024, 1536x1024, 1024x1536); an answer at
    another size than requested is resized with Lanczos and the returned note says so (empty
    when no resize was needed), for the item's record.

    Raises:
        OSError: the bytes are not an image (PIL's ``UnidentifiedImageError``).
    """
    img = Image.open(io.BytesIO(data)).convert("RGB")
    note = ""
    if img.size != (width, height):
        note = (f"API returned {img.size[0]}x{img.size[1]}; resized to {width}x{height} "
                "(Lanczos)")
        img = img.resize((width, height), Image.LANCZOS)
    return np.asarray(img), note
