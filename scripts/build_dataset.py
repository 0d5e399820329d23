"""Rule build_dataset: write results/datasets/{dataset}/manifest.csv and its images."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.datasets import build_dataset

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
try:
    build_dataset(smk.wildcards.dataset, smk.params.spec, Path(smk.output[0]).parent)
finally:  # what was paid for is recorded even when the job fails
    append_usage(USAGE_LEDGER, f"build_dataset/{smk.wildcards.dataset}")
