"""Dataset type ``skimage``: photographs, textures and scans bundled with scikit-image.

The images ship inside the scikit-image wheel (no network fetch); they are the showcase's real
data for VTBench's reconstruction, detail and text tasks.
"""
from __future__ import annotations

from pathlib import Path

from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.manifest import Item

#: scikit-image images that ship inside the wheel (no network fetch), by loader name.
SKIMAGE_BUNDLED = {
    "astronaut": "astronaut", "chelsea": "chelsea", "coffee": "coffee", "rocket": "rocket",
    "motorcycle_left": "motorcycle_left", "motorcycle_right": "motorcycle_right",
    "hubble_deep_field": "hubble_deep_field", "camera": "camera", "coins": "coins",
    "moon": "moon", "immunohistochemistry": "ihc", "retina": "retina", "cell": "cell",
    "microaneurysms": "microaneurysms", "brick": "brick", "grass": "grass", "gravel": "gravel",
    "page": "page", "text": "text", "colorwheel": "color", "logo": "logo",
    "shepp_logan_phantom": "phantom",
}


def skimage_items(names: list[str]) -> list[Item]:
    """Items from scikit-image's bundled images, at their native sizes.

    Args:
        names: keys of :data:`SKIMAGE_BUNDLED` (e.g. ``astronaut``, ``brick``, ``page``).

    Raises:
        KeyError: a name that is not bundled (the message lists those that are).
    """
    import skimage.data

    data_dir = Path(skimage.data.__file__).parent
    items = []
    for name in names:
        if name not in SKIMAGE_BUNDLED:
            raise KeyError(f"'{name}' is not a bundled scikit-image image; choose from "
                           f"{sorted(SKIMAGE_BUNDLED)}")
        stem = SKIMAGE_BUNDLED[name]
        files = sorted(data_dir.glob(stem + ".*"))
        if not files:
            items.append(Item(name, f"skimage:{name}", reason=f"{stem}.* not found in {data_dir}"))
            continue
        try:
            items.append(Item(name, f"skimage:{name}", image=read_image(files[0])))
        except ImageReadError as exc:
            items.append(Item(name, f"skimage:{name}", reason=str(exc)))
    return items


def build(name: str, spec: dict, out_dir: str | Path) -> list[Item]:
    """Builder of the dataset registry: the items of ``spec["images"]``."""
    return skimage_items(spec["images"])
