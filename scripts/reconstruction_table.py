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
columns = reconstruction_columns(smk.params.datasets, smk.params.protocols,
                                 lpips=smk.params.lpips, fid=smk.params.fid)
table = build_table("reconstruction", "Reconstruction quality by dataset (protocol)",
                    smk.params.models, columns, files, smk.params.bootstrap,
                    unavailable=dict(smk.params.unavailable),
                    not_run=dict(smk.params.not_run))
write_table(table, Path(smk.output[0]).parent)
