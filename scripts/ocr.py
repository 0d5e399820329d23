"""Rules ocr_original and ocr_original_sets: the text of every original of each dataset of
``params.sets``, read once per OCR engine and reused by every model's job (the reconstructions
are read in the reconstruction job's text scorer)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.readers import build_ocr
from roundtrip.stages.ocr import languages, ocr_dataset

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
name, sets = smk.wildcards.ocr, smk.params.sets
engine = build_ocr(name, smk.params.engine)
langs = sorted({lang for job in sets for lang in languages(job["manifest"], job["lang"])})
log.info("%s version %s", name, engine.check(langs))
for job in sets:
    try:  # a VLM engine waits on the network: as many threads as the endpoint allows requests
        rows = ocr_dataset(engine, job["manifest"], job["lang"],
                           threads=getattr(engine, "concurrency", smk.threads))
    finally:
        append_usage(USAGE_LEDGER, f"ocr/{name}/original/{job['dataset']}")
    rows.to_csv(job["ocr"], index=False)
    log.info("%s: %d items read", job["dataset"], len(rows))
