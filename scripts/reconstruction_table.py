"""Rule reconstruction_table: PSNR, SSIM, LPIPS, FID, KID per model and dataset, one table per
VTBench Table 1 setting (model size, 1024 x 1024, native size)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import (
    SETTINGS,
    reconstruction_columns,
    weighted_metrics,
)
from roundtrip.tables import build_table, metric_files, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = metric_files({"item": smk.input.per_item, "set": smk.input.set,
                      "lpips": smk.input.lpips, "distribution": smk.input.distribution})
# a metric without its weights is one note under the table, not a column of n/a per dataset
lpips, fid, notes = weighted_metrics(smk.params.lpips, smk.params.fid,
                                     dict(smk.params.unavailable))
for name, datasets in dict(smk.params.tables).items():
    columns = reconstruction_columns(datasets, smk.params.protocols, lpips=lpips, fid=fid)
    title = SETTINGS[name.removeprefix("reconstruction_")][1]
    table = build_table(name, title, smk.params.models, columns, files, smk.params.bootstrap,
                        not_run=dict(smk.params.not_run))
    table.notes = notes
    write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
