"""Datasets: builders that write ``manifest.csv`` plus PNG files (DESIGN.md contract).

Manifest columns: ``item_id, path, kind, width, height, depth, source, sha256, status, reason``
and optional ``text, lang, label, subject, split, font, font_size_pt``. ``path`` is relative to the
manifest's folder. An item that could not be read stays in the manifest with ``status=error`` and
the reason, so every later stage reports it instead of silently dropping it.
"""
from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .imaging import IMAGE_EXTENSIONS, ImageReadError, read_image, write_png

log = logging.getLogger(__name__)

MANIFEST_COLUMNS = ["item_id", "path", "kind", "width", "height", "depth", "source", "sha256",
                    "status", "reason"]
OPTIONAL_COLUMNS = ["text", "lang", "label", "subject", "split", "font", "font_size_pt"]

#: scikit-image images that ship inside the wheel (no network fetch), by loader name.
SKIMAGE_BUNDLED = {
    "astronaut": "astronaut", "chelsea": "chelsea", "coffee": "coffee", "rocket": "rocket",
    "motorcycle_left": "motorcycle_left", "motorcycle_right": "motorcycle_right",
    "hubble_deep_field": "hubble_deep_field", "camera": "camera", "coins": "coins",
    "moon": "moon", "immunohistochemistry": "ihc", "retina": "retina", "cell": "cell",
    "microaneurysms": "microaneurysms", "brick": "brick", "grass": "grass", "gravel": "gravel",
    "page": "page", "text": "text", "colorwheel": "color", "logo": "logo",
    "shepp_logan_phantom": "phantom",
}


#: Dataset types rendered by roundtrip itself (:mod:`roundtrip.synthesis`).
SYNTHETIC_TYPES = ("abstracts", "posters", "vista_questions")
#: Dataset types generated through an image API (:mod:`roundtrip.api.synthesis`).
GPT_TYPES = ("gpt_highres", "gpt_detail", "gpt_posters")


@dataclass
class Item:
    """One manifest row under construction."""
    item_id: str
    source: str
    image: np.ndarray | None = None
    reason: str = ""
    extra: dict | None = None


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_dataset(items: list[Item], out_dir: str | Path) -> pd.DataFrame:
    """Write images to ``out_dir/images/{item_id}.png`` and ``out_dir/manifest.csv``.

    Args:
        items: items with ``image`` set (ok) or ``reason`` set (error).
        out_dir: dataset folder, created if missing.

    Returns:
        The manifest as a DataFrame.

    Raises:
        ValueError: duplicate item ids.
    """
    out_dir = Path(out_dir)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    check_unique_ids([it.item_id for it in items])
    rows = []
    for it in items:
        row = {"item_id": it.item_id, "kind": "image", "depth": "", "source": it.source}
        if it.image is not None:
            rel = f"images/{it.item_id}.png"
            write_png(out_dir / rel, it.image)
            row.update(path=rel, width=it.image.shape[1], height=it.image.shape[0],
                       sha256=sha256_file(out_dir / rel), status="ok", reason="")
        else:
            row.update(path="", width="", height="", sha256="", status="error", reason=it.reason)
        row.update(it.extra or {})
        rows.append(row)
    return write_manifest(rows, out_dir)


def check_unique_ids(ids: list[str]) -> None:
    """Raises ValueError naming up to 5 item ids that occur more than once."""
    counts = Counter(ids)
    dup = sorted(i for i, n in counts.items() if n > 1)
    if dup:
        raise ValueError(f"duplicate item ids: {dup[:5]}")


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
    """Concatenate shard status files into ``status.csv`` (here, not in :mod:`.reconstruct`,
    so that the merge job does not pay for importing torch)."""
    df = pd.concat([read_item_csv(f) for f in shard_files], ignore_index=True)
    df.to_csv(out_path, index=False)
    return df


def read_ok_images(manifest_paths: list[str | Path]) -> list[np.ndarray]:
    """The images of every ``status == ok`` item of the given manifests, in manifest order.

    Returns:
        ``(H, W, 3)`` uint8 or uint16 arrays (as :func:`roundtrip.imaging.read_image`).

    Raises:
        ImageReadError: an ``ok`` item's file can no longer be read.
    """
    images = []
    for path in manifest_paths:
        m = read_manifest(path)
        images += [read_image(Path(path).parent / p) for p in m.loc[m["status"] == "ok", "path"]]
    return images


