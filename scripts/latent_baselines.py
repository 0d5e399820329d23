"""Rule latent_baselines: the image baselines of latent utility (MediBench Sec. 3.2, Pillar 3) for one
labeled medical dataset: raw pixels, ResNet-18 features in 2D, SEResNet features in 3D."""
import _bootstrap  # noqa: F401

from roundtrip.core.compute import configure_torch
from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.latent_utility import latent_utility

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
log.info("compute: %s", configure_torch(smk.config, smk.threads))
settings = dict(smk.params.settings)
baselines = {"resnet18_weights": smk.input.resnet18[0] if smk.input.resnet18 else None,
             "resnet18_missing": smk.params.resnet18_missing,
             "seresnet_weights": settings.get("cnn_3d_weights")}
rows = latent_utility(smk.input.manifest, smk.params.kind, settings, None, baselines)
rows.to_csv(smk.output[0], index=False)
log.info("\n%s", rows.to_string())
