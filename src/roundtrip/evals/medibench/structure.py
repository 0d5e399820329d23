"""MediBench pillars 1 and 2 for volume sets: fidelity (PSNR, 3D SSIM) and clinical structure.

:func:`segment_originals` fits the segmenter on every original once per dataset;
:func:`score_volumes` scores one (model, dataset): fidelity of each reconstruction and the
agreement of its segmentation with the original's (SegSim, Dice, HD95, SegQC). Each function
writes per-item rows with ``status`` and ``reason``, so a bad volume costs one row and the job
goes on (the contracts of docs/design.md).
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.manifest import read_item_csv, read_manifest
from roundtrip.datasets.medical import read_volume
from roundtrip.evals.medibench.segment import Segmenter, load_params, save_params
from roundtrip.metrics.fidelity import fidelity
from roundtrip.metrics.segmentation import structure_metrics
from roundtrip.stages.volumes import save_like

log = logging.getLogger(__name__)


def segment_originals(manifest_path: str | Path, segmenter: Segmenter, out_dir: str | Path
                      ) -> pd.DataFrame:
    """Fit the segmenter on each original and segment it: ``{item}.nii.gz`` (labels),
    ``{item}.json`` (fitted parameters), and rows ``item_id, status, reason, segqc, segmenter``."""
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for _, row in read_manifest(manifest_path).iterrows():
        rec = {"item_id": row["item_id"], "status": "error", "reason": row["reason"],
               "segqc": np.nan, "segmenter": segmenter.name}
        if row["status"] == "ok":
            try:
                src = manifest_path.parent / row["path"]
                x = read_volume(src)
                params = segmenter.fit(x)
                labels, qc = segmenter.segment(x, params, src)
                save_like(labels.astype(np.int16), src, out_dir / f"{row['item_id']}.nii.gz")
                save_params(out_dir / f"{row['item_id']}.json", params)
                rec.update(status="ok", reason="", segqc=qc)
            except Exception as exc:  # noqa: BLE001 - recorded per item
                log.exception("segment %s", row["item_id"])
                rec["reason"] = f"segmentation of the original failed: {type(exc).__name__}: {exc}"
        rows.append(rec)
    return pd.DataFrame(rows)


def _spacing(row) -> tuple[float, float, float]:
    try:
        return tuple(float(v) for v in str(row["spacing"]).split(" x "))
    except ValueError:
        return (1.0, 1.0, 1.0)


def score_volumes(manifest_path: str | Path, status_path: str | Path, recon_dir: str | Path,
                  original_seg_dir: str | Path, original_seg_status: str | Path,
                  segmenter: Segmenter, seg_out_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fidelity (PSNR, 3D SSIM) and structure (SegSim, Dice, HD95, SegQC) of each volume.

    Returns:
        ``(image_quality rows: item_id, status, reason, psnr, ssim, mse, n_values,
        structure rows: item_id, status, reason, segmenter, segqc, segsim, dice_mean, hd95_mean,
        dice_<label>...)``.
    """
    manifest_path, recon_dir = Path(manifest_path), Path(recon_dir)
    seg_out_dir = Path(seg_out_dir)
    seg_out_dir.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(manifest_path).set_index("item_id")
    seg_status = read_item_csv(original_seg_status).set_index("item_id")
    quality, structure = [], []
    for _, st in read_item_csv(status_path).iterrows():
        item = st["item_id"]
        q = {"item_id": item, "status": st["status"], "reason": st["reason"]}
        s = dict(q, segmenter=segmenter.name)
        if st["status"] == "ok":
            y = None  # read once, for fidelity and structure
            try:
                x = read_volume(manifest_path.parent / manifest.loc[item, "path"])
                y = read_volume(recon_dir / f"{item}.nii.gz")
                q |= fidelity(x, y, 3) | {"n_values": int(x.size)}
            except Exception as exc:  # noqa: BLE001
                q.update(status="error", reason=f"{type(exc).__name__}: {exc}")
            s |= _structure(item, manifest.loc[item], seg_status, Path(original_seg_dir),
                            recon_dir, segmenter, seg_out_dir, y)
        quality.append(q)
        structure.append(s)
    return pd.DataFrame(quality), pd.DataFrame(structure)


def _structure(item, mrow, seg_status, seg_dir: Path, recon_dir: Path, segmenter: Segmenter,
               seg_out_dir: Path, recon: np.ndarray | None = None) -> dict:
    """Segment the reconstruction ``recon`` (read from ``recon_dir`` when None) with the
    original's fitted parameters and compare it with the original's labels."""
    if item not in seg_status.index or seg_status.loc[item, "status"] != "ok":
        reason = seg_status.loc[item, "reason"] if item in seg_status.index else "not segmented"
        return {"status": "error", "reason": reason}
    try:
        import nibabel as nib

        ref = np.asarray(nib.load(str(seg_dir / f"{item}.nii.gz")).dataobj).astype(np.int16)
        path = recon_dir / f"{item}.nii.gz"
        volume = read_volume(path) if recon is None else recon
        labels, qc = segmenter.segment(volume, load_params(seg_dir / f"{item}.json"), path)
        save_like(labels.astype(np.int16), path, seg_out_dir / f"{item}.nii.gz")
        return {"segqc": qc} | structure_metrics(ref, labels, _spacing(mrow))
    except Exception as exc:  # noqa: BLE001
        log.exception("structure %s", item)
        return {"status": "error", "reason": f"segmentation failed: {type(exc).__name__}: {exc}"}
