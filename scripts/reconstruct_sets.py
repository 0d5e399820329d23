"""Rule reconstruct_sets and its variants: every small packaged set of one model, each
reconstructed and scored as its own job would (roundtrip.workflow.recon_job.run_recon_jobs)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.workflow.recon_job import run_recon_jobs

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
log.info("model %s; versions %s", smk.wildcards.model, versions())
p = smk.params
try:
    run_recon_jobs(smk.wildcards.model, p.spec, p.jobs, device=p.device, threads=smk.threads,
                   batch_size=p.batch_size)
finally:
    append_usage(USAGE_LEDGER, f"{smk.rule}/{smk.wildcards.model}")
