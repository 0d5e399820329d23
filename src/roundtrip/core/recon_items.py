"""The reconstruction items of a (model, dataset): what every reconstruction scorer iterates,
and the context a scorer runs in (:class:`ReconContext`).

Every manifest item yields one :class:`ReconItem`, in manifest order; items that were not
reconstructed carry their status and reason instead of paths, so a scorer writes a row for
every item (the contract of docs/design.md) without reading anything it cannot score.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from roundtrip.core.manifest import read_item_csv, read_manifest


@dataclass
class ReconItem:
    """One manifest item of a (model, dataset): its reconstruction status and files.

    ``reference`` is what the reconstruction is compared with: the original, or the
    protocol-resized original the harness saved (``status.csv`` column ``reference``).
    Both paths are None unless ``status == "ok"``.
    """
    item_id: str
    status: str
    reason: str
    reference: Path | None = None
    reconstruction: Path | None = None


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
        item_id = item["item_id"]
        if item_id not in status.index:
            yield ReconItem(item_id, "error", "no reconstruction status recorded")
            continue
        st = status.loc[item_id]
        if st["status"] != "ok":
            yield ReconItem(item_id, st["status"], st["reason"])
            continue
        ref = st.get("reference", "")
        yield ReconItem(item_id, "ok", "", recon_dir / ref if ref else root / item["path"],
                   recon_dir / f"{item_id}{suffix}")


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
