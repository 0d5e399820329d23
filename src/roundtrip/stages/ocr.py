"""OCR of a dataset's originals or of a model's reconstructions: one file per (engine, model,
dataset), ``item_id, text, status, reason``, a row for every manifest item.

The originals are read once per (engine, dataset) under the model name ``original`` and every
model reuses that reading (VTBench scores a reconstruction's OCR against the original's).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.core.progress import Progress
from roundtrip.readers import ocr_items


def ocr_dataset(engine, manifest_path: str | Path, lang: str, status_path: str | Path | None = None,
                threads: int = 1) -> pd.DataFrame:
    """Read every original (``status_path`` None) or every ok reconstruction of a dataset.

    Args:
        engine: an OCR reader (:mod:`roundtrip.readers`).
        manifest_path: ``results/datasets/{dataset}/manifest.csv``.
        lang: the dataset's language (``datasets.<name>.lang``); an item's own ``lang`` column
            wins (the multilingual sets).
        status_path: ``results/recon/{model}/{dataset}/status.csv``; the images beside it are
            read.
        threads: parallel reads (Tesseract processes, or concurrent API requests).

    Returns:
        Rows ``item_id, text, status, reason`` in manifest order of the items read, then the
        items without an image (``status=error``, ``no image to read``).
    """
    manifest = read_manifest(manifest_path)
    item_lang = {r.item_id: (getattr(r, "lang", "") or lang) for r in manifest.itertuples()}
    if status_path is not None:
        status = read_item_csv(status_path)
        ok = set(status.loc[status["status"] == "ok", "item_id"])
        recon = Path(status_path).parent
        paths = {i: recon / f"{i}.png" for i in manifest["item_id"] if i in ok}
    else:
        root = Path(manifest_path).parent
        paths = {r.item_id: root / r.path for r in manifest.itertuples() if r.status == "ok"}
    whose = "originals" if status_path is None else Path(status_path).parent.parent.name
    progress = Progress(len(paths), f"OCR ({getattr(engine, 'name', '') or type(engine).__name__}) "
                        f"of {Path(manifest_path).parent.name} ({whose})")
    result = ocr_items(engine, [(i, p, item_lang[i]) for i, p in paths.items()], threads=threads,
                       progress=progress)
    progress.finish()
    skipped = pd.DataFrame({"item_id": [i for i in manifest["item_id"] if i not in paths],
                            "text": "", "status": "error", "reason": "no image to read"})
    return pd.concat([result, skipped], ignore_index=True)


def languages(manifest_path: str | Path, lang: str) -> list[str]:
    """The languages a dataset's items are read in (for the engine's installation check)."""
    manifest = read_manifest(manifest_path)
    return sorted({(getattr(r, "lang", "") or lang) for r in manifest.itertuples()})
