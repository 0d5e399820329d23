"""NIfTI loading on nibabel's bundled MRI volumes, and every kind of bad input giving
a clear per-item outcome."""
import gzip

import nibabel as nib
import numpy as np
import pytest

from roundtrip.datasets.volumes import (
    VolumeError,
    bundled_nifti,
    load_volume,
    obliquity_deg,
    synthetic_volume,
)


@pytest.fixture(scope="module")
def anatomical():
    img = nib.load(bundled_nifti("anatomical.nii"))
    return np.asarray(img.dataobj), img.affine


def save(tmp_path, name, data, affine, dtype=None):
    img = nib.Nifti1Image(data if dtype is None else data.astype(dtype), affine)
    path = tmp_path / name
    nib.save(img, path)
    return path


def test_bundled_mri_is_reoriented_to_ras_without_changing_values(anatomical):
    raw, affine = anatomical
    assert nib.aff2axcodes(affine) == ("L", "A", "S")
    v = load_volume(bundled_nifti("anatomical.nii"))
    assert nib.aff2axcodes(v.affine) == ("R", "A", "S")
    assert v.source_dtype == "int16" and v.data.dtype == np.float32 and v.spacing == (2, 2, 2)
    # LAS -> RAS flips the first axis; voxels are moved, never interpolated
    np.testing.assert_array_equal(v.data, raw[::-1].astype(np.float32))
    # the world position of a voxel is unchanged by the reorientation
    i, j, k = 3, 7, 11
    world_raw = affine @ [raw.shape[0] - 1 - i, j, k, 1]
    np.testing.assert_allclose(v.affine @ [i, j, k, 1], world_raw)
    assert v.notes == []


def test_4d_series_takes_the_configured_volume(tmp_path):
    v0 = load_volume(bundled_nifti("example4d.nii.gz"), volume_index=0)
    v1 = load_volume(bundled_nifti("example4d.nii.gz"), volume_index=1)
    raw = np.asarray(nib.load(bundled_nifti("example4d.nii.gz")).dataobj)
    assert v0.data.shape == raw.shape[:3] and not np.array_equal(v0.data, v1.data)
    assert float(v1.data.sum()) == pytest.approx(float(raw[..., 1].sum()))
    assert "4D series of 2 volumes: volume 1 used" in v1.notes
    with pytest.raises(VolumeError, match="volume_index 2 out of range"):
        load_volume(bundled_nifti("example4d.nii.gz"), volume_index=2)


def test_nonfinite_voxels_are_an_error_or_zeroed_with_a_note(tmp_path, anatomical):
    raw, affine = anatomical
    data = raw.astype(np.float32)
    data[1, 2, 3], data[4, 5, 6] = np.nan, np.inf
    path = save(tmp_path, "nan.nii.gz", data, affine)
    with pytest.raises(VolumeError, match="2 NaN/Inf voxels"):
        load_volume(path)
    v = load_volume(path, nonfinite="zero")
    assert np.isfinite(v.data).all() and v.data[::-1][1, 2, 3] == 0
    assert any("set to 0" in n for n in v.notes)


@pytest.mark.parametrize("dtype", [np.int16, np.uint8, np.float64])
def test_dtypes_read_exactly_into_float32(tmp_path, anatomical, dtype):
    raw, affine = anatomical
    data = np.clip(raw, 0, 255) if dtype is np.uint8 else raw
    v = load_volume(save(tmp_path, "d.nii.gz", data, affine, dtype))
    assert v.source_dtype == np.dtype(dtype).name
    np.testing.assert_array_equal(v.data, data[::-1].astype(np.float32))


def test_anisotropic_spacing_and_oblique_affine_are_noted(tmp_path, anatomical):
    raw, _ = anatomical
    aniso = np.diag([0.9, 0.9, 3.0, 1.0])
    v = load_volume(save(tmp_path, "a.nii.gz", raw, aniso))
    assert v.spacing == pytest.approx((0.9, 0.9, 3.0))
    assert any(n.startswith("anisotropic spacing 0.9 x 0.9 x 3 mm") for n in v.notes)
    t = np.radians(20)
    rot = np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    oblique = np.eye(4)
    oblique[:3, :3] = rot * 2.0
    assert obliquity_deg(oblique) == pytest.approx(20)
    v = load_volume(save(tmp_path, "o.nii.gz", raw, oblique))
    assert any("oblique affine (20.0 deg" in n for n in v.notes)
    assert v.spacing == pytest.approx((2, 2, 2)) and v.data.shape == raw.shape


def test_truncated_and_wrong_files_are_errors_not_crashes(tmp_path, anatomical):
    raw, affine = anatomical
    whole = save(tmp_path, "whole.nii.gz", raw, affine).read_bytes()
    cut = tmp_path / "cut.nii.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(VolumeError, match="cannot read cut.nii.gz"):
        load_volume(cut)
    plain = tmp_path / "cut.nii"
    plain.write_bytes(gzip.decompress(whole)[:400])  # header only, no voxels
    with pytest.raises(VolumeError, match="cannot read cut.nii"):
        load_volume(plain)
    with pytest.raises(VolumeError, match="2D image"):
        load_volume(save(tmp_path, "flat.nii.gz", raw[:, :, 0], affine))


def test_synthetic_volume_has_labels_matching_its_objects():
    image, labels = synthetic_volume(32, seed=1)
    assert image.shape == labels.shape == (32, 32, 32)
    assert set(np.unique(labels)) <= {0, 1, 2, 3} and labels.max() >= 1
    # objects are brighter than background (noise aside): labels carry the structure
    assert image[labels > 0].mean() > image[labels == 0].mean() + 0.3
    again, _ = synthetic_volume(32, seed=1)
    np.testing.assert_array_equal(image, again)
