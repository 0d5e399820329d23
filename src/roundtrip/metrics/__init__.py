"""Pure metric code: arrays and tensors in, numbers out, no file I/O.

One module per family; each definition names its paper and section:

- :mod:`.image_quality`: PSNR, SSIM (VTBench Task 1);
- :mod:`.perceptual`: LPIPS; :mod:`.distribution`: FID, KID;
- :mod:`.text`: CER, WER with text normalization (VTBench App. F);
- :mod:`.tokens`: CHD (CHD paper, Sec. 4.1);
- :mod:`.detail`: detail statistics (VTBench App. D);
- :mod:`.fidelity`: PSNR and MONAI SSIM of volumes (MediBench pillar 1);
- :mod:`.segmentation`: SegSim, Dice, HD95 (MediBench pillar 2);
- :mod:`.accuracy`: accuracy and the modality gap (VISTA-Bench Table 1);
- :mod:`.drift`: S(g), MCD, SDR fits (The Telephone Game, Sec. 3.1-3.2);
- :mod:`.geneval`: GenEval's rules on detections (MGG, The Telephone Game Sec. 3.3);
- :mod:`.stats`: bootstrap confidence intervals.

:data:`METRICS` declares, once, each metric's direction and the precision the tables print.
The public functions are re-exported here lazily (``from roundtrip.metrics import cer`` imports
only :mod:`.text`), so that a table or OCR job that needs CER does not import torch.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricInfo:
    """What a table needs to know about a metric.

    Attributes:
        name: the column name in per-item and set files (``psnr``, ``cer_gt``...).
        label: the column header in tables.
        higher_is_better: True, False, or None for a descriptive statistic (detail statistics).
        digits: decimals printed in Markdown and LaTeX (CSV keeps full precision).
        unit: e.g. ``dB``, ``%``, ``mm``; empty for unitless values.
        source: where the definition comes from (paper and section).
    """
    name: str
    label: str
    higher_is_better: bool | None
    digits: int
    unit: str = ""
    source: str = ""


#: Every metric the tables print, by column name.
METRICS: dict[str, MetricInfo] = {m.name: m for m in [
    MetricInfo("psnr", "PSNR", True, 2, "dB", "VTBench Sec. 4.1: 10 log10(1 / MSE)"),
    MetricInfo("psnr_pooled", "PSNR (pooled)", True, 2, "dB", "PSNR of the MSE over all values"),
    MetricInfo("ssim", "SSIM", True, 4, "", "Wang et al. 2004; VTBench Sec. 4.1"),
    MetricInfo("lpips", "LPIPS", False, 4, "", "Zhang et al. 2018; VTBench Sec. 4.1"),
    MetricInfo("fid", "FID", False, 2, "", "Heusel et al. 2017; VTBench Sec. 4.1"),
    MetricInfo("kid", "KID", False, 4, "", "Binkowski et al. 2018"),
    MetricInfo("cer", "CER", False, 4, "", "VTBench App. F, Eq. 3"),
    MetricInfo("wer", "WER", False, 4, "", "VTBench App. F, Eq. 4"),
    MetricInfo("cer_gt", "CER (GT)", False, 4, "", "VTBench App. F, Eq. 3, vs ground truth"),
    MetricInfo("wer_gt", "WER (GT)", False, 4, "", "VTBench App. F, Eq. 4, vs ground truth"),
    MetricInfo("cer_norm", "CER (norm.)", False, 4, "", "VTBench App. F, Eq. 3 after "
               "roundtrip's normalization"),
    MetricInfo("wer_norm", "WER (norm.)", False, 4, "", "VTBench App. F, Eq. 4 after "
               "roundtrip's normalization"),
    MetricInfo("cer_gt_norm", "CER (GT, norm.)", False, 4, "", "VTBench App. F, Eq. 3, vs "
               "ground truth, after roundtrip's normalization"),
    MetricInfo("wer_gt_norm", "WER (GT, norm.)", False, 4, "", "VTBench App. F, Eq. 4, vs "
               "ground truth, after roundtrip's normalization"),
    MetricInfo("psnr_vtbench", "PSNR (VTBench eval.)", True, 2, "dB", "VTBench released "
               "evaluator: torchmetrics PSNR over the set, data range of the originals"),
    MetricInfo("ssim_vtbench", "SSIM (VTBench eval.)", True, 4, "", "VTBench released "
               "evaluator: torchmetrics SSIM defaults"),
    MetricInfo("lpips_vtbench", "LPIPS (VTBench eval.)", False, 4, "", "VTBench released "
               "evaluator: AlexNet LPIPS fed [0, 1] without normalize"),
    MetricInfo("image_size", "Image Size", None, 0, "px", "VTBench Tables 1-3: side of the "
               "square model input (App. H)"),
    MetricInfo("chd", "CHD", False, 4, "", "CHD paper, Sec. 4.1"),
    MetricInfo("chd_1d", "CHD-1D", False, 4, "", "CHD paper, Sec. 4.1, Eq. 9"),
    MetricInfo("chd_2d", "CHD-2D", False, 4, "", "CHD paper, Sec. 4.1, Eq. 10"),
    MetricInfo("cmms", "CMMS", True, 3, "", "CHD paper, Sec. 4.2"),
    MetricInfo("cmms_reference", "CMMS (orig.)", True, 3, "", "CHD paper, Sec. 4.2"),
    MetricInfo("hf_energy_pct", "HighFreq energy (%)", None, 2, "%", "VTBench App. D"),
    MetricInfo("laplacian_var", "Laplacian variance", None, 1, "", "VTBench App. D"),
    MetricInfo("edge_density_pct", "Edge density (%)", None, 2, "%", "VTBench App. D"),
    MetricInfo("segsim", "SegSim", True, 3, "", "MediBench Sec. 3.2, Eq. 4"),
    MetricInfo("segqc", "SegQC", True, 3, "", "MediBench Sec. 3.2"),
    MetricInfo("dice_mean", "Dice", True, 3, "", "MediBench Sec. 3.2"),
    MetricInfo("hd95_mean", "HD95", False, 2, "mm", "MediBench Sec. 3.2"),
    MetricInfo("vt_accuracy", "VT", True, 1, "%", "VISTA-Bench Table 1: visualized text"),
    MetricInfo("text_accuracy", "Text", True, 1, "%", "VISTA-Bench Table 1: pure text"),
    MetricInfo("modality_gap", "Gap", True, 1, "pp", "VISTA-Bench Table 1: Acc_Text - Acc_VT (the drop from text to VT)"),
    MetricInfo("rendering_errors", "Rend. err.", False, 1, "%",
               "VISTA-Bench Sec. 4.3: right as Text, wrong as VT"),
    MetricInfo("macro_auc", "Macro-AUC", True, 3, "", "MediBench Sec. 3.2, Pillar 3"),
    MetricInfo("mcd", "MCD", True, 4, "", "The Telephone Game Sec. 3.1, Eq. 2"),
    MetricInfo("mgg", "MGG", True, 3, "", "The Telephone Game Sec. 3.3"),
]}

#: Public name -> the module that defines it (imported on first use).
_EXPORTS = {
    **dict.fromkeys(("mse", "psnr", "psnr_from_mse", "pooled_psnr", "ssim", "ssim_batch"),
                    "image_quality"),
    **dict.fromkeys(("Normalization", "normalize_text", "cer", "wer", "text_errors"), "text"),
    **dict.fromkeys(("TokenHistogram", "chd", "hellinger"), "tokens"),
    **dict.fromkeys(("DetailStats", "detail_stats", "luma", "hf_energy_share",
                     "laplacian_variance", "edge_density"), "detail"),
    **dict.fromkeys(("InceptionFeatures", "fid", "kid"), "distribution"),
    "LPIPS": "perceptual",
    **dict.fromkeys(("segsim", "structure_metrics"), "segmentation"),
    **dict.fromkeys(("Summary", "bootstrap_mean"), "stats"),
    **dict.fromkeys(("accuracy_values", "paired_gaps"), "accuracy"),
    **dict.fromkeys(("similarity_curve", "mcd", "fit_sdr", "SDRFit", "average_fits",
                     "cer_similarity"), "drift"),
}

__all__ = ["METRICS", "MetricInfo", *sorted(_EXPORTS)]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
