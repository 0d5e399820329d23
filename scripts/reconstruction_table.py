"""Rule reconstruction_table: PSNR, SSIM, LPIPS, FID, KID per model and dataset (protocol)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import reconstruction_columns
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
left_out = [(label, unavailable[kind]) for on, kind, label in
            ((smk.params.lpips, "lpips", "LPIPS"), (smk.params.fid, "distribution", "FID, KID"))
            if on and kind in unavailable]
columns = reconstruction_columns(smk.params.datasets, smk.params.protocols,
                                 lpips=smk.params.lpips and "lpips" not in unavailable,
                                 fid=smk.params.fid and "distribution" not in unavailable)
table = build_table("reconstruction", "Reconstruction quality by dataset (protocol)",
                    smk.params.models, columns, files, smk.params.bootstrap,
                    not_run=dict(smk.params.not_run))
table.notes = [f"{label} not shown, {reason}" for label, reason in left_out]
write_table(table, Path(smk.output[0]).parent)
