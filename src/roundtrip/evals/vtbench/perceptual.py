"""Scoring with pretrained networks: LPIPS per item, FID and KID per set.

Both stream: pairs are read one at a time (LPIPS) and only 2048-d feature vectors are kept
(FID/KID), so memory grows with the item count by 16 KiB per image pair at most, never by images.
When the network's weights are not in the cache, :func:`unavailable_items` and
:func:`unavailable_set` write the same files with the reason in place of numbers, so the tables
print "n/a" with a footnote instead of failing the run.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core import weights
from roundtrip.core.imaging import ImageReadError, read_image, to_uint8, to_unit
from roundtrip.core.recon_items import ReconContext, iter_recon_items
from roundtrip.core.weights import WeightsMissing
from roundtrip.metrics.distribution import FEATURE_DIM, InceptionFeatures, fid, kid
from roundtrip.metrics.perceptual import LPIPS, NETS

log = logging.getLogger(__name__)

LPIPS_COLUMNS = ["item_id", "status", "reason", "lpips", "lpips_vtbench"]
SET_COLUMNS = ["metric", "value", "n", "note"]


def _tensor(path: Path) -> torch.Tensor:
    """``[1, 3, H, W]`` float32 in [0, 1]."""
    return torch.from_numpy(to_unit(read_image(path))).permute(2, 0, 1)[None]


def _uint8(path: Path) -> torch.Tensor:
    """``[1, 3, H, W]`` uint8 (16-bit images are rounded to 8 bits, as Inception expects)."""
    return torch.from_numpy(to_uint8(read_image(path))).permute(2, 0, 1)[None]


def score_lpips(manifest_path: str | Path, status_path: str | Path, recon_dir: str | Path,
                metric: LPIPS) -> pd.DataFrame:
    """LPIPS of every reconstructed item vs its reference; other items keep status and reason.

    ``lpips``: roundtrip's convention ([0, 1] mapped to [-1, 1]); ``lpips_vtbench``: the released
    evaluator's ([0, 1] fed as they are; :mod:`roundtrip.evals.vtbench.released`).

    Returns:
        DataFrame with :data:`LPIPS_COLUMNS`.
    """
    rows = []
    for item in iter_recon_items(manifest_path, status_path, recon_dir):
        row = {"item_id": item.item_id, "status": item.status, "reason": item.reason,
               "lpips": math.nan, "lpips_vtbench": math.nan}
        if item.status == "ok":
            try:
                x, y = _tensor(item.reference), _tensor(item.reconstruction)
                row["lpips"] = float(metric(x, y)[0])
                row["lpips_vtbench"] = float(metric(y, x, input_range="as_signed")[0])
            except (ImageReadError, ValueError, RuntimeError) as exc:
                row.update(status="error", reason=f"LPIPS: {exc}")
        rows.append(row)
    return pd.DataFrame(rows, columns=LPIPS_COLUMNS)


def distribution_features(manifest_path: str | Path, status_path: str | Path,
                          recon_dir: str | Path, features: InceptionFeatures
                          ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Inception features of references and reconstructions over the reconstructed items.

    Only items whose reconstruction exists enter either set, so both sets describe the same
    images; failed items are logged.

    Returns:
        ``(real [N, 2048], fake [N, 2048], failures)`` float64 arrays and ``item: reason`` lines.
    """
    real, fake, failures = [], [], []
    for item in iter_recon_items(manifest_path, status_path, recon_dir):
        if item.status != "ok":
            failures.append(f"{item.item_id}: {item.status}")
            continue
        try:
            r, f = features(_uint8(item.reference)), features(_uint8(item.reconstruction))
        except (ImageReadError, ValueError, RuntimeError) as exc:
            failures.append(f"{item.item_id}: {exc}")
            log.warning("%s: no features: %s", item.item_id, exc)
            continue
        real.append(r[0].numpy())
        fake.append(f[0].numpy())
    shape = (0, FEATURE_DIM)
    return (np.stack(real) if real else np.zeros(shape), np.stack(fake) if fake else np.zeros(shape),
            failures)


