"""The medical branch's per-job work: reconstruct a volume set, segment, score, classify.

Each function takes manifest/status files and writes per-item rows with ``status`` and
``reason``, so a bad volume costs one row and the job goes on (the contracts of docs/design.md).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets import read_item_csv, read_manifest
from ..models import Adapter
from ..reconstruct import STATUS_COLUMNS, _check_fingerprint, _Journal
from . import latent_utility as lu
from .reconstruct import fidelity, reconstruct_slicewise, reconstruct_volume_3d
from .segment import Segmenter, load_params, save_params, structure_metrics
from .sources import read_volume

log = logging.getLogger(__name__)


def is_3d(model: Adapter) -> bool:
    """Whether the adapter takes volumes natively (MONAI models with ``spatial_dims: 3``)."""
    return getattr(model, "spatial_dims", 2) == 3


def _save_like(data: np.ndarray, like: Path, out: Path) -> None:
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
        Status rows (``item_id, status, reason, seconds, reference``), manifest order.
    """
    manifest_path, out_dir = Path(manifest_path), Path(out_dir)
    (out_dir / "shards").mkdir(parents=True, exist_ok=True)
    _check_fingerprint(out_dir, {"axis": axis, "roi_size": roi_size,
                                 **(fingerprint or {"model": model.name})}, "*.nii.gz")
    manifest = read_manifest(manifest_path)
    journal = _Journal(out_dir / "shards" / "volumes.journal.csv")
    try:
        for _, row in manifest.iterrows():
            item = row["item_id"]
            prev = journal.done.get(item)
            if prev and (prev["status"] != "ok" or (out_dir / f"{item}.nii.gz").exists()):
                continue
            if row["status"] != "ok":
                journal.record(item, "error", row["reason"], 0.0)
                continue
            t0 = time.perf_counter()
            try:
                src = manifest_path.parent / row["path"]
                x = read_volume(src)
                if is_3d(model):
                    y = reconstruct_volume_3d(model, x, roi_size)
                else:
                    y = reconstruct_slicewise(model, x, axis, batch_size)
                _save_like(y, src, out_dir / f"{item}.nii.gz")
                journal.record(item, "ok", "", time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - one volume's failure is its row, not the job's
                log.exception("volume %s", item)
                journal.record(item, "error", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    finally:
        journal.close()
    return pd.DataFrame([journal.done[i] for i in manifest["item_id"]], columns=STATUS_COLUMNS)


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
                _save_like(labels.astype(np.int16), src, out_dir / f"{row['item_id']}.nii.gz")
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
        _save_like(labels.astype(np.int16), path, seg_out_dir / f"{item}.nii.gz")
        return {"segqc": qc} | structure_metrics(ref, labels, _spacing(mrow))
    except Exception as exc:  # noqa: BLE001
        log.exception("structure %s", item)
        return {"status": "error", "reason": f"segmentation failed: {type(exc).__name__}: {exc}"}


# -- latent utility ----------------------------------------------------------------------------
def _labeled(m: pd.DataFrame) -> pd.DataFrame:
    """The ok rows with a label (a manifest without a ``label`` column has none)."""
    if "label" not in m.columns:
        return m.iloc[:0]
    return m[(m["status"] == "ok") & (m["label"].astype(str) != "")]


def samples_2d(manifest_path: str | Path, size: int = 256, patch: int | None = None):
    """Classification samples of a 2D medical set, MediBench preprocessing (center square,
    ``size`` x ``size``, 3 channels).

    With ``patch``, each image is cut into quadrant tiles (:func:`~.latent_utility.quadrant_patches`)
    that inherit its label; folds hold out one quadrant of every image.

    Returns:
        ``(x [N, 3, S, S] float32 in [-1, 1], labels, groups, splits or None, fold_ids or None,
        skipped)``; items without a label or not ok are skipped (counted in ``skipped``).
    """
    import torch

    from ..imaging import read_image, to_unit
    from ..protocols import center_square, resize

    manifest_path = Path(manifest_path)
    m = read_manifest(manifest_path)
    labeled = _labeled(m)
    xs, labels, groups, splits, folds = [], [], [], [], []
    for _, row in labeled.iterrows():
        img = resize(center_square(to_unit(read_image(manifest_path.parent / row["path"]))),
                     (size, size))
        tiles, quads = (lu.quadrant_patches(img, patch) if patch else (img[None], [0]))
        xs.append(tiles)
        labels += [row["label"]] * len(tiles)
        groups += [f"{row.get('subject') or row['item_id']}/q{q}" if patch else
                   str(row.get("subject") or row["item_id"]) for q in quads]
        splits += [str(row.get("split", ""))] * len(tiles)
        folds += quads
    if not xs:
        raise ValueError("no labeled items to classify")
    x = torch.from_numpy(np.concatenate(xs)).permute(0, 3, 1, 2).contiguous() * 2 - 1
    return (x, labels, groups, splits if any(splits) and not patch else None,
            folds if patch else None, len(m) - len(labeled))


def samples_3d(manifest_path: str | Path):
    """``(volumes [0, 1], labels, groups, splits or None, skipped)`` of a labeled volume set."""
    manifest_path = Path(manifest_path)
    m = read_manifest(manifest_path)
    labeled = _labeled(m)
    if labeled.empty:
        raise ValueError("no labeled volumes to classify")
    vols = [read_volume(manifest_path.parent / p) for p in labeled["path"]]
    splits = [str(s) for s in labeled.get("split", [""] * len(labeled))]
    groups = [str(s or i) for s, i in zip(labeled.get("subject", labeled["item_id"]),
                                          labeled["item_id"])]
    return vols, list(labeled["label"]), groups, (splits if any(splits) else None), len(m) - len(labeled)


def _rows_for(features: str, x: np.ndarray | None, reason: str, y, multilabel, folds, seed,
              note: str = "") -> list[dict]:
    rows = []
    for head in lu.HEADS:
        row = {"features": features, "head": head, "status": "ok", "reason": note}
        if x is None:
            row.update(status="unavailable", reason=reason)
        else:
            try:
                row |= lu.evaluate_features(x, y, multilabel, folds, head, seed)
            except Exception as exc:  # noqa: BLE001 - one classifier's failure is its row
                row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return rows


def latent_utility(manifest_path: str | Path, kind: str, settings: dict,
                   model: Adapter | None = None, baselines: dict | None = None) -> pd.DataFrame:
    """Classifier rows for a model's latents (``model``) or for the image baselines (``model``
    None, ``baselines`` = ``{"resnet18_weights": path or None, "seresnet_weights": ...}``).

    Args:
        kind: ``image`` or ``volume`` (the dataset's manifest kind).
        settings: ``size``, ``patch``, ``folds``, ``seed``, ``pixel_size``, ``axis``,
            ``cnn_3d`` (MONAI network name), ``cnn_3d_size``.

    Returns:
        Rows ``features, head, status, reason, accuracy, macro_f1, macro_precision,
        macro_recall, macro_auc, n_train, n_test, n_features``.
    """
    seed = int(settings.get("seed", 0))
    if kind == "volume":
        vols, labels, groups, splits, skipped = samples_3d(manifest_path)
        fold_ids = None
    else:
        x_img, labels, groups, splits, fold_ids, skipped = samples_2d(
            manifest_path, settings.get("size", 256), settings.get("patch"))
    y, _, multilabel = lu.encode_labels(labels)
    folds = lu.make_folds(y, groups, splits, settings.get("folds", 4), seed, fold_ids)
    note = f"{skipped} unlabeled or failed items not classified" if skipped else ""
    if model is not None:
        try:
            if kind == "volume":
                feats = [lu.volume_latent_features(model, v, settings.get("axis", 2)) for v in vols]
                if len({f.size for f in feats}) > 1:
                    raise ValueError("latents differ in size across volumes (volumes of different "
                                     "shapes); resample the set to one shape")
                x = np.stack(feats)
            else:
                x = lu.latent_features(model, x_img)
        except lu.NoLatent as exc:
            return pd.DataFrame(_rows_for("latent", None, str(exc), y, multilabel, folds, seed))
        return pd.DataFrame(_rows_for("latent", x, "", y, multilabel, folds, seed, note))
    baselines = baselines or {}
    pixel_size = int(settings.get("pixel_size", 32))
    rows = []
    if kind == "volume":
        import torch

        # each volume resized on its own: the sizes of a set may differ
        pix = np.concatenate([lu.pixel_features(torch.from_numpy(v)[None, None], pixel_size)
                              for v in vols])
        rows += _rows_for("pixels", pix, "", y, multilabel, folds, seed, note)
        net = settings.get("cnn_3d", "SEResNet152")
        w = baselines.get("seresnet_weights")
        feats = lu.seresnet_features(vols, net, w, settings.get("cnn_3d_size"), seed)
        rows += _rows_for(f"{net} ({'pretrained' if w else 'random init'})", feats, "", y,
                          multilabel, folds, seed, note)
    else:
        rows += _rows_for("pixels", lu.pixel_features(x_img, pixel_size), "", y, multilabel,
                          folds, seed, note)
        w = baselines.get("resnet18_weights")
        rows += _rows_for("ResNet-18 (ImageNet)", lu.resnet18_features(x_img, w) if w else None,
                          baselines.get("resnet18_missing", "ImageNet weights missing"), y,
                          multilabel, folds, seed, note)
        rows += _rows_for("ResNet-18 (random init)", lu.resnet18_features(x_img, None, seed=seed),
                          "", y, multilabel, folds, seed, note)
    return pd.DataFrame(rows)
