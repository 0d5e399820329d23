"""Rule ocr_original: the text of every original of a dataset, read once per OCR engine and
reused by every model's job (the reconstructions are read in rule reconstruct's text scorer)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.readers import build_ocr
from roundtrip.stages.ocr import languages, ocr_dataset

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
engine = build_ocr(smk.wildcards.ocr, smk.params.engine)
log.info("%s version %s", smk.wildcards.ocr,
         engine.check(languages(smk.input.manifest, smk.params.lang)))
try:  # a VLM engine waits on the network: as many threads as the endpoint allows requests
    rows = ocr_dataset(engine, smk.input.manifest, smk.params.lang,
                       threads=getattr(engine, "concurrency", smk.threads))
finally:
    append_usage(USAGE_LEDGER, f"ocr/{smk.wildcards.ocr}/original/{smk.wildcards.dataset}")
rows.to_csv(smk.output.ocr, index=False)
