"""Rules ocr_original and ocr_original_sets: the text of every original of each dataset of
``params.sets``, read once per OCR engine and reused by every model's job (the reconstructions
are read in the reconstruction job's text scorer), and, for Table 3's text sets, the released
VTBench evaluator's reading of the originals (256 px copies read at 1024 px)."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.core.progress import Progress
import pandas as pd

from roundtrip.evals.vtbench.text import original_view_readings
from roundtrip.readers import build_ocr
from roundtrip.stages.ocr import languages, ocr_dataset

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
name, sets = smk.wildcards.ocr, smk.params.sets
engine = build_ocr(name, smk.params.engine)
langs = sorted({lang for job in sets for lang in languages(job["manifest"], job["lang"])})
log.info("%s version %s", name, engine.check(langs))
threads = getattr(engine, "concurrency", smk.threads)  # a VLM engine waits on the network
try:
    with Progress(len(sets), f"OCR ({name}) of the originals of "
                  f"{', '.join(job['dataset'] for job in sets)}", unit="sets") as progress:
        for job in sets:
            rows = ocr_dataset(engine, job["manifest"], job["lang"], threads=threads)
            rows.to_csv(job["ocr"], index=False)
            log.info("%s: %d items read", job["dataset"], len(rows))
            if job["read_view"]:
                views = original_view_readings(engine, job["manifest"], job["lang"], threads)
                log.info("%s: %d items read at the released evaluator's sizes",
                         job["dataset"], len(views))
            else:  # a question set: no item read (the file says so by being empty)
                views = pd.DataFrame(columns=["item_id", "text", "status", "reason"])
            views.to_csv(job["view"], index=False)
            progress.add()
finally:
    # the process's usage is a running total: one line for the job, not one per set
    append_usage(USAGE_LEDGER, f"ocr/{name}/original/{'+'.join(j['dataset'] for j in sets)}")
