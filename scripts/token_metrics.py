"""Rule token_metrics: CHD (set) and CMMS (per item) of a (model, dataset) in reference tokens."""
import _bootstrap  # noqa: F401
from pathlib import Path

import torch

from roundtrip.cmms import CMMS
from roundtrip.models import build_model
from roundtrip.reconstruct import resolve_device
from roundtrip.token_scoring import score_tokens
from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
torch.set_num_threads(smk.threads)
device = resolve_device(smk.params.device)
tokenizer = build_model(smk.params.reference, smk.params.spec).to(device)
per_item, set_rows = score_tokens(smk.input.manifest, smk.input.status,
                                  Path(smk.input.status).parent, tokenizer,
                                  CMMS(smk.input.cmms, device), smk.params.size)
per_item.to_csv(smk.output.per_item, index=False)
set_rows.to_csv(smk.output.set, index=False)
log.info("CHD %s", dict(zip(set_rows["metric"], set_rows["value"])))
