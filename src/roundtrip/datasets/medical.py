"""Medical datasets from local folders and bundled data, into the manifest contract.

2D sets become ordinary image datasets (PNG items, :func:`roundtrip.core.manifest.write_dataset`)
with a ``modality`` and, where known, ``label``, ``subject`` and ``split`` column. 3D sets become
volume datasets (:func:`write_volume_dataset`): each volume is read with
:func:`~roundtrip.datasets.volumes.load_volume` (RAS+, per-item outcome), mapped to ``[0, 1]`` on the
:data:`~roundtrip.datasets.volumes.GRID` (MediBench Appendix A: ``[0, 1]`` for I/O and metrics),
and stored as ``volumes/{item_id}.nii.gz`` (float32, the source affine), so every later rule reads
the same values.

Sources (all offline):

- ``skimage_medical``: scikit-image's bundled histology (``immunohistochemistry``), fundus
  (``retina``, ``microaneurysms``), microscopy (``cell``) and CT phantom (``shepp_logan_phantom``).
- ``medmnist``: a MedMNIST v3 ``.npz`` (keys ``{train,val,test}_images`` / ``_labels``, the
  official splits); 2D arrays ``(N, H, W[, 3])`` give images, 3D arrays ``(N, D, H, W)`` volumes.
- ``folder`` + ``labels_csv``: a CSV with ``path, label[, subject][, split]`` joined to the images.
- ``nifti``: a folder of ``.nii``/``.nii.gz`` files, or nibabel's bundled files; with
  ``labels_csv`` (``path, label[, subject][, split]``, paths relative to the folder) its volumes
  carry class labels, subjects and splits (e.g. a CT set's contrast phase per scan, several scans
  per patient).
- ``bids``: ``sub-*/[ses-*/]anat/*_{suffix}.nii.gz`` with labels from ``participants.tsv``.
- ``brats``: BraTS 2023 case folders (``*-t1n/-t1c/-t2w/-t2f/-seg.nii.gz``).
- ``synthetic_volumes``: MONAI ``create_test_image_3d`` volumes with label maps and a class label.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import one_line
from roundtrip.core.hashing import sha256_file
from roundtrip.core.manifest import (
    Item,
    safe_item_id,
    unique_ids,
    write_manifest,
)
from roundtrip.datasets.volumes import (
    VolumeError,
    bundled_nifti,
    constant_note,
    load_volume,
    on_grid,
    synthetic_volume,
    to_unit_range,
)

log = logging.getLogger(__name__)

#: Modality of each bundled scikit-image medical image (the 2D showcase's classes).
SKIMAGE_MODALITIES = {
    "immunohistochemistry": "histology", "retina": "fundus", "microaneurysms": "fundus",
    "cell": "microscopy", "shepp_logan_phantom": "CT phantom",
}
BRATS_SEQUENCES = ("t1n", "t1c", "t2w", "t2f")


# -- 2D ----------------------------------------------------------------------------------------
def skimage_medical_items(names: list[str]) -> list[Item]:
    """Bundled scikit-image medical images with their ``modality`` (:data:`SKIMAGE_MODALITIES`).

    Raises:
        KeyError: a name that is not one of them.
    """
    from roundtrip.datasets.skimage import skimage_items

    unknown = [n for n in names if n not in SKIMAGE_MODALITIES]
    if unknown:
        raise KeyError(f"{unknown} are not bundled medical images; choose from "
                       f"{sorted(SKIMAGE_MODALITIES)}")
    items = skimage_items(names)
    for it in items:
        it.extra = {"modality": SKIMAGE_MODALITIES[it.item_id], "label": SKIMAGE_MODALITIES[it.item_id],
                    "subject": it.item_id}
    return items


def _npz_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # noqa: BLE001 - zip/pickle/OS errors: the dataset cannot be read
        raise ValueError(f"cannot read MedMNIST file {path}: {type(exc).__name__}: {exc}") from exc


def _label_text(row: np.ndarray) -> str:
    """MedMNIST labels: ``(1,)`` class index, or a 0/1 vector for multi-label sets."""
    row = np.atleast_1d(row).astype(int)
    return str(row[0]) if row.size == 1 else " ".join(map(str, row))


def medmnist_arrays(path: str | Path, splits: list[str], limit: int | None = None
                    ) -> list[tuple[str, np.ndarray, str, str]]:
    """``(item_id, array, label, split)`` of a MedMNIST v3 ``.npz`` for the official ``splits``.

    Args:
        limit: at most this many items per split (the first ones: MedMNIST's order is fixed).

    Raises:
        ValueError: the file is unreadable or lacks ``{split}_images``/``{split}_labels``.
    """
    path = Path(path)
    arrays = _npz_arrays(path)
    out = []
    for split in splits:
        keys = (f"{split}_images", f"{split}_labels")
        missing = [k for k in keys if k not in arrays]
        if missing:
            raise ValueError(f"{path.name} lacks {missing} (has {sorted(arrays)})")
        images, labels = arrays[keys[0]], arrays[keys[1]]
        n = len(images) if limit is None else min(limit, len(images))
        out += [(f"{split}_{i:06d}", images[i], _label_text(labels[i]), split) for i in range(n)]
    return out


def medmnist_items(path: str | Path, splits: list[str], modality: str,
                   limit: int | None = None) -> list[Item]:
    """2D MedMNIST items (uint8; grayscale sets replicated to 3 equal channels).

    Raises:
        ValueError: unreadable file, missing split keys, or 3D items.
    """
    items = []
    for item_id, image, label, split in medmnist_arrays(path, splits, limit):
        if image.ndim not in (2, 3):
            raise ValueError(f"{path}: items of shape {image.shape} are not 2D images; "
                             "3D MedMNIST sets are volume datasets")
        if image.ndim == 2:
            image = np.repeat(image[..., None], 3, axis=2)  # grayscale sets: RGB PNG, equal channels
        items.append(Item(item_id, f"medmnist:{Path(path).name}",
                          image=np.ascontiguousarray(image, dtype=np.uint8),
                          extra={"modality": modality, "label": label, "split": split,
                                 "subject": item_id}))
    return items


def read_labels_csv(path: str | Path) -> pd.DataFrame:
    """A labels CSV for a folder or nifti dataset: ``path`` (relative to the folder), ``label``,
    optional ``subject`` (patient id, for subject-wise splits) and ``split``.

    Raises:
        ValueError: a required column is missing or a path is listed twice.
    """
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("path", "label") if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: labels CSV lacks columns {missing} (has {list(df.columns)})")
    dup = df["path"][df["path"].duplicated()].tolist()
    if dup:
        raise ValueError(f"{path}: paths listed twice: {dup[:5]}")
    return df


def attach_labels(items: list[Item], labels: pd.DataFrame, modality: str) -> list[Item]:
    """Join folder items (source ``folder:{relative path}``) with a labels table; an image with
    no row keeps an empty label (it is reconstructed and scored, not classified)."""
    by_path = labels.set_index("path")
    for it in items:
        rel = it.source.split(":", 1)[1]
        row = by_path.loc[rel] if rel in by_path.index else None
        extra = {"modality": modality, "label": "", "subject": it.item_id, "split": ""}
        if row is not None:
            extra |= {"label": row["label"], "subject": row.get("subject") or it.item_id,
                      "split": row.get("split", "")}
        it.extra = {**(it.extra or {}), **extra}
    return items


# -- 3D ----------------------------------------------------------------------------------------
@dataclass
class VolumeSource:
    """One volume to load: a NIfTI file (``path``) or an array in memory (``array``)."""
    item_id: str
    source: str
    path: Path | None = None
    array: np.ndarray | None = None
    affine: np.ndarray | None = None
    seg: np.ndarray | Path | None = None
    extra: dict = field(default_factory=dict)


def nifti_sources(root: str | Path | None = None, bundled: list[str] | None = None,
                  labels: pd.DataFrame | None = None) -> list[VolumeSource]:
    """NIfTI files under ``root`` (recursively) and/or nibabel's bundled files.

    Args:
        labels: a labels table (:func:`read_labels_csv`: ``path`` relative to ``root``,
            ``label``, optional ``subject`` and ``split``) joined to the files under ``root``;
            a file with no row keeps an empty label (reconstructed and scored, not classified),
            and its subject is the file itself.

    Raises:
        FileNotFoundError: ``root`` has no ``.nii``/``.nii.gz`` file.
        ValueError: ``labels`` names a path that is not a NIfTI file under ``root``.
    """
    out = [VolumeSource(safe_item_id(n.replace(".nii.gz", "").replace(".nii", "")),
                        f"nibabel:{n}", path=bundled_nifti(n)) for n in bundled or []]
    if root:
        root = Path(root)
        files = sorted(p for p in root.rglob("*") if p.name.endswith((".nii", ".nii.gz")))
        if not files:
            raise FileNotFoundError(f"no .nii or .nii.gz files under {root}")
        rows = labels.set_index("path") if labels is not None else None
        rels = [f.relative_to(root).as_posix() for f in files]
        if rows is not None and (unknown := sorted(set(rows.index) - set(rels))):
            raise ValueError(f"labels_csv names {len(unknown)} path(s) that are not NIfTI files "
                             f"under {root}: {unknown[:5]}")
        for f, rel in zip(files, rels):
            item_id = safe_item_id(rel.replace(".nii.gz", "").replace(".nii", ""))
            extra = {}
            if rows is not None:
                row = rows.loc[rel] if rel in rows.index else None
                extra = {"label": "", "subject": item_id, "split": ""} if row is None else {
                    "label": row["label"], "subject": row.get("subject") or item_id,
                    "split": row.get("split", "")}
            out.append(VolumeSource(item_id, f"folder:{rel}", path=f, extra=extra))
    return out


def bids_sources(root: str | Path, suffix: str = "T1w", label_column: str | None = None
                 ) -> list[VolumeSource]:
    """``sub-*/[ses-*/]{anat,func}/*_{suffix}.nii[.gz]`` of a BIDS tree (OpenNeuro ds005892/ds005700
    layout); ``label`` from ``participants.tsv`` (column ``label_column``), ``subject`` =
    ``sub-XX`` so splits are subject-wise.

    Raises:
        FileNotFoundError: no matching file.
        ValueError: ``label_column`` is not a column of participants.tsv.
    """
    root = Path(root)
    # anat/ for structural suffixes (T1w), func/ for fMRI series (bold; volume_index picks one)
    files = [f for folder in ("anat", "func") for pattern in (f"sub-*/{folder}", f"sub-*/ses-*/{folder}")
             for f in sorted(root.glob(f"{pattern}/*_{suffix}.nii*"))]
    if not files:
        raise FileNotFoundError(f"no sub-*/[ses-*/]{{anat,func}}/*_{suffix}.nii[.gz] under {root}")
    labels: dict[str, str] = {}
    if label_column:
        tsv = pd.read_csv(root / "participants.tsv", sep="\t", dtype=str, keep_default_na=False)
        if label_column not in tsv.columns:
            raise ValueError(f"participants.tsv has no column {label_column!r} "
                             f"(has {list(tsv.columns)})")
        labels = dict(zip(tsv["participant_id"], tsv[label_column]))
    out = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        subject = rel.split("/")[0]
        out.append(VolumeSource(safe_item_id(f.name.split(".nii")[0]), f"bids:{rel}", path=f,
                                extra={"subject": subject, "label": labels.get(subject, "")}))
    return out


