"""Rules vista_answers and vista_answers_in_process: one reader answers every question of a set
as text and as visualized text (the renders, or a model's reconstructions of them); answers
extracted and scored, progress in the job's log. The endpoints' transport settings come from the
config (not tracked by Snakemake); errors are counted, said on the console, and asked again by
the next run, a request malformed on every attempt by api.max_reask_runs runs at most
(answers.write_answers)."""
import sys

import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage, endpoints_down, with_transport
from roundtrip.core.logs import setup_logging
from roundtrip.evals.vista.answers import (answer_set, exhausted, job_fingerprint, out_of_scope,
                                           write_answers)
from roundtrip.evals.vista.tables import error_notes
from roundtrip.readers import build_answerer

smk = snakemake  # noqa: F821 - injected by Snakemake
w = smk.wildcards
log = setup_logging(smk.log[0])
endpoints = (smk.config.get("api") or {}).get("endpoints") or {}
reader = build_answerer(w.reader, with_transport(smk.params.reader, endpoints))
fingerprint = job_fingerprint(
    {k: smk.params.get(k) for k in ("reader", "judge", "extraction", "prompt_layout",
                                    "recon_dir")}, sorted(str(f) for f in smk.input))
skip = exhausted(smk.output[0], fingerprint, smk.params.max_reask_runs)
try:
    rows = answer_set(smk.input.manifest, reader, model=w.model,
                      recon_dir=smk.params.recon_dir, ocr_csv=smk.input.get("ocr"),
                      judge=with_transport(smk.params.judge, endpoints),
                      extraction=smk.params.extraction, prompt_layout=smk.params.prompt_layout,
                      skip=skip)
finally:
    append_usage(USAGE_LEDGER, f"vista/{w.reader}/{w.model}/{w.dataset}")
errors = write_answers(rows, smk.output[0], fingerprint, smk.params.max_reask_runs, skip)
ok = rows[rows["status"] == "ok"]
outside = out_of_scope(rows)
log.info("%s on %s/%s: %d answers, %d invalid, %d errors (%d not asked again), %d not scored, "
         "%d of them outside the reader's scope; accuracy %.1f%% over %d scored", w.reader,
         w.model, w.dataset, len(rows), int((ok["extracted_by"] == "invalid").sum()), errors,
         len(skip), int((rows["status"] == "not_scored").sum()), int(outside.sum()),
         100 * rows["hit"].mean(), int(rows["hit"].notna().sum()))
for line in [f"endpoint down: {why}" for why in endpoints_down()] + ([f"vista answers of {w.reader} on {w.model}/{w.dataset}: "
                                 f"{error_notes(rows)[0]}; the next run asks them again"
                                 + (" but those not asked again (api.max_reask_runs)"
                                    if rows["reason"].astype(str).str.contains(
                                        "not asked again", regex=False).any() else "")]
                                if errors else []):
    log.error("%s", line)
    print(f"[roundtrip] {line}", file=sys.stderr, flush=True)
