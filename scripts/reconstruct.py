"""Rule reconstruct: one (model, dataset, shard) through the model's adapter."""
import _bootstrap  # noqa: F401
from pathlib import Path

import torch

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.reconstruct import load_model, reconstruct_shard
from roundtrip.workflow import setup_logging, versions

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
torch.set_num_threads(smk.threads)
model = load_model(smk.wildcards.model, smk.params.spec, smk.params.device)
log.info("model %s on %s; versions %s", smk.wildcards.model, model.device, versions())
try:
    status = reconstruct_shard(
        model, smk.input.manifest, Path(smk.output.status).parent.parent,
        shard=int(smk.wildcards.shard), n_shards=int(smk.wildcards.nshards),
        batch_size=smk.params.batch_size,
        fingerprint={"model": smk.wildcards.model, "spec": dict(smk.params.spec)},
        protocol=smk.params.protocol, size=smk.params.size,
    )
finally:
    append_usage(USAGE_LEDGER, f"reconstruct/{smk.wildcards.model}/{smk.wildcards.dataset}")
log.info("status counts: %s", status["status"].value_counts().to_dict())
