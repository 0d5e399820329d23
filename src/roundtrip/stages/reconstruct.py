"""Reconstruction of images through a model: one (model, dataset), optionally cut into shards.

For each manifest item: load, map to ``[-1, 1]``, ``model.reconstruct``, and record ``ok |
unsupported | error`` with the reason and the seconds spent. Items of equal size are batched, and
read one at a time: a batch runs as soon as it is full (:func:`prepared_batches`), so memory
holds a few batches, not the shard.

The work is a pipeline of three threads, so that the model's forward pass overlaps the rest
(the forward pass, decoding, PNG and the metric libraries release the GIL): a reader decodes and
prepares the next items, the calling thread batches them and runs the model, and a finisher
writes the kept reconstructions, journals each item and hands the finished items, with their
images in memory, to the job's scorers (``sink``; :mod:`roundtrip.core.scoring`) as they
finish. Bounded queues between them keep memory to a few batches.

Only the reconstructions of the first ``keep`` items the dataset holds (manifest rows with
status ``ok``) are written (``{item_id}.png`` at the source bit depth, and ``ref/{item_id}.png``
where the protocol changed the reference): the scorers get every item from memory, so a set
of any size costs the disk of ``keep`` images.

Crash safety: each finished item is appended (and flushed) to ``shards/{k}-of-{n}.journal.csv``;
a rerun skips items already journaled whose kept image exists and whose scores the sink holds,
so completed work is never recomputed. A ``model.json`` fingerprint of the model spec guards
against reusing images made by a model with different settings: when it changes, old images,
journals and scores are cleared.
"""
from __future__ import annotations

import csv
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from roundtrip.core.imaging import FAST_PNG, ImageReadError, from_unit, read_image, write_png
from roundtrip.core.limits import TimeLimitExceeded, time_limit
from roundtrip.core.manifest import merge_status, read_manifest
from roundtrip.core.progress import Progress
from roundtrip.core.protocols import Prepared, prepare
from roundtrip.core.recon_items import ReconItem
from roundtrip.models import Adapter, build_model, item_seed

log = logging.getLogger(__name__)

#: Columns of ``status.csv`` (and the shard status files): ``seconds`` is the item's share of its
#: batch's time in the model, its output checks included (wall clock; a read or resize failure
#: has 0), ``size`` the model's input
#: ``HxW``, ``seed`` the item's seed for a stochastic model (:func:`roundtrip.models.item_seed`;
#: empty otherwise). The seconds differ from run to run; no table reads them.
STATUS_COLUMNS = ["item_id", "status", "reason", "reference", "seconds", "size", "seed"]
#: Columns of the crash-recovery journal (the same, in the order they were added).
JOURNAL_COLUMNS = ["item_id", "status", "reason", "seconds", "reference", "size", "seed"]


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
    """Clear ``outputs``, journals and scorer records in ``out_dir`` when the model settings
    changed."""
    path = out_dir / "model.json"
    text = json.dumps(fingerprint, sort_keys=True, indent=1)
    if path.exists() and path.read_text() != text:
        log.info("model settings changed since the last run: clearing %s", out_dir)
        shards = out_dir / "shards"
        for f in [*out_dir.glob(outputs), *(out_dir / "ref").glob(outputs),
                  *shards.glob("*.journal.csv"), *shards.glob("*.scores.pkl")]:
            f.unlink()
    path.write_text(text)


