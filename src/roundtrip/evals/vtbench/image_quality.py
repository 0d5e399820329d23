"""PSNR and SSIM of a (model, dataset), per item and per set (VTBench Task 1, Table 1).

Two conventions side by side:

* VTBench's released evaluator (:mod:`roundtrip.evals.vtbench.released`), the headline: both
  images resized to 256 x 256 (``*_vtbench`` columns): ``psnr_vtbench``, one PSNR over the set
  with the range from 0 to the originals' max; ``ssim_vtbench``, SSIM with the data range of
  each batch of 16 pairs in sorted file-name order (per item at its batch's range, and the set
  value); beside it ``ssim_pair_range``, the same SSIM of the 256 px copies with each pair's own
  range (torchmetrics' default SSIM of the pair alone: a per-item value that does not depend on
  which other items share its batch);
* roundtrip's, at the size the model was scored at: ``psnr``, ``ssim`` (per item, data range 1,
  then the mean over items), ``psnr_pooled`` (one MSE over the set), and the earlier reading of
  the evaluator's PSNR at that size, ``psnr_range`` (range max - min of the originals).

Each SSIM is computed once per view and convention: at 256 x 256 one filtering serves
``ssim_pair_range`` and every batch range of ``ssim_vtbench``
(:func:`~roundtrip.evals.vtbench.released.ssim_at_ranges`, torchmetrics' operations), and the
scored size's ``ssim`` is its own filtering
(:func:`~roundtrip.metrics.image_quality.ssim_conventions`), left out where the option
``ssim_scored_size`` is false (``metrics.ssim.scored_size``): at 1024 x 1024 it is most of a
pair's scoring time. Every value is the same at any thread count.

Every manifest item gets a row: scored items carry numbers, the others carry ``status`` and the
``reason`` they could not be scored, so tables can say why a number is missing.
"""
from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core.imaging import ImageReadError, to_unit
from roundtrip.core.recon_items import ReconItem, iter_recon_items
from roundtrip.core.scoring import ReconScorer, item_row
from roundtrip.evals.vtbench.released import (
    ReleasedPSNR,
    evaluated_view,
    released_order,
    released_ssim_set,
    ssim_at_ranges,
    view_extremes,
)
from roundtrip.metrics.image_quality import (
    VALID,
    mse,
    mse_levels,
    pooled_psnr,
    psnr_from_mse,
    ssim_conventions,
)

log = logging.getLogger(__name__)

IMAGE_QUALITY_COLUMNS = ["item_id", "status", "reason", "psnr", "ssim", "mse", "n_values",
                         "ssim_vtbench", "ssim_pair_range", "ref_min", "ref_max", "mse_vtbench",
                         "n_values_vtbench", "ref_min_vtbench", "ref_max_vtbench", "height",
                         "width"]
#: Record entries that :meth:`ImageQualityScorer.finish` consumes (not columns).
_SET_PARTS = ("released", "ssim_ranges")


class ImageQualityScorer(ReconScorer):
    """Reconstruction scorer (:mod:`roundtrip.workflow.recon_job`): ``image_quality`` (per item:
    PSNR and MSE at the scored size and, unless the option ``ssim_scored_size`` is false,
    SSIM there, definitions in :mod:`roundtrip.metrics.image_quality`; the released evaluator's
    SSIM at 256 x 256, ``ssim_vtbench``, and the per-pair-range SSIM there, ``ssim_pair_range``;
    the originals' value range in [0, 1] at both sizes) and ``set`` (pooled PSNR, the released
    evaluator's PSNR and SSIM, the earlier range PSNR, the image size). The SSIM at the scored
    size runs on the job's device when it is a GPU (on the CPU it would take longer than a
    VAE's forward pass there), else on the CPU.

    Options: ``ssim_scored_size`` (bool, default true): compute ``ssim``; false leaves the
    column empty (NaN), which the tables then leave out.

    Records: a dict of the row's values, the evaluated pair's :meth:`ReleasedPSNR.level_stats`
    (``released``) and its SSIM at every batch range (``ssim_ranges``:
    :func:`~roundtrip.evals.vtbench.released.ssim_at_ranges` and the pair's extremes), or
    ``None`` for an item not reconstructed, or the reason it could not be scored.
    """

    def score(self, items: list[ReconItem]) -> list:
        full_ssim = self.record_options(self.options)["ssim_scored_size"]
        records = []
        for item in items:
            if item.status != "ok":
                records.append(None)
                continue
            try:
                records.append(_score_item(item.read_reference(), item.read_reconstruction(),
                                           self._device(), full_ssim))
            except (ImageReadError, ValueError) as exc:
                records.append(f"scoring: {exc}")
        return records

    def record_options(self, options: dict) -> dict:
        # a record made without the full-size SSIM is stale once it is asked for (and the other
        # way round); the default spelled out, so that {} and {"ssim_scored_size": true} agree
        return {"ssim_scored_size": bool(options.get("ssim_scored_size", True))}

    def complete(self, record) -> bool:
        return not isinstance(record, str)  # a pair that failed to score is tried again

    def _device(self):
        device = getattr(self.ctx, "device", None)
        return device if getattr(device, "type", "cpu") == "cuda" else None

    def finish(self, items: list[ReconItem], records: list) -> dict[str, pd.DataFrame]:
        per_item, released = image_quality_rows(items, records)
        return {"image_quality": per_item, "set": set_image_quality(per_item, released)}


