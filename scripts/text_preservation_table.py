"""Rule text_preservation_table: VTBench Table 3 per model in the paper's layout (Posters, ArXiv,
Multilingual pooled with CER per language), image quality of the reconstructions and CER/WER of
their OCR (App. F Eqs. 3-4 as written first, roundtrip's normalized rates beside)."""
import tempfile
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.core.logs import setup_logging
from roundtrip.evals.vtbench.tables import (
    pooled_multilingual,
    text_columns,
    text_layout,
    weighted_metrics,
    wer_beyond_paper,
)
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
layout = text_layout(dict(smk.params.specs))
with tempfile.TemporaryDirectory() as tmp:
    if "Multilingual" in layout:
        files |= pooled_multilingual(files, smk.params.models, layout["Multilingual"], tmp)
    table = build_table("text_preservation",
                        f"Text preservation (VTBench Table 3): image quality of the "
                        f"reconstructions, CER/WER of their OCR ({smk.params.ocr}) vs OCR of the "
                        "originals (and vs ground truth)",
                        smk.params.models,
                        text_columns(layout, has_gt, cer_only, dict(smk.params.langs),
                                     lpips=lpips, fid=fid),
                        files, smk.params.bootstrap, not_run=dict(smk.params.not_run))
# the multilingual block prints CER only, as Table 3: its sets get no WER note
spaced = {d: m for d, m in manifests.items() if d not in layout.get("Multilingual", [])}
table.notes = left_out + wer_beyond_paper(spaced, smk.params.langs, cer_only) + [
    "Groups in Table 3's order: Posters, ArXiv (English abstracts), Multilingual (one PSNR/SSIM/"
    "LPIPS/FID over the languages pooled, then CER per language: Chinese, Hindi, Japanese, "
    "Korean); other text sets follow",
    "CER/WER: VTBench App. F Eqs. 3-4 on the OCR outputs as they are (every character, line "
    "breaks included); (norm.): roundtrip's variant after NFKC, whitespace collapse and, for "
    "Chinese and Japanese, whitespace removal (ocr.normalization)",
    "PSNR/SSIM/LPIPS (VTBench eval.): the released evaluator's convention (torchmetrics "
    "defaults, PSNR pooled over the set with the originals' data range); per-item mean columns: "
    "roundtrip's convention (VTBench Sec. 4.1)",
    "Image Size: side of the square input each model was scored at (App. H, Table 1); any-size "
    "models at datasets.<name>.size (1024 in the showcase: the 1024 x 1024 text images as they "
    "are, as the paper's continuous VAEs)",
]
write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
