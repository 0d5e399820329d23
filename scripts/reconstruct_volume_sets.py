"""Rule reconstruct_volume_sets and its variants: every small volume set of one model (nibabel's
bundled volumes, MONAI's synthetic ones), each reconstructed and scored as its own
reconstruct_volumes job would (roundtrip.evals.medibench.volume_job), with one start-up."""
import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.evals.medibench.volume_job import run_volume_set
from roundtrip.stages.reconstruct import load_model

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
w, p = smk.wildcards, smk.params
model = load_model(w.model, p.spec, p.device)
log.info("model %s on %s; versions %s", w.model, model.device, versions())
for job in p.sets:
    log.info("volume set %s", job["dataset"])
    run_volume_set(model, w.model, p.spec, job["manifest"], job["outputs"], job["seg_status"],
                   job["seg_dir"], job["settings"])
