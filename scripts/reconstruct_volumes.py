"""Rule reconstruct_volumes: every volume of a (model, dataset), slice-wise or natively in 3D."""
import _bootstrap  # noqa: F401

import torch

from roundtrip.medical.harness import reconstruct_volume_set
from roundtrip.reconstruct import load_model
from roundtrip.workflow import setup_logging, versions

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
torch.set_num_threads(smk.threads)
model = load_model(smk.wildcards.model, smk.params.spec, smk.params.device)
log.info("model %s on %s; versions %s", smk.wildcards.model, model.device, versions())
status = reconstruct_volume_set(
    model, smk.input.manifest, f"results/recon/{smk.wildcards.model}/{smk.wildcards.dataset}",
    axis=smk.params.axis, batch_size=smk.params.slice_batch, roi_size=smk.params.roi_size,
    fingerprint={"model": smk.wildcards.model, "spec": dict(smk.params.spec)},
)
status.to_csv(smk.output.status, index=False)
log.info("status counts: %s", status["status"].value_counts().to_dict())
