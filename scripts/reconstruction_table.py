"""Rule reconstruction_table: PSNR and SSIM per model (rows) and dataset (column groups)."""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.tables import build_table, reconstruction_columns, write_table
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = {}
for kind, paths in (("item", smk.input.per_item), ("set", smk.input.set)):
    for p in map(Path, paths):  # results/metrics/{model}/{dataset}/<file>
        files[(p.parent.parent.name, p.parent.name, kind)] = str(p)
table = build_table("reconstruction", "Reconstruction quality by dataset (protocol)",
                    smk.params.models,
                    reconstruction_columns(smk.params.datasets, smk.params.protocols), files,
                    smk.params.bootstrap)
write_table(table, Path(smk.output[0]).parent)
