"""Medical dataset loaders: bundled 2D images, MedMNIST npz, folder + labels CSV, NIfTI, BIDS,
BraTS 2023 and synthetic volumes, into the manifest contract with per-item outcomes."""
import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from roundtrip.core.imaging import read_image
from roundtrip.core.manifest import read_manifest
from roundtrip.datasets import build_dataset
from roundtrip.datasets.medical import read_volume
from roundtrip.datasets.volumes import GRID


def _nifti(path, data, affine=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Image(data, np.eye(4) if affine is None else affine), path)
    return path


def test_skimage_medical_items_carry_modalities(tmp_path):
    df = build_dataset("m", {"type": "skimage_medical",
                             "images": ["immunohistochemistry", "retina", "shepp_logan_phantom"]},
                       tmp_path)
    assert list(df["modality"]) == ["histology", "fundus", "CT phantom"]
    assert list(df["label"]) == list(df["modality"]) and (df["status"] == "ok").all()
    assert read_image(tmp_path / df["path"][0]).shape == (512, 512, 3)


def test_medmnist_npz_official_splits_and_multilabel(tmp_path):
    rng = np.random.default_rng(0)
    npz = tmp_path / "chestmnist.npz"
    np.savez(npz, train_images=rng.integers(0, 255, (5, 28, 28), dtype=np.uint8),
             train_labels=rng.integers(0, 2, (5, 3)), test_images=rng.integers(0, 255, (3, 28, 28),
                                                                                dtype=np.uint8),
             test_labels=rng.integers(0, 2, (3, 3)), val_images=np.zeros((1, 28, 28), np.uint8),
             val_labels=np.zeros((1, 3), int))
    df = build_dataset("c", {"type": "medmnist", "path": str(npz), "modality": "X-ray"}, tmp_path / "c")
    assert list(df["split"]) == ["train"] * 5 + ["test"] * 3  # val not requested by default
    assert len(df["label"][0].split()) == 3  # multi-label vector kept as "0 1 1"
    img = read_image(tmp_path / "c" / df["path"][5])
    arr = np.load(npz)["test_images"][0]
    assert np.array_equal(img[..., 0], arr) and np.array_equal(img[..., 2], arr)
    with pytest.raises(ValueError, match="lacks"):
        build_dataset("c", {"type": "medmnist", "path": str(npz), "splits": ["other"]}, tmp_path / "d")


def test_medmnist_3d_volumes(tmp_path):
    npz = tmp_path / "organ3d.npz"
    vols = np.random.default_rng(1).integers(0, 255, (2, 28, 28, 28), dtype=np.uint8)
    np.savez(npz, train_images=vols, train_labels=np.array([[0], [3]]),
             test_images=vols[:1], test_labels=np.array([[1]]))
    df = build_dataset("o", {"type": "medmnist", "dims": 3, "path": str(npz)}, tmp_path / "o")
    assert list(df["kind"]) == ["volume"] * 3 and list(df["label"]) == ["0", "3", "1"]
    v = read_volume(tmp_path / "o" / df["path"][0])
    assert v.shape == (28, 28, 28) and v.min() == 0 and v.max() == 1


def test_folder_with_labels_csv(tmp_path):
    from roundtrip.core.imaging import write_png

    (tmp_path / "imgs").mkdir()
    for name in ("a.png", "b.png", "c.png"):
        write_png(tmp_path / "imgs" / name, np.full((32, 32, 3), 100, np.uint8))
    pd.DataFrame({"path": ["a.png", "b.png"], "label": ["nevus", "melanoma"],
                  "subject": ["p1", "p2"]}).to_csv(tmp_path / "labels.csv", index=False)
    df = build_dataset("d", {"type": "folder", "path": str(tmp_path / "imgs"),
                             "labels_csv": str(tmp_path / "labels.csv"), "modality": "Derm"},
                       tmp_path / "d")
    assert list(df["label"]) == ["nevus", "melanoma", ""] and list(df["subject"][:2]) == ["p1", "p2"]
    assert (df["modality"] == "Derm").all()


