"""Hostile input costs one item, never a dataset: every kind of tests/hostile.py gets
its exact outcome, reasons are one stable line naming the file, limits apply before decoding."""
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hostile import write_images, write_volumes

from roundtrip.core import imaging
from roundtrip.core.manifest import Item, write_dataset
from roundtrip.datasets import build_dataset
from roundtrip.datasets import volumes as vol

# The kinds and their expected outcomes, known at collection time (one test per kind): the
# generator is run once into a scratch folder here, and again by the fixture for the build.
_SCRATCH = Path(tempfile.mkdtemp(prefix="hostile_kinds_"))
IMAGE_KINDS = write_images(_SCRATCH / "images")
VOLUME_KINDS = write_volumes(_SCRATCH / "volumes")
shutil.rmtree(_SCRATCH)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Both hostile folders, each built twice (to compare the reasons of two runs)."""
    root = tmp_path_factory.mktemp("hostile")
    write_images(root / "images")
    write_volumes(root / "volumes")
    out = {}
    for run in (1, 2):
        out[("images", run)] = build_dataset("h", {"type": "folder", "path": str(root / "images")},
                                             root / f"out_images_{run}")
        out[("volumes", run)] = build_dataset("v", {"type": "nifti", "path": str(root / "volumes")},
                                              root / f"out_volumes_{run}")
    return out


def _check(manifest: pd.DataFrame, expect) -> None:
    m = manifest.set_index("item_id")
    for item_id in expect.item_ids:
        assert item_id in m.index, f"{item_id} missing from the manifest"
        row = m.loc[item_id]
        assert row["status"] == expect.status, (item_id, row["status"], row["reason"])
        assert expect.text in str(row.get(expect.column, "")), (item_id, row[expect.column])


@pytest.mark.parametrize("kind", list(IMAGE_KINDS))
def test_hostile_image(built, kind):
    _check(built[("images", 1)], IMAGE_KINDS[kind])


@pytest.mark.parametrize("kind", list(VOLUME_KINDS))
def test_hostile_volume(built, kind):
    _check(built[("volumes", 1)], VOLUME_KINDS[kind])


def test_nothing_is_dropped_or_invented(built):
    images, volumes = built[("images", 1)], built[("volumes", 1)]
    assert len(images) >= 40 and len(volumes) >= 20
    # every file has its item; hidden files and a folder named .png are skipped, as documented
    assert set(images["item_id"]) == {i for e in IMAGE_KINDS.values() for i in e.item_ids}
    assert set(volumes["item_id"]) == {i for e in VOLUME_KINDS.values() for i in e.item_ids}


@pytest.mark.parametrize("which", ["images", "volumes"])
def test_reasons_are_one_stable_line_naming_the_file(built, which):
    first, second = built[(which, 1)], built[(which, 2)]
    pd.testing.assert_series_equal(first["reason"], second["reason"])  # no addresses, no clocks
    errors = first[first["status"] == "error"]
    assert len(errors) >= 10
    for _, row in errors.iterrows():
        reason = row["reason"]
        assert reason and "\n" not in reason and " at 0x" not in reason, reason
        name = row["source"].split(":", 1)[1].rsplit("/", 1)[-1]
        assert name in reason, (name, reason)  # says which file
    ok = first[first["status"] == "ok"]
    assert (ok["sha256"].str.len() == 64).all()


def test_limits_are_config_keys_applied_before_decoding(tmp_path):
    photo = np.zeros((50, 60, 3), np.uint8)
    (tmp_path / "in").mkdir()
    imaging.write_png(tmp_path / "in" / "a.png", photo)
    spec = {"type": "folder", "path": str(tmp_path / "in"), "limits": {"max_pixels": 2999}}
    df = build_dataset("d", spec, tmp_path / "out")
    assert df.loc[0, "status"] == "error"
    assert "declares 60 x 50 pixels" in df.loc[0, "reason"] and "limits.max_pixels" in df.loc[0, "reason"]
    df = build_dataset("d", {**spec, "limits": {"max_pixels": 3000}}, tmp_path / "out2")
    assert df.loc[0, "status"] == "ok"
    import nibabel as nib

    (tmp_path / "v").mkdir()
    nib.save(nib.Nifti1Image(np.ones((10, 10, 10), np.float32), np.eye(4)), str(tmp_path / "v/a.nii.gz"))
    df = build_dataset("v", {"type": "nifti", "path": str(tmp_path / "v"),
                             "limits": {"max_voxels": 999}}, tmp_path / "vout")
    assert df.loc[0, "status"] == "error" and "above limits.max_voxels" in df.loc[0, "reason"]
    # the defaults come back for the next dataset without limits
    build_dataset("d", {"type": "folder", "path": str(tmp_path / "in")}, tmp_path / "out3")
    assert imaging._limits["max_pixels"] == imaging.DEFAULT_MAX_PIXELS
    assert vol._limits["max_voxels"] == vol.DEFAULT_MAX_VOXELS


def test_colliding_ids_are_renamed_and_recorded(tmp_path):
    img = np.zeros((4, 4, 3), np.uint8)
    items = [Item("a", "src:1", image=img), Item("a", "src:2", image=img),
             Item("a__2", "src:3", image=img), Item("a", "src:4", reason="broken")]
    df = write_dataset(items, tmp_path)
    assert list(df["item_id"]) == ["a", "a__3", "a__2", "a__4"]
    assert df.loc[1, "notes"] == "item id 'a' already taken by another source; renamed 'a__3'"
    assert (df["status"] == ["ok", "ok", "ok", "error"]).all()


def test_one_line_removes_addresses_and_breaks():
    assert imaging.one_line("cannot identify <_io.BytesIO object at 0x7f3a2b>\n  next") == \
        "cannot identify <_io.BytesIO> next"
    assert len(imaging.one_line("x" * 1000)) == 300


def test_constant_volume_note():
    assert vol.constant_note(np.zeros((2, 2, 2))) == "constant volume (every voxel 0): mapped to all zeros"
    assert vol.constant_note(np.arange(8.0).reshape(2, 2, 2)) == ""
    assert math.isclose(vol.to_unit_range(np.full((2, 2, 2), 5.0)).max(), 0.0)
