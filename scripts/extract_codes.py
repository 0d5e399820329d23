"""Rule extract_codes: tokens.npz and latents.npz of a (model, dataset), on request."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.stages.codes import extract_codes
from roundtrip.stages.reconstruct import load_model

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
model = load_model(smk.wildcards.model, smk.params.spec, smk.params.device)
df = extract_codes(model, smk.input.manifest, Path(smk.output.tokens).parent,
                   protocol=smk.params.protocol, size=smk.params.size,
                   batch_size=smk.params.batch_size)
log.info("codes: %s", df["status"].value_counts().to_dict())
