"""Rule text_preservation_table: VTBench Table 3 per model in the paper's layout (Posters, ArXiv,
Multilingual pooled with CER per language), image quality of the reconstructions and CER/WER of
their OCR (App. F Eqs. 3-4 as written first, roundtrip's normalized rates beside); the cells
scored against an unreadable reading of the originals carry a footnote (ocr_readability)."""
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
from roundtrip.evals.vtbench.readability import (
    Thresholds,
    flag_cells,
    readability_table,
    unreadable,
)
from roundtrip.evals.vtbench.text import text_dataset_kinds
from roundtrip.metrics.text import Normalization
from roundtrip.tables import build_table, metric_files, write_table
from roundtrip.tables.provenance import write_provenance

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
manifests = dict(zip(smk.params.datasets, smk.input.manifests))
has_gt, cer_only = text_dataset_kinds(manifests, smk.params.langs)
files = metric_files({"item": smk.input.per_item, "text_set": smk.input.text_set,
                      "quality": smk.input.quality,
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
                                     lpips=lpips, fid=fid, released=set(smk.params.released),
                                     ssim=smk.params.ssim_scored_size),
                        files, smk.params.bootstrap, not_run=dict(smk.params.not_run))
# the multilingual block prints CER only, as Table 3: its sets get no WER note
spaced = {d: m for d, m in manifests.items() if d not in layout.get("Multilingual", [])}
table.notes = left_out + wer_beyond_paper(spaced, smk.params.langs, cer_only) + [
    "Groups in Table 3's order: Posters, ArXiv (English abstracts), Multilingual (one PSNR/SSIM/"
    "LPIPS/FID over the languages pooled, roundtrip's reading of Table 3's layout: the released "
    "code scores each language apart, so each language's own cells follow, then its CER: "
    "Chinese, Hindi, Japanese, Korean); other text sets follow",
    "CER/WER (VTBench eval.): the released evaluator's, both images resized to 256 x 256 and "
    "read after a resize to 1024 x 1024, edits summed over the set over the characters (words) "
    "of the originals' OCR; its WER is the character distance of the word lists joined by "
    "spaces over the word count, WER (Eq. 4, words) the word-level distance pooled alike. "
    "Per-item mean: roundtrip's, App. F Eqs. 3-4 on the OCR at the scored size, per item, then "
    "the mean; (norm.): after NFKC, whitespace collapse and, for Chinese and Japanese, "
    "whitespace removal (ocr.normalization)",
    "PSNR/SSIM/LPIPS/FID (VTBench eval.): the released evaluator's convention (both images "
    "resized to 256 x 256; torchmetrics 1.7.1 defaults: PSNR over the set with the range from 0 "
    "to the originals' max, SSIM with each batch of 16's range); the other columns: roundtrip's "
    "at the scored size (VTBench Sec. 4.1)",
    "Image Size: side of the square input each model was scored at (App. H, Table 1); any-size "
    "models at datasets.<name>.size (1024 in the showcase: the 1024 x 1024 text images as they "
    "are, as the paper's continuous VAEs)",
]
# the cells scored against an unreadable reading of the originals get its footnote
engine = smk.params.ocr
readability = readability_table(list(smk.params.references), manifests, dict(smk.params.langs),
                                Normalization.from_config(smk.params.normalization),
                                Thresholds.from_config(smk.params.readability), engine)
flag_cells(table, unreadable(readability), lambda col: (col.dataset, engine))
write_table(table, Path(smk.output[0]).parent)
write_provenance(smk)  # results/tables/{name}.provenance.json beside each table
