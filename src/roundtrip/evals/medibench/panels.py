"""Reconstruction and subtraction-map panels (PNG) per modality (MediBench figures).

For each modality of a dataset, its first item whose reconstructions every model kept as files
(``keep_reconstructions``; else its first item): the original, each model's reconstruction,
and below each the absolute difference ``|x_hat - x|`` on one fixed color scale
(0 to the largest difference in the panel), so models are comparable at a glance. Volumes show
their middle slice along the slicing axis.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.manifest import read_item_csv, read_manifest


def _load(path: Path, axis: int) -> np.ndarray:
    """Grayscale or RGB ``[0, 1]`` view of an image or of a volume's middle slice."""
    if path.name.endswith(".nii.gz"):
        from roundtrip.datasets.medical import read_volume

        v = read_volume(path)
        return np.take(v, v.shape[axis] // 2, axis=axis).T[::-1]  # radiological view, up = anterior
    from roundtrip.core.imaging import read_image, to_unit

    return to_unit(read_image(path))


def _recon_path(folder: Path, item: str) -> Path:
    ext = ".nii.gz" if (folder / f"{item}.nii.gz").exists() else ".png"
    return folder / f"{item}{ext}"


def _shown_items(ok_items, folders: dict[str, Path]):
    """Per modality, the first item whose reconstruction file every model kept, else the
    first item (the manifest's ok rows, in order)."""
    def kept(item_id: str) -> bool:
        return all(_recon_path(folder, item_id).is_file() for folder in folders.values())

    shown = [group[group["item_id"].map(kept)].head(1) if group["item_id"].map(kept).any()
             else group.head(1) for _, group in ok_items.groupby("modality", sort=False)]
    return pd.concat(shown) if shown else ok_items.iloc[:0]


def write_panel(manifest_path: str | Path, status_files: Mapping[str, str | Path], dataset: str,
                out: str | Path, axis: int = 2) -> Path:
    """Write the panel of ``dataset``; a model without a reconstruction of the item shows its
    status reason in place of the image.

    Args:
        manifest_path: the dataset's ``manifest.csv`` (item paths are relative to its folder).
        status_files: model -> the ``status.csv`` of its reconstruction job on ``dataset``, in
            the panel's column order. The reconstructions are read from the folder of that file:
            the job writes them beside it, and its status file is the output the rule declares.
        dataset: the dataset's name (the modality of items whose manifest names none).
        out: the PNG to write (folders are created).
        axis: slicing axis of volumes (their middle slice is shown).

    Returns:
        ``out`` as a Path.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    manifest_path = Path(manifest_path)
    m = read_manifest(manifest_path)
    m = m[m["status"] == "ok"]
    if "modality" not in m:
        m = m.assign(modality=dataset)
    models = list(status_files)
    folders = {mod: Path(f).parent for mod, f in status_files.items()}
    firsts = _shown_items(m, folders)
    status = {mod: read_item_csv(f).set_index("item_id") for mod, f in status_files.items()}
    n_rows, n_cols = 2 * max(1, len(firsts)), 1 + len(models)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.9 * n_cols, 1.9 * n_rows), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for i, (_, row) in enumerate(firsts.iterrows()):
        x = _load(manifest_path.parent / row["path"], axis)
        recons, refs = {}, {}
        for mod in models:
            st = status[mod].loc[row["item_id"]] if row["item_id"] in status[mod].index else None
            if st is not None and st["status"] == "ok":
                path = _recon_path(folders[mod], row["item_id"])
                if not path.is_file():
                    recons[mod] = "reconstruction not kept (run.keep_reconstructions)"
                    continue
                recons[mod] = _load(path, axis)
                # a protocol that resizes (model_size) scores against its stored reference
                ref = str(st.get("reference", "") or "")
                refs[mod] = _load(folders[mod] / ref, axis) if ref else x
            else:
                recons[mod] = "no reconstruction" if st is None else f"{st['status']}: {st['reason']}"
        if refs:
            x = next(iter(refs.values()))
        diffs = {k: np.abs(v - refs[k]).mean(axis=-1) if v.ndim == 3 else np.abs(v - refs[k])
                 for k, v in recons.items() if isinstance(v, np.ndarray) and v.shape == refs[k].shape}
        vmax = max([float(d.max()) for d in diffs.values()] + [1e-6])
        top, bottom = axes[2 * i], axes[2 * i + 1]
        top[0].imshow(x, cmap="gray", vmin=0, vmax=1)
        top[0].set_title(f"{row['modality']}\noriginal", fontsize=7)
        bottom[0].text(0.5, 0.5, f"|x̂ - x|\n0 to {vmax:.3f}", ha="center", va="center", fontsize=7)
        for j, mod in enumerate(models, start=1):
            top[j].set_title(mod, fontsize=7)
            if isinstance(recons[mod], str):
                top[j].text(0.5, 0.5, recons[mod][:60], ha="center", va="center", fontsize=5,
                            wrap=True)
                continue
            top[j].imshow(recons[mod], cmap="gray", vmin=0, vmax=1)
            if mod in diffs:
                bottom[j].imshow(diffs[mod], cmap="inferno", vmin=0, vmax=vmax)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
