"""Columns of the VTBench tables: reconstruction (Table 1), text preservation (Table 3) and
detail statistics (Table 4), for :func:`roundtrip.tables.build_table`."""
from __future__ import annotations

from roundtrip.tables import Column, metric_column


def reconstruction_columns(datasets: list[str], protocols: dict[str, str] | None = None,
                           lpips: bool = False, fid: bool = False) -> list[Column]:
    """VTBench Table 1 columns per dataset, headed ``dataset (protocol)``.

    PSNR (per-item mean and pooled), SSIM, then LPIPS (per item, ``lpips.csv``) and FID and
    KID (set level, ``distribution.csv``, sample count beside each value) when enabled.
    """
    cols = []
    for d in datasets:
        g = f"{d} ({protocols[d]})" if protocols else d
        cols += [metric_column(d, "psnr", group=g),
                 metric_column(d, "psnr_pooled", source="set", group=g),
                 metric_column(d, "ssim", group=g)]
        if lpips:
            cols.append(metric_column(d, "lpips", group=g, file="lpips"))
        if fid:
            cols += [metric_column(d, "fid", source="set", group=g, file="distribution",
                                   show_n=True),
                     metric_column(d, "kid", source="set", group=g, file="distribution",
                                   show_n=True, spread="kid_std")]
    return cols


def text_columns(datasets: dict[str, bool], cer_only: set[str] | frozenset = frozenset()
                 ) -> list[Column]:
    """CER and WER vs OCR of the original, and vs ground truth where the dataset has it.

    Args:
        datasets: ``name -> has ground-truth text``.
        cer_only: datasets in scripts without spaces between words (Chinese, Japanese), where
            WER is meaningless and VTBench reports CER only.
    """
    cols = []
    for d, has_gt in datasets.items():
        cols.append(metric_column(d, "cer"))
        if d not in cer_only:
            cols.append(metric_column(d, "wer"))
        if has_gt:
            cols.append(metric_column(d, "cer_gt"))
            if d not in cer_only:
                cols.append(metric_column(d, "wer_gt"))
    return cols


def detail_columns(group: str = "originals") -> list[Column]:
    """VTBench Table 4 columns (definitions in :mod:`roundtrip.metrics.detail`)."""
    return [metric_column(group, "hf_energy_pct"),
            metric_column(group, "laplacian_var"),
            metric_column(group, "edge_density_pct")]
