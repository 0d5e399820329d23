"""Reconstruction of volumes through 2D and 3D models (MediBench), one (model, dataset) a job.

Volumes are stored in ``[0, 1]`` (:mod:`roundtrip.datasets.volumes`) and mapped to ``[-1, 1]`` at
the encoder (MediBench Appendix A). Inputs are padded to a multiple of the model's downsample
factor (MONAI ``DivisiblePad``) and cropped back after decoding.

- **Slice-wise** (:func:`reconstruct_slicewise`): any 2D adapter, slices along a configurable axis,
  replicated to 3 channels when the model needs RGB, batched; the output is preallocated and
  filled batch by batch, so memory is one volume plus one batch whatever the depth.
- **Native 3D** (:func:`reconstruct_volume_3d`): a 3D adapter (MONAI AutoencoderKL/VQVAE with
  ``spatial_dims: 3``) through MONAI's sliding-window inference, so memory is bounded by the
  window, not the volume.
- **A volume set** (:func:`reconstruct_volume_set`): every volume of a dataset, resumable
  through a journal, one status row per volume.
"""
from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from roundtrip.core.manifest import read_manifest
from roundtrip.core.progress import Progress
from roundtrip.datasets.medical import read_volume
from roundtrip.datasets.volumes import on_grid
from roundtrip.models import Adapter, item_seed, seeded
from roundtrip.stages.reconstruct import STATUS_COLUMNS, Journal, check_fingerprint

log = logging.getLogger(__name__)



def _divisible(x: torch.Tensor, k: int) -> tuple[torch.Tensor, tuple[slice, ...]]:
    """Pad the spatial dims of ``[B, C, *spatial]`` at their end to multiples of ``k`` (MONAI
    ``DivisiblePad``, edge values: a constant would draw an artificial border the model then has
    to reconstruct); returns the crop that undoes it."""
    from monai.transforms import DivisiblePad

    spatial = x.shape[2:]
    if k <= 1 or all(s % k == 0 for s in spatial):
        return x, tuple(slice(0, s) for s in spatial)
    pad = DivisiblePad(k=k, mode="edge", method="end")
    padded = torch.stack([pad(item) for item in x])
    return padded, tuple(slice(0, s) for s in spatial)


@torch.no_grad()
def reconstruct_slicewise(model: Adapter, volume01: np.ndarray, axis: int = 2,
                          batch_size: int = 16, channels: int = 3) -> np.ndarray:
    """Reconstruct a volume slice by slice through a 2D model.

    Args:
        model: a 2D adapter (inputs ``[B, C, H, W]`` in ``[-1, 1]``), on its device.
        volume01: float32 ``(X, Y, Z)`` in ``[0, 1]``.
        axis: slicing axis (2 = axial for RAS volumes).
        batch_size: slices per forward pass.
        channels: 3 to replicate each slice to RGB (natural-image VAEs), 1 for grayscale models;
            the output is the mean over the model's output channels.

    Returns:
        float32 ``(X, Y, Z)`` in ``[0, 1]`` on the :data:`GRID`, same shape as the input.

    Raises:
        ValueError: ``volume01`` is not 3D; anything the model raises propagates (the caller
            records it as the item's error).
    """
    if volume01.ndim != 3:
        raise ValueError(f"expected a 3D volume, got shape {volume01.shape}")
    slices = np.moveaxis(volume01, axis, 0)  # a view: no copy of the volume
    out = np.empty(slices.shape, dtype=np.float32)
    k = max(1, int(model.info().downsample))
    for start in range(0, slices.shape[0], batch_size):
        x = torch.from_numpy(np.ascontiguousarray(slices[start:start + batch_size]))[:, None]
        x = (x * 2.0 - 1.0).expand(-1, channels, -1, -1).contiguous()
        padded, crop = _divisible(x, k)
        # a volume's slices are one item: a convention mistake shows pooled over them
        y = model.reconstruct(padded.to(model.device), pooled=True).float().cpu()
        y = y[(slice(None), slice(None)) + crop].mean(dim=1)
        out[start:start + len(y)] = on_grid(((y + 1.0) / 2.0).numpy())
    return np.moveaxis(out, 0, axis)


