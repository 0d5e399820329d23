"""Rules telephone_chains and telephone_chains_sets: the chains of each (pair, set) of
``params.jobs``, generation by generation, scored by every backbone (and by MGG's verdicts on
GenEval prompt sets)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.core.progress import Progress
from roundtrip.evals.telephone.job import run_job
from roundtrip.evals.telephone.unified import IN_PROCESS_TYPES, build_pair

smk = snakemake  # noqa: F821 - injected by Snakemake
p, dataset = smk.params, smk.wildcards.dataset
log = setup_logging(smk.log[0])
if any(job["spec"] and (job["spec"].get("tokenizer")
                        or job["spec"].get("type") in IN_PROCESS_TYPES) for job in p.jobs):
    # a network runs: torch's threads and kernels follow the reproducibility mode
    log.info("compute: %s", configure_torch(smk.config, smk.threads))
with Progress(len(p.jobs), f"chains of {', '.join(job['pair'] for job in p.jobs)} on {dataset}",
              unit="pairs") as progress:
    for job in p.jobs:
        name = job["pair"]
        pair = build_pair(name, job["spec"], p.device) if job["spec"] else None
        try:
            similarity, mgg = run_job(pair, smk.input.manifest, p.dataset_type,
                                      job["chain_root"], p.chains, p.generations, p.backbones,
                                      p.mgg, p.seed, p.device)
        finally:
            append_usage(USAGE_LEDGER, f"telephone/{name}/{dataset}")
        similarity.to_csv(job["similarity"], index=False)
        mgg.to_csv(job["mgg"], index=False)
        ok = similarity[similarity["status"] == "ok"]
        log.info("%s on %s: %d similarity values (%d not ok), mean %.4f; %d MGG verdicts",
                 name, dataset, len(ok), len(similarity) - len(ok), ok["similarity"].mean(),
                 len(mgg))
        progress.add()
