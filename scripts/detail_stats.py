"""Rule detail_stats: VTBench App. D detail statistics of a dataset's originals."""
import _bootstrap  # noqa: F401

from roundtrip.metrics.detail import score_detail
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
score_detail(smk.input.manifest).to_csv(smk.output[0], index=False)