@torch.no_grad()
def reconstruct_volume_3d(model: Adapter, volume01: np.ndarray, roi_size: int | tuple = 64,
                          overlap: float = 0.25, sw_batch_size: int = 1) -> np.ndarray:
    """Reconstruct a volume through a 3D model with MONAI sliding-window inference.

    Args:
        model: a 3D adapter (inputs ``[B, 1, D, H, W]`` in ``[-1, 1]``).
        volume01: float32 ``(X, Y, Z)`` in ``[0, 1]``.
        roi_size: window side (or sides); a multiple of the model's downsample factor.
        overlap: window overlap; windows are blended with Gaussian weights.

    Returns:
        float32 ``(X, Y, Z)`` in ``[0, 1]``.
    """
    from monai.inferers import sliding_window_inference

    k = max(1, int(model.info().downsample))
    roi = (roi_size,) * 3 if isinstance(roi_size, int) else tuple(roi_size)
    if any(r % k for r in roi):
        raise ValueError(f"roi_size {roi} must be a multiple of the downsample factor {k}")
    x = torch.from_numpy(np.ascontiguousarray(volume01, dtype=np.float32))[None, None] * 2 - 1
    padded, crop = _divisible(x, k)
    y = sliding_window_inference(padded.to(model.device), roi, sw_batch_size, model.reconstruct,
                                 overlap=overlap, mode="gaussian")
    y = y[(0, 0) + crop].float().cpu()
    return on_grid(((y + 1.0) / 2.0).numpy())


def is_3d(model: Adapter) -> bool:
    """Whether the adapter takes volumes natively (MONAI models with ``spatial_dims: 3``)."""
    return getattr(model, "spatial_dims", 2) == 3


def save_like(data: np.ndarray, like: Path, out: Path) -> None:
    """Write ``data`` as NIfTI with the affine of ``like``, atomically (a crash leaves no
    half-written file that a resumed run would take as done)."""
    import nibabel as nib

    affine = nib.load(str(like)).affine
    tmp = out.with_name(out.name + ".tmp.nii.gz")
    nib.save(nib.Nifti1Image(data, affine), tmp)
    tmp.replace(out)


def reconstruct_volume_set(model: Adapter, manifest_path: str | Path, out_dir: str | Path,
                           axis: int = 2, batch_size: int = 16, roi_size: int = 64,
                           fingerprint: dict | None = None) -> pd.DataFrame:
    """Reconstruct every volume of a volume dataset: 2D models slice-wise along ``axis``, 3D
    models with sliding windows of ``roi_size``; ``{item_id}.nii.gz`` in ``out_dir``.

    Resumable: items recorded in the journal with their file present are not recomputed.

    Returns:
        Status rows (``item_id, status, reason, reference``), manifest order.
    """
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    (out_dir / "shards").mkdir(parents=True, exist_ok=True)
    check_fingerprint(out_dir, {"axis": axis, "roi_size": roi_size,
                                 **(fingerprint or {"model": model.name})}, "*.nii.gz")
    manifest = read_manifest(manifest_path)
    journal = Journal(out_dir / "shards" / "volumes.journal.csv")

    def resumed(item: str) -> bool:
        prev = journal.done.get(item)
        return bool(prev) and (prev["status"] != "ok" or (out_dir / f"{item}.nii.gz").exists())

    progress = Progress(sum(not resumed(i) for i in manifest["item_id"]),
                        f"reconstruct {model.name} on {manifest_path.parent.name}",
                        unit="volumes")
    try:
        for _, row in manifest.iterrows():
            item = row["item_id"]
            if resumed(item):
                continue
            if row["status"] != "ok":
                journal.record(item, "error", row["reason"], 0.0)
                progress.add()
                continue
            t0 = time.perf_counter()
            try:
                src = manifest_path.parent / row["path"]
                x = read_volume(src)
                seed = item_seed(model.seed, item) if model.stochastic else None
                # a sampling model draws the volume's windows or slices under the item's seed
                with seeded(seed) if seed is not None else contextlib.nullcontext():
                    if is_3d(model):
                        y = reconstruct_volume_3d(model, x, roi_size)
                    else:
                        y = reconstruct_slicewise(model, x, axis, batch_size)
                save_like(y, src, out_dir / f"{item}.nii.gz")
                journal.record(item, "ok", "", time.perf_counter() - t0, seed=seed)
            except Exception as exc:  # noqa: BLE001 - one volume's failure is its row, not the job's
                log.exception("volume %s", item)
                journal.record(item, "error", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
            progress.add()
    finally:
        journal.close()
    progress.finish()
    return pd.DataFrame([journal.done[i] for i in manifest["item_id"]], columns=STATUS_COLUMNS)
