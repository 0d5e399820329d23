"""Dataset type ``folder``: a user's folder of images (PNG, JPEG, TIFF, BMP, WebP, GIF; 8/16-bit).

Every file becomes one item whose id is its path relative to the folder
(:func:`roundtrip.core.manifest.safe_item_id`); an unreadable file stays in the manifest as an
error item with the reason. With ``labels_csv`` the set joins the medical branch
(:func:`roundtrip.datasets.medical.attach_labels`).
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from roundtrip.core.hashing import files_fingerprint, path_fingerprint
from roundtrip.core.imaging import IMAGE_EXTENSIONS, ImageReadError, one_line, read_image
from roundtrip.core.manifest import Item, safe_item_id

log = logging.getLogger(__name__)


def list_image_files(root: str | Path) -> list[Path]:
    """Image files below ``root`` (recursive, sorted, hidden files skipped).

    Raises:
        FileNotFoundError: ``root`` is not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset folder {root} does not exist or is not a directory")
    # a broken symbolic link is listed too: it becomes an error item, not a silent omission
    return sorted(p for p in root.rglob("*")
                  if (p.is_file() or p.is_symlink()) and p.suffix.lower() in IMAGE_EXTENSIONS
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def folder_items(root: str | Path) -> list[Item]:
    """Items from a user's folder of images; an unreadable file becomes an error item."""
    root = Path(root)
    files = list_image_files(root)
    if not files:
        raise FileNotFoundError(f"no image files ({', '.join(sorted(IMAGE_EXTENSIONS))}) in {root}")
    items, seen = [], set()
    for f in files:
        rel = f.relative_to(root).as_posix()
        item_id = safe_item_id(rel)
        if item_id in seen:  # a.png and a.jpg: keep both, disambiguated by extension
            item_id = f"{item_id}_{f.suffix.lstrip('.').lower()}"
        seen.add(item_id)
        try:
            if f.is_symlink() and not f.exists():
                raise ImageReadError(f"{rel}: broken symbolic link to {os.readlink(f)}")
            items.append(Item(item_id, f"folder:{rel}", image=read_image(f)))
        except ImageReadError as exc:
            log.warning("item %s: %s", item_id, exc)
            items.append(Item(item_id, f"folder:{rel}", reason=one_line(exc)))
        except MemoryError:
            log.warning("item %s: out of memory decoding %s", item_id, rel)
            items.append(Item(item_id, f"folder:{rel}",
                              reason=f"{rel}: out of memory while decoding; lower limits.max_pixels"))
    return items


def folder_fingerprint(root: str | Path) -> str:
    """Digest of the names, sizes and mtimes of a folder's images (cheap: stat only).

    Used as a Snakemake param so that adding or changing a file rebuilds the dataset.
    """
    try:
        files = list_image_files(root)
    except FileNotFoundError:
        return "missing"
    h = hashlib.sha256()
    for f in files:
        st = f.stat() if f.exists() else f.lstat()  # a broken link: stat the link itself
        h.update(f"{f.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def fingerprint(spec: dict) -> str:
    """Fingerprint of a ``folder`` set (dataset registry): its images and its labels file."""
    return folder_fingerprint(spec["path"]) + path_fingerprint(spec.get("labels_csv"))


def build(name: str, spec: dict, out_dir: str | Path) -> list[Item]:
    """Builder of the dataset registry: the folder's images, with labels when configured."""
    items = folder_items(spec["path"])
    if spec.get("labels_csv"):
        from roundtrip.datasets import medical

        items = medical.attach_labels(items, medical.read_labels_csv(spec["labels_csv"]),
                                      spec.get("modality", ""))
    return items