class Journal:
    """Append-only per-item record that survives a crash (:data:`JOURNAL_COLUMNS`).

    A journal written with fewer columns (an earlier version) is rewritten with today's
    header, its rows kept (the new columns empty), before anything is appended to it."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        #: counts each recorded item (:class:`roundtrip.core.progress.Progress`), when set
        self.progress: Progress | None = None
        header = None
        if path.exists():
            with open(path, newline="") as fh:
                reader = csv.DictReader(fh)
                header = reader.fieldnames
                for row in reader:
                    self.done[row["item_id"]] = {k: row.get(k) or "" for k in JOURNAL_COLUMNS}
        if header is not None and list(header) != JOURNAL_COLUMNS:
            with open(path, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=JOURNAL_COLUMNS)
                writer.writeheader()
                writer.writerows(self.done.values())
        self._fh = open(path, "a", newline="")
        self._w = csv.DictWriter(self._fh, fieldnames=JOURNAL_COLUMNS)
        if header is None:
            self._w.writeheader()

    def record(self, item_id: str, status: str, reason: str, seconds: float,
               reference: str = "", size: str = "", seed: int | None = None) -> None:
        """Journal one finished item (``seconds`` of wall clock, ``size`` the model's input
        ``HxW``, ``seed`` a stochastic model's seed of the item) and count it."""
        row = {"item_id": item_id, "status": status, "reason": reason, "seconds": f"{seconds:.4f}",
               "reference": reference, "size": size, "seed": "" if seed is None else str(seed)}
        self._w.writerow(row)
        self._fh.flush()
        self.done[item_id] = row
        if self.progress is not None:
            self.progress.add()

    def close(self):
        self._fh.close()


#: Finished items handed to the sink at once, at most (OCR of several images in one process, a
#: batched forward pass of a metric network); they are held in memory until then.
SINK_CHUNK = 8


def reconstruct_shard(model: Adapter | Callable[[], Adapter], manifest_path: str | Path,
                      out_dir: str | Path, shard: int = 0, n_shards: int = 1, batch_size: int = 8,
                      fingerprint: dict | None = None, protocol: str = "native",
                      size: int | None = None, keep: int | None = None,
                      sink: Callable[[list[ReconItem]], None] | None = None,
                      scored: Callable[[str], bool] | None = None, threads: int = 1,
                      overlap: bool | None = None) -> pd.DataFrame:
    """Reconstruct one shard of a dataset and write its status file.

    Args:
        model: adapter, already on its device; or a function that returns it, called only when
            an item is left to reconstruct (a resumed job with nothing to do loads no model).
        manifest_path: ``results/datasets/{dataset}/manifest.csv``.
        out_dir: ``results/recon/{model}/{dataset}``; kept images go here as ``{item_id}.png``.
        shard, n_shards: which part of the manifest (round robin by row).
        batch_size: maximum items of equal size per forward pass.
        fingerprint: model settings; a change clears earlier outputs in ``out_dir``.
        protocol, size: see :mod:`roundtrip.core.protocols`; when the protocol changes the input,
            the reference is named in the ``reference`` column (``ref/{item_id}.png``, written
            for kept items; empty = the dataset original).
        keep: the reconstructions (and references) written as files are those of the first
            ``keep`` items with manifest status ok (:func:`kept_items`); None keeps all. The
            sink gets every item from memory either way.
        sink: called with lists of finished items (:class:`ReconItem` with ``reference_image``
            and ``reconstruction_image`` for ok items; status and reason for the others), up to
            :data:`SINK_CHUNK` at a time, each item once, as they finish: batches run by input
            size, so the order is the manifest's only within a size. Called from the finisher
            thread; an exception in it stops the job.
        scored: whether the sink already holds an item's scores; an item is redone unless it is
            journaled, its kept files exist and it is scored (default: scored).
        threads: the job's threads; with ``overlap`` None, :func:`overlaps` decides from them
            and the model's device whether the reader and finisher run in threads of their own.

    Returns:
        Status rows of the shard (also written to ``out_dir/shards/{shard}-of-{n_shards}.csv``).
    """
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    (out_dir / "shards").mkdir(parents=True, exist_ok=True)
    if fingerprint is None and not isinstance(model, Adapter):
        raise ValueError("a model given as a function needs the fingerprint of its settings")
    # the batch can change a learned model's last bits: another batch size redoes the items
    check_fingerprint(out_dir, {"protocol": protocol, "size": size, "batch_size": batch_size,
                                **(fingerprint or {"model": model.name})})
    manifest = read_manifest(manifest_path)
    rows = shard_rows(manifest, shard, n_shards)
    kept_ids = kept_items(manifest, keep)
    journal = Journal(out_dir / "shards" / f"{shard}-of-{n_shards}.journal.csv")
    try:
        todo = _pending(rows, journal, out_dir, kept_ids, scored or (lambda item_id: True))
        if len(todo):
            shard_note = f" (shard {shard + 1} of {n_shards})" if n_shards > 1 else ""
            # opened before the model loads, with a thread of its own: the first line comes
            # 30 s into the job even while a slow model is still on its first batch
            with Progress(len(todo), f"reconstruct {out_dir.parent.name} on "
                          f"{out_dir.name}{shard_note}") as progress:
                journal.progress = progress
                if not isinstance(model, Adapter):
                    model = model()
                _stream(model, todo, manifest_path.parent, out_dir, journal, protocol, size,
                        batch_size, kept_ids, sink,
                        overlaps(model, threads) if overlap is None else overlap)
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
        settings: ``batch_size``, ``fingerprint``, ``protocol``, ``size``, ``keep``, ``sink``,
            ``scored`` of :func:`reconstruct_shard`.

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


def kept_items(manifest: pd.DataFrame, keep: int | None) -> set[str] | None:
    """The items whose reconstruction is written as a file: the first ``keep`` manifest rows
    with status ok (what the galleries show: ``roundtrip.report.gallery.gallery_rows``); None
    for all."""
    if keep is None:
        return None
    return set(manifest.loc[manifest["status"] == "ok", "item_id"].head(keep))


def prune_reconstructions(out_dir: str | Path, manifest_path: str | Path,
                          keep: int | None) -> int:
    """Delete the reconstruction files (and protocol references) of the items past ``keep``
    (:func:`kept_items`; after file-based scorers read them all); returns how many files were
    deleted."""
    if keep is None:
        return 0
    out_dir, n = Path(out_dir), 0
    manifest = read_manifest(manifest_path)
    kept_ids = kept_items(manifest, keep)
    for item_id in manifest["item_id"]:
        if item_id in kept_ids:
            continue
        for f in (out_dir / f"{item_id}.png", out_dir / "ref" / f"{item_id}.png"):
            if f.exists():
                f.unlink()
                n += 1
    return n


def _pending(rows: pd.DataFrame, journal: Journal, out_dir: Path, kept_ids: set[str] | None,
             scored: Callable[[str], bool]) -> pd.DataFrame:
    keep_rows = []
    for _, r in rows.iterrows():
        prev = journal.done.get(r["item_id"])
        resumable = prev is not None and scored(r["item_id"])
        if resumable and prev["status"] == "ok" and (kept_ids is None
                                                     or r["item_id"] in kept_ids):
            resumable = (out_dir / f"{r['item_id']}.png").exists() and (
                not prev.get("reference") or (out_dir / prev["reference"]).exists())
        keep_rows.append(not resumable)
    skipped = len(rows) - sum(keep_rows)
    if skipped:
        log.info("resuming: %d items already done", skipped)
    return rows[keep_rows]


#: Prepared inputs (float32) waiting for their batch, at most; past it the oldest unfinished
#: group runs as a smaller batch (:func:`prepared_batches`).
MAX_PENDING_BYTES = 1 << 30
#: Items the reader thread prepares ahead of the batch being run: the next batch is ready
#: when the model finishes one (run.batch_size is 8 by default).
PREFETCH_ITEMS = 8


def prepared_batches(model: Adapter, rows: pd.DataFrame, root: Path, record, protocol: str,
                     size: int | None, batch_size: int,
                     max_pending_bytes: int = MAX_PENDING_BYTES,
                     prefetch: int = 0) -> Iterator[list]:
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

    Args:
        prefetch: with ``> 0``, a reader thread decodes and prepares up to that many items ahead
            (``record`` is then called from that thread); the batches are the same.

    Yields:
        ``[(item_id, source image, Prepared), ...]``, 1 to ``batch_size`` items of one size.
    """
    groups: dict[tuple[int, int], list] = {}
    pending = 0
    info = model.info() if len(rows) else None
    items = (_prepared(r, root, record, protocol, info, size) for _, r in rows.iterrows())
    for item in (in_background(items, prefetch) if prefetch > 0 else items):
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
    """``(item_id, source image, Prepared)`` of one manifest row, or None (recorded why)."""
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
    return item_id, img, prep


def _nbytes(group: list) -> int:
    return sum(p.x.nbytes for _, _, p in group)


# -- the pipeline ------------------------------------------------------------------------------
def _stream(model: Adapter, todo: pd.DataFrame, root: Path, out_dir: Path, journal: Journal,
            protocol: str, size: int | None, batch_size: int, kept_ids: set[str] | None, sink,
            overlap: bool) -> None:
    """Reconstruct ``todo`` through the reader / model / finisher threads (module docstring),
    or, without ``overlap``, all in the calling thread."""
    fields = {r["item_id"]: r.to_dict() for _, r in todo.iterrows()}
    finisher = _Finisher(out_dir, journal, kept_ids, fields, root, sink)
    # the model runs at most one batch ahead of the finisher
    worker = Worker(finisher.handle, maxsize=1) if overlap else Inline(finisher.handle)
    batches = prepared_batches(model, todo, root,
                               lambda i, st, why: worker.put(("failed", i, st, why)),
                               protocol, size, batch_size,
                               prefetch=PREFETCH_ITEMS if overlap else 0)
    repeats: dict[str, str] = {}
    try:
        for batch in batches:
            worker.put(("batch", _run_batch(model, batch, repeats)))
        worker.put(("end",))
    except BaseException:
        batches.close()  # stops the reader thread
        worker.close(raise_error=False)  # the first error is the one to report
        raise
    worker.close()


def overlaps(model: Adapter, threads: int) -> bool:
    """Whether a job runs the reader and finisher threads beside the model: when the model runs
    on a GPU (the CPU would otherwise wait for it, and it for the CPU), or when the job has
    more than one thread. A one-thread job on the CPU runs them in turn: threads of its own
    would take the cores of the jobs beside it, and on CPU the model's forward pass is most of
    the work anyway."""
    return threads > 1 or getattr(getattr(model, "device", None), "type", "cpu") == "cuda"


class _Outcome(NamedTuple):
    """One item through the model: its journal fields, and for an ok item its source image,
    prepared input and reconstruction in ``[0, 1]``."""
    item_id: str
    status: str
    reason: str
    seconds: float
    size: str
    seed: int | None
    img: np.ndarray | None = None
    prep: Prepared | None = None
    rec: np.ndarray | None = None


#: Input sizes of a job whose first batch is checked for repeats (:func:`_run_batch`): a model
#: that samples at one size only is caught there; a set of many sizes (photographs at their own
#: resolution) pays two extra forward passes of one item for its first sizes only.
REPEAT_SIZES = 8


def _run_batch(model: Adapter, batch, repeats: dict[str, str] | None = None) -> list[_Outcome]:
    """The model's outputs of one batch in ``[0, 1]``, one :class:`_Outcome` per item (a failing
    batch is retried item by item to isolate the failing items). A :attr:`Adapter.stochastic`
    model gets each item's seed (:func:`~roundtrip.models.item_seed`); a batch that runs past
    ``models.<name>.item_timeout_s`` times its items is stopped, and its items fail with the
    limit as their reason.

    Args:
        repeats: the job's input sizes checked so far -> their repeat defect (``""``: none):
            the first batch of each of the first :data:`REPEAT_SIZES` sizes has its first item
            reconstructed twice more, alone (:meth:`Adapter.repeat_defect`); every item of a
            size with a defect fails with it. None checks nothing."""
    t0 = time.perf_counter()
    x = torch.from_numpy(np.stack([p.x for _, _, p in batch])).permute(0, 3, 1, 2)
    size = f"{x.shape[2]}x{x.shape[3]}"
    x = (x * 2.0 - 1.0).to(model.device)
    seeds = [item_seed(model.seed, i) for i, _, _ in batch] if model.stochastic else None
    # the limit is the forward pass's (a stochastic model's items run one by one, each its own)
    limit = (model.item_timeout_s * (1 if seeds else len(batch)) if model.item_timeout_s
             else None)
    try:
        y, defects = model.reconstruct_items(x, seeds, limit)
        seconds = (time.perf_counter() - t0) / len(batch)
        if repeats is not None and size not in repeats and len(repeats) < REPEAT_SIZES \
                and y is not None and not defects[0]:
            with time_limit(2 * model.item_timeout_s if model.item_timeout_s else None):
                repeats[size] = model.repeat_defect(x, seeds)  # one item, twice
    except Exception as exc:  # noqa: BLE001 - any model failure is an item outcome
        if len(batch) > 1:
            return [r for one in batch for r in _run_batch(model, [one], repeats)]
        log.exception("item %s failed", batch[0][0])
        reason = (_timeout_reason(model, size) if isinstance(exc, TimeLimitExceeded)
                  else f"{type(exc).__name__}: {exc}")
        return [_Outcome(batch[0][0], "error", reason, time.perf_counter() - t0, size,
                         seeds[0] if seeds else None)]
    notes = model.take_notes(len(batch))
    if repeats and repeats.get(size):
        defects = [d or repeats[size] for d in defects]
    out = (y.cpu().permute(0, 2, 3, 1).numpy() + 1.0) / 2.0 if y is not None else [None] * len(x)
    for _, _, prep in batch:  # the model's inputs are done with: memory for the next batch
        prep.x = None
    # an output that failed a check (roundtrip.models.outputs, .diagnosis) is the item's error,
    # never a score
    return [_Outcome(item_id, "error", defect, seconds, size, seed) if defect else
            _Outcome(item_id, "ok", note, seconds, size, seed, img, prep, rec)
            for (item_id, img, prep), rec, note, defect, seed
            in zip(batch, out, notes, defects, seeds or [None] * len(batch))]


def _timeout_reason(model: Adapter, size: str) -> str:
    key = f"models.{model.name}.item_timeout_s"
    return (f"{key}: the forward pass at {size} ran longer than {model.item_timeout_s:g} s and "
            f"was stopped: raise {key}, or leave inputs of this size out")


class _Finisher:
    """The finisher thread's work: write the kept files, journal every item, hand the items to
    the sink in runs of at most :data:`SINK_CHUNK`."""

    def __init__(self, out_dir, journal, kept_ids, fields, root, sink):
        self.out_dir, self.journal, self.kept_ids = out_dir, journal, kept_ids
        self.fields, self.root, self.sink = fields, root, sink
        self.ready: list[ReconItem] = []

    def handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "failed":
            _, item_id, status, reason = message
            self.journal.record(item_id, status, reason, 0.0)
            self._ready(ReconItem(item_id, status, reason, fields=self.fields[item_id]))
        elif kind == "batch":
            for o in message[1]:
                if o.status != "ok":
                    self.journal.record(o.item_id, o.status, o.reason, o.seconds, size=o.size,
                                        seed=o.seed)
                    self._ready(ReconItem(o.item_id, o.status, o.reason,
                                          fields=self.fields[o.item_id]))
                    continue
                self._finished(o)
        else:  # end
            self._deliver()

    def _finished(self, o: _Outcome) -> None:
        item_id, img, prep, rec = o.item_id, o.img, o.prep, o.rec
        # C order, as an image read from its PNG is: a metric's sums run over memory in
        # order, so another layout can change their last bits
        image = np.ascontiguousarray(from_unit(prep.restore(rec), img.dtype))
        reference = np.ascontiguousarray(img if prep.reference is None else prep.reference)
        ref_name = "" if prep.reference is None else f"ref/{item_id}.png"
        if self.kept_ids is None or item_id in self.kept_ids:
            write_png(self.out_dir / f"{item_id}.png", image, FAST_PNG)
            if ref_name:
                (self.out_dir / "ref").mkdir(exist_ok=True)
                write_png(self.out_dir / ref_name, prep.reference, FAST_PNG)
        self.journal.record(item_id, "ok", o.reason, o.seconds, ref_name, o.size, o.seed)
        self._ready(ReconItem(item_id, "ok", "",
                              self.out_dir / ref_name if ref_name
                              else self.root / self.fields[item_id]["path"],
                              self.out_dir / f"{item_id}.png", reference, image,
                              self.fields[item_id]))

    def _ready(self, item: ReconItem) -> None:
        if self.sink is None:
            return
        self.ready.append(item)
        if len(self.ready) >= SINK_CHUNK:
            self._deliver()

    def _deliver(self) -> None:
        ready, self.ready = self.ready, []
        if ready and self.sink is not None:
            self.sink(ready)


# -- threads -----------------------------------------------------------------------------------
class _Raised:
    def __init__(self, exc: BaseException):
        self.exc = exc


_END = object()


def in_background(items: Iterable, maxsize: int) -> Iterator:
    """Iterate ``items`` in a daemon thread, up to ``maxsize`` ahead of the consumer; an
    exception in the thread is raised in the consumer. Leaving the loop early stops the thread
    at its next item."""
    q: queue.Queue = queue.Queue(maxsize)
    stop = threading.Event()

    def put(x) -> bool:
        while not stop.is_set():
            try:
                q.put(x, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run():
        try:
            for x in items:
                if not put(x):
                    return
            put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(_Raised(exc))

    thread = threading.Thread(target=run, daemon=True, name="roundtrip-reader")
    thread.start()
    try:
        while True:
            x = q.get()
            if x is _END:
                return
            if isinstance(x, _Raised):
                raise x.exc
            yield x
    finally:
        stop.set()


class Inline:
    """A :class:`Worker` without a thread: ``put`` handles the message at once."""

    def __init__(self, handle: Callable):
        self.handle = handle

    def put(self, message) -> None:
        self.handle(message)

    def close(self, raise_error: bool = True) -> None:
        pass


class Worker:
    """A thread that calls ``handle(message)`` for every :meth:`put` message, in order, with at
    most ``maxsize`` messages waiting (the producer blocks beyond). An exception in ``handle``
    is raised in the producer at its next :meth:`put` or at :meth:`close`."""

    def __init__(self, handle: Callable, maxsize: int = 2):
        self.handle, self.error, self.closed = handle, None, threading.Event()
        self.q: queue.Queue = queue.Queue(maxsize)
        self.thread = threading.Thread(target=self._run, daemon=True, name="roundtrip-finisher")
        self.thread.start()

    def _run(self):
        while True:
            message = self.q.get()
            if message is _END:
                return
            if self.error is None:
                try:
                    self.handle(message)
                except BaseException as exc:  # noqa: BLE001 - raised in the producer
                    self.error = exc

    def put(self, message) -> None:
        """Queue a message (blocks while ``maxsize`` wait).

        Raises:
            The worker's exception; RuntimeError: the worker is closed (a reader thread left
            behind by an error stops here instead of waiting for ever).
        """
        while True:
            if self.error is not None:
                raise self.error
            if self.closed.is_set():
                raise RuntimeError("the finisher is closed")
            try:
                self.q.put(message, timeout=0.1)
                return
            except queue.Full:
                continue

    def close(self, raise_error: bool = True) -> None:
        """Wait for every message to be handled; raise the worker's exception, if any."""
        self.closed.set()
        self.q.put(_END)
        self.thread.join()
        if raise_error and self.error is not None:
            raise self.error
