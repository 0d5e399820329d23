"""Dataset type ``package_photos``: photographs that ship inside other installed packages.

scikit-image's bundled photographs all serve as scored sets in the showcase; a set that must be
disjoint from them (CMMS's training images: the CHD paper trains on ImageNet photographs and
scores other sets, Sec. 4.2, 5.1) takes its natural photographs from here. No network fetch:
the files are inside the scikit-learn and matplotlib wheels.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from roundtrip.core.imaging import ImageReadError, read_image
from roundtrip.core.manifest import Item

#: name -> (package, file inside it): the package's own sample-data loader finds the file.
PACKAGE_PHOTOS = {
    "china": ("sklearn", "china.jpg"),          # 427 x 640 RGB, a temple
    "flower": ("sklearn", "flower.jpg"),        # 427 x 640 RGB, a flower
    "grace_hopper": ("matplotlib", "grace_hopper.jpg"),  # 600 x 512 RGB, a portrait
}


def photo_path(name: str) -> Path:
    """Where the installed package keeps photograph ``name``.

    Raises:
        KeyError: ``name`` is not in :data:`PACKAGE_PHOTOS` (the message lists those that are).
        ImportError: the package that ships it is not installed.
    """
    if name not in PACKAGE_PHOTOS:
        raise KeyError(f"'{name}' is not a packaged photograph; choose from {sorted(PACKAGE_PHOTOS)}")
    package, filename = PACKAGE_PHOTOS[name]
    if package == "sklearn":
        # sklearn.datasets keeps them in its images/ folder; located without importing the
        # package (0.8 s of the build job)
        spec = importlib.util.find_spec("sklearn")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("scikit-learn is not installed")
        return Path(spec.submodule_search_locations[0]) / "datasets" / "images" / filename
    import matplotlib.cbook

    return Path(matplotlib.cbook.get_sample_data(filename, asfileobj=False))


def package_photo_items(names: list[str]) -> list[Item]:
    """Items of the named photographs at their native sizes, uint8 RGB.

    A file the package no longer ships, or one that does not decode, becomes an item with its
    reason (the run goes on without it).

    Raises:
        KeyError: an unknown name.
    """
    items = []
    for name in names:
        source = f"{PACKAGE_PHOTOS[name][0] if name in PACKAGE_PHOTOS else '?'}:{name}"
        try:
            path = photo_path(name)
            items.append(Item(name, source, image=read_image(path)))
        except (ImportError, ImageReadError) as exc:
            items.append(Item(name, source, reason=f"{type(exc).__name__}: {exc}"))
    return items


def build(name: str, spec: dict, out_dir: str | Path) -> list[Item]:
    """Builder of the dataset registry: the items of ``spec["images"]``."""
    return package_photo_items(spec["images"])
