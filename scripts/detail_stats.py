"""Rule detail_stats: VTBench App. D detail statistics of a dataset's originals."""
import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.detail import score_detail

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
score_detail(smk.input.manifest).to_csv(smk.output[0], index=False)
