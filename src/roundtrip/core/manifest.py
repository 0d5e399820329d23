"""The manifest contract: one row per dataset item, its files, and per-item status files.

Builders (:mod:`roundtrip.datasets`) write ``manifest.csv`` plus PNG files (DESIGN.md contract)
through :func:`write_dataset`; every later stage reads them with :func:`read_manifest` and
:func:`read_item_csv`.

Manifest columns: ``item_id, path, kind, width, height, depth, source, sha256, status, reason``
and optional ``text, lang, label, subject, split, font, font_size_pt``. ``path`` is relative to the
manifest's folder. An item that could not be read stays in the manifest with ``status=error`` and
the reason, so every later stage reports it instead of silently dropping it.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.hashing import sha256_file
from roundtrip.core.imaging import read_image, write_png

log = logging.getLogger(__name__)

MANIFEST_COLUMNS = ["item_id", "path", "kind", "width", "height", "depth", "source", "sha256",
                    "status", "reason"]
OPTIONAL_COLUMNS = ["text", "lang", "label", "subject", "split", "font", "font_size_pt"]

#: Reserved model name of the unmodified originals, the manifest's own items: results about
#: them are stored under it (``results/ocr/{ocr}/original/...``), and no model may take it.
ORIGINAL = "original"


@dataclass
class Item:
    """One manifest row under construction."""
    item_id: str
    source: str
    image: np.ndarray | None = None
    reason: str = ""
    extra: dict | None = None


def write_dataset(items: Iterable[Item], out_dir: str | Path) -> pd.DataFrame:
    """Write images to ``out_dir/images/{item_id}.png`` and ``out_dir/manifest.csv``.

    Items are written as they come: a generator is consumed one item at a time, so a set of a
    million images holds one decoded image in memory, not all of them (the manifest rows, a few
    strings each, are kept for ``manifest.csv``).

    Args:
        items: items with ``image`` set (ok) or ``reason`` set (error); a list, or any
            iterable (a builder's generator).
        out_dir: dataset folder, created if missing.

    Returns:
        The manifest as a DataFrame; items whose id collided with an earlier one are renamed
        (:class:`UniqueIds`) and say so in a ``notes`` column.
    """
    out_dir = Path(out_dir)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    # a list's ids are all known up front, so a rename never takes an id a later item brings;
    # a stream's are not, and a later item whose id a rename took is renamed in turn
    ids = UniqueIds(it.item_id for it in items) if isinstance(items, (list, tuple)) else UniqueIds()
    rows = [_write_item(it, ids.claim(it), out_dir) for it in items]
    return write_manifest(rows, out_dir)


def _write_item(it: Item, note: str, out_dir: Path) -> dict:
    """Write one item's PNG (ok items) and return its manifest row; ``note`` records a rename."""
    if note:
        notes = (it.extra or {}).get("notes")
        it.extra = (it.extra or {}) | {"notes": f"{notes}; {note}" if notes else note}
    row = {"item_id": it.item_id, "kind": "image", "depth": "", "source": it.source}
    if it.image is not None:
        rel = f"images/{it.item_id}.png"
        write_png(out_dir / rel, it.image)
        row.update(path=rel, width=it.image.shape[1], height=it.image.shape[0],
                   sha256=sha256_file(out_dir / rel), status="ok", reason="")
    else:
        row.update(path="", width="", height="", sha256="", status="error", reason=it.reason)
    row.update(it.extra or {})
    return row


class UniqueIds:
    """Item ids handed out one item at a time, each unique: an id already taken becomes
    ``{id}__2``, ``{id}__3``... (the first free one), so one file's name never costs another
    file its item.

    Args:
        reserved: ids that later items will bring (all of a list's ids); a rename never takes
            one of them. A stream cannot know its later ids and reserves none.
    """

    def __init__(self, reserved: Iterable[str] = ()):
        self._reserved = set(reserved)
        self._taken: set[str] = set()

    def claim(self, item) -> str:
        """Take ``item.item_id``, renaming ``item`` in place if it is taken.

        Args:
            item: an object with a mutable ``item_id`` (a dataset item, a volume source).

        Returns:
            ``""``, or the note recording the rename.
        """
        if item.item_id not in self._taken:
            self._taken.add(item.item_id)
            return ""
        k, old = 2, item.item_id
        while f"{old}__{k}" in self._taken or f"{old}__{k}" in self._reserved:
            k += 1
        item.item_id = f"{old}__{k}"
        self._taken.add(item.item_id)
        return f"item id {old!r} already taken by another source; renamed {item.item_id!r}"


def unique_ids(items: list) -> list[str]:
    """Rename, in place, every item whose ``item_id`` an earlier item already has, to
    ``{id}__2``, ``{id}__3``... (the first free one, never an id a later item has), so one
    file's name never costs another file its item.

    Args:
        items: objects with a mutable ``item_id`` (dataset items, volume sources).

    Returns:
        Per item, ``""`` or the note recording the rename.
    """
    ids = UniqueIds(it.item_id for it in items)
    return [ids.claim(it) for it in items]


def write_manifest(rows: list[dict], out_dir: str | Path) -> pd.DataFrame:
    """Write ``out_dir/manifest.csv``: :data:`MANIFEST_COLUMNS` first, then any extra columns in
    order of first appearance; returns the frame written."""
    df = pd.DataFrame(rows)
    cols = MANIFEST_COLUMNS + [c for c in df.columns if c not in MANIFEST_COLUMNS]
    df = df.reindex(columns=cols)
    df.to_csv(Path(out_dir) / "manifest.csv", index=False)
    return df


def read_manifest(path: str | Path) -> pd.DataFrame:
    """Read a manifest; text columns stay strings, missing values become ``""``."""
    df = pd.read_csv(path, dtype={"item_id": str, "text": str, "reason": str, "path": str},
                     keep_default_na=False)
    missing = [c for c in ("item_id", "path", "status") if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: manifest lacks columns {missing}")
    return df


def read_item_csv(path: str | Path) -> pd.DataFrame:
    """Read a per-item CSV (status, OCR) keeping ids and text as strings, empty as ``""``."""
    return pd.read_csv(path, dtype={"item_id": str, "reason": str, "text": str, "status": str},
                       keep_default_na=False)


def merge_status(shard_files: list[str | Path], out_path: str | Path) -> pd.DataFrame:
    """Concatenate shard status files into ``status.csv`` (the reconstruction stage merges the
    shards of a (model, dataset) this way; no torch import needed)."""
    df = pd.concat([read_item_csv(f) for f in shard_files], ignore_index=True)
    df.to_csv(out_path, index=False)
    return df


def read_ok_images(manifest_paths: list[str | Path]) -> list[np.ndarray]:
    """The images of every ``status == ok`` item of the given manifests, in manifest order.

    Returns:
        ``(H, W, 3)`` uint8 or uint16 arrays (as :func:`roundtrip.core.imaging.read_image`).

    Raises:
        roundtrip.core.imaging.ImageReadError: an ``ok`` item's file can no longer be read.
    """
    images = []
    for path in manifest_paths:
        m = read_manifest(path)
        images += [read_image(Path(path).parent / p) for p in m.loc[m["status"] == "ok", "path"]]
    return images


def safe_item_id(relative_path: str) -> str:
    """Stable id from a path relative to a dataset root: ``a/b c.jpg`` -> ``a__b_c``."""
    stem = relative_path.rsplit(".", 1)[0] if "." in Path(relative_path).name else relative_path
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "_", p) for p in Path(stem).parts]
    return "__".join(p for p in parts if p) or "item"
