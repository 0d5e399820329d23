"""Rule segment_original: fit the segmenter on each original volume and segment it."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.medical.harness import segment_originals
from roundtrip.medical.segment import build_segmenter
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
rows = segment_originals(smk.input.manifest, build_segmenter(smk.params.segmenter),
                         Path(smk.output.status).parent)
rows.to_csv(smk.output.status, index=False)
log.info("status counts: %s", rows["status"].value_counts().to_dict())
