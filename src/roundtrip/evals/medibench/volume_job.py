"""One (model, volume set) job of MediBench: reconstruction, fidelity, structure and, on labelled
sets, latent utility, all with the model loaded once.

Rule ``reconstruct_volumes`` runs :func:`run_volume_set` once; the batched rule
``reconstruct_volume_sets`` runs it for each small volume set of a model in one process
(:meth:`roundtrip.evals.medibench.plan.MedicalPlan.volume_batches`; both through
``scripts/reconstruct_volumes.py``), with the same files and bytes, since every step is seeded
by the config and not by what ran before in the process.
"""
from __future__ import annotations

import logging
from pathlib import Path

from roundtrip.evals.medibench.latent_utility import latent_utility
from roundtrip.evals.medibench.segment import build_segmenter
from roundtrip.evals.medibench.structure import score_volumes
from roundtrip.stages.volumes import reconstruct_volume_set

log = logging.getLogger(__name__)


def run_volume_set(model, model_name: str, spec: dict, manifest: str, outputs: dict,
                   seg_status: str, seg_dir: str, settings: dict) -> None:
    """Reconstruct every volume of a set and write its scores.

    Args:
        model: the loaded :class:`roundtrip.models.base.Adapter`.
        model_name: its config name (recorded in the reconstructions' fingerprint).
        spec: its config entry.
        manifest: the set's ``manifest.csv``.
        outputs: ``status``, ``image_quality``, ``structure`` CSV paths, and
            ``latent_utility`` on labelled sets
            (:meth:`~roundtrip.evals.medibench.plan.MedicalPlan.volume_outputs`); the
            reconstructions go beside ``status``.
        seg_status: the segmenter's status file for the originals (its masks beside it).
        seg_dir: where the reconstructions' masks go.
        settings: ``axis``, ``slice_batch``, ``roi_size``, ``segmenter`` (config ``medical``)
            and ``latent`` (:meth:`~roundtrip.evals.medibench.plan.MedicalPlan.latent_settings`).
    """
    recon_dir = Path(outputs["status"]).parent
    status = reconstruct_volume_set(model, manifest, recon_dir, axis=settings["axis"],
                                    batch_size=settings["slice_batch"],
                                    roi_size=settings["roi_size"],
                                    fingerprint={"model": model_name, "spec": dict(spec)})
    status.to_csv(outputs["status"], index=False)
    log.info("%s: status counts %s", manifest, status["status"].value_counts().to_dict())
    quality, structure = score_volumes(
        manifest, outputs["status"], recon_dir, Path(seg_status).parent, seg_status,
        build_segmenter(settings["segmenter"]), seg_dir)
    quality.to_csv(outputs["image_quality"], index=False)
    structure.to_csv(outputs["structure"], index=False)
    log.info("fidelity: %s", quality.get("psnr", quality["status"]).describe().to_dict())
    if "latent_utility" in outputs:
        rows = latent_utility(manifest, "volume", dict(settings["latent"]), model)
        rows.to_csv(outputs["latent_utility"], index=False)
        log.info("\n%s", rows.to_string())
