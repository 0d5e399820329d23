"""Rule reconstruction_table: PSNR, SSIM, LPIPS, FID, KID per model and dataset, one table per
VTBench Table 1 setting (model size, 1024 x 1024, native size)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import (
    SETTINGS,
    reconstruction_columns,
    weighted_metric_notes,
)
from roundtrip.tables import build_table, write_table

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = {}
for kind, paths in (("item", smk.input.per_item), ("set", smk.input.set),
                    ("lpips", smk.input.lpips), ("distribution", smk.input.distribution)):
    for p in map(Path, paths):  # results/metrics/{model}/{dataset}/<file>
        files[(p.parent.parent.name, p.parent.name, kind)] = str(p)
unavailable = dict(smk.params.unavailable)  # file kind -> why its metric could not run
# a metric without its weights is one note under the table, not a column of n/a per dataset
notes = weighted_metric_notes(smk.params.lpips, smk.params.fid, unavailable)
for name, datasets in dict(smk.params.tables).items():
    columns = reconstruction_columns(datasets, smk.params.protocols,
                                     lpips=smk.params.lpips and "lpips" not in unavailable,
                                     fid=smk.params.fid and "distribution" not in unavailable)
    title = SETTINGS[name.removeprefix("reconstruction_")][1]
    table = build_table(name, title, smk.params.models, columns, files, smk.params.bootstrap,
                        not_run=dict(smk.params.not_run))
    table.notes = notes
    write_table(table, Path(smk.output[0]).parent)
