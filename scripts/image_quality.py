"""Rule image_quality: per-item PSNR/SSIM and set-level pooled PSNR of a (model, dataset)."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.scoring import score_image_quality, set_image_quality
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
per_item = score_image_quality(smk.input.manifest, smk.input.status, Path(smk.input.status).parent)
per_item.to_csv(smk.output.per_item, index=False)
set_image_quality(per_item).to_csv(smk.output.set, index=False)
