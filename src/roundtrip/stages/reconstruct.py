"""Reconstruction of images through a model: one (model, dataset), optionally cut into shards.

For each manifest item: load, map to ``[-1, 1]``, ``model.reconstruct``, write
``{item_id}.png`` at the source bit depth, and record ``ok | unsupported | error`` with the reason
and the seconds spent. Items of equal size are batched, and read one at a time: a batch runs
as soon as it is full (:func:`prepared_batches`), so memory holds a few batches, not the shard.

Crash safety: each finished item is appended (and flushed) to ``shards/{k}-of-{n}.journal.csv``;
a rerun skips items already journaled whose image exists, so completed work is never recomputed.
A ``model.json`` fingerprint of the model spec guards against reusing images made by a model with
different settings: when it changes, old images and journals are cleared.
"""
from __future__ import annotations

import csv
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core.imaging import FAST_PNG, ImageReadError, from_unit, read_image, write_png
from roundtrip.core.manifest import merge_status, read_manifest
from roundtrip.core.protocols import Prepared, prepare
from roundtrip.models import Adapter, build_model

log = logging.getLogger(__name__)

#: Columns of ``status.csv`` (and the shard status files). No time: two runs write the same
#: bytes; each item's seconds stay in the crash-recovery journal (:data:`JOURNAL_COLUMNS`).
STATUS_COLUMNS = ["item_id", "status", "reason", "reference"]
JOURNAL_COLUMNS = ["item_id", "status", "reason", "seconds", "reference"]


def shard_of(index: int, n_shards: int) -> int:
    """Shard of the manifest row at ``index`` (round robin keeps shards balanced by size)."""
    return index % n_shards


def shard_rows(manifest: pd.DataFrame, shard: int, n_shards: int) -> pd.DataFrame:
    """Rows of ``manifest`` that belong to ``shard`` (0-based) of ``n_shards``."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} out of range for {n_shards} shards")
    idx = [i for i in range(len(manifest)) if shard_of(i, n_shards) == shard]
    return manifest.iloc[idx]


def resolve_device(device: str) -> torch.device:
    """``auto`` -> CUDA if available, else CPU; otherwise ``torch.device(device)``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def load_model(name: str, spec: dict, device: str) -> Adapter:
    """The adapter of config entry ``spec`` on ``device`` (``auto``, ``cpu``, ``cuda``...), with
    its weights loaded when the adapter loads lazily (``load()``).

    Raises:
        ValueError: a bad spec (from :func:`roundtrip.models.build_model`); WeightsMissing:
            the weights are not where the spec says.
    """
    model = build_model(name, spec).to(resolve_device(device))
    if hasattr(model, "load"):
        model.load()
    return model


def check_fingerprint(out_dir: Path, fingerprint: dict, outputs: str = "*.png") -> None:
    """Clear ``outputs`` and journals in ``out_dir`` when the model settings changed."""
    path = out_dir / "model.json"
    text = json.dumps(fingerprint, sort_keys=True, indent=1)
    if path.exists() and path.read_text() != text:
        log.info("model settings changed since the last run: clearing %s", out_dir)
        for f in list(out_dir.glob(outputs)) + list((out_dir / "shards").glob("*.journal.csv")):
            f.unlink()
    path.write_text(text)


