"""Rule text_metrics: CER/WER of a (model, dataset) for one OCR engine."""
import _bootstrap  # noqa: F401

from roundtrip.metrics.text import Normalization
from roundtrip.text_scoring import score_text
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(smk.log[0])
scores = score_text(smk.input.manifest, smk.input.ocr_original, smk.input.ocr_model,
                    smk.input.status, Normalization.from_config(smk.params.normalization))
scores.to_csv(smk.output[0], index=False)
