"""Rules build_dataset and build_*_sets: write results/datasets/{dataset}/manifest.csv and its
files for each set of ``params.sets`` (one set, or a batch of small packaged sets)."""
from pathlib import Path

import _bootstrap  # noqa: F401

from roundtrip.api.client import USAGE_LEDGER, append_usage
from roundtrip.core.logs import setup_logging
from roundtrip.core.progress import Progress
from roundtrip.datasets import build_dataset

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])
batch = len(smk.params.sets) > 1
failed: list[tuple[str, Exception]] = []
names = ", ".join(job["dataset"] for job in smk.params.sets)
with Progress(len(smk.params.sets), f"build {names}", unit="sets") as progress:
    for job in smk.params.sets:
        try:
            build_dataset(job["dataset"], job["spec"], Path(job["manifest"]).parent)
        except Exception as exc:
            if not batch:
                raise
            # the batch's other sets are still built (their logs say so); the job fails below
            log.exception("dataset %s could not be built", job["dataset"])
            failed.append((job["dataset"], exc))
        finally:  # what was paid for is recorded even when the build fails
            append_usage(USAGE_LEDGER, f"build_dataset/{job['dataset']}")
        progress.add()
if failed:
    raise RuntimeError("datasets " + ", ".join(name for name, _ in failed)
                       + f" could not be built (see {smk.log[0]}): {failed[0][1]}") from failed[0][1]
