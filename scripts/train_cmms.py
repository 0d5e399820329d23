"""Rule train_cmms: the CMMS regressor for a reference tokenizer (cached, seeded)."""
import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging, versions
from roundtrip.evals.chd import cmms
from roundtrip.evals.chd.training import ImageFiles
from roundtrip.models import build_model
from roundtrip.stages.reconstruct import resolve_device

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
device = resolve_device(smk.params.device)
tokenizer = build_model(smk.wildcards.reference, smk.params.spec).to(device)
images = ImageFiles(smk.input.manifests)  # read as crops are drawn, not all at once
s = dict(smk.params.settings)
log.info("CMMS for %s; versions %s", smk.wildcards.reference, versions())
model, history = cmms.fit_cmms(tokenizer, images, smk.params.size, s, device,
                               layout=smk.params.layout)
cmms.save_cmms(model, smk.output[0], {"reference": smk.wildcards.reference,
                                      "size": smk.params.size, "settings": s,
                                      "layout": smk.params.layout,
                                      "loss_first": history[:20], "loss_last": history[-20:]})