def distribution_rows(real: np.ndarray, fake: np.ndarray, kid_subset_size: int = 1000,
                      kid_subsets: int = 100, seed: int = 0) -> pd.DataFrame:
    """Set rows ``fid``, ``kid``, ``kid_std`` with the sample count ``n`` beside each value.

    KID's spread is the std over ``kid_subsets`` random subsets drawn without replacement. A
    subset as large as the set is the set itself, so every subset would give the same value and
    the std would always be 0: when ``kid_subset_size`` is not smaller than the set, subsets of
    half the set (at least 2) are drawn instead. The KID rows' ``note`` says which size was used
    (it becomes the cells' footnote).
    """
    n = min(len(real), len(fake))
    note = "" if n >= 2 else f"FID/KID need at least 2 images, {n} reconstructed"
    size = kid_subset_size if kid_subset_size < n else max(2, n // 2)
    kid_note = note or (f"KID mean ± std over {kid_subsets} random subsets of {size} of the {n} "
                        "images" + (" (half the set: subsets as large as the set would all be "
                                    "the set, std 0)" if size != kid_subset_size else ""))
    kid_mean, kid_std = kid(real, fake, size, kid_subsets, seed)
    return pd.DataFrame([{"metric": "fid", "value": fid(real, fake), "n": n, "note": note},
                         {"metric": "kid", "value": kid_mean, "n": n, "note": kid_note},
                         {"metric": "kid_std", "value": kid_std, "n": n, "note": kid_note}],
                        columns=SET_COLUMNS)


def unavailable_items(manifest_path: str | Path, status_path: str | Path, recon_dir: str | Path,
                      reason: str) -> pd.DataFrame:
    """The LPIPS file of a run without LPIPS weights: every row says why."""
    rows = [{"item_id": item.item_id, "status": "unavailable", "reason": reason, "lpips": math.nan,
             "lpips_vtbench": math.nan}
            for item in iter_recon_items(manifest_path, status_path, recon_dir)]
    return pd.DataFrame(rows, columns=LPIPS_COLUMNS)


def unavailable_set(metrics: list[str], reason: str) -> pd.DataFrame:
    """Set rows with NaN values, n = 0 and the reason as the note."""
    return pd.DataFrame([{"metric": m, "value": math.nan, "n": 0, "note": reason}
                         for m in metrics], columns=SET_COLUMNS)


def score_reconstructions(ctx: ReconContext, options: dict) -> dict[str, pd.DataFrame]:
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``lpips`` (per item) and
    ``distribution`` (FID, KID, KID std).

    A metric whose weights are missing from the cache writes rows that say so (the tables print
    n/a with that footnote); a disabled metric writes rows saying it is disabled.

    Args:
        options: ``lpips`` and ``fid`` (their config sections), ``cache`` (weights cache); the
            networks run on ``ctx.device``.
    """
    pairs, device = (ctx.manifest, ctx.status, ctx.recon_dir), ctx.device
    cache, lp, fd = options["cache"], options["lpips"], options["fid"]
    if not lp["enabled"]:
        lpips = unavailable_items(*pairs, "LPIPS disabled (metrics.lpips.enabled: false)")
    else:
        try:
            lpips = score_lpips(*pairs, LPIPS(lp["net"], cache=cache, device=device))
        except WeightsMissing:
            note = weights.missing_note(NETS[lp["net"]], cache)
            log.warning(note)
            lpips = unavailable_items(*pairs, note)
    metrics = ["fid", "kid", "kid_std"]
    if not fd["enabled"]:
        return {"lpips": lpips,
                "distribution": unavailable_set(metrics, "FID/KID disabled (metrics.fid.enabled: false)")}
    try:
        features = InceptionFeatures(cache=cache, device=device)
    except WeightsMissing:
        note = weights.missing_note("inception-fid", cache)
        log.warning(note)
        return {"lpips": lpips, "distribution": unavailable_set(metrics, note)}
    real, fake, failures = distribution_features(*pairs, features)
    log.info("Inception features of %d pairs; left out: %s", len(real), failures or "none")
    return {"lpips": lpips, "distribution": distribution_rows(
        real, fake, fd["kid_subset_size"], fd["kid_subsets"], fd["seed"])}
