"""Rule train_tokenizer: train a small tokenizer on crops of the configured datasets."""
import json

import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.core.manifest import read_ok_images
from roundtrip.stages.train import train_small_tokenizer

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
images = read_ok_images(smk.input)
settings = dict(smk.params.train)
settings.pop("datasets")
summary = train_small_tokenizer(smk.params.spec, images, smk.output[0], **settings)
log.info("trained %s: %s", smk.wildcards.model, json.dumps(summary))
