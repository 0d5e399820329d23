"""The chain folder layout of the authors' released code (UCF-UM), read and written.

::

    <root>/text-first/gen-0.csv        filename, caption   (T0: the input captions)
    <root>/text-first/gen-1/<id>.png                       (I1 = T2I(T0))
    <root>/text-first/gen-2.csv        filename, caption   (T2 = I2T(I1))
    ...
    <root>/image-first/gen-0/<id>.png                      (I0: the input images)
    <root>/image-first/gen-1.csv       filename, caption   (T1 = I2T(I0))
    ...

Text-first chains hold text at even generations and images at odd ones; image-first chains
the reverse. ``filename`` is the item id (the image of an item is ``<id>.png``, or ``.jpg`` in
chains made elsewhere). roundtrip adds one file per generation it made,
``<chain>/gen-k.status.csv`` (``filename, status, reason, seconds``): its presence marks the
generation complete, so a rerun skips it (chains made elsewhere have none and are only read).
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import pandas as pd

TEXT_FIRST, IMAGE_FIRST = "text-first", "image-first"
#: Config names of the chains -> folder names.
CHAINS = {"text_first": TEXT_FIRST, "image_first": IMAGE_FIRST}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
STATUS_COLUMNS = ["filename", "status", "reason", "seconds"]


def modality_at(chain: str, generation: int) -> str:
    """``text`` or ``image``: what generation ``generation`` (>= 0) of ``chain`` holds.

    Raises:
        ValueError: unknown chain or a negative generation.
    """
    if chain not in (TEXT_FIRST, IMAGE_FIRST):
        raise ValueError(f"unknown chain {chain!r}; expected {TEXT_FIRST} or {IMAGE_FIRST}")
    if generation < 0:
        raise ValueError(f"generation must be >= 0, got {generation}")
    even = generation % 2 == 0
    return ("text" if even else "image") if chain == TEXT_FIRST else ("image" if even else "text")


def text_file(root: Path, chain: str, generation: int) -> Path:
    return Path(root) / chain / f"gen-{generation}.csv"


def image_dir(root: Path, chain: str, generation: int) -> Path:
    return Path(root) / chain / f"gen-{generation}"


def status_file(root: Path, chain: str, generation: int) -> Path:
    return Path(root) / chain / f"gen-{generation}.status.csv"


def write_texts(root: Path, chain: str, generation: int, texts: dict[str, str]) -> None:
    """Write ``gen-k.csv`` (``filename, caption``), atomically."""
    path = text_file(root, chain, generation)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["filename", "caption"])
        for item_id, text in texts.items():
            w.writerow([item_id, text])
    os.replace(tmp, path)


def read_texts(root: Path, chain: str, generation: int) -> dict[str, str]:
    """``filename -> caption`` of a text generation (extensions dropped from filenames, as
    chains made elsewhere may name ``image1.png`` in the CSV).

    Raises:
        FileNotFoundError: the generation's CSV is missing.
        ValueError: the CSV lacks a ``filename`` or ``caption`` column.
    """
    path = text_file(root, chain, generation)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"filename", "caption"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}; expected filename, caption")
    return {item_id(f): c for f, c in zip(frame["filename"], frame["caption"])}


def item_id(filename: str) -> str:
    """The item id of a released-layout file name (extension dropped)."""
    for suffix in IMAGE_SUFFIXES:
        if filename.lower().endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def find_image(root: Path, chain: str, generation: int, item: str) -> Path | None:
    """The image of ``item`` at an image generation (``.png``, else ``.jpg``/``.jpeg``), or None."""
    folder = image_dir(root, chain, generation)
    for suffix in IMAGE_SUFFIXES:
        path = folder / f"{item}{suffix}"
        if path.is_file():
            return path
    return None


def write_status(root: Path, chain: str, generation: int, rows: list[dict]) -> None:
    """Write ``gen-k.status.csv``; written last, it marks the generation complete."""
    path = status_file(root, chain, generation)
    tmp = path.with_suffix(".tmp")
    pd.DataFrame(rows, columns=STATUS_COLUMNS).to_csv(tmp, index=False)
    os.replace(tmp, path)


def read_status(root: Path, chain: str, generation: int) -> pd.DataFrame | None:
    """The status of a generation roundtrip made, or None when it is not complete."""
    path = status_file(root, chain, generation)
    if not path.is_file():
        return None
    return pd.read_csv(path, dtype={"filename": str, "reason": str},
                       keep_default_na=False)


def read_outputs(root: Path, chain: str, generation: int, ids: list[str]) -> dict[str, object]:
    """The outputs of a generation that exist and are ok: ``id -> text`` or ``id -> (H, W, 3)
    uint8 image``. Without a status file (chains made elsewhere) every existing output counts.

    Raises:
        ImageReadError: an image file cannot be decoded.
    """
    from roundtrip.core.imaging import read_image, to_uint8

    status = read_status(root, chain, generation)
    ok = set(ids) if status is None else set(status.loc[status["status"] == "ok", "filename"])
    if modality_at(chain, generation) == "text":
        path = text_file(root, chain, generation)
        texts = read_texts(root, chain, generation) if path.is_file() else {}
        return {i: texts[i] for i in ids if i in ok and i in texts}
    out = {}
    for i in ids:
        path = find_image(root, chain, generation, i)
        if i in ok and path is not None:
            out[i] = to_uint8(read_image(path))
    return out


def generations_present(root: Path, chain: str) -> int:
    """The last generation ``G`` such that generations 0..G all exist in the folder (files or
    folders, roundtrip's or another tool's); -1 when generation 0 is missing."""
    g = -1
    while True:
        nxt = g + 1
        exists = (text_file(root, chain, nxt).is_file() if modality_at(chain, nxt) == "text"
                  else image_dir(root, chain, nxt).is_dir())
        if not exists:
            return g
        g = nxt
