"""Rule segment_original: fit the segmenter on each original volume and segment it."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.segment import build_segmenter
from roundtrip.evals.medibench.structure import segment_originals

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
rows = segment_originals(smk.input.manifest, build_segmenter(smk.params.segmenter),
                         Path(smk.output.status).parent)
rows.to_csv(smk.output.status, index=False)
log.info("status counts: %s", rows["status"].value_counts().to_dict())
