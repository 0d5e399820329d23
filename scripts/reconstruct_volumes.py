"""Rules reconstruct_volumes(_latent_utility) and reconstruct_volume_sets: every volume of a
(model, dataset), slice-wise or natively in 3D, then its fidelity (PSNR, 3D SSIM) and structure
(SegSim, Dice, HD95, SegQC), and on labeled sets the latent utility of the model: MediBench's
pillars in one job, since all read the same volumes with the same model
(roundtrip.evals.medibench.volume_job). The batched rule does this for each small volume set of
one model (params.sets), with one start-up."""
import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.core.progress import Progress
from roundtrip.evals.medibench.volume_job import run_volume_set
from roundtrip.stages.reconstruct import load_model

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
w, p = smk.wildcards, smk.params
with Progress(len(p.sets), f"reconstruct {w.model} on the volumes of "
              f"{', '.join(job['dataset'] for job in p.sets)}", unit="sets") as progress:
    model = load_model(w.model, p.spec, p.device)
    log.info("model %s on %s; versions %s", w.model, model.device, versions())
    for job in p.sets:
        log.info("volume set %s", job["dataset"])
        run_volume_set(model, w.model, p.spec, job["manifest"], job["outputs"],
                       job["seg_status"], job["seg_dir"], job["settings"])
        progress.add()
