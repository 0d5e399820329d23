"""The job of one (model, dataset): reconstruct every image and score the reconstructions as they
are made.

Everything that reads the same reconstructions runs in this one process, so that a (model,
dataset) costs one Python and torch start-up, not one per metric. Scorers belong to their
evaluation: each evaluation's spec declares ``recon_scorers`` (name -> ``module:name``,
:class:`roundtrip.core.evaluation.Evaluation`) and the plan assigns them to the dataset
(:meth:`roundtrip.workflow.recon_jobs.ReconJobs.scorers`).

A *streamed* scorer (a :class:`roundtrip.core.scoring.ReconScorer` class) gets the items with
their images in memory as the reconstruction makes them
(:func:`roundtrip.stages.reconstruct.reconstruct_shard`'s ``sink``); its records go to the
shard's score journal, and once every item has one, :meth:`~roundtrip.core.scoring.ReconScorer.
finish` makes its frames from them in manifest order. Only the first ``keep`` reconstructions
are written as files. A set cut into shards is reconstructed and scored in its
``reconstruct_shard`` jobs (:func:`run_shard_job`); the job of the whole set then finishes the
records of all shards without reconstructing anything.

A *file-based* scorer (a function ``f(ctx, options) -> {output name: frame}``) reads the
reconstructions from disk after the job made them all: every reconstruction of the job is then
written, and those past ``keep`` are deleted after it ran.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pandas as pd

from roundtrip.core.progress import Progress
from roundtrip.core.recon_items import ReconContext, ReconItem, iter_recon_items
from roundtrip.core.scoring import ScoreJournal, is_streamed, scorer_key

log = logging.getLogger(__name__)


def scorer(target: str):
    """The scorer at ``"module:name"`` (an evaluation's ``recon_scorers`` value): a
    :class:`~roundtrip.core.scoring.ReconScorer` class or a file-based scorer function.

    Raises:
        ImportError, AttributeError: the target does not exist.
    """
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


class Scoring:
    """The scorers of one (model, dataset) job, split into streamed and file-based.

    Args:
        ctx: the job's :class:`ReconContext`.
        scorers: scorer name -> options, in order.
        targets: scorer name -> ``"module:name"``.
        journal_paths: the score journals to read (one per shard) and, first, the one to write.
    """

    def __init__(self, ctx: ReconContext, scorers: dict[str, dict], targets: dict[str, str],
                 journal_paths: list[Path]):
        self.ctx = ctx
        self.streamed: dict[str, tuple[str, object]] = {}
        self.file_based: dict[str, Callable] = {}
        for name, options in scorers.items():
            target = scorer(targets[name])
            if is_streamed(target):
                obj = target(ctx, options)
                self.streamed[name] = (scorer_key(name, targets[name],
                                                  obj.record_options(options)), obj)
            else:
                self.file_based[name] = (target, options)
        keys = {key: obj.complete for key, obj in self.streamed.values()}
        self.journals = [ScoreJournal(p, keys) for p in journal_paths]

    @property
    def journal(self) -> ScoreJournal:
        """The journal this job writes."""
        return self.journals[0]

    def keep(self, keep: int | None) -> int | None:
        """The reconstructions the job writes: all when a file-based scorer reads them."""
        return None if self.file_based else keep

    def scored(self, item_id: str) -> bool:
        """Every streamed scorer has a record of the item (in the journal this job writes)."""
        return self.journal.complete(item_id)

    def __call__(self, items: list[ReconItem]) -> None:
        """The sink of the reconstruction: score ``items`` and journal the records."""
        ids = [item.item_id for item in items]
        for name, (key, obj) in self.streamed.items():
            records = obj.score(items)
            if len(records) != len(items):
                raise ValueError(f"scorer {name} returned {len(records)} records for "
                                 f"{len(items)} items")
            self.journal.append(key, list(zip(ids, records)))

    def finish(self, outputs: dict[str, str]) -> None:
        """Write every scorer's frames to ``outputs`` (items from the job's ``status.csv``)."""
        items = [item for item in self.ctx.recon_items()]
        for name, (key, obj) in self.streamed.items():
            held = {}
            for journal in self.journals:
                held |= journal.records[key]
            missing = [i.item_id for i in items if i.item_id not in held]
            if missing:
                raise RuntimeError(f"scorer {name} has no record of {len(missing)} items "
                                   f"(e.g. {missing[:3]}): rerun the job")
            _write(obj.finish(items, [held[i.item_id] for i in items]), outputs)
            log.info("scored %s", name)
        for name, (function, options) in self.file_based.items():
            _write(function(self.ctx, options), outputs)
            log.info("scored %s (from the reconstruction files)", name)

    def close(self) -> None:
        """Close every shard's score journal (the job's end, or its failure)."""
        for journal in self.journals:
            journal.close()


def _write(frames: dict, outputs: dict[str, str]) -> None:
    for key, frame in frames.items():
        frame.to_csv(outputs[key], index=False)


def journal_path(recon_dir: Path, shard: int, n_shards: int) -> Path:
    """The score journal of a shard: ``shards/{k}-of-{n}.scores.pkl``."""
    return Path(recon_dir) / "shards" / f"{shard}-of-{n_shards}.scores.pkl"


def run_recon_job(model: str, spec: dict, manifest: str | Path, outputs: dict[str, str],
                  scorers: dict[str, dict], targets: dict[str, str], device: str = "auto",
                  n_shards: int = 1, threads: int = 1, loader: Callable | None = None,
                  keep: int | None = None, **reconstruct) -> pd.DataFrame:
    """Reconstruct a (model, dataset) and run its scorers.

    Args:
        model: the model's config name; ``spec`` its config entry (checkpoint filled in).
        manifest: ``results/datasets/{dataset}/manifest.csv``.
        outputs: rule outputs by name: ``status`` (``results/recon/{model}/{dataset}/
            status.csv``, whose folder receives the kept images) and one per frame the scorers
            return (``image_quality``, ``set``, ``tokens``, ``text_tesseract``...).
        scorers: scorer name -> its options, run in this order.
        targets: scorer name -> ``"module:name"``
            (:meth:`roundtrip.workflow.recon_jobs.ReconJobs.targets`).
        device: ``auto``, ``cpu``, ``cuda``...
        n_shards: shards of the dataset; with more than one, the ``reconstruct_shard`` jobs
            have reconstructed and scored them (:func:`run_shard_job`) and this job finishes.
        threads: workers a scorer may start (OCR processes).
        loader: returns the model's adapter, loaded once (:func:`run_recon_jobs` shares one
            among its datasets); default: a loader of its own.
        keep: reconstructions written as files: the first ``keep`` manifest items (None: all).
        reconstruct: ``batch_size``, ``protocol``, ``size`` of the reconstruction.

    Returns:
        The status rows of the job.

    Raises:
        KeyError: a scorer without a target, or a scorer returns a frame the rule has no
            output for. RuntimeError: a scorer lacks the record of an item (a shard job was
            not run with the same scorers).
    """
    from roundtrip.stages.reconstruct import (load_model, prune_reconstructions,
                                              reconstruct_dataset, resolve_device)

    # loaded at most once, when needed
    load = loader or cache(lambda: load_model(model, spec, device))
    recon_dir = Path(outputs["status"]).parent
    ctx = ReconContext(model, Path(manifest), Path(outputs["status"]), recon_dir,
                       resolve_device(device), load, threads)
    paths = [journal_path(recon_dir, k, n_shards) for k in range(n_shards)]
    scoring = Scoring(ctx, scorers, targets, paths)
    try:
        stream = ({"sink": scoring, "scored": scoring.scored, "threads": threads}
                  if n_shards == 1 else {})
        status = reconstruct_dataset(load, manifest, recon_dir, n_shards,
                                     fingerprint={"model": model, "spec": dict(spec)},
                                     keep=scoring.keep(keep), **stream, **reconstruct)
        log.info("status counts: %s", status["status"].value_counts().to_dict())
        scoring.finish(outputs)
    finally:
        scoring.close()
    # files a file-based scorer needed, or that an earlier run kept
    prune_reconstructions(recon_dir, manifest, keep)
    return status


def run_shard_job(model: str, spec: dict, manifest: str | Path, recon_dir: str | Path,
                  shard: int, n_shards: int, scorers: dict[str, dict], targets: dict[str, str],
                  device: str = "auto", threads: int = 1, keep: int | None = None,
                  **reconstruct) -> pd.DataFrame:
    """Reconstruct and score one shard of a (model, dataset) (rule ``reconstruct_shard``): the
    status file of the shard and the records of its streamed scorers; the job of the whole set
    finishes them (:func:`run_recon_job` with ``n_shards``).

    Args:
        recon_dir: ``results/recon/{model}/{dataset}``.
        shard, n_shards: which shard.
        scorers, targets, device, threads, keep, reconstruct: as :func:`run_recon_job` (the
            same scorers as the job of the whole set, so that their records match).
    """
    from roundtrip.stages.reconstruct import load_model, reconstruct_shard, resolve_device

    recon_dir = Path(recon_dir)
    load = cache(lambda: load_model(model, spec, device))
    ctx = ReconContext(model, Path(manifest), recon_dir / "status.csv", recon_dir,
                       resolve_device(device), load, threads)
    scoring = Scoring(ctx, scorers, targets, [journal_path(recon_dir, shard, n_shards)])
    try:
        return reconstruct_shard(load, manifest, recon_dir, shard, n_shards,
                                 fingerprint={"model": model, "spec": dict(spec)},
                                 keep=scoring.keep(keep), sink=scoring, scored=scoring.scored,
                                 threads=threads, **reconstruct)
    finally:
        scoring.close()


def run_recon_jobs(model: str, spec: dict, jobs: list[dict], device: str = "auto",
                   threads: int = 1, batch_size: int = 8) -> None:
    """A batched job: several small datasets of one model in one process, each exactly as
    :func:`run_recon_job` would do it in a job of its own (same files, same bytes), with the
    model loaded at most once (:meth:`roundtrip.workflow.recon_jobs.ReconJobs.batches`).

    Args:
        model, spec, device, threads: as :func:`run_recon_job`.
        jobs: per dataset, :meth:`~roundtrip.workflow.recon_jobs.ReconJobs.batch_jobs`
            (``dataset``, ``manifest``, ``outputs``, ``scorers``, ``targets``, ``protocol``,
            ``size``, ``keep``); one shard each.
        batch_size: items per forward pass.

    Raises:
        As :func:`run_recon_job`; a dataset's error stops the job (Snakemake then reruns
        it, and the reconstructions already made are resumed, not recomputed).
    """
    from roundtrip.stages.reconstruct import load_model

    load = cache(lambda: load_model(model, spec, device))
    # the job's progress over its sets; each set's items are counted by its own tracker, a part
    # of this one (roundtrip.core.progress)
    with Progress(len(jobs), f"reconstruct {model} on {len(jobs)} sets", unit="sets") as progress:
        for job in jobs:
            log.info("dataset %s", job["dataset"])
            run_recon_job(model, spec, job["manifest"], job["outputs"], job["scorers"],
                          job["targets"], device=device, threads=threads, loader=load,
                          keep=job.get("keep"), batch_size=batch_size,
                          protocol=job["protocol"], size=job["size"])
            progress.add()
