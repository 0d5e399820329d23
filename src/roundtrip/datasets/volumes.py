"""Loading 3D medical volumes (NIfTI) into one canonical form, with a per-item outcome.

A :class:`Volume` is float32 voxels in RAS+ orientation (MONAI ``Orientation``), its affine, its
voxel spacing in mm, the source dtype and notes on anything done to it. Input that cannot be
used becomes a :class:`VolumeError` with a reason that says what is wrong (MediBench evaluates
whole cohorts, so one bad file must cost one item, not the run):

- a truncated or unreadable file: ``cannot read``;
- a 4D series: the volume ``volume_index`` is taken (noted), out of range is an error;
- fewer than 3 or more than 4 dimensions: an error;
- NaN or Inf voxels: an error by default (``nonfinite="error"``), or set to 0 and noted
  (``nonfinite="zero"``);
- int16, uint8, float64 ... : read with the header's scaling (``scl_slope``/``scl_inter``) into
  float32, the source dtype kept for the record;
- anisotropic spacing: noted (resampling to a spacing is a preprocessing option);
- an oblique affine: reoriented to the closest RAS axes (MONAI, as every pipeline does), the
  residual rotation noted with its angle.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class VolumeError(ValueError):
    """A volume that cannot be evaluated; the message is the item's reason."""


#: Default of config ``limits.max_voxels`` (X x Y x Z of the volume used): 512^3, a 512 MB
#: float32 volume; larger headers are refused before the voxels are read.
DEFAULT_MAX_VOXELS = 512 ** 3
_limits = {"max_voxels": DEFAULT_MAX_VOXELS}


def set_max_voxels(max_voxels: int) -> None:
    """The voxel limit later :func:`load_volume` calls apply from the header (config
    ``limits.max_voxels``).

    Raises:
        ValueError: ``max_voxels`` < 1.
    """
    if int(max_voxels) < 1:
        raise ValueError(f"max_voxels must be >= 1, got {max_voxels}")
    _limits["max_voxels"] = int(max_voxels)


def _check_header(img, path: Path) -> None:
    """Refuse, before reading voxels, what cannot be evaluated: complex or structured voxel
    types (a real part would be silently wrong), more voxels than ``limits.max_voxels``, and a
    singular affine (no orientation can be derived from it)."""
    dtype = img.get_data_dtype()
    if dtype.kind not in "biuf":
        raise VolumeError(f"{path.name}: voxel type {dtype.name} is not supported (real integer "
                          "or float voxels are; store the magnitude of complex data)")
    n = int(np.prod(img.shape[:3], dtype=np.int64))
    if n > _limits["max_voxels"]:
        raise VolumeError(f"{path.name}: {' x '.join(map(str, img.shape[:3]))} = {n / 1e6:.0f} M "
                          f"voxels, above limits.max_voxels ({_limits['max_voxels'] / 1e6:.0f} M); "
                          "not read")
    rot = np.asarray(img.affine, dtype=np.float64)[:3, :3]
    if not np.isfinite(rot).all() or abs(np.linalg.det(rot)) < 1e-12:
        raise VolumeError(f"{path.name}: singular affine (a zero or non-finite voxel axis in the "
                          "header's qform/sform): no orientation can be derived; fix the header")


def constant_note(data: np.ndarray) -> str:
    """The manifest note of a constant volume (every voxel equal), else ``""``: intensity
    scaling maps it to all zeros, and every model reconstructs it exactly (PSNR = inf)."""
    if data.size and float(data.min()) == float(data.max()):
        return f"constant volume (every voxel {float(data.min()):g}): mapped to all zeros"
    return ""


@dataclass
class Volume:
    """One 3D volume.

    Attributes:
        data: float32 ``(X, Y, Z)`` voxels in RAS+ orientation (intensity units of the source,
            e.g. HU for CT, arbitrary for MRI).
        affine: float64 ``(4, 4)`` voxel-to-world (mm) after reorientation.
        spacing: voxel size along X, Y, Z in mm.
        source_dtype: on-disk dtype (``int16``, ``float64``, ...).
        notes: what was done or noticed (4D selection, anisotropy, obliquity, repaired voxels).
    """
    data: np.ndarray
    affine: np.ndarray
    spacing: tuple[float, float, float]
    source_dtype: str
    notes: list[str] = field(default_factory=list)


