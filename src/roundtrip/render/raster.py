"""PDF pages to cropped grayscale images (VISTA-Bench, Appendix B, "Post-processing").

Pages are rasterized with pdftoppm at ``supersample`` times the target resolution (fixed pixel
width per page, so width anchoring survives any rounding of the PDF's page size) and reduced by
area averaging over ``supersample x supersample`` blocks, which is an anti-aliasing box filter.
The content is then located by a scan of the grayscale rows and cropped with a protective margin.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
from PIL import Image


class RasterError(RuntimeError):
    """pdftoppm is missing or failed."""


def rasterize(pdf: Path, first: int, last: int, width_px: int, supersample: int,
              out_prefix: Path, timeout: float) -> list[np.ndarray]:
    """Pages ``first..last`` (1-based, inclusive) as ``(H, width_px)`` uint8 grayscale arrays.

    Raises:
        RasterError: pdftoppm missing, failing or timing out.
    """
    cmd = ["pdftoppm", "-gray", "-aa", "yes", "-aaVector", "yes", "-f", str(first),
           "-l", str(last), "-scale-to-x", str(width_px * supersample), "-scale-to-y", "-1",
           str(pdf), str(out_prefix)]
    try:
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise RasterError("pdftoppm is not installed (apt-get install poppler-utils)") from exc
    except subprocess.CalledProcessError as exc:
        raise RasterError(f"pdftoppm failed: {exc.stderr.decode(errors='replace')[-500:]}")
    except subprocess.TimeoutExpired as exc:
        raise RasterError(f"pdftoppm timed out after {timeout:.0f} s") from exc
    # pdftoppm pads page numbers to the width of the document's last page number.
    pages = {int(p.stem.rsplit("-", 1)[1]): p
             for p in out_prefix.parent.glob(out_prefix.name + "-*.pgm")}
    out = []
    for n in range(first, last + 1):
        if n not in pages:
            raise RasterError(f"pdftoppm wrote no image for page {n}")
        with Image.open(pages[n]) as im:
            out.append(downsample(np.asarray(im.convert("L")), supersample))
        pages[n].unlink()
    return out


def downsample(page: np.ndarray, factor: int) -> np.ndarray:
    """Area (box-filter) reduction of an ``(H, W)`` uint8 image by an integer ``factor``.

    Rows beyond a multiple of ``factor`` are dropped (they are page margin, never content).
    """
    if factor == 1:
        return page
    h, w = (page.shape[0] // factor) * factor, (page.shape[1] // factor) * factor
    blocks = page[:h, :w].reshape(h // factor, factor, w // factor, factor)
    return np.rint(blocks.mean(axis=(1, 3), dtype=np.float64)).astype(np.uint8)


def stack_pages(pages: list[np.ndarray], margin_px: int) -> np.ndarray:
    """One image of a multi-page item: interior top/bottom page margins removed, then stacked."""
    if len(pages) == 1:
        return pages[0]
    parts = []
    for i, p in enumerate(pages):
        top = margin_px if i > 0 else 0
        bottom = p.shape[0] - (margin_px if i < len(pages) - 1 else 0)
        parts.append(p[top:bottom])
    return np.concatenate(parts, axis=0)


def content_box(gray: np.ndarray, ink: int) -> tuple[int, int, int, int] | None:
    """``(x0, y0, x1, y1)`` (exclusive ends) of pixels darker than ``ink``; None if blank."""
    mask = gray < ink
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def crop_vertical(gray: np.ndarray, box: tuple[int, int, int, int], margin: int) -> tuple[
        np.ndarray, tuple[int, int, int, int]]:
    """Crop rows to the content plus ``margin`` px (clamped); width is kept (width anchoring).

    Returns:
        The cropped image and the content box in its coordinates.
    """
    x0, y0, x1, y1 = box
    top, bottom = max(0, y0 - margin), min(gray.shape[0], y1 + margin)
    return gray[top:bottom], (x0, y0 - top, x1, y1 - top)
