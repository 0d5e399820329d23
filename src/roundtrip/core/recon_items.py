"""The reconstruction items of a (model, dataset): what every reconstruction scorer iterates,
and the context a scorer runs in (:class:`ReconContext`).

Every manifest item yields one :class:`ReconItem`, in manifest order; items that were not
reconstructed carry their status and reason instead of images, so a scorer writes a row for
every item (the contract of docs/design.md) without reading anything it cannot score. Inside
the reconstruction job the items carry their images in memory (streamed scorers,
:mod:`roundtrip.core.scoring`); read from a finished job's files they carry paths.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roundtrip.core.imaging import read_image
from roundtrip.core.manifest import read_item_csv, read_manifest


@dataclass
class ReconItem:
    """One manifest item of a (model, dataset): its reconstruction status and files.

    ``reference`` is what the reconstruction is compared with: the original, or the
    protocol-resized original the harness saved (``status.csv`` column ``reference``).
    Both paths are None unless ``status == "ok"``; inside the reconstruction job the images are
    in memory (``reference_image``, ``reconstruction_image``: ``(H, W, 3)`` uint8 or uint16,
    the arrays the PNG files hold), and the files exist only for the items the job keeps
    (``keep_reconstructions``). Read the images with :meth:`read_reference` and
    :meth:`read_reconstruction`, which take the one in memory or else read the file.

    Attributes:
        fields: the item's manifest row (``lang``, ``text``, ``label``...), as strings.
    """
    item_id: str
    status: str
    reason: str
    reference: Path | None = None
    reconstruction: Path | None = None
    reference_image: np.ndarray | None = field(default=None, repr=False)
    reconstruction_image: np.ndarray | None = field(default=None, repr=False)
    fields: dict = field(default_factory=dict, repr=False)

    def read_reference(self) -> np.ndarray:
        """The reference image, from memory or its file.

        Raises:
            roundtrip.core.imaging.ImageReadError: the file cannot be read.
            ValueError: the item was not reconstructed (no reference).
        """
        if self.reference_image is not None:
            return self.reference_image
        if self.reference is None:
            raise ValueError(f"item {self.item_id} has no reference ({self.status})")
        return read_image(self.reference)

    def read_reconstruction(self) -> np.ndarray:
        """The reconstruction, from memory or its file (raises as :meth:`read_reference`)."""
        if self.reconstruction_image is not None:
            return self.reconstruction_image
        if self.reconstruction is None:
            raise ValueError(f"item {self.item_id} has no reconstruction ({self.status})")
        return read_image(self.reconstruction)

    def without_images(self) -> "ReconItem":
        """The same item with its images dropped (what :meth:`ReconScorer.finish` gets)."""
        return ReconItem(self.item_id, self.status, self.reason, self.reference,
                         self.reconstruction, fields=self.fields)


def iter_recon_items(manifest_path: str | Path, status_path: str | Path,
               recon_dir: str | Path, suffix: str = ".png") -> Iterator[ReconItem]:
    """Yield a :class:`ReconItem` per manifest item, in manifest order (nothing is read yet).

    Args:
        manifest_path: ``results/datasets/{dataset}/manifest.csv``.
        status_path: the reconstruction's ``status.csv`` (``item_id, status, reason[,
            reference]``).
        recon_dir: folder of the reconstructions, ``{item_id}{suffix}``.
        suffix: ``.png`` for images, ``.nii.gz`` for volumes.
    """
    manifest = read_manifest(manifest_path)
    status = read_item_csv(status_path).set_index("item_id")
    root, recon_dir = Path(manifest_path).parent, Path(recon_dir)
    for _, item in manifest.iterrows():
        item_id, fields = item["item_id"], item.to_dict()
        if item_id not in status.index:
            yield ReconItem(item_id, "error", "no reconstruction status recorded", fields=fields)
            continue
        st = status.loc[item_id]
        if st["status"] != "ok":
            yield ReconItem(item_id, st["status"], st["reason"], fields=fields)
            continue
        ref = st.get("reference", "")
        yield ReconItem(item_id, "ok", "", recon_dir / ref if ref else root / item["path"],
                        recon_dir / f"{item_id}{suffix}", fields=fields)


@dataclass
class ReconContext:
    """What a reconstruction scorer gets (:mod:`roundtrip.workflow.recon_job`): the files of one
    reconstructed (model, dataset) and the means to compute on them.

    Attributes:
        model: the model's config name.
        manifest: ``results/datasets/{dataset}/manifest.csv``.
        status: the job's ``status.csv`` (every item, ``ok`` or the reason it is not).
        recon_dir: the folder of the reconstructions (``{item_id}.png``).
        device: torch device for networks (a ``torch.device``; typed loosely to keep core free
            of torch).
        load_model: returns the job's model adapter, loaded on ``device`` (loaded once, on first
            call: the reconstruction may not have needed it).
        threads: parallel workers a scorer may start (Tesseract processes).
    """
    model: str
    manifest: Path
    status: Path
    recon_dir: Path
    device: object = "cpu"
    load_model: object = None
    threads: int = 1

    def recon_items(self) -> Iterator[ReconItem]:
        """The reconstruction items of this (model, dataset), as :func:`iter_recon_items`."""
        return iter_recon_items(self.manifest, self.status, self.recon_dir)