def obliquity_deg(affine: np.ndarray) -> float:
    """Largest angle (degrees) between a voxel axis and its closest world axis (0 = aligned)."""
    rot = np.asarray(affine, dtype=np.float64)[:3, :3]
    cos = np.abs(rot / np.linalg.norm(rot, axis=0, keepdims=True)).max(axis=0)
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).max())


def to_ras(data: np.ndarray, affine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reorient ``(X, Y, Z)`` voxels to RAS+ with MONAI's ``Orientation`` transform.

    Returns:
        ``(data, affine)`` after reorientation (axes flipped/permuted, no interpolation).
    """
    import torch
    from monai.data import MetaTensor
    from monai.transforms import Orientation

    t = MetaTensor(torch.from_numpy(np.ascontiguousarray(data))[None],
                   affine=torch.as_tensor(affine, dtype=torch.float64))
    out = Orientation(axcodes="RAS", labels=(("L", "R"), ("P", "A"), ("I", "S")))(t)
    return out[0].numpy(), np.asarray(out.affine, dtype=np.float64)


def load_volume(path: str | Path, volume_index: int = 0, nonfinite: str = "error") -> Volume:
    """Read a NIfTI file (``.nii`` / ``.nii.gz``) as a RAS+ float32 :class:`Volume`.

    Args:
        path: the file.
        volume_index: which volume of a 4D series (config ``volume_index``).
        nonfinite: ``error`` (NaN/Inf voxels make the item an error) or ``zero`` (set to 0, noted).

    Raises:
        VolumeError: unreadable/truncated file, unsupported dimensionality, volume index out of
            range, non-finite voxels (with ``nonfinite="error"``), an empty volume, complex or
            structured voxels, more voxels than ``limits.max_voxels``, a singular affine.
    """
    import nibabel as nib

    if nonfinite not in ("error", "zero"):
        raise ValueError(f"nonfinite must be 'error' or 'zero', got {nonfinite!r}")
    path = Path(path)
    notes: list[str] = []
    try:
        img = nib.load(str(path))
        _check_header(img, path)
        shape = img.shape
        dtype = str(img.get_data_dtype().newbyteorder("="))
        if len(shape) == 4:
            if not -shape[3] <= volume_index < shape[3]:
                raise VolumeError(f"4D series with {shape[3]} volumes: volume_index {volume_index} "
                                  "out of range")
            data = np.asarray(img.dataobj[..., volume_index], dtype=np.float32)
            notes.append(f"4D series of {shape[3]} volumes: volume {volume_index} used")
        elif len(shape) == 3:
            data = np.asarray(img.dataobj, dtype=np.float32)
        else:
            raise VolumeError(f"{len(shape)}D image {shape}: a 3D volume (or a 4D series) is needed")
    except VolumeError:
        raise
    except Exception as exc:  # noqa: BLE001 - nibabel/zlib/OS errors all mean "cannot read"
        from roundtrip.core.imaging import one_line

        detail = one_line(str(exc).replace(str(path), path.name))  # no machine-specific path
        raise VolumeError(f"cannot read {path.name}: {type(exc).__name__}: {detail}") from exc
    if data.size == 0 or min(data.shape) == 0:
        raise VolumeError(f"empty volume {data.shape}")
    bad = int((~np.isfinite(data)).sum())
    if bad:
        what = f"{bad} NaN/Inf voxels of {data.size}"
        if nonfinite == "error":
            raise VolumeError(f"{what} (set nonfinite: zero to evaluate with them set to 0)")
        data = np.nan_to_num(data, nan=0.0, posinf=0.0, neginf=0.0)
        notes.append(f"{what} set to 0")
    affine = np.asarray(img.affine, dtype=np.float64)
    angle = obliquity_deg(affine)
    if angle > 0.01:
        notes.append(f"oblique affine ({angle:.1f} deg from the closest axes): reoriented to the "
                     "closest RAS axes without resampling")
    data, affine = to_ras(data, affine)
    spacing = tuple(float(v) for v in np.linalg.norm(affine[:3, :3], axis=0))
    if max(spacing) > 1.01 * min(spacing):
        notes.append("anisotropic spacing " + " x ".join(f"{s:.3g}" for s in spacing) + " mm")
    return Volume(np.ascontiguousarray(data, dtype=np.float32), affine, spacing, dtype, notes)


# -- volumes that ship with installed packages -------------------------------------------------
def bundled_nifti(name: str) -> Path:
    """Path of a NIfTI file bundled with nibabel's tests (``anatomical.nii``, ``example4d.nii.gz``).

    Raises:
        FileNotFoundError: nibabel was installed without its test data.
    """
    from nibabel.testing import data_path

    path = Path(data_path) / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} is not bundled with this nibabel installation "
                                f"({data_path}); reinstall nibabel from PyPI")
    return path


def synthetic_volume(size: int = 64, seed: int = 0, num_objects: int = 6,
                     num_classes: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic volume with its label map (MONAI ``create_test_image_3d``).

    Returns:
        ``(image float32 (size,)*3 in [0, 1], labels int16 (size,)*3 with 0..num_classes)``.
    """
    from monai.data import create_test_image_3d

    image, labels = create_test_image_3d(size, size, size, num_objs=num_objects,
                                         rad_max=max(4, size // 5), rad_min=max(2, size // 16),
                                         noise_max=0.1, num_seg_classes=num_classes,
                                         random_state=np.random.RandomState(seed))
    return image.astype(np.float32), labels.astype(np.int16)


# -- intensities: [0, 1] on a 2**-16 grid (MediBench Appendix A) ---------------------------
#: Volumes in [0, 1] live on a grid of 2**-16 steps (like 16-bit images): then the map to
#: [-1, 1] and back is exact in float32, so the identity model scores PSNR = inf, SSIM = 1.
GRID = 2.0 ** 16


def on_grid(x: np.ndarray) -> np.ndarray:
    """``x`` clipped to ``[0, 1]`` and rounded to the :data:`GRID` (float32)."""
    return (np.round(np.clip(x, 0.0, 1.0) * GRID) / GRID).astype(np.float32)


def to_unit_range(volume: np.ndarray, mode: str = "minmax",
                  window: tuple[float, float] | None = None,
                  percentiles: tuple[float, float] = (0.5, 99.5)) -> np.ndarray:
    """Map intensities to ``[0, 1]`` (float32) with MONAI transforms.

    Args:
        volume: any-shape array of intensities (HU for CT, arbitrary units for MRI).
        mode: ``minmax`` (``ScaleIntensity``), ``percentiles`` (``ScaleIntensityRangePercentiles``,
            clipped; robust to a few hot voxels) or ``window`` (``ScaleIntensityRange`` over
            ``window``, clipped; CT windows such as ``(-1000, 1000)`` HU). The result is on
            the :data:`GRID`.

    Raises:
        ValueError: unknown mode, or ``window`` missing/empty for ``mode="window"``.
    """
    import torch
    from monai.transforms import ScaleIntensity, ScaleIntensityRange, ScaleIntensityRangePercentiles

    t = torch.as_tensor(np.asarray(volume, dtype=np.float32))
    if mode == "minmax":
        out = ScaleIntensity(minv=0.0, maxv=1.0)(t)
    elif mode == "percentiles":
        lo, hi = percentiles
        out = ScaleIntensityRangePercentiles(lower=lo, upper=hi, b_min=0.0, b_max=1.0, clip=True)(t)
    elif mode == "window":
        if not window or window[1] <= window[0]:
            raise ValueError(f"window must be (low, high) with low < high, got {window}")
        out = ScaleIntensityRange(a_min=window[0], a_max=window[1], b_min=0.0, b_max=1.0,
                                  clip=True)(t)
    else:
        raise ValueError(f"unknown intensity mode {mode!r}; use minmax, percentiles or window")
    return on_grid(np.asarray(out, dtype=np.float32))
