"""Rule ocr_robustness_table: CER/WER per model under each OCR engine, per text dataset
(VTBench Table 5), and Kendall's tau between the engines' model rankings per dataset."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.ocr_robustness import (
    agreement_per_dataset,
    engine_of,
    headline_metrics,
    robustness_columns,
    robustness_key,
)
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.tables import build_table, to_csv_frame, write_frame, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
datasets, engines = list(smk.params.datasets), dict(smk.params.engines)  # dataset -> engines
_, cer_only = text_dataset_kinds(dict(zip(datasets, smk.input.manifests)), smk.params.langs)
released = set(smk.params.released)
files = {}
# results/metrics/{model}/{dataset}/text_{engine}.csv and text_set_{engine}.csv
for kind, paths in (("item", smk.input.per_item), ("text_set", smk.input.text_set)):
    for p in map(Path, paths):
        files[(p.parent.parent.name, robustness_key(p.parent.name, engine_of(p)), kind)] = str(p)
not_run = {(m, robustness_key(d, e)): reason for (m, d), reason in dict(smk.params.not_run).items()
           for e in engines[d]}
columns = robustness_columns(datasets, engines, cer_only, released)
table = build_table("ocr_robustness",
                    "OCR robustness: CER/WER of reconstructions vs originals under each OCR "
                    "engine, per text dataset (VTBench Table 5)",
                    smk.params.models, columns, files, smk.params.bootstrap, not_run=not_run)
table.notes = [
    "CER/WER (VTBench eval.): the released evaluator's, both images at 256 x 256 read after a "
    "resize to 1024 x 1024, edits summed over the set over the characters (words) of the "
    "originals' OCR; WER its character-level form (VTBench Table 5's convention: its first "
    "column is Table 3's poster CER/WER). Per-item mean: roundtrip's, App. F Eqs. 3-4 per item "
    "at the scored size, then the mean. Kendall's tau ranks by the released rates"]
write_table(table, Path(smk.output[0]).parent)
means = to_csv_frame(table).set_index(table.row_label.lower())
agreement = agreement_per_dataset(means, datasets, engines,
                                  {d: headline_metrics(d, cer_only, released) for d in datasets})
log.info("rank agreement:\n%s", agreement.to_string())
write_frame(agreement, "ocr_rank_agreement",
            "Agreement of the model rankings between OCR engines per dataset (Kendall's tau-b "
            "over models, from the means of ocr_robustness)", [], Path(smk.output[0]).parent,
            digits={"kendall_tau": 3, "p_value": 3})
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
