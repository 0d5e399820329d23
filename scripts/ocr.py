"""Rule ocr: text of every original (model "original") or reconstruction of a dataset."""
import _bootstrap  # noqa: F401
from pathlib import Path

import pandas as pd

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.datasets import read_item_csv, read_manifest
from roundtrip.ocr import build_ocr, ocr_items
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
engine = build_ocr(smk.wildcards.ocr, smk.params.engine)
manifest = read_manifest(smk.input.manifest)
# Items may carry their own language (the multilingual sets); else the dataset's applies.
item_lang = {r.item_id: (getattr(r, "lang", "") or smk.params.lang) for r in manifest.itertuples()}
log.info("%s version %s", smk.wildcards.ocr, engine.check(sorted(set(item_lang.values()))))
root = Path(smk.input.manifest).parent
if "status" in smk.input.keys():
    status = read_item_csv(smk.input.status)
    ok = set(status.loc[status["status"] == "ok", "item_id"])
    recon = Path(smk.input.status).parent
    paths = {i: recon / f"{i}.png" for i in manifest["item_id"] if i in ok}
else:
    paths = {r.item_id: root / r.path for r in manifest.itertuples() if r.status == "ok"}
items = [(i, p, item_lang[i]) for i, p in paths.items()]
# a VLM engine waits on the network: as many threads as the endpoint allows requests
try:
    result = ocr_items(engine, items, threads=getattr(engine, "concurrency", smk.threads))
finally:
    append_usage(USAGE_LEDGER,
                 f"ocr/{smk.wildcards.ocr}/{smk.wildcards.model}/{smk.wildcards.dataset}")
skipped = pd.DataFrame({"item_id": [i for i in manifest["item_id"] if i not in paths],
                        "text": "", "status": "error", "reason": "no image to read"})
pd.concat([result, skipped], ignore_index=True).to_csv(smk.output[0], index=False)