class Journal:
    """Append-only per-item record that survives a crash (:data:`JOURNAL_COLUMNS`)."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        if path.exists():
            for row in csv.DictReader(open(path, newline="")):
                self.done[row["item_id"]] = row
        new = not path.exists()
        self._fh = open(path, "a", newline="")
        self._w = csv.DictWriter(self._fh, fieldnames=JOURNAL_COLUMNS)
        if new:
            self._w.writeheader()

    def record(self, item_id: str, status: str, reason: str, seconds: float,
               reference: str = "") -> None:
        row = {"item_id": item_id, "status": status, "reason": reason, "seconds": f"{seconds:.4f}",
               "reference": reference}
        self._w.writerow(row)
        self._fh.flush()
        self.done[item_id] = row

    def close(self):
        self._fh.close()


def reconstruct_shard(model: Adapter | Callable[[], Adapter], manifest_path: str | Path,
                      out_dir: str | Path, shard: int = 0, n_shards: int = 1, batch_size: int = 8,
                      fingerprint: dict | None = None, protocol: str = "native",
                      size: int | None = None) -> pd.DataFrame:
    """Reconstruct one shard of a dataset and write its status file.

    Args:
        model: adapter, already on its device; or a function that returns it, called only when
            an item is left to reconstruct (a resumed job with nothing to do loads no model).
        manifest_path: ``results/datasets/{dataset}/manifest.csv``.
        out_dir: ``results/recon/{model}/{dataset}``; images go here as ``{item_id}.png``.
        shard, n_shards: which part of the manifest (round robin by row).
        batch_size: maximum items of equal size per forward pass.
        fingerprint: model settings; a change clears earlier outputs in ``out_dir``.
        protocol, size: see :mod:`roundtrip.core.protocols`; when the protocol changes the input, the
            reference image is written to ``ref/{item_id}.png`` and named in the ``reference``
            column (empty = the dataset original).

    Returns:
        Status rows of the shard (also written to ``out_dir/shards/{shard}-of-{n_shards}.csv``).
    """
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    (out_dir / "shards").mkdir(parents=True, exist_ok=True)
    if fingerprint is None and not isinstance(model, Adapter):
        raise ValueError("a model given as a function needs the fingerprint of its settings")
    check_fingerprint(out_dir, {"protocol": protocol, "size": size,
                                **(fingerprint or {"model": model.name})})
    rows = shard_rows(read_manifest(manifest_path), shard, n_shards)
    journal = Journal(out_dir / "shards" / f"{shard}-of-{n_shards}.journal.csv")
    try:
        todo = _pending(rows, journal, out_dir)
        if len(todo) and not isinstance(model, Adapter):
            model = model()
        for batch in prepared_batches(model, todo, manifest_path.parent,
                                      lambda i, st, why: journal.record(i, st, why, 0.0),
                                      protocol, size, batch_size):
            _run_batch(model, batch, out_dir, journal)
    finally:
        journal.close()
    status = pd.DataFrame([journal.done[i] for i in rows["item_id"]], columns=STATUS_COLUMNS)
    status.to_csv(out_dir / "shards" / f"{shard}-of-{n_shards}.csv", index=False)
    return status


def reconstruct_dataset(model: Adapter | Callable[[], Adapter], manifest_path: str | Path,
                        out_dir: str | Path, n_shards: int = 1, **settings) -> pd.DataFrame:
    """The reconstruction of a whole (model, dataset): ``out_dir/status.csv``.

    With one shard (the default) the shard runs here (:func:`reconstruct_shard`, resumable);
    with several, rule ``reconstruct_shard`` has written each shard's status file and they are
    merged (on a cluster the shards run in parallel jobs).

    Args:
        model, manifest_path, out_dir: as :func:`reconstruct_shard`.
        n_shards: how many shards the dataset is cut into (``datasets.<name>.shards``).
        settings: ``batch_size``, ``fingerprint``, ``protocol``, ``size`` of
            :func:`reconstruct_shard`.

    Returns:
        The status rows of every item, manifest order within shards.

    Raises:
        FileNotFoundError: a shard's status file is missing (``n_shards`` > 1).
    """
    out_dir = Path(out_dir)
    if n_shards == 1:
        reconstruct_shard(model, manifest_path, out_dir, 0, 1, **settings)
    files = [out_dir / "shards" / f"{k}-of-{n_shards}.csv" for k in range(n_shards)]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise FileNotFoundError(f"shard status files missing (rule reconstruct_shard): {missing}")
    return merge_status(files, out_dir / "status.csv")


def _pending(rows: pd.DataFrame, journal: Journal, out_dir: Path) -> pd.DataFrame:
    keep = []
    for _, r in rows.iterrows():
        prev = journal.done.get(r["item_id"])
        resumable = prev is not None and (prev["status"] != "ok"
                                          or (out_dir / f"{r['item_id']}.png").exists())
        resumable = resumable and (not prev.get("reference") or (out_dir / prev["reference"]).exists())
        keep.append(not resumable)
    skipped = len(rows) - sum(keep)
    if skipped:
        log.info("resuming: %d items already done", skipped)
    return rows[keep]


#: Prepared inputs (float32) waiting for their batch, at most; past it the oldest unfinished
#: group runs as a smaller batch (:func:`prepared_batches`).
MAX_PENDING_BYTES = 1 << 30


def prepared_batches(model: Adapter, rows: pd.DataFrame, root: Path, record, protocol: str,
                     size: int | None, batch_size: int,
                     max_pending_bytes: int = MAX_PENDING_BYTES) -> Iterator[list]:
    """Read manifest ``rows`` one at a time, apply the protocol and yield batches of items of
    equal model-input size, so that memory holds a few batches, not the set.

    A batch is yielded as soon as its size group holds ``batch_size`` items; the groups left
    unfinished are yielded at the end, in the order their sizes first appeared. The batches
    are those of grouping the whole set by size and cutting each group into ``batch_size``
    pieces in manifest order. Only when the waiting inputs pass ``max_pending_bytes`` (a set of
    many distinct sizes, as native-resolution photographs are) does the oldest unfinished group
    run early, as a smaller batch.

    Items that cannot be processed are passed to ``record(item_id, status, reason)`` (status
    ``error`` or ``unsupported``) and left out. Shared by reconstruction and code extraction.

    Yields:
        ``[(item_id, source dtype, Prepared), ...]``, 1 to ``batch_size`` items of one size.
    """
    groups: dict[tuple[int, int], list] = {}
    pending = 0
    info = model.info() if len(rows) else None
    for _, r in rows.iterrows():
        item = _prepared(r, root, record, protocol, info, size)
        if item is None:
            continue
        key = item[2].x.shape[:2]  # the model-input size
        groups.setdefault(key, []).append(item)
        pending += item[2].x.nbytes
        if len(groups[key]) == batch_size:
            pending -= _nbytes(groups[key])
            yield groups.pop(key)
        while pending > max_pending_bytes and groups:
            oldest = next(iter(groups))
            pending -= _nbytes(groups[oldest])
            yield groups.pop(oldest)
    yield from groups.values()


def _prepared(r, root: Path, record, protocol: str, info, size: int | None):
    """``(item_id, source dtype, Prepared)`` of one manifest row, or None (recorded why)."""
    item_id = r["item_id"]
    if r["status"] != "ok":
        record(item_id, "error", f"dataset: {r['reason']}")
        return None
    try:
        img = read_image(root / r["path"])
    except ImageReadError as exc:
        record(item_id, "error", str(exc))
        return None
    prep = prepare(img, protocol, info, size)
    if isinstance(prep, str):
        record(item_id, "unsupported", prep)
        return None
    return item_id, img.dtype, prep


def _nbytes(group: list) -> int:
    return sum(p.x.nbytes for _, _, p in group)


def _run_batch(model: Adapter, batch, out_dir: Path, journal: Journal) -> None:
    t0 = time.perf_counter()
    x = torch.from_numpy(np.stack([p.x for _, _, p in batch])).permute(0, 3, 1, 2)
    x = (x * 2.0 - 1.0).to(model.device)
    try:
        y = model.reconstruct(x)
    except Exception as exc:  # noqa: BLE001 - any model failure is an item outcome
        if len(batch) > 1:  # isolate the failing item(s)
            for one in batch:
                _run_batch(model, [one], out_dir, journal)
            return
        log.exception("item %s failed", batch[0][0])
        journal.record(batch[0][0], "error", f"{type(exc).__name__}: {exc}",
                       time.perf_counter() - t0)
        return
    if tuple(y.shape) != tuple(x.shape):
        reason = f"model returned shape {tuple(y.shape)} for input {tuple(x.shape)}"
        for item_id, _, _ in batch:
            journal.record(item_id, "error", reason, 0.0)
        return
    out = (y.float().cpu().permute(0, 2, 3, 1).numpy() + 1.0) / 2.0
    seconds = (time.perf_counter() - t0) / len(batch)
    notes = model.take_notes(len(batch))
    for (item_id, dtype, prep), rec, note in zip(batch, out, notes):
        write_png(out_dir / f"{item_id}.png", from_unit(prep.restore(rec), dtype), FAST_PNG)
        journal.record(item_id, "ok", note, seconds, _write_reference(out_dir, item_id, prep))


def _write_reference(out_dir: Path, item_id: str, prep: Prepared) -> str:
    if prep.reference is None:
        return ""
    (out_dir / "ref").mkdir(exist_ok=True)
    write_png(out_dir / "ref" / f"{item_id}.png", prep.reference, FAST_PNG)
    return f"ref/{item_id}.png"