def image_quality_rows(items: list[ReconItem], records: list
                       ) -> tuple[pd.DataFrame, dict[str, tuple[float, int]]]:
    """The per-item frame (:data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3) of
    :class:`ImageQualityScorer` records, in item order, and the released evaluator's set
    values ``{"psnr_vtbench": (dB, n), "ssim_vtbench": (value, n)}``: the scored pairs in sorted
    file-name order (:func:`~roundtrip.evals.vtbench.released.released_order`), batches of 16
    (each item's ``ssim_vtbench`` is its value at its batch's range)."""
    rows, parts = [], {}
    for item, record in zip(items, records):
        row = item_row(item, record, IMAGE_QUALITY_COLUMNS)
        if record is not None and not isinstance(record, str):
            values = dict(record)
            parts[len(rows)] = {k: values.pop(k) for k in _SET_PARTS}
            row.update(values)
        rows.append(row)
    scored = list(parts)
    order = [scored[i] for i in released_order([rows[j]["item_id"] for j in scored])]
    psnr = ReleasedPSNR()
    for j in order:
        psnr.add(parts[j]["released"])
    ssim, per_pair = released_ssim_set([parts[j]["ssim_ranges"] for j in order])
    for j, value in zip(order, per_pair):
        rows[j]["ssim_vtbench"] = value
    frame = pd.DataFrame(rows, columns=IMAGE_QUALITY_COLUMNS)
    return frame, {"psnr_vtbench": (psnr.compute(), psnr.n), "ssim_vtbench": (ssim, len(order))}


def score_image_quality(manifest_path: str | Path, status_path: str | Path,
                        recon_dir: str | Path, ssim_scored_size: bool = True) -> pd.DataFrame:
    """:class:`ImageQualityScorer`'s per-item frame of a finished reconstruction, read from
    its files one pair at a time (:func:`score_image_quality_files` gives the set rows too).

    Returns:
        DataFrame with :data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3.
    """
    return score_image_quality_files(manifest_path, status_path, recon_dir, ssim_scored_size)[0]


