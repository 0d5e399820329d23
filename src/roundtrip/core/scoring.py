"""Streamed reconstruction scorers: the protocol, and the journal that keeps their records.

A reconstruction scorer (:class:`ReconScorer`) scores a (model, dataset) while it is being
reconstructed. The reconstruction job hands it the items as they finish, a few at a time, with
the reference and the reconstruction in memory (:class:`~roundtrip.core.recon_items.ReconItem`);
the scorer returns one *record* per item (anything picklable: numbers, a text, a feature vector)
and forgets the images. When every item has a record, :meth:`ReconScorer.finish` turns the
records, in manifest order, into the scorer's frames (every sum over the set runs there, in
that order, so the bytes do not depend on how the items were batched). So no reconstruction
has to be kept on disk or read back (``keep_reconstructions``), memory holds a few items, not
the set, and a set cut into shards is scored in its shard jobs, the records of all shards being
finished together.

Records survive a crash: each delivery is appended to the shard's :class:`ScoreJournal`
(``shards/{k}-of-{n}.scores.pkl``) as it is scored, and a rerun scores again only the items
that lack a complete record (:meth:`ReconScorer.complete`: a failure is retried) under the
scorer's current :func:`scorer_key`.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roundtrip.core.recon_items import ReconContext, ReconItem


class ReconScorer:
    """Base class of a streamed reconstruction scorer; an evaluation names its subclass as
    ``module:Class`` in its spec's ``recon_scorers``.

    The job constructs it with ``(ctx, options)``: the job's :class:`ReconContext` and the
    options the evaluation's ``scorers_for`` gave. The constructor runs in every job that scores
    or merges the set (also where no item is left to score), so it should be cheap: load
    networks when the first items arrive.

    Attributes:
        ctx: the job's context (model, manifest, device, the model loader, threads).
        options: this scorer's options.
    """

    def __init__(self, ctx: ReconContext, options: dict):
        self.ctx, self.options = ctx, options

    def score(self, items: list[ReconItem]) -> list[Any]:
        """One record per item, in the order given.

        Args:
            items: finished items of the set, in no set order (batches run by input size).
                Those with ``status == "ok"`` carry their images
                (:meth:`ReconItem.read_reference`, :meth:`ReconItem.read_reconstruction`); the
                others carry only their status and reason.

        Returns:
            Picklable records (e.g. ``None`` for an item that was not reconstructed). A failure
            of one item should be its record (a reason), not an exception: an exception stops
            the job.
        """
        raise NotImplementedError

    def record_options(self, options: dict) -> dict:
        """The options (and the files they name) that :meth:`score` depends on: a change of
        them makes the journaled records stale (:func:`scorer_key`). Default: all options;
        options read only by :meth:`finish` need not make the items be reconstructed again."""
        return options

    def complete(self, record: Any) -> bool:
        """Whether a journaled record is final; an incomplete one (a failure that another try
        may not repeat, such as an OCR request that timed out) is scored again when the job
        runs again. Default: every record."""
        return True

    def finish(self, items: list[ReconItem], records: list[Any]) -> dict[str, Any]:
        """The scorer's frames (``{output name: pandas.DataFrame}``), written to the rule's
        outputs of those names.

        Args:
            items: every manifest item in manifest order, with status and reason (no images).
            records: the record :meth:`score` gave each of them, same order.
        """
        raise NotImplementedError


def item_row(item: ReconItem, record: Any, columns: list[str]) -> dict:
    """The per-item row a scorer's :meth:`~ReconScorer.finish` starts from: every column of
    ``columns`` NaN, then the item's ``item_id``, ``status`` and ``reason``. A record that is a
    ``str`` is the reason scoring the item failed: the row is an error with that reason. The
    caller fills the value columns from any other record that is not None (None: the item was
    not scored, its status says why)."""
    row = dict.fromkeys(columns, math.nan)
    row.update(item_id=item.item_id, status=item.status, reason=item.reason)
    if isinstance(record, str):
        row.update(status="error", reason=record)
    return row


def is_streamed(target: Any) -> bool:
    """Whether a scorer target (the object ``module:name`` names) is a :class:`ReconScorer`
    class; otherwise it is a file-based scorer function ``f(ctx, options) -> frames`` that reads
    the reconstructions from disk after the job made them all."""
    return isinstance(target, type) and issubclass(target, ReconScorer)


def scorer_key(name: str, target: str, options: dict) -> str:
    """The key of a scorer's records: its name, its target and a digest of its options and of
    the size and modification time of every file its options name (a retrained network or a new
    OCR of the originals makes the old records stale)."""
    stamp = json.dumps({"target": target, "options": options, "files": _file_stamps(options)},
                       sort_keys=True, default=str)
    return f"{name}:{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"


def _file_stamps(value: Any) -> dict[str, list[int]]:
    """``path -> [size, mtime_ns]`` of every string in ``value`` (nested) that names a file."""
    out: dict[str, list[int]] = {}
    if isinstance(value, dict):
        for v in value.values():
            out |= _file_stamps(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            out |= _file_stamps(v)
    elif isinstance(value, str) and len(value) < 4096 and os.path.isfile(value):
        st = os.stat(value)
        out[value] = [st.st_size, st.st_mtime_ns]
    return out


class ScoreJournal:
    """Append-only file of scorer records, ``(key, [(item_id, record), ...])`` pickles, one per
    delivery, flushed as written; read back, the last record of a (key, item) wins.

    Args:
        path: ``results/recon/{model}/{dataset}/shards/{k}-of-{n}.scores.pkl``.
        keys: key (:func:`scorer_key`) -> whether a record is final
            (:meth:`ReconScorer.complete`), for the scorers that run; records of other keys are
            ignored.
    """

    def __init__(self, path: str | Path, keys: dict[str, Callable[[Any], bool]]):
        self.path = Path(path)
        self.keys = dict(keys)
        self.records: dict[str, dict[str, Any]] = {k: {} for k in self.keys}
        entries, self._good = read_score_journal(self.path, with_end=True)
        for key, pairs in entries:
            if key in self.records:
                self.records[key].update(pairs)
        self._fh = None

    def complete(self, item_id: str) -> bool:
        """Every scorer holds a final record of the item."""
        return all(item_id in held and final(held[item_id])
                   for (key, final), held in zip(self.keys.items(), self.records.values()))

    def append(self, key: str, pairs: list[tuple[str, Any]]) -> None:
        """Record ``(item_id, record)`` pairs of one scorer, flushed before returning (a crashed
        job's records survive; a power cut may take the last ones)."""
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
            # a torn entry of a crash would hide everything appended after it: cut it off
            if self._fh.tell() > self._good:
                self._fh.truncate(self._good)
                self._fh.seek(self._good)
        pickle.dump((key, pairs), self._fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._fh.flush()
        self.records[key].update(pairs)

    def close(self) -> None:
        """Close the journal file; the records stay readable in :attr:`records`."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_score_journal(path: str | Path, with_end: bool = False):
    """The entries of a score journal, ``[(key, [(item_id, record), ...]), ...]``; a torn last
    entry (a crash while writing) is dropped, so its items are scored again. With
    ``with_end``, also the byte offset where the readable entries end."""
    path = Path(path)
    entries, end = [], 0
    if path.exists():
        with open(path, "rb") as fh:
            while True:
                try:
                    entries.append(pickle.load(fh))
                except EOFError:
                    break
                except (pickle.UnpicklingError, ValueError, AttributeError, ImportError,
                        IndexError, TypeError):
                    break  # the torn tail of a crash
                end = fh.tell()
    return (entries, end) if with_end else entries
