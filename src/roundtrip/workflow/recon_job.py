"""The job of one (model, dataset): reconstruct every image, then score the reconstructions.

Everything that reads the same reconstructions runs in this one process, so that a (model,
dataset) costs one Python and torch start-up, not one per metric: the reconstruction stage
(:func:`roundtrip.stages.reconstruct.reconstruct_dataset`, resumable, so a rerun for a new metric
reconstructs nothing) and then every reconstruction scorer the plan assigns to the dataset
(:meth:`roundtrip.workflow.recon_jobs.ReconJobs.scorers`). Scorers belong to their evaluation: each
evaluation's spec declares ``recon_scorers`` (name -> ``module:function``,
:class:`roundtrip.core.evaluation.Evaluation`); a scorer function takes ``(ctx: ReconContext,
options)`` and returns ``{output name: frame}``, and each frame is written to the rule's output
of that name.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pandas as pd

from roundtrip.core.recon_items import ReconContext

log = logging.getLogger(__name__)


def scorer(target: str):
    """The scorer function at ``"module:function"`` (an evaluation's ``recon_scorers`` value).

    Raises:
        ImportError, AttributeError: the target does not exist.
    """
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def run_recon_job(model: str, spec: dict, manifest: str | Path, outputs: dict[str, str],
                  scorers: dict[str, dict], targets: dict[str, str], device: str = "auto",
                  n_shards: int = 1, threads: int = 1, loader: Callable | None = None,
                  **reconstruct) -> pd.DataFrame:
    """Reconstruct a (model, dataset) and run its scorers.

    Args:
        model: the model's config name; ``spec`` its config entry (checkpoint filled in).
        manifest: ``results/datasets/{dataset}/manifest.csv``.
        outputs: rule outputs by name: ``status`` (``results/recon/{model}/{dataset}/
            status.csv``, whose folder receives the images) and one per frame the scorers
            return (``image_quality``, ``set``, ``tokens``, ``text_tesseract``...).
        scorers: scorer name -> its options, run in this order.
        targets: scorer name -> ``"module:function"``
            (:meth:`roundtrip.workflow.recon_jobs.ReconJobs.targets`).
        device: ``auto``, ``cpu``, ``cuda``...
        n_shards: shards of the dataset
            (:func:`~roundtrip.stages.reconstruct.reconstruct_dataset`).
        threads: workers a scorer may start (OCR processes).
        loader: returns the model's adapter, loaded once (:func:`run_recon_jobs` shares one
            among its datasets); default: a loader of its own.
        reconstruct: ``batch_size``, ``protocol``, ``size`` of the reconstruction.

    Returns:
        The status rows of the job.

    Raises:
        KeyError: a scorer without a target, or a scorer returns a frame the rule has no
            output for.
    """
    from roundtrip.stages.reconstruct import load_model, reconstruct_dataset, resolve_device

    # loaded at most once, when needed
    load = loader or cache(lambda: load_model(model, spec, device))
    recon_dir = Path(outputs["status"]).parent
    status = reconstruct_dataset(load, manifest, recon_dir, n_shards,
                                 fingerprint={"model": model, "spec": dict(spec)}, **reconstruct)
    log.info("status counts: %s", status["status"].value_counts().to_dict())
    ctx = ReconContext(model, Path(manifest), Path(outputs["status"]), recon_dir,
                       resolve_device(device), load, threads)
    for name, options in scorers.items():
        for key, frame in scorer(targets[name])(ctx, options).items():
            frame.to_csv(outputs[key], index=False)
        log.info("scored %s", name)
    return status


def run_recon_jobs(model: str, spec: dict, jobs: list[dict], device: str = "auto",
                   threads: int = 1, batch_size: int = 8) -> None:
    """A batched job: several small datasets of one model in one process, each exactly as
    :func:`run_recon_job` would do it in a job of its own (same files, same bytes), with the
    model loaded at most once (:meth:`roundtrip.workflow.recon_jobs.ReconJobs.batches`).

    Args:
        model, spec, device, threads: as :func:`run_recon_job`.
        jobs: per dataset, :meth:`~roundtrip.workflow.recon_jobs.ReconJobs.batch_jobs`
            (``dataset``, ``manifest``, ``outputs``, ``scorers``, ``targets``, ``protocol``,
            ``size``); one shard each.
        batch_size: items per forward pass.

    Raises:
        As :func:`run_recon_job`; a dataset's error stops the job (Snakemake then reruns
        it, and the reconstructions already made are resumed, not recomputed).
    """
    from roundtrip.stages.reconstruct import load_model

    load = cache(lambda: load_model(model, spec, device))
    for job in jobs:
        log.info("dataset %s", job["dataset"])
        run_recon_job(model, spec, job["manifest"], job["outputs"], job["scorers"],
                      job["targets"], device=device, threads=threads, loader=load,
                      batch_size=batch_size, protocol=job["protocol"], size=job["size"])
