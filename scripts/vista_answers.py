"""Rules vista_answers and vista_answers_in_process: one reader answers every question of a set
as text and as visualized text (the renders, or a model's reconstructions of them); answers
extracted and scored, progress in the job's log."""
import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.evals.vista.answers import answer_set, out_of_scope
from roundtrip.readers import build_answerer

smk = snakemake  # noqa: F821 - injected by Snakemake
w = smk.wildcards
log = setup_logging(smk.log[0])
reader = build_answerer(w.reader, smk.params.reader)
try:
    rows = answer_set(smk.input.manifest, reader, model=w.model,
                      recon_dir=smk.params.recon_dir, ocr_csv=smk.input.get("ocr"),
                      judge=smk.params.judge, extraction=smk.params.extraction,
                      prompt_layout=smk.params.prompt_layout)
finally:
    append_usage(USAGE_LEDGER, f"vista/{w.reader}/{w.model}/{w.dataset}")
rows.to_csv(smk.output[0], index=False)
ok = rows[rows["status"] == "ok"]
outside = out_of_scope(rows)
log.info("%s on %s/%s: %d answers, %d invalid, %d errors, %d not scored, %d of them outside "
         "the reader's scope; accuracy %.1f%% over %d scored", w.reader, w.model, w.dataset,
         len(rows), int((ok["extracted_by"] == "invalid").sum()),
         int((rows["status"] == "error").sum()), int((rows["status"] == "not_scored").sum()),
         int(outside.sum()), 100 * rows["hit"].mean(), int(rows["hit"].notna().sum()))
