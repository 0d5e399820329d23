"""Rule volume_metrics: 3D PSNR/SSIM and structure (SegSim, Dice, HD95, SegQC) per volume."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.medical.harness import score_volumes
from roundtrip.medical.segment import build_segmenter
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
quality, structure = score_volumes(
    smk.input.manifest, smk.input.status, Path(smk.input.status).parent,
    Path(smk.input.seg_status).parent, smk.input.seg_status,
    build_segmenter(smk.params.segmenter), smk.params.seg_dir)
quality.to_csv(smk.output.per_item, index=False)
structure.to_csv(smk.output.structure, index=False)
log.info("fidelity: %s", quality.get("psnr", quality["status"]).describe().to_dict())