def test_bids_tree_with_participants(tmp_path):
    root = tmp_path / "ds"
    data = np.random.default_rng(0).random((16, 16, 12)).astype(np.float32)
    _nifti(root / "sub-01/anat/sub-01_T1w.nii.gz", data)
    _nifti(root / "sub-02/ses-1/anat/sub-02_ses-1_T1w.nii.gz", data * 3)
    _nifti(root / "sub-02/ses-1/anat/sub-02_ses-1_T2w.nii.gz", data)  # other suffix: ignored
    (root / "participants.tsv").write_text("participant_id\tgroup\nsub-01\tPD\nsub-02\tHC\n")
    df = build_dataset("b", {"type": "bids", "path": str(root), "label_column": "group"}, tmp_path / "b")
    assert list(df["subject"]) == ["sub-01", "sub-02"] and list(df["label"]) == ["PD", "HC"]
    with pytest.raises(ValueError, match="no column"):
        build_dataset("b", {"type": "bids", "path": str(root), "label_column": "age"}, tmp_path / "x")


def test_brats_cases_keep_the_ground_truth(tmp_path):
    case = tmp_path / "BraTS-GLI-00001-000"
    data = np.random.default_rng(0).random((20, 20, 16)).astype(np.float32)
    seg = np.zeros((20, 20, 16), np.int16)
    seg[5:10, 5:10, 5:10] = 2
    _nifti(case / "BraTS-GLI-00001-000-t1n.nii.gz", data)
    _nifti(case / "BraTS-GLI-00001-000-t2f.nii.gz", data)
    _nifti(case / "BraTS-GLI-00001-000-seg.nii.gz", seg)
    df = build_dataset("br", {"type": "brats", "path": str(tmp_path), "sequence": "t2f"}, tmp_path / "o")
    assert df["item_id"][0] == "BraTS-GLI-00001-000" and df["source"][0].endswith("-t2f.nii.gz")
    labels = np.asarray(nib.load(tmp_path / "o" / df["seg"][0]).dataobj)
    assert np.array_equal(labels, seg)


def test_volume_set_records_bad_files_and_normalizes(tmp_path):
    rng = np.random.default_rng(0)
    ct = (rng.random((24, 24, 20)) * 3000 - 1500).astype(np.int16)
    _nifti(tmp_path / "in/ct.nii.gz", ct)
    bad = np.ones((16, 16, 16), np.float64)
    bad[0, 0, 0] = np.nan
    _nifti(tmp_path / "in/nan.nii.gz", bad)
    (tmp_path / "in/trunc.nii.gz").write_bytes((tmp_path / "in/ct.nii.gz").read_bytes()[:200])
    df = build_dataset("ct", {"type": "nifti", "path": str(tmp_path / "in"),
                              "intensity": {"mode": "window", "window": [-1000, 1000]}}, tmp_path / "o")
    by = df.set_index("item_id")
    assert by.loc["ct", "status"] == "ok" and "int16" in by.loc["ct", "notes"]
    assert "NaN/Inf" in by.loc["nan", "reason"] and "cannot read" in by.loc["trunc", "reason"]
    v = read_volume(tmp_path / "o" / by.loc["ct", "path"])
    expected = np.round(np.clip((ct.astype(np.float32) + 1000) / 2000, 0, 1) * GRID) / GRID
    assert np.abs(v - expected).max() <= 1 / GRID  # the CT window in [0, 1] on the grid
    assert len(read_manifest(tmp_path / "o/manifest.csv")) == 3  # nothing lost


def test_synthetic_volumes_alternate_classes(tmp_path):
    df = build_dataset("s", {"type": "synthetic_volumes", "count": 4, "volume_size": 24}, tmp_path)
    assert list(df["label"]) == ["few", "many", "few", "many"]
    seg = np.asarray(nib.load(tmp_path / df["seg"][1]).dataobj)
    assert seg.shape == (24, 24, 24) and seg.max() > 0


def test_resampling_to_a_spacing_keeps_labels_integer(tmp_path):
    data = np.random.default_rng(0).random((20, 20, 8)).astype(np.float32)
    _nifti(tmp_path / "in/aniso.nii.gz", data, np.diag([1.0, 1.0, 2.5, 1.0]))
    df = build_dataset("r", {"type": "nifti", "path": str(tmp_path / "in"), "spacing": [1, 1, 1]},
                       tmp_path / "o")
    assert (df.loc[0, "width"], df.loc[0, "depth"]) == (20, 18) and df.loc[0, "spacing"] == "1 x 1 x 1"
    assert "resampled from 1 x 1 x 2.5 mm" in df.loc[0, "notes"]
    syn = build_dataset("s", {"type": "synthetic_volumes", "count": 1, "volume_size": 24,
                              "spacing": [2, 2, 2]}, tmp_path / "s")
    seg = np.asarray(nib.load(tmp_path / "s" / syn.loc[0, "seg"]).dataobj)
    assert seg.shape == (12, 12, 12) and set(np.unique(seg)) <= {0, 1, 2, 3}
