"""PSNR and SSIM of a (model, dataset), per item and pooled (VTBench Task 1, Table 1).

Two conventions side by side: roundtrip's (``psnr``, ``ssim``: per item, data range 1, then the
mean over items; ``psnr_pooled``) and that of VTBench's released evaluator (``psnr_vtbench``: one
torchmetrics PSNR over the set; ``ssim_vtbench``: torchmetrics SSIM per item), see
:mod:`roundtrip.evals.vtbench.released`.

Every manifest item gets a row: scored items carry numbers, the others carry ``status`` and the
``reason`` they could not be scored, so tables can say why a number is missing.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core.imaging import ImageReadError, to_unit
from roundtrip.core.recon_items import ReconItem, iter_recon_items
from roundtrip.core.scoring import ReconScorer, item_row
from roundtrip.evals.vtbench.released import ReleasedPSNR, released_ssim
from roundtrip.metrics.image_quality import mse, pooled_psnr, psnr_from_mse, ssim_batch

log = logging.getLogger(__name__)

IMAGE_QUALITY_COLUMNS = ["item_id", "status", "reason", "psnr", "ssim", "mse", "n_values",
                         "ssim_vtbench", "ref_min", "ref_max", "height", "width"]


class ImageQualityScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``image_quality`` (per item:
    PSNR, SSIM and MSE, definitions in :mod:`roundtrip.metrics.image_quality`; the released
    evaluator's SSIM, ``ssim_vtbench``; the originals' value range in [0, 1]) and ``set`` (pooled
    PSNR, the released evaluator's PSNR, the image size). ``options`` is unused. The SSIMs run
    on the job's device when it is a GPU (on the CPU they would take longer than a VAE's
    forward pass there), else on the CPU.

    Records: a dict of the row's values and the pair's :meth:`ReleasedPSNR.pair_stats`, or
    ``None`` for an item not reconstructed, or the reason it could not be scored.
    """

    def score(self, items: list[ReconItem]) -> list:
        records = []
        for item in items:
            if item.status != "ok":
                records.append(None)
                continue
            try:
                records.append(_score_item(item.read_reference(), item.read_reconstruction(),
                                           self._device()))
            except (ImageReadError, ValueError) as exc:
                records.append(f"scoring: {exc}")
        return records

    def record_options(self, options: dict) -> dict:
        return {}

    def complete(self, record) -> bool:
        return not isinstance(record, str)  # a pair that failed to score is tried again

    def _device(self):
        device = getattr(self.ctx, "device", None)
        return device if getattr(device, "type", "cpu") == "cuda" else None

    def finish(self, items: list[ReconItem], records: list) -> dict[str, pd.DataFrame]:
        released = ReleasedPSNR()
        per_item = image_quality_rows(items, records, released)
        return {"image_quality": per_item, "set": set_image_quality(per_item, released)}


def image_quality_rows(items: list[ReconItem], records: list,
                       released: ReleasedPSNR | None = None) -> pd.DataFrame:
    """The per-item frame (:data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3) of
    :class:`ImageQualityScorer` records, in item order; ``released`` is updated with every
    scored pair, in that order."""
    rows = []
    for item, record in zip(items, records):
        row = item_row(item, record, IMAGE_QUALITY_COLUMNS)
        if record is not None and not isinstance(record, str):
            values = dict(record)
            stats = values.pop("released")
            if released is not None:
                released.add(stats)
            row.update(values)
        rows.append(row)
    return pd.DataFrame(rows, columns=IMAGE_QUALITY_COLUMNS)


def score_image_quality(manifest_path: str | Path, status_path: str | Path,
                        recon_dir: str | Path, released: ReleasedPSNR | None = None
                        ) -> pd.DataFrame:
    """:class:`ImageQualityScorer`'s per-item frame of a finished reconstruction, read from
    its files one pair at a time.

    Args:
        released: updated with every scored pair (the set's ``psnr_vtbench``), when given.

    Returns:
        DataFrame with :data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3.
    """
    scorer = ImageQualityScorer(None, {})
    items = [i.without_images() for i in iter_recon_items(manifest_path, status_path, recon_dir)]
    records = [scorer.score([item])[0] for item in items]
    return image_quality_rows(items, records, released)


def _score_item(original: np.ndarray, reconstruction: np.ndarray, device=None) -> dict:
    x, y = to_unit(original), to_unit(reconstruction)
    m = mse(x, y)
    tx = torch.from_numpy(x).permute(2, 0, 1)[None]
    ty = torch.from_numpy(y).permute(2, 0, 1)[None]
    if device is not None:
        tx, ty = tx.to(device), ty.to(device)
    # float32 SSIM: within 1e-5 of float64/scikit-image (centered moments), 4x faster
    ssim = float(ssim_batch(tx, ty, dtype=torch.float32)[0])
    tx32, ty32 = tx.float(), ty.float()
    stats = ReleasedPSNR.pair_stats(ty32, tx32)
    return {"psnr": psnr_from_mse(m), "ssim": ssim, "mse": m, "n_values": x.size,
            "ssim_vtbench": released_ssim(ty32, tx32),
            "ref_min": float(x.min()), "ref_max": float(x.max()),
            "height": x.shape[0], "width": x.shape[1], "released": stats}


def set_image_quality(per_item: pd.DataFrame, released: ReleasedPSNR | None = None
                      ) -> pd.DataFrame:
    """Set-level rows ``metric, value, n``: roundtrip's pooled PSNR over the scored items and,
    with ``released``, the released evaluator's PSNR (``psnr_vtbench``)."""
    ok = per_item[per_item["status"] == "ok"]
    rows = [{"metric": "psnr_pooled",
             "value": pooled_psnr(ok["mse"].to_numpy(), ok["n_values"].to_numpy()), "n": len(ok)}]
    if released is not None:
        rows.append({"metric": "psnr_vtbench", "value": released.compute(), "n": released.n})
    rows.append(image_size_row(ok))
    return pd.DataFrame(rows, columns=["metric", "value", "n", "note"]).fillna({"note": ""})


def image_size_row(ok: pd.DataFrame) -> dict:
    """The ``image_size`` set row: the side (px) of the square images the model was scored at
    (VTBench Tables 1-3's "Image Size"), or NaN with the sizes in the note when the scored
    items are not all one square size (e.g. the native protocol)."""
    if ok.empty or "height" not in ok:
        return {"metric": "image_size", "value": math.nan, "n": 0, "note": "no item scored"}
    sizes = sorted({(int(h), int(w)) for h, w in zip(ok["height"], ok["width"])})
    if len(sizes) == 1 and sizes[0][0] == sizes[0][1]:
        return {"metric": "image_size", "value": float(sizes[0][0]), "n": len(ok), "note": ""}
    shown = ", ".join(f"{h}x{w}" for h, w in sizes[:3]) + (" ..." if len(sizes) > 3 else "")
    return {"metric": "image_size", "value": math.nan, "n": len(ok),
            "note": f"not one square size: {shown}"}
