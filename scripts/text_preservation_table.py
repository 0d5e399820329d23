"""Rule text_preservation_table: VTBench Table 3 per model and text dataset: PSNR, SSIM, LPIPS,
FID of the reconstructions, CER/WER of their OCR."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import text_columns, weighted_metrics, wer_beyond_paper
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.tables import build_table, metric_files, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
manifests = dict(zip(smk.params.datasets, smk.input.manifests))
has_gt, cer_only = text_dataset_kinds(manifests, smk.params.langs)
files = metric_files({"item": smk.input.per_item, "quality": smk.input.quality,
                      "quality_set": smk.input.quality_set, "lpips": smk.input.lpips,
                      "distribution": smk.input.distribution})
lpips, fid, left_out = weighted_metrics(smk.params.lpips, smk.params.fid,
                                        dict(smk.params.unavailable))
table = build_table("text_preservation",
                    f"Text preservation (VTBench Table 3): image quality of the reconstructions, "
                    f"CER/WER of their OCR ({smk.params.ocr}) vs OCR of the originals (and vs "
                    "ground truth)",
                    smk.params.models,
                    text_columns(has_gt, cer_only, quality=True, lpips=lpips, fid=fid),
                    files, smk.params.bootstrap, not_run=dict(smk.params.not_run))
table.notes = left_out + wer_beyond_paper(manifests, smk.params.langs, cer_only)
write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
