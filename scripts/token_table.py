"""Rule token_table: CHD (set level) and CMMS (per item) per model and dataset."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.chd.tables import table_notes, token_columns
from roundtrip.tables import build_table, metric_files, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = metric_files({"tokens": smk.input.per_item, "token_set": smk.input.set})
title = (f"Token-space metrics in the tokens of {smk.params.reference} at "
         f"{smk.params.size}x{smk.params.size}: CHD (references vs reconstructions) and CMMS")
table = build_table("token_metrics", title, smk.params.models,
                    token_columns(smk.params.datasets), files, smk.params.bootstrap,
                    not_run=dict(smk.params.not_run))
table.notes += table_notes(smk.params.cmms_datasets, smk.params.datasets,
                           smk.params.allow_overlap, smk.params.training)
write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
