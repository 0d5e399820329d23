"""Rule merge_status: concatenate shard status files into status.csv."""
import _bootstrap  # noqa: F401

from roundtrip.datasets import merge_status
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
merge_status(list(smk.input), smk.output[0])
