"""Rule ocr_robustness_table: CER/WER per model under each OCR engine, pooled over the text
datasets (VTBench Table 5), and Kendall's tau between the engines' model rankings."""
from collections import defaultdict
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.ocr_robustness import engine_of, pooled_items, rank_agreement
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.tables import (
    build_table,
    metric_column,
    read_per_item,
    to_csv_frame,
    write_frame,
    write_table,
)

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
_, cer_only = text_dataset_kinds(dict(zip(smk.params.datasets, smk.input.manifests)),
                                 smk.params.langs)
frames = defaultdict(dict)  # (model, engine) -> dataset -> per-item rows
for p in map(Path, smk.input.per_item):
    frames[(p.parent.parent.name, engine_of(p))][p.parent.name] = read_per_item(p)
engines = list(smk.params.engines)
out_dir = Path(smk.output[0]).parent
files = {(model, engine, "item"): pooled_items(per_dataset, cer_only)
         for (model, engine), per_dataset in frames.items()}
columns = [metric_column(e, m) for e in engines for m in ("cer", "wer")]
not_run = {(m, e): "not run on any text dataset (datasets.<name>.models)"
           for m in smk.params.models for e in engines if (m, e) not in frames}
table = build_table("ocr_robustness",
                    "OCR robustness: CER/WER of reconstructions vs originals under each OCR "
                    f"engine, pooled over the text datasets ({', '.join(smk.params.datasets)})",
                    smk.params.models, columns, files, smk.params.bootstrap, not_run=not_run)
write_table(table, out_dir)
means = to_csv_frame(table).set_index(table.row_label.lower())
means = means[[f"{e}.{m}" for e in engines for m in ("cer", "wer")]]
agreement = rank_agreement(means)
log.info("rank agreement:\n%s", agreement.to_string())
write_frame(agreement, "ocr_rank_agreement",
            "Agreement of the model rankings between OCR engines (Kendall's tau-b over models, "
            "from the pooled means of ocr_robustness)", [], out_dir,
            digits={"kendall_tau": 3, "p_value": 3})