def brats_sources(root: str | Path, sequence: str = "t1n") -> list[VolumeSource]:
    """BraTS 2023 cases: each folder ``BraTS-XXX-NNNNN-NNN/`` with ``{case}-{sequence}.nii.gz``
    and, when present, ``{case}-seg.nii.gz`` (ground-truth tumor labels, kept as ``seg``).

    Raises:
        ValueError: unknown sequence. FileNotFoundError: no case has that sequence.
    """
    if sequence not in BRATS_SEQUENCES:
        raise ValueError(f"sequence must be one of {BRATS_SEQUENCES}, got {sequence!r}")
    root = Path(root)
    files = sorted(root.glob(f"*/*-{sequence}.nii*"))
    if not files:
        raise FileNotFoundError(f"no */*-{sequence}.nii[.gz] case files under {root}")
    out = []
    for f in files:
        case = f.name.split(f"-{sequence}.nii")[0]
        seg = next(iter(sorted(f.parent.glob(f"{case}-seg.nii*"))), None)
        out.append(VolumeSource(safe_item_id(case), f"brats:{f.relative_to(root).as_posix()}",
                                path=f, seg=seg, extra={"subject": case}))
    return out


def synthetic_sources(count: int, size: int, seed: int = 0) -> list[VolumeSource]:
    """``count`` MONAI synthetic volumes with label maps; class label ``few`` (2 objects) or
    ``many`` (8 objects), alternating, so a classifier has something to find."""
    out = []
    for i in range(count):
        many = i % 2 == 1
        image, seg = synthetic_volume(size, seed=seed + i, num_objects=8 if many else 2)
        out.append(VolumeSource(f"synthetic_{i:03d}", "monai:create_test_image_3d",
                                array=image, affine=np.eye(4), seg=seg,
                                extra={"label": "many" if many else "few",
                                       "subject": f"synthetic_{i:03d}"}))
    return out


