"""Columns of the VTBench tables: reconstruction (Table 1), text preservation (Table 3) and
detail statistics (Table 4), for :func:`roundtrip.tables.build_table`."""
from __future__ import annotations

from pathlib import Path

from roundtrip.tables import Column, metric_column

#: Tesseract codes of the non-Latin scripts of VTBench's multilingual set that separate words
#: with spaces: WER is defined for them, but Table 3 prints CER only.
SPACED_NON_LATIN = {"hin": "Hindi", "kor": "Korean"}


#: VTBench Table 1's settings: table name suffix -> (protocols, title). ``native_resize`` is a
#: labelled variant of the native setting (its column header names the protocol).
SETTINGS = {
    "model_size": (("model_size",), "Reconstruction at the model's input size (VTBench Table 1, "
                                    "ImageNet setting: center crop resized to the model's size)"),
    "1024": (("fixed_1024",), "Reconstruction at 1024 x 1024 (VTBench Table 1, high resolution)"),
    "native": (("native", "native_resize"), "Reconstruction at native size (VTBench Table 1, "
                                            "varying resolution)"),
}


def setting_of(protocol: str) -> str:
    """The Table 1 setting (a key of :data:`SETTINGS`) of a reconstruction protocol.

    Raises:
        KeyError: an unknown protocol.
    """
    for name, (protocols, _) in SETTINGS.items():
        if protocol in protocols:
            return name
    raise KeyError(f"no VTBench setting for protocol {protocol!r}")


def reconstruction_tables(protocols: dict[str, str]) -> dict[str, list[str]]:
    """One reconstruction table per VTBench setting present: ``reconstruction_{setting}`` ->
    its datasets in config order (``protocols``: dataset -> protocol)."""
    out: dict[str, list[str]] = {}
    for setting in SETTINGS:
        datasets = [d for d, p in protocols.items() if setting_of(p) == setting]
        if datasets:
            out[f"reconstruction_{setting}"] = datasets
    return out


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


def text_columns(datasets: dict[str, bool], cer_only: set[str] | frozenset = frozenset(),
                 quality: bool = False, lpips: bool = False, fid: bool = False) -> list[Column]:
    """VTBench Table 3 columns per text dataset: PSNR (mean and pooled), SSIM, LPIPS and FID of
    the reconstructions (file kinds ``quality``, ``quality_set``, ``lpips``, ``distribution``),
    then CER and
    WER of their OCR vs OCR of the originals (kind ``item``), and vs ground truth where the
    dataset has it.

    Args:
        datasets: ``name -> has ground-truth text``.
        cer_only: datasets in scripts without spaces between words (Chinese, Japanese), where
            WER is meaningless and VTBench reports CER only.
        quality, lpips, fid: include the image-quality columns (PSNR and SSIM; LPIPS; FID).
    """
    cols = []
    for d, has_gt in datasets.items():
        if quality:
            cols += [metric_column(d, "psnr", file="quality"),
                     metric_column(d, "psnr_pooled", source="set", file="quality_set"),
                     metric_column(d, "ssim", file="quality")]
        if lpips:
            cols.append(metric_column(d, "lpips", file="lpips"))
        if fid:
            cols.append(metric_column(d, "fid", source="set", file="distribution", show_n=True))
        cols.append(metric_column(d, "cer"))
        if d not in cer_only:
            cols.append(metric_column(d, "wer"))
        if has_gt:
            cols.append(metric_column(d, "cer_gt"))
            if d not in cer_only:
                cols.append(metric_column(d, "wer_gt"))
    return cols


def weighted_metrics(lpips: bool, fid: bool, unavailable: dict[str, str]
                     ) -> tuple[bool, bool, list[str]]:
    """Which weighted metrics a table shows, and its notes: an enabled metric whose weights are
    missing is one note under the table, not a column of n/a per dataset.

    Args:
        lpips, fid: ``metrics.lpips.enabled``, ``metrics.fid.enabled``.
        unavailable: file kind (``lpips``, ``distribution``) -> why it was not computed
            (:meth:`roundtrip.workflow.plan.Plan.unavailable_metrics`).

    Returns:
        ``(show LPIPS, show FID/KID, notes)``.
    """
    notes = [f"{label} not shown, {unavailable[kind]}"
             for on, kind, label in ((lpips, "lpips", "LPIPS"), (fid, "distribution", "FID, KID"))
             if on and kind in unavailable]
    return lpips and "lpips" not in unavailable, fid and "distribution" not in unavailable, notes


def wer_beyond_paper(manifests: dict[str, str | Path], default_langs: dict[str, str],
                     cer_only: set[str]) -> list[str]:
    """The note labelling WER columns VTBench Table 3 does not print: Hindi and Korean sets
    (their words are space-separated, so WER is defined; the paper shows CER only for its
    multilingual set). Empty when there are none."""
    from roundtrip.core.manifest import read_manifest

    named = []
    for dataset, path in manifests.items():
        m = read_manifest(path)
        langs = set(m["lang"]) if "lang" in m.columns else {default_langs[dataset]}
        scripts = sorted({SPACED_NON_LATIN[p] for lang in langs for p in str(lang).split("+")
                          if p in SPACED_NON_LATIN})
        if scripts and dataset not in cer_only:
            named.append(f"{dataset} ({', '.join(scripts)})")
    if not named:
        return []
    return [f"WER of {', '.join(named)} is roundtrip's addition: VTBench Table 3 prints CER only "
            "for non-Latin scripts; these separate words with spaces, so WER is defined"]


def detail_columns(group: str = "originals") -> list[Column]:
    """VTBench Table 4 columns (definitions in :mod:`roundtrip.metrics.detail`)."""
    return [metric_column(group, "hf_energy_pct"),
            metric_column(group, "laplacian_var"),
            metric_column(group, "edge_density_pct")]
