"""Dataset builders: manifest contract, bundled images, user folders with broken files."""
import hashlib

import numpy as np
import pytest
import skimage.data
from PIL import Image

from roundtrip.core.imaging import read_image, write_png
from roundtrip.core.manifest import MANIFEST_COLUMNS, read_manifest, safe_item_id
from roundtrip.datasets import build_dataset, expected_item_count
from roundtrip.datasets.folder import folder_fingerprint


def test_skimage_dataset_manifest(tmp_path):
    df = build_dataset("nat", {"type": "skimage", "images": ["astronaut", "coins"], "lang": "eng"},
                       tmp_path)
    assert list(df.columns[: len(MANIFEST_COLUMNS)]) == MANIFEST_COLUMNS
    m = read_manifest(tmp_path / "manifest.csv")
    assert m["item_id"].tolist() == ["astronaut", "coins"]
    assert (m["status"] == "ok").all() and (m["lang"] == "eng").all()
    row = m.set_index("item_id").loc["coins"]
    assert (int(row["width"]), int(row["height"])) == (384, 303)  # native size kept
    stored = read_image(tmp_path / row["path"])
    assert np.array_equal(stored[..., 0], skimage.data.coins())
    digest = hashlib.sha256((tmp_path / row["path"]).read_bytes()).hexdigest()
    assert row["sha256"] == digest and row["source"] == "skimage:coins"


def test_expected_item_count_matches_the_built_manifest(tmp_path):
    spec = {"type": "skimage", "images": ["astronaut", "coins", "camera"]}
    assert expected_item_count(spec) == len(build_dataset("nat", spec, tmp_path)) == 3
    assert expected_item_count({"type": "nifti", "bundled": ["anatomical.nii"]}) == 1
    assert expected_item_count({"type": "abstracts", "count": 2}) == 2
    # only the built manifest can tell
    assert expected_item_count({"type": "folder", "path": str(tmp_path)}) is None
    assert expected_item_count({"type": "vista_questions", "limit": 4}) is None


def test_unknown_bundled_name_is_rejected(tmp_path):
    with pytest.raises(KeyError, match="not a bundled"):
        build_dataset("x", {"type": "skimage", "images": ["lena"]}, tmp_path)


def test_folder_dataset_handles_every_flavour(tmp_path):
    src = tmp_path / "src"
    (src / "sub dir").mkdir(parents=True)
    astro = skimage.data.astronaut()
    Image.fromarray(astro).save(src / "photo.jpg", quality=90)
    Image.fromarray(skimage.data.camera()).save(src / "sub dir" / "gray.png")
    write_png(src / "deep.png", np.full((5, 6, 3), 40000, np.uint16))
    Image.fromarray(np.zeros((8, 8, 4), np.uint8), "RGBA").save(src / "rgba.png")
    (src / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    (src / "notes.txt").write_text("not an image: ignored")
    (src / "photo.png").write_bytes((src / "deep.png").read_bytes())  # id clash with photo.jpg

    df = build_dataset("mine", {"type": "folder", "path": str(src)}, tmp_path / "out")
    by_id = df.set_index("item_id")
    # photo.jpg sorts first and keeps the plain id; photo.png is disambiguated by extension
    assert set(by_id.index) == {"broken", "deep", "photo", "photo_png", "rgba", "sub_dir__gray"}
    assert by_id.loc["broken", "status"] == "error"
    assert "broken.png" in by_id.loc["broken", "reason"]
    ok = by_id[by_id["status"] == "ok"]
    assert len(ok) == 5
    deep = read_image(tmp_path / "out" / by_id.loc["deep", "path"])
    assert deep.dtype == np.uint16 and int(deep.max()) == 40000
    assert read_image(tmp_path / "out" / by_id.loc["rgba", "path"]).min() == 255  # white


def test_folder_errors_and_fingerprint(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_dataset("m", {"type": "folder", "path": str(tmp_path / "missing")}, tmp_path / "o")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no image files"):
        build_dataset("m", {"type": "folder", "path": str(tmp_path / "empty")}, tmp_path / "o")
    f0 = folder_fingerprint(tmp_path / "empty")
    Image.fromarray(skimage.data.camera()).save(tmp_path / "empty" / "a.png")
    assert folder_fingerprint(tmp_path / "empty") != f0


def test_safe_item_id():
    assert safe_item_id("a/b c.jpg") == "a__b_c"
    assert safe_item_id("x.y.png") == "x.y"
