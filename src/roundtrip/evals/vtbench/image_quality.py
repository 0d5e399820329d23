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

import pandas as pd
import torch

from roundtrip.core.imaging import ImageReadError, read_image, to_unit
from roundtrip.core.recon_items import ReconContext, iter_recon_items
from roundtrip.evals.vtbench.released import ReleasedPSNR, released_ssim
from roundtrip.metrics.image_quality import mse, pooled_psnr, psnr_from_mse, ssim_batch

log = logging.getLogger(__name__)

IMAGE_QUALITY_COLUMNS = ["item_id", "status", "reason", "psnr", "ssim", "mse", "n_values",
                         "ssim_vtbench", "ref_min", "ref_max", "height", "width"]


def score_image_quality(manifest_path: str | Path, status_path: str | Path,
                        recon_dir: str | Path, released: ReleasedPSNR | None = None
                        ) -> pd.DataFrame:
    """PSNR, SSIM and MSE per item (definitions in :mod:`roundtrip.metrics.image_quality`), the
    released evaluator's SSIM (``ssim_vtbench``) and the originals' value range in [0, 1].

    Images are read one pair at a time, so memory does not grow with the dataset.

    Args:
        released: updated with every scored pair (the set's ``psnr_vtbench``), when given.

    Returns:
        DataFrame with :data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3.
    """
    rows = []
    for item in iter_recon_items(manifest_path, status_path, recon_dir):
        row = dict.fromkeys(IMAGE_QUALITY_COLUMNS, math.nan)
        row.update(item_id=item.item_id, status=item.status, reason=item.reason)
        if item.status == "ok":
            try:
                row.update(_score_item(item.reference, item.reconstruction, released))
            except (ImageReadError, ValueError) as exc:
                row.update(status="error", reason=f"scoring: {exc}")
        rows.append(row)
    return pd.DataFrame(rows, columns=IMAGE_QUALITY_COLUMNS)


def _score_item(orig_path: Path, recon_path: Path, released: ReleasedPSNR | None) -> dict:
    x, y = to_unit(read_image(orig_path)), to_unit(read_image(recon_path))
    m = mse(x, y)
    tx = torch.from_numpy(x).permute(2, 0, 1)[None]
    ty = torch.from_numpy(y).permute(2, 0, 1)[None]
    # float32 SSIM: within 1e-5 of float64/scikit-image (centered moments), 4x faster
    ssim = float(ssim_batch(tx, ty, dtype=torch.float32)[0])
    tx32, ty32 = tx.float(), ty.float()
    if released is not None:
        released.update(ty32, tx32)
    return {"psnr": psnr_from_mse(m), "ssim": ssim, "mse": m, "n_values": x.size,
            "ssim_vtbench": released_ssim(ty32, tx32),
            "ref_min": float(x.min()), "ref_max": float(x.max()),
            "height": x.shape[0], "width": x.shape[1]}


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


def score_reconstructions(ctx: ReconContext, options: dict) -> dict[str, pd.DataFrame]:
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``image_quality`` (per item, as
    :func:`score_image_quality`) and ``set`` (pooled PSNR, the released evaluator's PSNR).
    ``options`` is unused: PSNR/SSIM run on the CPU."""
    released = ReleasedPSNR()
    per_item = score_image_quality(ctx.manifest, ctx.status, ctx.recon_dir, released)
    return {"image_quality": per_item, "set": set_image_quality(per_item, released)}
