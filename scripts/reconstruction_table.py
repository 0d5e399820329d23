"""Rule reconstruction_table: PSNR, SSIM, LPIPS, FID, KID per model and dataset, one table per
VTBench Table 1 setting (model size, 1024 x 1024, native size) and Table 2 (detail
preservation sets): the released evaluator's convention first, roundtrip's per-item means beside."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
import pandas as pd

from roundtrip.evals.vtbench.tables import (
    TABLE1,
    reconstruction_columns,
    table1_frame,
    table_title,
    weighted_metrics,
)
from roundtrip.tables import build_table, metric_files, write_frame, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
files = metric_files({"item": smk.input.per_item, "set": smk.input.set,
                      "lpips": smk.input.lpips, "distribution": smk.input.distribution})
# a metric without its weights is one note under the table, not a column of n/a per dataset
lpips, fid, notes = weighted_metrics(smk.params.lpips, smk.params.fid,
                                     dict(smk.params.unavailable))
CONVENTION_NOTES = [
    "PSNR/SSIM/LPIPS/FID (VTBench eval.): the convention of VTBench's released evaluator, which "
    "produced the paper's Tables 1-3: both images resized to 256 x 256 whatever the model's "
    "size, torchmetrics 1.7.1 defaults (PSNR with one MSE over the set and the range from 0 to "
    "the originals' max, SSIM with the range of each batch of 16 pairs in file-name order, "
    "LPIPS AlexNet fed [0, 1]), FID on the 8-bit copies. SSIM (256 px, per-pair range): the "
    "same copies, each pair its own range (independent of the other items of its batch). The "
    "other columns are roundtrip's, at the Image Size: per-item means (data range 1), pooled "
    "PSNR, the range max - min PSNR (the evaluator's formula without its resize), LPIPS on "
    "[-1, 1] inputs, FID and KID. Metrics: VTBench Sec. 4.1",
    "Image Size: side of the square input each model was scored at (App. H: each model's input "
    "size, Table 1); models that accept any size use the set's size key (datasets.<name>.size)",
]
built = {}
for name, datasets in dict(smk.params.tables).items():
    columns = reconstruction_columns(datasets, smk.params.protocols, lpips=lpips, fid=fid,
                                     ssim=smk.params.ssim_scored_size)
    title = table_title(name)
    table = build_table(name, title, smk.params.models, columns, files, smk.params.bootstrap,
                        not_run=dict(smk.params.not_run))
    table.notes = notes + CONVENTION_NOTES
    write_table(table, Path(smk.output[0]).parent)
    built[name] = table
# Table 1 as the paper prints it: the three settings as column groups beside Params/Type/Resolution
table_notes = notes + CONVENTION_NOTES[:1] + [
    "Params, Type: the model card; Resolution: the model's input size (any-size models: the "
    "side they were scored at in the ImageNet setting)",
    "Per-setting tables (reconstruction_model_size, _1024, _native) hold roundtrip's per-item "
    "means and confidence intervals beside these"]
shown, numbers, cell_notes = table1_frame(
    built, pd.read_csv(smk.input.card) if smk.input.card else None, len(table_notes) + 1)
write_frame(shown, TABLE1, "Reconstruction (VTBench Table 1): the three settings side by side, "
            "headline metrics (the released evaluator's convention)", table_notes + cell_notes,
            Path(smk.output[0]).parent, csv_frame=numbers)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
