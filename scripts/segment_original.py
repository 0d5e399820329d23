"""Rules segment_original and segment_original_sets: fit the segmenter on each original volume
of each set of ``params.sets`` and segment it."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.medibench.segment import build_segmenter
from roundtrip.evals.medibench.structure import segment_originals

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
segmenter = build_segmenter(smk.params.segmenter)
for job in smk.params.sets:
    rows = segment_originals(job["manifest"], segmenter, Path(job["status"]).parent)
    rows.to_csv(job["status"], index=False)
    log.info("%s: status counts %s", job["dataset"], rows["status"].value_counts().to_dict())
