"""Rule build_dataset: write results/datasets/{dataset}/manifest.csv and its images."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.datasets import build_dataset
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
build_dataset(smk.wildcards.dataset, smk.params.spec, Path(smk.output[0]).parent)
