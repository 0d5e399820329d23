"""The job of one (model, dataset) pair: reconstruct every image, then score the pair.

Everything that reads the same reconstructions runs in this one process, so that a pair costs
one Python and torch start-up, not one per metric: the reconstruction stage
(:func:`roundtrip.stages.reconstruct.reconstruct_dataset`, resumable, so a rerun for a new metric
reconstructs nothing) and then every per-pair scorer the plan assigns to the dataset
(:meth:`roundtrip.workflow.plan.Plan.pair_scorers`). Scorers belong to their evaluation: each
evaluation package declares ``PAIR_SCORERS`` (name -> ``module:function``); a scorer function
takes ``(ctx: PairContext, options)`` and returns ``{output name: frame}``, and each frame is
written to the rule's output of that name.
"""
from __future__ import annotations

import importlib
import logging
from functools import cache
from pathlib import Path

import pandas as pd

from roundtrip.core.pairs import PairContext
from roundtrip.evals import chd, medibench, vtbench

log = logging.getLogger(__name__)

#: Per-pair scorers of every evaluation, in the order they run: name -> ``module:function``.
SCORERS: dict[str, str] = {**vtbench.PAIR_SCORERS, **chd.PAIR_SCORERS, **medibench.PAIR_SCORERS}


def scorer(name: str):
    """The scorer function registered as ``name``.

    Raises:
        KeyError: no evaluation registers ``name`` (the message lists those that do).
    """
    if name not in SCORERS:
        raise KeyError(f"no per-pair scorer {name!r}; known: {sorted(SCORERS)}")
    module, func = SCORERS[name].split(":")
    return getattr(importlib.import_module(module), func)


def run_pair(model: str, spec: dict, manifest: str | Path, outputs: dict[str, str],
             scorers: dict[str, dict], device: str = "auto", n_shards: int = 1,
             threads: int = 1, **reconstruct) -> pd.DataFrame:
    """Reconstruct a (model, dataset) and run its scorers.

    Args:
        model: the model's config name; ``spec`` its config entry (checkpoint filled in).
        manifest: ``results/datasets/{dataset}/manifest.csv``.
        outputs: rule outputs by name: ``status`` (``results/recon/{model}/{dataset}/
            status.csv``, whose folder receives the images) and one per frame the scorers
            return (``image_quality``, ``set``, ``tokens``, ``text_tesseract``...).
        scorers: scorer name -> its options (:data:`SCORERS`), run in this order.
        device: ``auto``, ``cpu``, ``cuda``...
        n_shards: shards of the dataset
            (:func:`~roundtrip.stages.reconstruct.reconstruct_dataset`).
        threads: workers a scorer may start (OCR processes).
        reconstruct: ``batch_size``, ``protocol``, ``size`` of the reconstruction.

    Returns:
        The status rows of the pair.

    Raises:
        KeyError: an unknown scorer, or a scorer returns a frame the rule has no output for.
    """
    from roundtrip.stages.reconstruct import load_model, reconstruct_dataset, resolve_device

    load = cache(lambda: load_model(model, spec, device))  # loaded at most once, when needed
    recon_dir = Path(outputs["status"]).parent
    status = reconstruct_dataset(load, manifest, recon_dir, n_shards,
                                 fingerprint={"model": model, "spec": dict(spec)}, **reconstruct)
    log.info("status counts: %s", status["status"].value_counts().to_dict())
    ctx = PairContext(model, Path(manifest), Path(outputs["status"]), recon_dir,
                      resolve_device(device), load, threads)
    for name, options in scorers.items():
        for key, frame in scorer(name)(ctx, options).items():
            frame.to_csv(outputs[key], index=False)
        log.info("scored %s", name)
    return status
