"""Rule reconstruct_shard: one shard of a (model, dataset) cut into datasets.<name>.shards."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.stages.reconstruct import load_model, reconstruct_shard

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
w, p = smk.wildcards, smk.params
try:
    status = reconstruct_shard(
        lambda: load_model(w.model, p.spec, p.device), smk.input.manifest,
        Path(smk.output.status).parent.parent, shard=int(w.shard), n_shards=int(w.nshards),
        batch_size=p.batch_size, fingerprint={"model": w.model, "spec": dict(p.spec)},
        protocol=p.protocol, size=p.size)
finally:
    append_usage(USAGE_LEDGER, f"reconstruct/{w.model}/{w.dataset}/{w.shard}-of-{w.nshards}")
log.info("status counts: %s", status["status"].value_counts().to_dict())
