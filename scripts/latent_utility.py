"""Rule latent_utility: classifiers on a model's latents, or (model "original") on the image
baselines, for one labeled medical dataset."""
import _bootstrap  # noqa: F401

import torch

from roundtrip.medical.harness import latent_utility
from roundtrip.reconstruct import load_model
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
torch.set_num_threads(smk.threads)
model = None
if smk.params.spec is not None:
    model = load_model(smk.wildcards.model, smk.params.spec, smk.params.device)
settings = dict(smk.params.settings)
baselines = {"resnet18_weights": smk.input.resnet18[0] if smk.input.resnet18 else None,
             "resnet18_missing": smk.params.resnet18_missing,
             "seresnet_weights": settings.get("cnn_3d_weights")}
rows = latent_utility(smk.input.manifest, smk.params.kind, settings, model, baselines)
rows.to_csv(smk.output[0], index=False)
log.info("\n%s", rows.to_string())