def medmnist_volume_sources(path: str | Path, splits: list[str], limit: int | None = None
                            ) -> list[VolumeSource]:
    """3D MedMNIST items ``(D, H, W)`` as volumes (1 mm isotropic, axes taken as given)."""
    out = []
    for item_id, arr, label, split in medmnist_arrays(path, splits, limit):
        if arr.ndim != 3:
            raise ValueError(f"{path}: items of shape {arr.shape} are not 3D volumes")
        out.append(VolumeSource(item_id, f"medmnist:{Path(path).name}",
                                array=arr.astype(np.float32), affine=np.eye(4),
                                extra={"label": label, "split": split, "subject": item_id}))
    return out


def _load(src: VolumeSource, volume_index: int, nonfinite: str):
    if src.path is not None:
        vol = load_volume(src.path, volume_index=volume_index, nonfinite=nonfinite)
        return vol.data, vol.affine, vol.spacing, vol.source_dtype, vol.notes
    if np.asarray(src.array).dtype.kind not in "biuf":
        raise VolumeError(f"voxel type {np.asarray(src.array).dtype} is not supported (real "
                          "integer or float voxels are)")
    data = np.asarray(src.array, dtype=np.float32)
    if not np.isfinite(data).all():
        raise VolumeError("NaN/Inf voxels")
    return data, src.affine, (1.0, 1.0, 1.0), str(src.array.dtype), []


