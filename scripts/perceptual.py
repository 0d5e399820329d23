"""Rule perceptual: LPIPS per item and FID/KID per set of a (model, dataset).

A metric whose weights are missing from the cache writes rows that say so (the tables print
n/a with that footnote); a disabled metric writes rows saying it is disabled.
"""
import _bootstrap  # noqa: F401
from pathlib import Path

from roundtrip.workflow import setup_logging

smk = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(smk.log[0])

from roundtrip import weights  # noqa: E402 - after logging, so import warnings are logged
from roundtrip.learned_scoring import (distribution_features, distribution_rows,  # noqa: E402
                                       score_lpips, unavailable_items, unavailable_set)
from roundtrip.metrics.distribution import InceptionFeatures  # noqa: E402
from roundtrip.metrics.perceptual import LPIPS, NETS  # noqa: E402
from roundtrip.models import WeightsMissing  # noqa: E402
from roundtrip.reconstruct import resolve_device  # noqa: E402

pairs = (smk.input.manifest, smk.input.status, Path(smk.input.status).parent)
device = resolve_device(smk.params.device)
cache, lp, fd = smk.params.cache, smk.params.lpips, smk.params.fid

if not lp["enabled"]:
    lpips = unavailable_items(*pairs, "LPIPS disabled (metrics.lpips.enabled: false)")
else:
    try:
        lpips = score_lpips(*pairs, LPIPS(lp["net"], cache=cache, device=device))
    except WeightsMissing:
        note = weights.missing_note(NETS[lp["net"]], cache)
        log.warning(note)
        lpips = unavailable_items(*pairs, note)
lpips.to_csv(smk.output.lpips, index=False)

metrics = ["fid", "kid", "kid_std"]
if not fd["enabled"]:
    dist = unavailable_set(metrics, "FID/KID disabled (metrics.fid.enabled: false)")
else:
    try:
        features = InceptionFeatures(cache=cache, device=device)
    except WeightsMissing:
        note = weights.missing_note("inception-fid", cache)
        log.warning(note)
        dist = unavailable_set(metrics, note)
    else:
        real, fake, failures = distribution_features(*pairs, features)
        log.info("Inception features of %d pairs; left out: %s", len(real), failures or "none")
        dist = distribution_rows(real, fake, fd["kid_subset_size"], fd["kid_subsets"], fd["seed"])
dist.to_csv(smk.output.distribution, index=False)
