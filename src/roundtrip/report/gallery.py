"""Reconstruction galleries (VTBench Figs. 4 and 5): for a few items of a dataset, the original
beside each model's reconstruction, as a zoomed crop of the region with the most fine detail
(or small text), with the OCR reading under each crop for text sets.

:func:`detail_window` picks the crop: the square window (a quarter of the short side, at least
48 px) with the largest mean gradient magnitude of the original's luma, found on a grid of
window positions with a summed-area table. The same window is cut from every reconstruction.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from roundtrip.core.imaging import read_image, to_uint8

#: Fonts tried in order for each glyph of the OCR lines (matplotlib's font fallback), so CJK
#: and Devanagari lines render from the installed Noto faces.
FONT_FALLBACK = ["DejaVu Sans", "Noto Sans CJK JP", "Noto Sans Devanagari", "WenQuanYi Micro Hei"]


def detail_window(image: np.ndarray, fraction: float = 0.25, minimum: int = 48
                  ) -> tuple[int, int, int]:
    """``(y, x, side)`` of the square window with the most gradient energy.

    Args:
        image: ``(H, W, 3)`` uint8.
        fraction: window side as a share of the short side; minimum: smallest side in px.
    """
    gray = image.astype(np.float64).mean(axis=2)
    h, w = gray.shape
    side = int(min(h, w, max(minimum, fraction * min(h, w))))
    gy, gx = np.gradient(gray)
    energy = np.hypot(gx, gy)
    sat = np.pad(energy.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    step = max(1, side // 4)
    best, where = -1.0, (0, 0)
    for y in range(0, h - side + 1, step):
        for x in range(0, w - side + 1, step):
            total = sat[y + side, x + side] - sat[y, x + side] - sat[y + side, x] + sat[y, x]
            if total > best:
                best, where = total, (y, x)
    return where[0], where[1], side


def gallery_rows(manifest: pd.DataFrame, dataset_dir: Path, recon_dirs: dict[str, Path],
                 items: int) -> list[dict]:
    """For the first ``items`` ok items: the original (the protocol's reference where the
    model saw one: ``model_size``, ``fixed_1024``) and each model's reconstruction path (None
    when that model has no image of the item).

    Args:
        manifest: the dataset's manifest; dataset_dir: its folder.
        recon_dirs: model -> ``results/recon/{model}/{dataset}``.
    """
    rows = []
    for _, r in manifest[manifest["status"] == "ok"].head(items).iterrows():
        original, recon = Path(dataset_dir) / r["path"], {}
        for model, folder in recon_dirs.items():
            path, ref = Path(folder) / f"{r['item_id']}.png", Path(folder) / "ref" / f"{r['item_id']}.png"
            if ref.is_file():
                original = ref
            recon[model] = path if path.is_file() else None
        rows.append({"item_id": r["item_id"], "original": original, "recon": recon,
                     "text": r.get("text", "")})
    return rows


def plot_gallery(dataset: str, rows: list[dict], ocr: dict[str, dict[str, str]], path
                 ) -> list[dict]:
    """Draw one dataset's gallery; returns the OCR lines shown (``item_id, model, line``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["font.family"] = FONT_FALLBACK
    models = list(rows[0]["recon"]) if rows else []
    cols = 2 + len(models)
    fig, axes = plt.subplots(max(1, len(rows)), cols, figsize=(1.7 * cols, 2.0 * max(1, len(rows))),
                             squeeze=False)
    lines = []
    for i, row in enumerate(rows):
        original = to_uint8(read_image(row["original"]))
        y, x, side = detail_window(original)
        panels = [("original", original, None), ("original (crop)", original, "original")]
        panels += [(m, to_uint8(read_image(p)) if p else None, m) for m, p in row["recon"].items()]
        for j, (label, img, key) in enumerate(panels):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(label, fontsize=7)
            if img is None:
                ax.text(0.5, 0.5, "n/a", ha="center", va="center", fontsize=7)
                continue
            if j == 0:
                ax.imshow(img)
                ax.add_patch(matplotlib.patches.Rectangle((x, y), side, side, fill=False,
                                                          edgecolor="red", linewidth=1))
                ax.set_ylabel(row["item_id"], fontsize=6)
                continue
            crop = img[y:y + side, x:x + side] if img.shape[:2] == original.shape[:2] else \
                img[: side, : side]
            ax.imshow(crop, interpolation="nearest")
            line = ocr.get(key, {}).get(row["item_id"])
            if line is not None:
                short = " ".join(line.split())[:60]
                ax.set_xlabel(textwrap.fill(short, 28), fontsize=5)
                lines.append({"item_id": row["item_id"], "model": key, "line": " ".join(line.split())})
    fig.suptitle(f"{dataset}: originals and reconstructions, crop of the most detailed region",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return lines
