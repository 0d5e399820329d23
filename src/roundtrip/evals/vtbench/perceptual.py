"""Scoring with pretrained networks: LPIPS per item, FID and KID per set.

The released evaluator's columns (``lpips_vtbench``, ``fid``) score the 256 x 256 copies of both
images (:func:`roundtrip.evals.vtbench.released.evaluated_view`); roundtrip's (``lpips`` on
[-1, 1] inputs, ``fid_model_size``, ``kid``) score the images at the size the model was scored
at.

Both stream: each pair is scored as it is reconstructed (LPIPS) and only 2048-d feature vectors
are kept (FID/KID, float32), so memory grows with the item count by 16 KiB per image pair at most,
never by images. When the network's weights are not in the cache, :func:`unavailable_items` and
:func:`unavailable_set` write the same files with the reason in place of numbers, so the tables
print "n/a" with a footnote instead of failing the run.
"""
from __future__ import annotations

import logging
import math
import numpy as np
import pandas as pd
import torch

from roundtrip.core import weights
from roundtrip.core.imaging import ImageReadError, to_uint8, to_unit
from roundtrip.core.recon_items import ReconItem
from roundtrip.core.scoring import ReconScorer, item_row
from roundtrip.core.weights import WeightsMissing
from roundtrip.evals.vtbench.released import evaluated_view
from roundtrip.metrics.distribution import FEATURE_DIM, InceptionFeatures, fid, kid
from roundtrip.metrics.perceptual import LPIPS, NETS

log = logging.getLogger(__name__)

LPIPS_COLUMNS = ["item_id", "status", "reason", "lpips", "lpips_vtbench"]
SET_COLUMNS = ["metric", "value", "n", "note"]


def _unit_tensor(image: np.ndarray) -> torch.Tensor:
    """``[1, 3, H, W]`` float32 in [0, 1]."""
    return torch.from_numpy(to_unit(image)).permute(2, 0, 1)[None]


def _uint8_tensor(image: np.ndarray) -> torch.Tensor:
    """``[1, 3, H, W]`` uint8 (16-bit images are rounded to 8 bits, as Inception expects)."""
    return torch.from_numpy(to_uint8(image)).permute(2, 0, 1)[None]


