"""Rule ocr_robustness_table: CER/WER per model under each OCR engine, per text dataset
(VTBench Table 5), Kendall's tau between the engines' model rankings per dataset, and the
readability of every engine's reading of the originals (ocr_readability), which flags the cells
scored against an unreadable one."""
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
from roundtrip.evals.vtbench.readability import (
    READABILITY_TABLE,
    Thresholds,
    display_frame,
    flag_agreement,
    flag_cells,
    readability_table,
    table_notes,
    unreadable,
)
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.metrics.text import Normalization
from roundtrip.tables import build_table, to_csv_frame, write_frame, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
datasets, engines = list(smk.params.datasets), dict(smk.params.engines)  # dataset -> engines
manifests = dict(zip(datasets, smk.input.manifests))
_, cer_only = text_dataset_kinds(manifests, smk.params.langs)
released = set(smk.params.released)
out_dir = Path(smk.output[0]).parent
thresholds = Thresholds.from_config(smk.params.readability)
readability = readability_table(
    list(smk.params.references), manifests, dict(smk.params.langs),
    Normalization.from_config(smk.params.normalization), thresholds, smk.params.table_ocr)
log.info("readability of the references:\n%s", readability.to_string())
write_frame(display_frame(readability), READABILITY_TABLE,
            "Readability of the OCR references: how well each engine reads the originals in "
            "each view a CER/WER column scores against", table_notes(thresholds), out_dir,
            digits={"CER vs ground truth": 4, "empty readings": 2}, csv_frame=readability)
flags = unreadable(readability)
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
flag_cells(table, flags, lambda col: tuple(col.dataset.rsplit("/", 1)))  # {dataset}/{engine}
write_table(table, out_dir)
means = to_csv_frame(table).set_index(table.row_label.lower())
agreement = agreement_per_dataset(means, datasets, engines,
                                  {d: headline_metrics(d, cer_only, released) for d in datasets})
agreement = flag_agreement(agreement, flags, released)
log.info("rank agreement:\n%s", agreement.to_string())
write_frame(agreement, "ocr_rank_agreement",
            "Agreement of the model rankings between OCR engines per dataset (Kendall's tau-b "
            "over models, from the means of ocr_robustness)", [], out_dir,
            digits={"kendall_tau": 3, "p_value": 3})
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