def score_image_quality_files(manifest_path: str | Path, status_path: str | Path,
                              recon_dir: str | Path, ssim_scored_size: bool = True
                              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:class:`ImageQualityScorer`'s two frames of a finished reconstruction, from its files.

    With ``n`` > 1 torch threads (``torch.get_num_threads()``), ``n`` threads each decode and
    score a pair at a time, PyTorch's own threads set to 1 for the call (and restored): a pair's
    many small tensor operations would otherwise wait on each other's threads, and decoding
    runs beside scoring. With one thread it decodes and scores in turn. The values are the same
    either way, to the bit (every sum runs in one thread's order).

    Args:
        ssim_scored_size: compute ``ssim`` at the scored size (the scorer's option of that
            name); false leaves it NaN.

    Returns:
        ``(per-item frame with IMAGE_QUALITY_COLUMNS, set rows of set_image_quality)``.
    """
    scorer = ImageQualityScorer(None, {"ssim_scored_size": ssim_scored_size})
    items = [i.without_images() for i in iter_recon_items(manifest_path, status_path, recon_dir)]
    threads = torch.get_num_threads()
    if threads > 1:
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(threads, thread_name_prefix="image-quality") as pool:
                records = list(pool.map(lambda item: scorer.score([_with_images(item)])[0],
                                        items))
        finally:
            torch.set_num_threads(threads)
    else:
        records = [scorer.score([item])[0] for item in items]
    per_item, released = image_quality_rows(items, records)
    return per_item, set_image_quality(per_item, released)


def _with_images(item: ReconItem) -> ReconItem:
    """The item with both images decoded into memory; unchanged when it was not reconstructed
    or a file does not decode (the scorer then reads it and records why)."""
    if item.status != "ok":
        return item
    try:
        return ReconItem(item.item_id, item.status, item.reason, item.reference,
                         item.reconstruction, item.read_reference(), item.read_reconstruction(),
                         item.fields)
    except (ImageReadError, ValueError):
        return item


def _score_item(original: np.ndarray, reconstruction: np.ndarray, device=None,
                full_ssim: bool = True) -> dict:
    # exact on the integer levels where both images have one bit depth (always, for images
    # this workflow wrote), else the float64 MSE of the [0, 1] values
    if original.dtype == reconstruction.dtype:
        m = mse_levels(original, reconstruction)
    else:
        m = mse(to_unit(original), to_unit(reconstruction))
    ssim = math.nan
    if full_ssim:
        # at the scored size (OpenCV's filtering on the CPU): roundtrip's SSIM (float32,
        # centered moments: within 1e-5 of scikit-image)
        tx = torch.from_numpy(to_unit(original)).permute(2, 0, 1)[None]
        ty = torch.from_numpy(to_unit(reconstruction)).permute(2, 0, 1)[None]
        if device is not None:
            tx, ty = tx.to(device), ty.to(device)
        ssim = float(ssim_conventions(ty, tx, [VALID], dtype=torch.float32)[0][0])
    # what the released evaluator scores: both images at 256 x 256 (the model's input size
    # does not matter there), torchmetrics' operations to the bit; the pair's own range is the
    # first of its batch ranges (k0, the same filtering)
    vx, vy = evaluated_view(original), evaluated_view(reconstruction)
    stats = ReleasedPSNR.level_stats(vy, vx)
    k0, at_ranges = ssim_at_ranges(vy, vx)
    scale = float(np.iinfo(original.dtype).max)
    ref_min = float(np.float32(original.min()) / np.float32(scale))
    ref_max = float(np.float32(original.max()) / np.float32(scale))
    return {"psnr": psnr_from_mse(m), "ssim": ssim, "mse": m, "n_values": original.size,
            "ssim_pair_range": float(at_ranges[0]), "ref_min": ref_min, "ref_max": ref_max,
            "mse_vtbench": stats[0] / stats[1], "n_values_vtbench": stats[1],
            "ref_min_vtbench": stats[2], "ref_max_vtbench": stats[3],
            "height": original.shape[0], "width": original.shape[1], "released": stats,
            "ssim_ranges": (k0, at_ranges, view_extremes(vy, vx))}


def range_psnr(ok: pd.DataFrame) -> float:
    """roundtrip's earlier reading of the released PSNR, at the scored size: one MSE over the
    set and the range max - min of the originals (``psnr_range``); NaN with no item, and where
    every original is one flat colour (a range of 0 has no PSNR)."""
    if ok.empty or "ref_max" not in ok:
        return math.nan
    n = ok["n_values"].to_numpy(dtype=np.float64)
    m = float((ok["mse"].to_numpy(dtype=np.float64) * n).sum() / n.sum())
    value_range = float(ok["ref_max"].max() - ok["ref_min"].min())
    return psnr_from_mse(m, value_range) if value_range > 0 else math.nan


def set_image_quality(per_item: pd.DataFrame,
                      released: dict[str, tuple[float, int]] | None = None) -> pd.DataFrame:
    """Set-level rows ``metric, value, n, note``: roundtrip's pooled PSNR and range PSNR over the
    scored items, the released evaluator's PSNR and SSIM (``released``, from
    :func:`image_quality_rows`), and the image size."""
    ok = per_item[per_item["status"] == "ok"]
    rows = [{"metric": "psnr_pooled",
             "value": pooled_psnr(ok["mse"].to_numpy(), ok["n_values"].to_numpy()), "n": len(ok)},
            {"metric": "psnr_range", "value": range_psnr(ok), "n": len(ok)}]
    for metric, (value, n) in (released or {}).items():
        rows.append({"metric": metric, "value": value, "n": n})
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
