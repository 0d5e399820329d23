"""Image bytes in and out of API requests: PNG encoding for uploads, and decoding an answer at
the size the caller asked for (resized, and said so, when the API chose another size)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image


def png_bytes(image: np.ndarray) -> bytes:
    """``(H, W, 3)`` uint8/uint16 (or ``(H, W)``) image -> PNG bytes (16-bit reduced to 8-bit)."""
    if image.dtype == np.uint16:
        image = (image // 257).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


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
