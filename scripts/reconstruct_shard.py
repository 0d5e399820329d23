"""Rule reconstruct_shard: one shard of a (model, dataset) cut into datasets.<name>.shards,
reconstructed and scored (roundtrip.workflow.recon_job.run_shard_job)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.workflow.recon_job import run_shard_job

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
w, p = smk.wildcards, smk.params
try:
    status = run_shard_job(w.model, p.spec, smk.input.manifest,
                           Path(smk.output.status).parent.parent, int(w.shard), int(w.nshards),
                           p.scorers, p.scorer_targets, device=p.device, threads=smk.threads,
                           keep=p.keep, batch_size=p.batch_size, protocol=p.protocol,
                           size=p.size)
finally:
    append_usage(USAGE_LEDGER, f"reconstruct/{w.model}/{w.dataset}/{w.shard}-of-{w.nshards}")
log.info("status counts: %s", status["status"].value_counts().to_dict())
