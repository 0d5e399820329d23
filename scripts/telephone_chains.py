"""Rule telephone_chains: the chains of one (pair, set), generation by generation, scored by
every backbone (and by GenEval's rules on GenEval prompt sets)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.evals.telephone.job import run_job
from roundtrip.evals.telephone.unified import build_pair

smk = snakemake  # noqa: F821 - injected by Snakemake
w, p = smk.wildcards, smk.params
log = setup_logging(smk.log[0])
if p.pair and (p.pair.get("tokenizer") or p.pair.get("type") == "diffusers"):
    # a network runs: torch's threads and kernels follow the reproducibility mode
    log.info("compute: %s", configure_torch(smk.config, smk.threads))
pair = build_pair(w.pair, p.pair, p.device) if p.pair else None
try:
    similarity, mgg = run_job(pair, smk.input.manifest, p.dataset_type, p.chain_root, p.chains,
                              p.generations, p.backbones, p.mgg, p.seed, p.device)
finally:
    append_usage(USAGE_LEDGER, f"telephone/{w.pair}/{w.dataset}")
similarity.to_csv(smk.output.similarity, index=False)
mgg.to_csv(smk.output.mgg, index=False)
ok = similarity[similarity["status"] == "ok"]
log.info("%s on %s: %d similarity values (%d not ok), mean %.4f; %d MGG verdicts",
         w.pair, w.dataset, len(ok), len(similarity) - len(ok), ok["similarity"].mean(), len(mgg))
