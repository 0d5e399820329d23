"""Rule reconstruct and its variants: one (model, dataset) through the model, then every
reconstruction scorer the plan assigns to the dataset (roundtrip.workflow.recon_job)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.workflow.recon_job import run_recon_job

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
log.info("model %s; versions %s", smk.wildcards.model, versions())
p = smk.params
try:
    run_recon_job(smk.wildcards.model, p.spec, smk.input.manifest, dict(smk.output.items()),
                  p.scorers, p.scorer_targets, device=p.device, n_shards=p.shards,
                  threads=smk.threads, keep=p.keep, batch_size=p.batch_size,
                  protocol=p.protocol, size=p.size)
finally:
    append_usage(USAGE_LEDGER, f"reconstruct/{smk.wildcards.model}/{smk.wildcards.dataset}")