def resample(data: np.ndarray, affine: np.ndarray, spacing, nearest: bool = False
             ) -> tuple[np.ndarray, np.ndarray]:
    """Resample ``(X, Y, Z)`` voxels to ``spacing`` mm with MONAI ``Spacing`` (trilinear, or
    nearest for label maps); returns ``(data, affine)``."""
    import torch
    from monai.data import MetaTensor
    from monai.transforms import Spacing

    t = MetaTensor(torch.from_numpy(np.ascontiguousarray(data))[None],
                   affine=torch.as_tensor(affine, dtype=torch.float64))
    out = Spacing(pixdim=tuple(float(v) for v in spacing),
                  mode="nearest" if nearest else "bilinear")(t)
    return np.asarray(out[0]), np.asarray(out.affine, dtype=np.float64)


def write_volume_dataset(sources: list[VolumeSource], out_dir: str | Path, modality: str,
                         intensity: dict | None = None, volume_index: int = 0,
                         nonfinite: str = "error", spacing: list[float] | None = None
                         ) -> pd.DataFrame:
    """Load, normalize and store volumes; write ``manifest.csv`` (kind ``volume``).

    Each volume is stored as ``volumes/{item_id}.nii.gz``: float32 in ``[0, 1]`` on the grid,
    RAS+, with its affine; a ground-truth label map (synthetic, BraTS) as ``labels/{item_id}.nii.gz``.
    A volume that cannot be used keeps its row with ``status=error`` and the reason.

    Args:
        intensity: ``{"mode": "minmax" | "percentiles" | "window", "window": [lo, hi]}``
            (:func:`~roundtrip.datasets.volumes.to_unit_range`; CT windows in HU).
        spacing: resample every volume (and its label map, nearest) to this voxel size in mm
            (MONAI ``Spacing``); ``None`` keeps the source grid.

    Raises:
        ValueError: duplicate item ids.
    """
    import nibabel as nib

    out_dir = Path(out_dir)
    for sub in ("volumes", "labels"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    renamed = unique_ids(sources)
    intensity = intensity or {}
    rows = []
    for src, rename in zip(sources, renamed):
        row = {"item_id": src.item_id, "kind": "volume", "source": src.source, "path": "",
               "width": "", "height": "", "depth": "", "sha256": "", "status": "error",
               "reason": "", "notes": rename, "modality": modality, "label": "", "subject": "",
               "split": "", "seg": "", "spacing": ""} | src.extra
        try:
            data, affine, vox, dtype, notes = _load(src, volume_index, nonfinite)
            notes = ([rename] if rename else []) + notes + [n for n in [constant_note(data)] if n]
            source_affine = affine
            if spacing:
                data, affine = resample(data, affine, spacing)
                notes.append("resampled from " + " x ".join(f"{v:.3g}" for v in vox) + " mm")
                vox = tuple(float(v) for v in spacing)
            unit = to_unit_range(data, intensity.get("mode", "minmax"),
                                 tuple(intensity["window"]) if intensity.get("window") else None)
            rel = f"volumes/{src.item_id}.nii.gz"
            nib.save(nib.Nifti1Image(unit, affine), out_dir / rel)
            row.update(path=rel, width=unit.shape[0], height=unit.shape[1], depth=unit.shape[2],
                       sha256=sha256_file(out_dir / rel), status="ok",
                       notes="; ".join([f"source dtype {dtype}"] + notes),
                       spacing=" x ".join(f"{v:.4g}" for v in vox))
            if src.seg is not None:
                row["seg"] = _write_seg(src.seg, source_affine, affine, spacing, unit.shape,
                                        out_dir, src.item_id)
        except (VolumeError, ValueError) as exc:
            reason = one_line(exc)  # also when only the label map failed
            if src.path is not None and Path(src.path).name not in reason:
                reason = f"{Path(src.path).name}: {reason}"  # every reason names its file
            row.update(status="error", reason=reason)
            log.warning("volume %s: %s", src.item_id, exc)
        rows.append(row)
    return write_manifest(rows, out_dir)


def _write_seg(seg, source_affine, affine, spacing, shape, out_dir: Path, item_id: str) -> str:
    import nibabel as nib

    from roundtrip.datasets.volumes import to_ras

    if isinstance(seg, (str, Path)):
        img = nib.load(str(seg))
        labels, source_affine = to_ras(np.asarray(img.dataobj).astype(np.int16),
                                       np.asarray(img.affine))
    else:
        labels = np.asarray(seg, dtype=np.int16)
    if spacing:
        labels, _ = resample(labels.astype(np.float32), source_affine, spacing, nearest=True)
        labels = np.rint(labels).astype(np.int16)
    if labels.shape != tuple(shape):
        raise VolumeError(f"label map shape {labels.shape} differs from the volume {tuple(shape)}")
    rel = f"labels/{item_id}.nii.gz"
    nib.save(nib.Nifti1Image(labels.astype(np.int16), affine), out_dir / rel)
    return rel


def read_volume(path: str | Path) -> np.ndarray:
    """A stored dataset or reconstruction volume: float32 ``(X, Y, Z)`` in ``[0, 1]`` on the grid."""
    import nibabel as nib

    return on_grid(np.asarray(nib.load(str(path)).dataobj, dtype=np.float32))


def volume_sources(name: str, spec: dict) -> list[VolumeSource]:
    """The sources of volume dataset ``name`` from its config ``spec``.

    Raises:
        ValueError: unknown type.
    """
    kind = spec["type"]
    if kind == "nifti":
        if not spec.get("path") and not spec.get("bundled"):
            raise ValueError(f"datasets.{name}: a nifti dataset needs path or bundled")
        labels = read_labels_csv(spec["labels_csv"]) if spec.get("labels_csv") else None
        return nifti_sources(spec.get("path"), spec.get("bundled"), labels)
    if kind == "bids":
        return bids_sources(spec["path"], spec.get("suffix", "T1w"), spec.get("label_column"))
    if kind == "brats":
        return brats_sources(spec["path"], spec.get("sequence", "t1n"))
    if kind == "synthetic_volumes":
        return synthetic_sources(spec.get("count", 8), spec.get("volume_size", 32), spec.get("seed", 0))
    if kind == "medmnist":
        return medmnist_volume_sources(spec["path"], spec.get("splits", ["train", "test"]),
                                       spec.get("limit"))
    raise ValueError(f"datasets.{name}.type: {kind!r} is not a volume type")




# -- builders of the dataset registry (roundtrip.datasets.DATASET_TYPES) ---------------------
def build_skimage_medical(name: str, spec: dict, out_dir: str | Path) -> list[Item]:
    """``skimage_medical``: the bundled medical images of ``spec["images"]``."""
    return skimage_medical_items(spec["images"])


def build_medmnist(name: str, spec: dict, out_dir: str | Path) -> list[Item]:
    """``medmnist`` (2D): the official splits of the ``.npz`` at ``spec["path"]``."""
    return medmnist_items(spec["path"], spec.get("splits", ["train", "test"]),
                          spec.get("modality", "medmnist"), spec.get("limit"))


def volume_fingerprint(spec: dict) -> str:
    """Fingerprint of a volume set read from files (dataset registry): the files under its
    ``path`` and its ``labels_csv`` (which may lie outside the folder)."""
    from roundtrip.core.hashing import path_fingerprint

    return path_fingerprint(spec.get("path")) + path_fingerprint(spec.get("labels_csv"))


def build_volumes(name: str, spec: dict, out_dir: str | Path) -> pd.DataFrame:
    """Volume sets (``nifti``, ``bids``, ``brats``, ``synthetic_volumes``, 3D ``medmnist``):
    loads, normalizes and stores every volume and writes the manifest
    (:func:`write_volume_dataset`)."""
    return write_volume_dataset(
        volume_sources(name, spec), out_dir, spec.get("modality", spec["type"]),
        spec.get("intensity"), spec.get("volume_index", 0), spec.get("nonfinite", "error"),
        spec.get("spacing"))
