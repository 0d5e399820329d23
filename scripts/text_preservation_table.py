"""Rule text_preservation_table: CER/WER per model and text dataset (VTBench Table 3 layout)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import text_columns
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.tables import build_table, write_table

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
has_gt, cer_only = text_dataset_kinds(dict(zip(smk.params.datasets, smk.input.manifests)),
                                      smk.params.langs)
files = {(Path(p).parent.parent.name, Path(p).parent.name, "item"): p for p in smk.input.per_item}
table = build_table("text_preservation",
                    f"Text preservation: CER/WER of OCR ({smk.params.ocr}) of reconstructions "
                    "vs OCR of originals (and vs ground truth)",
                    smk.params.models, text_columns(has_gt, cer_only), files, smk.params.bootstrap,
                    not_run=dict(smk.params.not_run))
write_table(table, Path(smk.output[0]).parent)
