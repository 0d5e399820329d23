"""Rule detail_table: detail statistics per dataset (VTBench Table 4 layout)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import detail_columns
from roundtrip.tables import build_table, write_table

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = {(d, "originals", "item"): p for d, p in zip(smk.params.datasets, smk.input)}
table = build_table("detail_statistics", "Detail statistics of the original images "
                    "(VTBench App. D; definitions in roundtrip.metrics.detail)",
                    smk.params.datasets, detail_columns(), files, smk.params.bootstrap,
                    row_label="Dataset")
write_table(table, Path(smk.output[0]).parent)