def skimage_items(names: list[str]) -> list[Item]:
    """Items from scikit-image's bundled images, at their native sizes.

    Args:
        names: keys of :data:`SKIMAGE_BUNDLED` (e.g. ``astronaut``, ``brick``, ``page``).

    Raises:
        KeyError: a name that is not bundled (the message lists those that are).
    """
    import skimage.data

    data_dir = Path(skimage.data.__file__).parent
    items = []
    for name in names:
        if name not in SKIMAGE_BUNDLED:
            raise KeyError(f"'{name}' is not a bundled scikit-image image; choose from "
                           f"{sorted(SKIMAGE_BUNDLED)}")
        stem = SKIMAGE_BUNDLED[name]
        files = sorted(data_dir.glob(stem + ".*"))
        if not files:
            items.append(Item(name, f"skimage:{name}", reason=f"{stem}.* not found in {data_dir}"))
            continue
        try:
            items.append(Item(name, f"skimage:{name}", image=read_image(files[0])))
        except ImageReadError as exc:
            items.append(Item(name, f"skimage:{name}", reason=str(exc)))
    return items


def safe_item_id(relative_path: str) -> str:
    """Stable id from a path relative to a dataset root: ``a/b c.jpg`` -> ``a__b_c``."""
    stem = relative_path.rsplit(".", 1)[0] if "." in Path(relative_path).name else relative_path
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "_", p) for p in Path(stem).parts]
    return "__".join(p for p in parts if p) or "item"


def list_image_files(root: str | Path) -> list[Path]:
    """Image files below ``root`` (recursive, sorted, hidden files skipped).

    Raises:
        FileNotFoundError: ``root`` is not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset folder {root} does not exist or is not a directory")
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
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
            items.append(Item(item_id, f"folder:{rel}", image=read_image(f)))
        except ImageReadError as exc:
            log.warning("item %s: %s", item_id, exc)
            items.append(Item(item_id, f"folder:{rel}", reason=str(exc)))
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
        st = f.stat()
        h.update(f"{f.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def expected_item_count(spec: dict) -> int | None:
    """Number of items a dataset spec will hold, where the config alone fixes it.

    Exact for lists of bundled images or volumes (``images``, ``bundled``) and for generated
    sets with a ``count``; ``None`` where only the built manifest can tell (folders, BIDS,
    MedMNIST files, question files, whose size also depends on ``limit`` and the style grid).
    The workflow uses it to claim no more threads than a job has items to spread them over.
    """
    for key in ("images", "bundled"):
        if isinstance(spec.get(key), list):
            return len(spec[key])
    if isinstance(spec.get("count"), int):
        return spec["count"]
    return None


def build_dataset(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Build the dataset ``name`` described by its config ``spec`` into ``out_dir``.

    Args:
        name: dataset name (config key).
        spec: ``{"type": "skimage", "images": [...]}``, ``{"type": "folder", "path": ...}``,
            a synthetic type (:data:`SYNTHETIC_TYPES`, see :mod:`roundtrip.synthesis.build`)
            an API-generated type (:data:`GPT_TYPES`, see :mod:`roundtrip.api.synthesis`) or a
            medical type (:mod:`roundtrip.medical.sources`; volume sets write NIfTI volumes);
            optional ``lang`` is written to every row that has no language of its own.

    Raises:
        ValueError: unknown type.
    """
    from .medical import sources as medical

    kind = spec["type"]
    if medical.is_volume_spec(spec):
        return medical.write_volume_dataset(
            medical.volume_sources(name, spec), out_dir, spec.get("modality", kind),
            spec.get("intensity"), spec.get("volume_index", 0), spec.get("nonfinite", "error"),
            spec.get("spacing"))
    if kind == "skimage":
        items = skimage_items(spec["images"])
    elif kind == "skimage_medical":
        items = medical.skimage_medical_items(spec["images"])
    elif kind == "medmnist":
        items = medical.medmnist_items(spec["path"], spec.get("splits", ["train", "test"]),
                                       spec.get("modality", "medmnist"), spec.get("limit"))
    elif kind == "folder":
        items = folder_items(spec["path"])
        if spec.get("labels_csv"):
            items = medical.attach_labels(items, medical.read_labels_csv(spec["labels_csv"]),
                                          spec.get("modality", ""))
    elif kind in GPT_TYPES:
        from .api.synthesis import GptSetSpec, build_gpt_set

        items = build_gpt_set(GptSetSpec.from_config(spec))
    elif kind in SYNTHETIC_TYPES:
        from .synthesis.build import synthesize

        items = synthesize(name, spec, out_dir)
    else:
        raise ValueError(f"datasets.{name}.type: unknown dataset type '{kind}'")
    if spec.get("lang"):
        for it in items:  # an item's own language (multilingual sets) wins
            it.extra = {"lang": spec["lang"], **(it.extra or {})}
    df = write_dataset(items, out_dir)
    n_err = int((df["status"] != "ok").sum())
    log.info("dataset %s: %d items, %d errors", name, len(df), n_err)
    return df
