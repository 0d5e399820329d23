"""What each section of the report holds: its tables (by name), its figures, and a short
definition of each metric with the paper and section it comes from."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """One evaluation's part of the report.

    Attributes:
        key: evaluation key; title: heading; paper: the paper it reproduces.
        tables: table-name prefixes (or full names) it shows, in order.
        figures: figure paths under ``results/figures/`` (``*`` patterns allowed), in order.
        definitions: ``(metric, definition, source)`` rows.
    """
    key: str
    title: str
    paper: str
    tables: tuple[str, ...]
    figures: tuple[str, ...] = ()
    definitions: tuple[tuple[str, str, str], ...] = field(default=())


SECTIONS = (
    Section("vtbench", "VTBench: reconstruction, detail and text preservation",
            "VTBench: Evaluating Visual Tokenizers for Autoregressive Image Generation",
            ("vtbench_table1", "reconstruction_model_size", "reconstruction_1024",
             "reconstruction_native", "reconstruction_detail", "text_preservation", "ocr_robustness", "ocr_rank_agreement", "detail_statistics",
             "model_card"), ("gallery/*.png",),
            (("PSNR (VTBench eval.)", "10 log10(R^2 / MSE) with one MSE over the set and R the "
              "range of the originals (the released evaluator, torchmetrics defaults)",
              "VTBench Sec. 4.1, released evaluator"),
             ("PSNR (per-item mean)", "10 log10(1 / MSE) per image on [0, 1] values, averaged "
              "over images; pooled PSNR uses the MSE over all values of the set", "roundtrip"),
             ("SSIM", "structural similarity of the luma (Wang et al. 2004)", "VTBench Sec. 4.1"),
             ("LPIPS, FID, KID", "perceptual distance (AlexNet; VTBench eval.: [0, 1] inputs "
              "as the released evaluator, else [-1, 1]), Frechet and kernel Inception "
              "distances between originals and reconstructions", "VTBench Sec. 4.1"),
             ("CER, WER", "edit distance of the OCR of the reconstruction to the OCR of the "
              "original (or the ground truth), over characters or words, on the texts as they "
              "are; (norm.) after roundtrip's normalization", "VTBench App. F, Eqs. 3-4"),
             ("Kendall's tau", "agreement of two OCR engines' rankings of the models",
              "VTBench App. G, Table 5"),
             ("Detail statistics", "high-frequency energy share, Laplacian variance, edge "
              "density of the originals", "VTBench App. D, Table 4"))),
    Section("chd", "CHD and CMMS: token-space metrics",
            "Evaluating Generative Models via One-Dimensional Code Distributions",
            ("token_metrics", "token_sensitivity", "token_sensitivity_spearman"),
            ("token_sensitivity.png",),
            (("CHD", "Hellinger distance between the code histograms of the originals and the "
              "reconstructions in a reference tokenizer's tokens, 1D and 2D parts",
              "CHD paper Sec. 4.1, Eqs. 9-10"),
             ("CMMS", "a regressor's score of how natural a token map is, trained on pixel "
              "distortions", "CHD paper Sec. 4.2"),
             ("Sensitivity", "CHD and CMMS under ten levels of noise, blur and block shuffling; "
              "Spearman correlation with the level", "CHD paper Fig. 2"))),
    Section("medibench", "MediBench: medical VAEs in 2D and 3D",
            "MediBench: VAEs in medical imaging", ("medibench_",), ("medical/*.png",),
            (("Fidelity", "PSNR and SSIM (3D SSIM for volumes)", "MediBench pillar 1"),
             ("SegQC, SegSim, Dice, HD95", "segmentation quality of the original, agreement of "
              "the segmentation of the reconstruction with it (Dice, 95th percentile Hausdorff "
              "distance in mm)", "MediBench Sec. 3.2, Eq. 4"),
             ("Latent utility", "accuracy, macro F1 and AUC of a classifier on the latents, "
              "against image baselines", "MediBench Sec. 3.2, Pillar 3"))),
    Section("vista", "VISTA-Bench: the modality gap",
            "VISTA-Bench: visualized text vs pure text in VLMs", ("vista_",), ("vista_gap.png",),
            (("VT, Text accuracy", "share of questions answered right from the rendered image "
              "and from the pure text", "VISTA-Bench Table 1"),
             ("Gap", "VT accuracy minus Text accuracy, in points", "VISTA-Bench Table 1"),
             ("Rendering-related errors", "VT answers wrong whose question the same reader "
              "answers right as text", "VISTA-Bench Sec. 4.3"))),
    Section("telephone", "The Telephone Game: semantic drift",
            "The Telephone Game: Evaluating Semantic Drift in Unified Models",
            ("telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_sdr_fits",
             "telephone_mgg", "telephone_mgg_grid"),
            ("telephone_similarity.png", "telephone_sdr.png", "telephone_mgg.png",
             "telephone_mgg_mcd.png", "telephone_strip.png"),
            (("S(g)", "mean similarity of generation g's output to the chain's input",
              "Telephone Game Eq. 1"),
             ("MCD", "mean of S(g) over the generations; MCD_avg over the paper's four mappings",
              "Telephone Game Sec. 3.1, Eq. 2"),
             ("SDR", "alpha g^(-beta) + gamma fitted to S(g); beta is the decay rate",
              "Telephone Game Sec. 3.2, Table 3"),
             ("MGG", "GenEval accuracy at every image generation, averaged over generations",
              "Telephone Game Sec. 3.3"))),
)


def tables_of(section: Section, available: list[str]) -> list[str]:
    """The available table names the section shows, in the section's order."""
    out = []
    for key in section.tables:
        out += [t for t in available if (t == key or (key.endswith("_") and t.startswith(key)))
                and t not in out]
    return out
