"""Which images CMMS trains on, and whether they are held out from the sets it scores.

The CHD paper trains CMMS once, on ImageNet, and applies it "without further fine-tuning" to the
sets it evaluates (Sec. 4.2, 5.1): its scores are out-of-sample. roundtrip keeps that property by
default: the training sets (``metrics.tokens.cmms.datasets``) must share neither a name nor an
image with a scored set (``metrics.tokens.datasets`` and the sensitivity set), unless
``metrics.tokens.cmms.allow_overlap`` is true.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

ALLOW_KEY = "metrics.tokens.cmms.allow_overlap"


def image_keys(name: str, spec: dict) -> set[str]:
    """Identifiers of the images a dataset spec holds, as far as the config tells them:
    ``skimage:<name>`` or ``package_photos:<name>`` per bundled image, ``path:<resolved folder>`` for a folder set, else the
    set's own name (only a name match is then detectable before the set is built).

    Args:
        name: the dataset's name in ``datasets``.
        spec: its config entry.

    Returns:
        A set of strings; equal strings mean the same images.
    """
    if spec.get("type") in ("skimage", "package_photos"):
        return {f"{spec['type']}:{i}" for i in spec.get("images", [])}
    if spec.get("type") == "folder" and spec.get("path"):
        return {f"path:{Path(str(spec['path'])).expanduser().resolve()}"}
    return {f"dataset:{name}"}


def training_overlap(training: list[str], scored: list[str], datasets: dict) -> list[str]:
    """What CMMS's training sets share with the scored sets.

    Args:
        training: names of the training sets.
        scored: names of the sets CHD/CMMS score.
        datasets: the config's ``datasets`` (name -> spec).

    Returns:
        One line per overlap, e.g. ``"natural (scored set)"`` or
        ``"cmms_train and natural share skimage:astronaut"``; empty when disjoint.
    """
    out = [f"{d} (scored set)" for d in training if d in scored]
    for t in training:
        for s in scored:
            if t == s:
                continue
            shared = image_keys(t, datasets[t]) & image_keys(s, datasets[s])
            if shared:
                out.append(f"{t} and {s} share {', '.join(sorted(shared))}")
            elif nested := _nested_folders(datasets[t], datasets[s]):
                out.append(f"{t} and {s} share the folder {nested}")
    return out


def _nested_folders(a: dict, b: dict) -> str | None:
    """The inner folder when one folder set's path lies inside the other's (the folder reader
    recurses, so ``imagenet`` holds ``imagenet/val``'s images), else None."""
    if not (a.get("type") == b.get("type") == "folder" and a.get("path") and b.get("path")):
        return None
    pa, pb = (Path(str(s["path"])).expanduser().resolve() for s in (a, b))
    if pa.is_relative_to(pb):
        return str(pa)
    return str(pb) if pb.is_relative_to(pa) else None


def overlap_message(overlaps: list[str]) -> str:
    """The check-config error for a non-empty :func:`training_overlap` result."""
    return ("metrics.tokens.cmms.datasets: CMMS would be trained on images it then scores ("
            + "; ".join(overlaps) + "); the CHD paper trains it on a held-out set (ImageNet, "
            f"Sec. 4.2, 5.1). Name disjoint training sets, or set {ALLOW_KEY}: true to score "
            "in-sample")


class ImageFiles(Sequence):
    """The ``ok`` images of dataset manifests, read from disk when indexed: CMMS draws its crops
    from them one at a time, so a training set the size of ImageNet-1K need not fit in memory.

    Args:
        manifest_paths: ``results/datasets/{name}/manifest.csv`` files.
        cache: images kept decoded (least recently used out): a small set is read once.

    Items are ``(H, W, 3)`` uint8/uint16 arrays (:func:`roundtrip.core.imaging.read_image`).

    Raises:
        ValueError: no ``ok`` item in the manifests.
        roundtrip.core.imaging.ImageReadError: on indexing, a file that cannot be read.
    """

    def __init__(self, manifest_paths: list[str | Path], cache: int = 64):
        from roundtrip.core.imaging import read_image
        from roundtrip.core.manifest import read_manifest

        self._read = lru_cache(maxsize=cache)(read_image)
        self.paths = []
        for path in manifest_paths:
            m = read_manifest(path)
            self.paths += [Path(path).parent / p for p in m.loc[m["status"] == "ok", "path"]]
        if not self.paths:
            raise ValueError(f"no readable image in {list(map(str, manifest_paths))}")

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i):
        return self._read(self.paths[i])
