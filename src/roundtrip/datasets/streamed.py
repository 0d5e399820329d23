"""What the streamed large-set types (``webdataset``, ``hf_dataset``) share: one item per sample
or row, built without holding the others, and the per-item errors of a folder.

Their builders return iterators: :func:`roundtrip.core.manifest.write_dataset` writes each
item's PNG as it arrives, so a set of any size holds one decoded image at a time.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from itertools import islice

import numpy as np

from roundtrip.core.imaging import ImageReadError, one_line
from roundtrip.core.manifest import Item

log = logging.getLogger(__name__)


class SampleError(ValueError):
    """A sample or row that cannot become an ok item (no image, a member that does not decode,
    a null value); the message is the item's one-line reason."""


def item_from(item_id: str, source: str, read: Callable[[], tuple[np.ndarray, dict]]) -> Item:
    """An ok item from ``read()``, or an error item with the reason when it raises
    :class:`SampleError`, :class:`~roundtrip.core.imaging.ImageReadError` or ``MemoryError``
    (one bad sample costs its item, never the set).

    Args:
        read: returns the image (``(H, W, 3)`` uint8 or uint16, as
            :func:`~roundtrip.core.imaging.decode_image`) and the item's manifest extras
            (``text``, ``label``; may be empty).
    """
    try:
        image, extra = read()
    except (ImageReadError, SampleError) as exc:
        log.warning("item %s: %s", item_id, exc)
        return Item(item_id, source, reason=one_line(exc))
    except MemoryError:
        log.warning("item %s: out of memory while decoding", item_id)
        return Item(item_id, source,
                    reason=f"{item_id}: out of memory while decoding; lower limits.max_pixels")
    return Item(item_id, source, image=image, extra=extra or None)


def cell_text(value: object) -> str:
    """A caption or label value as a manifest cell: strings as they are, numbers and booleans
    as written by ``str``, ``None`` as ``""``, anything else (a list, a dict) as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def limited(items: Iterator[Item], limit: int | None) -> Iterator[Item]:
    """The first ``limit`` items (all without a limit), still lazy: the items after the limit
    are never read, nor are the shards or files they are in."""
    return islice(items, limit) if limit else items
