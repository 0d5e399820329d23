"""Dataset type ``package_photos``: photographs bundled with scikit-learn and matplotlib."""
import matplotlib.cbook
import numpy as np
import pytest
import sklearn.datasets
from PIL import Image

from roundtrip.core.config import ConfigError
from roundtrip.datasets import DATASET_TYPES
from roundtrip.datasets.package_photos import PACKAGE_PHOTOS, build, photo_path
from roundtrip.workflow.checks import _check_bundled_names


def test_items_are_the_packages_own_photographs(tmp_path):
    items = build("photos", {"type": "package_photos", "images": list(PACKAGE_PHOTOS)}, tmp_path)
    by_id = {i.item_id: i for i in items}
    assert set(by_id) == {"china", "flower", "grace_hopper"} and not any(i.reason for i in items)
    # the same pixels as the packages' own loaders give
    china, flower = sklearn.datasets.load_sample_images().images
    np.testing.assert_array_equal(by_id["china"].image, china)
    np.testing.assert_array_equal(by_id["flower"].image, flower)
    with matplotlib.cbook.get_sample_data("grace_hopper.jpg") as fh:
        hopper = np.asarray(Image.open(fh).convert("RGB"))
    np.testing.assert_array_equal(by_id["grace_hopper"].image, hopper)
    assert hopper.shape == (600, 512, 3)
    assert by_id["china"].source == "sklearn:china"
    assert DATASET_TYPES["package_photos"].role == DATASET_TYPES["skimage"].role


def test_unknown_names_and_missing_files():
    with pytest.raises(KeyError, match="choose from"):
        photo_path("lena")
    with pytest.raises(ConfigError, match=r"datasets.p.images: not a packaged photograph: \['lena'\]"):
        _check_bundled_names("p", {"type": "package_photos", "images": ["china", "lena"]})


def test_a_file_that_does_not_decode_is_an_item_with_its_reason(tmp_path, monkeypatch):
    from roundtrip.datasets import package_photos

    bad = tmp_path / "china.jpg"
    bad.write_bytes(b"not a jpeg")
    monkeypatch.setattr(package_photos, "photo_path", lambda name: bad)
    (item,) = package_photos.package_photo_items(["china"])
    assert item.image is None and "ImageReadError" in item.reason