def distribution_rows(real: np.ndarray, fake: np.ndarray, kid_subset_size: int = 1000,
                      kid_subsets: int = 100, seed: int = 0,
                      evaluated: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """Set rows ``fid``, ``kid``, ``kid_std`` with the sample count ``n`` beside each value, and
    with ``evaluated`` (the features of the 256 x 256 copies) ``fid`` from those and
    ``fid_model_size`` from ``real``/``fake``.

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
    rows = [{"metric": "fid", "value": fid(*(evaluated or (real, fake))), "n": n, "note": note},
            {"metric": "kid", "value": kid_mean, "n": n, "note": kid_note},
            {"metric": "kid_std", "value": kid_std, "n": n, "note": kid_note}]
    if evaluated is not None:
        rows.append({"metric": "fid_model_size", "value": fid(real, fake), "n": n, "note": note})
    return pd.DataFrame(rows, columns=SET_COLUMNS)


def unavailable_set(metrics: list[str], reason: str) -> pd.DataFrame:
    """Set rows with NaN values, n = 0 and the reason as the note."""
    return pd.DataFrame([{"metric": m, "value": math.nan, "n": 0, "note": reason}
                         for m in metrics], columns=SET_COLUMNS)


class PerceptualScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``lpips`` (per item, as
    :func:`score_lpips`) and ``distribution`` (FID, KID, KID std of the Inception features).

    A metric whose weights are missing from the cache writes rows that say so (the tables print
    n/a with that footnote); a disabled metric writes rows saying it is disabled. The networks
    are loaded on ``ctx.device`` when the first items arrive.

    Options: ``lpips`` and ``fid`` (their config sections), ``cache`` (weights cache).

    Records: ``{"lpips": (lpips, lpips_vtbench) or a reason, "features": (real, fake,
    real_256, fake_256) float32 [2048] or a reason}``, None for a metric that does not run.
    """

    def __init__(self, ctx, options: dict):
        super().__init__(ctx, options)
        self._loaded = None

    def record_options(self, options: dict) -> dict:
        """What the records depend on: which metrics run, the LPIPS backbone, and the weight
        files (fetching one makes the earlier records, made without it, stale); KID's subsets
        are drawn in finish."""
        cache = options["cache"]
        return {"lpips": {k: options["lpips"].get(k) for k in ("enabled", "net")},
                "fid": {"enabled": options["fid"]["enabled"]},
                "weights": [str(weights.path_of(name, cache))
                            for name in (NETS[options["lpips"]["net"]], "inception-fid")]}

    def complete(self, record) -> bool:
        return not any(isinstance(v, str) for v in record.values())

    def _networks(self):
        """``(LPIPS or None, InceptionFeatures or None)``: those enabled with weights at hand."""
        if self._loaded is None:
            o, device = self.options, self.ctx.device
            lp = _load(lambda: LPIPS(o["lpips"]["net"], cache=o["cache"], device=device)
                       if o["lpips"]["enabled"] else None)
            features = _load(lambda: InceptionFeatures(cache=o["cache"], device=device)
                             if o["fid"]["enabled"] else None)
            self._loaded = (lp or None, features or None)
        return self._loaded

    def score(self, items: list[ReconItem]) -> list:
        if not any(item.status == "ok" for item in items):
            return [{"lpips": None, "features": None} for _ in items]
        lp, features = self._networks()
        records = []
        for item in items:
            record = {"lpips": None, "features": None}
            if item.status == "ok":
                try:
                    ref, rec = item.read_reference(), item.read_reconstruction()
                except (ImageReadError, ValueError) as exc:
                    records.append({"lpips": f"LPIPS: {exc}", "features": str(exc)})
                    continue
                if lp is not None:
                    record["lpips"] = _lpips_pair(lp, ref, rec)
                if features is not None:
                    record["features"] = _feature_pair(features, ref, rec)
            records.append(record)
        return records

    def finish(self, items: list[ReconItem], records: list) -> dict[str, pd.DataFrame]:
        o = self.options
        lp, fd, cache = o["lpips"], o["fid"], o["cache"]
        if not lp["enabled"]:
            lpips = _unavailable_rows(items, "LPIPS disabled (metrics.lpips.enabled: false)")
        elif note := _missing(NETS[lp["net"]], cache):
            lpips = _unavailable_rows(items, note)
        else:
            lpips = lpips_rows(items, [r["lpips"] for r in records])
        metrics = ["fid", "kid", "kid_std", "fid_model_size"]
        if not fd["enabled"]:
            return {"lpips": lpips, "distribution": unavailable_set(
                metrics, "FID/KID disabled (metrics.fid.enabled: false)")}
        if note := _missing("inception-fid", cache):
            return {"lpips": lpips, "distribution": unavailable_set(metrics, note)}
        features = [r["features"] for r in records]
        real, fake, failures = feature_sets(items, features)
        evaluated = feature_sets(items, [f[2:] if isinstance(f, tuple) else f for f in features])
        log.info("Inception features of %d pairs; left out: %s", len(real), failures or "none")
        return {"lpips": lpips, "distribution": distribution_rows(
            real, fake, fd["kid_subset_size"], fd["kid_subsets"], fd["seed"], evaluated[:2])}


def _load(build):
    """``build()``, or False when its weights are missing (logged with the fetch command)."""
    try:
        return build()
    except WeightsMissing as exc:
        log.warning("%s", exc)
        return False


def _missing(name: str, cache) -> str:
    """The note of metric weights ``name`` missing from the cache, or ``""``."""
    try:
        weights.require(name, cache)
        return ""
    except WeightsMissing:
        note = weights.missing_note(name, cache)
        log.warning(note)
        return note


def _lpips_pair(metric: LPIPS, ref: np.ndarray, rec: np.ndarray):
    """``(lpips, lpips_vtbench)`` of one pair, or the reason it failed: roundtrip's at the
    scored size on [-1, 1] inputs, the released evaluator's on the 256 x 256 copies fed as
    [0, 1] without ``normalize`` (``update(reconstruction, original)``)."""
    try:
        x, y = _unit_tensor(ref), _unit_tensor(rec)
        vx, vy = _unit_tensor(evaluated_view(ref)), _unit_tensor(evaluated_view(rec))
        return float(metric(x, y)[0]), float(metric(vy, vx, input_range="as_signed")[0])
    except (ValueError, RuntimeError) as exc:
        return f"LPIPS: {exc}"


def _feature_pair(features: InceptionFeatures, ref: np.ndarray, rec: np.ndarray):
    """``(real, fake, real_256, fake_256)`` float32 ``[2048]`` features of one pair at the
    scored size and of its 256 x 256 copies (the released FID's; not computed again where the
    copies are the images), or the reason it failed (the network's float32 output: float64 of
    it is exactly what FID/KID get)."""
    try:
        r, f = features(_uint8_tensor(ref)), features(_uint8_tensor(rec))
        out = [r[0].numpy().astype(np.float32), f[0].numpy().astype(np.float32)]
        for image, at_size in ((ref, out[0]), (rec, out[1])):
            view = evaluated_view(image)
            same = view.shape == image.shape and np.array_equal(view, image)
            out.append(at_size if same else
                       features(_uint8_tensor(view))[0].numpy().astype(np.float32))
    except (ValueError, RuntimeError) as exc:
        return str(exc)
    return tuple(out)


def lpips_rows(items: list[ReconItem], records: list) -> pd.DataFrame:
    """The ``lpips`` frame (:data:`LPIPS_COLUMNS`) of per-item ``(lpips, lpips_vtbench)``
    records (or reasons), in item order."""
    rows = []
    for item, record in zip(items, records):
        row = item_row(item, record, LPIPS_COLUMNS)
        if record is not None and not isinstance(record, str):
            row["lpips"], row["lpips_vtbench"] = record
        rows.append(row)
    return pd.DataFrame(rows, columns=LPIPS_COLUMNS)


def feature_sets(items: list[ReconItem], records: list
                 ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(real [N, 2048], fake [N, 2048], failures)`` float64 of per-item feature records over
    the reconstructed items (both sets describe the same images), and ``item: reason`` lines of
    the items left out."""
    real, fake, failures = [], [], []
    for item, record in zip(items, records):
        if item.status != "ok":
            failures.append(f"{item.item_id}: {item.status}")
        elif isinstance(record, str) or record is None:
            failures.append(f"{item.item_id}: {record or 'no features'}")
            log.warning("%s: no features: %s", item.item_id, record)
        else:  # (real, fake[, ...]): the first two
            real.append(record[0].astype(np.float64))
            fake.append(record[1].astype(np.float64))
    shape = (0, FEATURE_DIM)
    return (np.stack(real) if real else np.zeros(shape), np.stack(fake) if fake else np.zeros(shape),
            failures)


def _unavailable_rows(items: list[ReconItem], reason: str) -> pd.DataFrame:
    rows = [{"item_id": item.item_id, "status": "unavailable", "reason": reason,
             "lpips": math.nan, "lpips_vtbench": math.nan} for item in items]
    return pd.DataFrame(rows, columns=LPIPS_COLUMNS)
