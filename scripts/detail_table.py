"""Rule detail_table: VTBench App. D detail statistics of every dataset's originals
(``results/metrics/original/{dataset}/detail.csv``) and their table (Table 4 layout)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.detail import score_detail
from roundtrip.evals.vtbench.tables import detail_columns
from roundtrip.tables import build_table, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = {}
for d, manifest, out in zip(smk.params.datasets, smk.input.manifests, smk.output.detail):
    score_detail(manifest).to_csv(out, index=False)
    files[(d, "originals", "item")] = out
table = build_table("detail_statistics", "Detail statistics of the original images "
                    "(VTBench App. D; definitions in roundtrip.metrics.detail)",
                    smk.params.datasets, detail_columns(), files, smk.params.bootstrap,
                    row_label="Dataset")
write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
