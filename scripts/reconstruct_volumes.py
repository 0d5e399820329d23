"""Rules reconstruct_volumes(_latent_utility): every volume of a (model, dataset), slice-wise or
natively in 3D, then its fidelity (PSNR, 3D SSIM) and structure (SegSim, Dice, HD95, SegQC), and
on labeled sets the latent utility of the model: MediBench's pillars in one job, since all read
the same volumes with the same model."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.evals.medibench.latent_utility import latent_utility
from roundtrip.evals.medibench.segment import build_segmenter
from roundtrip.evals.medibench.structure import score_volumes
from roundtrip.stages.reconstruct import load_model
from roundtrip.stages.volumes import reconstruct_volume_set

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
w, p = smk.wildcards, smk.params
model = load_model(w.model, p.spec, p.device)
log.info("model %s on %s; versions %s", w.model, model.device, versions())
recon_dir = Path(smk.output.status).parent
status = reconstruct_volume_set(model, smk.input.manifest, recon_dir, axis=p.axis,
                                batch_size=p.slice_batch, roi_size=p.roi_size,
                                fingerprint={"model": w.model, "spec": dict(p.spec)})
status.to_csv(smk.output.status, index=False)
log.info("status counts: %s", status["status"].value_counts().to_dict())
quality, structure = score_volumes(
    smk.input.manifest, smk.output.status, recon_dir, Path(smk.input.seg_status).parent,
    smk.input.seg_status, build_segmenter(p.segmenter), p.seg_dir)
quality.to_csv(smk.output.image_quality, index=False)
structure.to_csv(smk.output.structure, index=False)
log.info("fidelity: %s", quality.get("psnr", quality["status"]).describe().to_dict())
if "latent_utility" in smk.output.keys():
    rows = latent_utility(smk.input.manifest, "volume", dict(p.latent), model)
    rows.to_csv(smk.output.latent_utility, index=False)
    log.info("\n%s", rows.to_string())
