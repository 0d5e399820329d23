"""Per-item scoring of a (model, dataset): joins manifest, reconstruction status and files.

Every manifest item gets a row: scored items carry numbers, the others carry ``status`` and the
``reason`` they could not be scored, so tables can say why a number is missing.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import pandas as pd
import torch

from .datasets import read_manifest
from .imaging import ImageReadError, read_image, to_unit
from .metrics.image_quality import mse, pooled_psnr, psnr_from_mse, ssim_batch
from .metrics.text import Normalization, text_errors

log = logging.getLogger(__name__)

IMAGE_QUALITY_COLUMNS = ["item_id", "status", "reason", "psnr", "ssim", "mse", "n_values"]
TEXT_COLUMNS = ["item_id", "status", "reason", "cer", "wer", "cer_gt", "wer_gt"]


def _read_status(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"item_id": str, "reason": str}, keep_default_na=False)


def score_image_quality(manifest_path: str | Path, status_path: str | Path,
                        recon_dir: str | Path) -> pd.DataFrame:
    """PSNR, SSIM and MSE per item (definitions in :mod:`roundtrip.metrics.image_quality`).

    Images are read one pair at a time, so memory does not grow with the dataset.

    Returns:
        DataFrame with :data:`IMAGE_QUALITY_COLUMNS`; ``n_values`` = H * W * 3.
    """
    manifest = read_manifest(manifest_path)
    status = _read_status(status_path).set_index("item_id")
    root, recon_dir = Path(manifest_path).parent, Path(recon_dir)
    rows = []
    for _, item in manifest.iterrows():
        item_id = item["item_id"]
        st = status.loc[item_id] if item_id in status.index else None
        row = dict.fromkeys(IMAGE_QUALITY_COLUMNS, math.nan) | {"item_id": item_id}
        if st is None:
            row.update(status="error", reason="no reconstruction status recorded")
        elif st["status"] != "ok":
            row.update(status=st["status"], reason=st["reason"])
        else:
            try:
                row.update(_score_pair(root / item["path"], recon_dir / f"{item_id}.png"))
                row.update(status="ok", reason="")
            except (ImageReadError, ValueError) as exc:
                row.update(status="error", reason=f"scoring: {exc}")
        rows.append(row)
    return pd.DataFrame(rows, columns=IMAGE_QUALITY_COLUMNS)


def _score_pair(orig_path: Path, recon_path: Path) -> dict:
    x, y = to_unit(read_image(orig_path)), to_unit(read_image(recon_path))
    m = mse(x, y)
    tx = torch.from_numpy(x).permute(2, 0, 1)[None]
    ty = torch.from_numpy(y).permute(2, 0, 1)[None]
    return {"psnr": psnr_from_mse(m), "ssim": float(ssim_batch(tx, ty)[0]), "mse": m,
            "n_values": x.size}


def set_image_quality(per_item: pd.DataFrame) -> pd.DataFrame:
    """Set-level rows ``metric, value, n``: pooled PSNR over the scored items."""
    ok = per_item[per_item["status"] == "ok"]
    return pd.DataFrame([{"metric": "psnr_pooled",
                          "value": pooled_psnr(ok["mse"].to_numpy(), ok["n_values"].to_numpy()),
                          "n": len(ok)}])


def score_text(manifest_path: str | Path, ocr_original: str | Path, ocr_model: str | Path,
               status_path: str | Path | None, norm: Normalization) -> pd.DataFrame:
    """CER/WER of each reconstruction's OCR against the original's OCR (``cer``, ``wer``) and
    against ground-truth text where the manifest has it (``cer_gt``, ``wer_gt``).

    Returns:
        DataFrame with :data:`TEXT_COLUMNS`; undefined values are NaN with the reason.
    """
    manifest = read_manifest(manifest_path)
    orig = pd.read_csv(ocr_original, dtype=str, keep_default_na=False).set_index("item_id")
    hyp = pd.read_csv(ocr_model, dtype=str, keep_default_na=False).set_index("item_id")
    status = _read_status(status_path).set_index("item_id") if status_path else None
    has_gt = "text" in manifest.columns
    rows = []
    for _, item in manifest.iterrows():
        item_id = item["item_id"]
        row = dict.fromkeys(TEXT_COLUMNS, math.nan) | {"item_id": item_id, "status": "ok",
                                                       "reason": ""}
        reason = _unscorable(item_id, status, orig, hyp)
        if reason:
            row.update(status="error" if "unsupported" not in reason else "unsupported",
                       reason=reason)
            rows.append(row)
            continue
        hyp_text = hyp.loc[item_id, "text"]
        c, w, why = text_errors(orig.loc[item_id, "text"], hyp_text, norm)
        row.update(cer=c, wer=w)
        reasons = [f"vs OCR of original: {why}"] if why else []
        if has_gt and item.get("text", ""):
            c, w, why = text_errors(item["text"], hyp_text, norm)
            row.update(cer_gt=c, wer_gt=w)
            if why:
                reasons.append(f"vs ground truth: {why}")
        row["reason"] = "; ".join(reasons)
        if reasons and all(math.isnan(row[k]) for k in ("cer", "cer_gt")):
            row["status"] = "undefined"
        rows.append(row)
    return pd.DataFrame(rows, columns=TEXT_COLUMNS)


def _unscorable(item_id, status, orig, hyp) -> str:
    if status is not None:
        if item_id not in status.index:
            return "no reconstruction status recorded"
        if status.loc[item_id, "status"] != "ok":
            return f"reconstruction {status.loc[item_id, 'status']}: {status.loc[item_id, 'reason']}"
    for name, table in (("original", orig), ("reconstruction", hyp)):
        if item_id not in table.index:
            return f"no OCR of the {name}"
        if table.loc[item_id, "status"] != "ok":
            return f"OCR of the {name} failed: {table.loc[item_id, 'reason']}"
    return ""

