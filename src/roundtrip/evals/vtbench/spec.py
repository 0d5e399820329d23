"""VTBench's declaration to the workflow (:class:`roundtrip.core.evaluation.Evaluation`)."""
from __future__ import annotations

from pathlib import Path

from roundtrip.core.comparison import ComparedMetric
from roundtrip.core.evaluation import Evaluation
from roundtrip.datasets import IMAGES, QUESTION_TYPES, TEXT

#: Table 1's columns the report body shows: the released evaluator's PSNR and SSIM (the
#: paper's convention, at 256 x 256) and roundtrip's per-item means at the input size.
_RECONSTRUCTION_COLUMNS = ("Image Size", "PSNR (VTBench eval.)", "SSIM (VTBench eval.)",
                           "PSNR (per-item mean)", "SSIM (per-item mean)")

#: The tables whose provenance lists the per-item image files VTBench compares (Tables 1-3).
_IMAGE_TABLES = ("reconstruction_", "text_preservation")
_IMAGE_FILE = "metrics/{name}/{dataset}/image_quality.csv"
_RECON = "recon/{name}/{dataset}/{item}.png"
_ORIGINAL = "datasets/{dataset}/images/{item}.png"
_TEXT_FILE = "metrics/{name}/{dataset}/text_{ocr}.csv"
_TEXT_TABLES = ("text_preservation", "ocr_robustness")
_OCR_LINE = "ocr/{ocr}/{name}/{dataset}.csv:text"
#: text_{ocr}.csv, not the set file text_set_{ocr}.csv beside it
_ENGINE = {"ocr": r"(?!set_)[A-Za-z0-9][A-Za-z0-9_-]*"}
#: What a comparison of two checkpoints reads (docs/comparing.md): per-item PSNR, SSIM, LPIPS
#: and CER/WER, and the released evaluator's set-level PSNR and CER recomputed from the items
#: (FID and KID from the items' Inception features where the weights were present). Kendall's
#: tau of the OCR rank agreement is not compared: it is a number of two OCR engines over every
#: model of the run, not of a model (docs/comparing.md). Each ``definition`` ends in a version:
#: bump it with any change that moves the metric's values (docs/comparing.md).
_COMPARISONS = (
    ComparedMetric("psnr", _IMAGE_FILE, column="psnr", tables=_IMAGE_TABLES, headline=True,
                   images=_RECON, original=_ORIGINAL,
                   definition="PSNR per item: 10 log10(1 / MSE), RGB in [0, 1], input size, v1"),
    ComparedMetric("ssim", _IMAGE_FILE, column="ssim", tables=_IMAGE_TABLES, headline=True,
                   images=_RECON, original=_ORIGINAL,
                   definition="SSIM per item: Wang et al. 2004, Gaussian sigma 1.5 (11 x 11), "
                              "valid region, data range 1, input size, v1"),
    ComparedMetric("psnr_vtbench", _IMAGE_FILE, kind="set", column="mse_vtbench",
                   tables=_IMAGE_TABLES, headline=True,
                   set_value="roundtrip.evals.vtbench.compare:released_psnr",
                   definition="PSNR of the set, VTBench's released evaluator: squared error "
                              "pooled over the set, data range of the originals, v1"),
    ComparedMetric("lpips", "metrics/{name}/{dataset}/lpips.csv", column="lpips",
                   tables=_IMAGE_TABLES,
                   definition="LPIPS per item: {metrics.lpips.net} backbone, inputs in "
                              "[-1, 1], input size, v1"),
    ComparedMetric("fid", _IMAGE_FILE, kind="set", column="mse_vtbench",
                   tables=("reconstruction_",),
                   set_value="roundtrip.evals.vtbench.compare:released_fid",
                   label="FID (VTBench eval.)",
                   definition="FID of the set, VTBench's released evaluator: Inception "
                              "features of the 256 px copies, v1"),
    ComparedMetric("kid", _IMAGE_FILE, kind="set", column="mse_vtbench",
                   tables=("reconstruction_",), set_value="roundtrip.evals.vtbench.compare:kid",
                   definition="KID of the whole set: torch-fidelity's cubic polynomial kernel "
                              "on the Inception features, v1",
                   note="KID recomputed on the whole set (the mean over every pair of subsets, "
                        "which the tables' KID estimates from metrics.fid.kid_subsets random "
                        "ones): it may differ from the table's by that estimate's error"),
    ComparedMetric("cer", _TEXT_FILE, column="cer", tables=_TEXT_TABLES, headline=True,
                   references=("ocr/{ocr}/original/{dataset}.csv",), text=_OCR_LINE,
                   wildcards=_ENGINE, images=_RECON, original=_ORIGINAL,
                   definition="CER per item: App. F Eq. 3 on the OCR as written, against the "
                              "original's OCR, v1"),
    ComparedMetric("wer", _TEXT_FILE, column="wer", tables=_TEXT_TABLES,
                   references=("ocr/{ocr}/original/{dataset}.csv",), text=_OCR_LINE,
                   wildcards=_ENGINE,
                   definition="WER per item: App. F Eq. 4 on the OCR as written, "
                              "whitespace-separated words, against the original's OCR, v1"),
    ComparedMetric("cer_vtbench", _TEXT_FILE, kind="set", column="chars_vtbench",
                   tables=("text_preservation",), label="CER (VTBench eval.)", wildcards=_ENGINE,
                   higher_is_better=False, digits=4,
                   references=("ocr/{ocr}/original/{dataset}.vtbench.csv",),
                   set_value="roundtrip.evals.vtbench.compare:released_cer",
                   definition="CER of the set, VTBench's released evaluator: edits over "
                              "characters pooled over the set, v1"),
)


class VTBench(Evaluation):
    key = "vtbench"
    name = "VTBench"
    title = "VTBench: reconstruction, detail and text preservation"
    paper = "VTBench: Evaluating Visual Tokenizers for Autoregressive Image Generation"
    order = 10
    rules = Path(__file__).resolve().parents[4] / "rules/evals/vtbench.smk"
    recon_scorers = {
        "image_quality": "roundtrip.evals.vtbench.image_quality:ImageQualityScorer",
        "perceptual": "roundtrip.evals.vtbench.perceptual:PerceptualScorer",
        "text": "roundtrip.evals.vtbench.text:TextScorer",
    }
    # the paper's order: Table 1 (all settings, then one table per protocol), Table 2 (detail
    # preservation), Table 3 (text), Table 4 (detail statistics, App. D), Table 5 (OCR
    # robustness, App. G) and the rank agreement that backs it, then the model card
    # Table 1 is one block of rows per protocol (vtbench_table1, stacked); the per-protocol
    # tables with every convention's columns are in the appendix
    # Table 5's engines are compared in the body by their rank agreement (Kendall's tau); Table
    # 5 itself, the readability of the OCR references (Table 3's notes name the cells it
    # flags), Table 4 (statistics of the originals) and the model card are whole in the appendix
    report_tables = ("vtbench_table1", "reconstruction_detail", "text_preservation",
                     "ocr_rank_agreement")
    # the body shows the headline columns, so that the column groups stacked as rows (model,
    # group, metrics) fit the page; the appendix has every column
    report_columns = {
        **{t: _RECONSTRUCTION_COLUMNS for t in ("reconstruction_model_size", "reconstruction_1024",
                                                "reconstruction_native", "reconstruction_fixed",
                                                "reconstruction_detail")},
        "text_preservation": ("PSNR (VTBench eval.)", "CER (VTBench eval.)",
                              "WER (VTBench eval.)"),
        "ocr_robustness": ("CER (VTBench eval.)",)}
    report_figures = ("gallery/*.png",)
    comparisons = _COMPARISONS
    definitions = (
        ("VTBench eval.", "the released evaluator's convention: both images resized to "
         "256 x 256, batches of 16 in file-name order, torchmetrics 1.7.1 defaults",
         "VTBench released evaluator (evaluate_images.py)"),
        ("PSNR (VTBench eval.)", "10 log10(R^2 / MSE) with one MSE over the set and R from 0 to "
         "the originals' max (torchmetrics' states start at 0)",
         "VTBench Sec. 4.1, released evaluator"),
        ("PSNR (per-item mean)", "10 log10(1 / MSE) per image on [0, 1] values, averaged over "
         "images; pooled PSNR uses the MSE over all values of the set", "roundtrip"),
        ("SSIM", "structural similarity (Wang et al. 2004) of each RGB channel, averaged over "
         "the channels; (VTBench eval.) at each batch of 16's data range, (256 px, per-pair "
         "range) at the pair's own, (per-item mean) at the Image Size with data range 1",
         "VTBench Sec. 4.1"),
        ("LPIPS, FID, KID", "perceptual distance (AlexNet; VTBench eval.: [0, 1] inputs as the "
         "released evaluator, else [-1, 1]), Frechet and kernel Inception distances between "
         "originals and reconstructions", "VTBench Sec. 4.1"),
        ("CER, WER (VTBench eval.)", "OCR of both 256 px images read at 1024 px; edits summed "
         "over the set over the characters (words) of the originals' OCR; the WER's edits are "
         "characters of the space-joined words", "VTBench released evaluator"),
        ("CER, WER (per-item mean)", "edit distance of the OCR of the reconstruction to the OCR "
         "of the original (or the ground truth), over characters or words, on the texts as "
         "they are, per item at the scored size, then the mean; (norm.) after roundtrip's "
         "normalization", "VTBench App. F, Eqs. 3-4"),
        ("Kendall's tau", "agreement of two OCR engines' rankings of the models",
         "VTBench App. G, Table 5"),
        ("Reference readability", "how well an OCR engine reads the originals in the view a "
         "CER/WER column scores against (256 px copies at 1024 px, or as built): the mean CER "
         "of those readings against the ground truth after ocr.normalization, or the share of "
         "empty readings; above ocr.readability.max_cer or max_empty the reference is "
         "unreadable and the cells scored against it are flagged", "roundtrip"),
        ("Detail statistics", "high-frequency energy share, Laplacian variance, edge density of "
         "the originals", "VTBench App. D, Table 4"))

    def summary(self, plan) -> str:
        def count(n: int, what: str) -> str:
            return f"{n} {what}{'' if n == 1 else 's'}"
        return (f"{count(len(plan.recon_datasets), 'image set')}, "
                f"{count(len(plan.text_datasets), 'text set')}, {count(len(plan.models), 'model')}")

    @staticmethod
    def reconstruction_tables(plan) -> dict[str, list[str]]:
        """Table 1, one table per setting with datasets (``reconstruction_model_size``,
        ``reconstruction_1024``, ``reconstruction_native``) -> their datasets; Table 2
        (``reconstruction_detail``) holds the detail-preservation sets."""
        from roundtrip.evals.vtbench.tables import is_detail_set, reconstruction_tables

        specs = plan.config["datasets"]
        return reconstruction_tables({d: specs[d]["protocol"] for d in plan.recon_datasets},
                                     [d for d in plan.recon_datasets if is_detail_set(specs[d])])

    @staticmethod
    def ocr_batched(plan, dataset: str) -> bool:
        """Whether the OCR of a text set's originals runs in its engines' batched jobs
        (:meth:`ocr_batches`) rather than in a job per (engine, set): a set built in a batched
        job (:meth:`~roundtrip.workflow.builds.DatasetBuilds.group`: a few packaged items) whose
        reading takes one core (:meth:`~roundtrip.workflow.plan.Plan.item_threads`)."""
        return plan.builds.group(dataset) is not None and plan.item_threads(dataset, 2) == 1

    @staticmethod
    def ocr_batches(plan) -> list[tuple[str, list[str], list[str]]]:
        """``(rule name, engines, datasets)`` of the batched jobs that read the originals: per
        engine, the text sets it reads that are :meth:`ocr_batched`; engines reading the same
        sets share a rule (wildcard ``ocr``). Names: ``ocr_original_sets``, then ``_2``,
        ``_3``... Each set gets the file its own ``ocr_original`` job would write."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for engine in plan.ocr_engines:
            sets = tuple(d for d in plan.text_datasets
                         if engine in plan.engines_for(d) and VTBench.ocr_batched(plan, d))
            if sets:
                groups.setdefault(sets, []).append(engine)
        return [("ocr_original_sets" + (f"_{k + 1}" if k else ""), engines, list(sets))
                for k, (sets, engines) in enumerate(groups.items())]

    @staticmethod
    def released_reading(plan, dataset: str) -> bool:
        """Whether a text set gets the released evaluator's OCR (both images at 256 px, read at
        1024 px) and CER/WER: Table 3's text sets, not question sets (VISTA-Bench renders, whose
        reconstructions other evaluations read)."""
        return plan.config["datasets"][dataset]["type"] not in QUESTION_TYPES

    @staticmethod
    def ocr_jobs(plan, datasets: list[str], engine: str) -> list[dict]:
        """What a job reading originals does, per dataset in order: ``dataset``, ``manifest``,
        ``lang`` (``datasets.<name>.lang``), ``ocr`` (the file it writes), ``view`` (the file of
        the released evaluator's reading of the originals) and ``read_view`` (whether it is
        read: :meth:`released_reading`; else the file lists no item)."""
        from roundtrip.evals.vtbench.readability import FULL_VIEW, VTBENCH_VIEW, reference_file

        return [{"dataset": d, "manifest": f"results/datasets/{d}/manifest.csv",
                 "lang": plan.config["datasets"][d].get("lang"),
                 "ocr": reference_file(engine, d, FULL_VIEW),
                 "view": reference_file(engine, d, VTBENCH_VIEW),
                 "read_view": VTBench.released_reading(plan, d)} for d in datasets]

    @staticmethod
    def references(plan, engine: str | None = None) -> list[dict]:
        """The OCR files of the originals that the text tables' CER/WER columns score against
        (:func:`~roundtrip.evals.vtbench.readability.references`): per text set and engine
        reading it (only ``engine`` where given, e.g. ``tables.ocr_engine``), the originals as
        built and, for Table 3's sets (:meth:`released_reading`), the released view.
        Entries ``{"dataset", "engine", "view", "path"}``."""
        from roundtrip.evals.vtbench.readability import references

        sets = plan.text_datasets
        return references(sets, {d: [engine] if engine else plan.engines_for(d) for d in sets},
                          {d for d in sets if VTBench.released_reading(plan, d)})

    def checkpoints(self, plan) -> list[str]:
        # the model card describes every trained model, used on a dataset or not
        return [f for m in plan.trained_models for f in plan.weights_of(m)]

    def tables(self, plan) -> list[str]:
        recon = self.reconstruction_tables(plan)
        names = [*(["vtbench_table1"] if recon else []), *recon, "detail_statistics",
                 "model_card"]
        if plan.text_datasets:
            names += ["text_preservation", "ocr_robustness", "ocr_rank_agreement",
                      "ocr_readability"]
        return names

    def findings_inputs(self, plan) -> list[str]:
        # the per-item PSNR of the first set of the setting the findings read (the model-size
        # protocol where it ran, else the first that ran): the paired best vs runner-up
        from roundtrip.evals.vtbench.findings import ITEM_PATTERN, headline_setting

        recon = self.reconstruction_tables(plan)
        setting = headline_setting(recon)
        return plan.model_dataset_files(ITEM_PATTERN, recon[setting][:1] if setting else [])

    def findings(self, results) -> list[str]:
        from roundtrip.evals.vtbench.findings import findings

        return findings(results)

    def headline_figure(self, results, path: Path) -> str | None:
        from roundtrip.evals.vtbench.findings import headline_figure

        return headline_figure(results, path)

    def published_cells(self, results):
        """The run's Table 1 rows for the settings whose set is the paper's data
        (``paper_data: true``)."""
        from roundtrip.evals.vtbench.findings import table1_cells

        return table1_cells(results)

    def scorers_for(self, plan, dataset: str) -> dict[str, dict]:
        out: dict[str, dict] = {}
        if plan.roles[dataset] in (IMAGES, TEXT):
            out["image_quality"] = {"ssim_scored_size": plan.metrics["ssim"]["scored_size"]}
            if plan.weighted.perceptual_run:
                m = plan.metrics
                out["perceptual"] = {"lpips": m["lpips"], "fid": m["fid"],
                                     "cache": m["weights_cache"]}
        if dataset in plan.text_datasets:
            from roundtrip.evals.vtbench.readability import FULL_VIEW, VTBENCH_VIEW, reference_file

            engines = plan.engines_for(dataset)
            ocr = plan.config["ocr"]
            view = self.released_reading(plan, dataset)
            out["text"] = {"engines": {e: ocr["engines"][e] for e in engines},
                           "ocr_original": {e: reference_file(e, dataset, FULL_VIEW)
                                            for e in engines},
                           "ocr_original_vtbench": {
                               e: reference_file(e, dataset, VTBENCH_VIEW) if view else None
                               for e in engines},
                           "lang": plan.config["datasets"][dataset]["lang"],
                           "normalization": ocr["normalization"]}
        return out

    def recon_inputs(self, plan, scorer: str, datasets: list[str]) -> dict:
        if scorer == "perceptual":
            return {"metric_weights": (plan.weighted.files("metrics.lpips")
                                       + plan.weighted.files("metrics.fid"))}
        if scorer == "text":
            from roundtrip.evals.vtbench.readability import FULL_VIEW, VTBENCH_VIEW, reference_file

            engines = plan.engines_for(datasets[0])
            return {**{f"ocr_original_{e}": reference_file(e, "{dataset}", FULL_VIEW)
                       for e in engines},
                    **{f"ocr_original_vtbench_{e}": reference_file(e, "{dataset}", VTBENCH_VIEW)
                       for e in engines}}
        return {}

    def recon_outputs(self, plan, scorer: str, datasets: list[str]) -> dict[str, str]:
        metrics = "results/metrics/{model}/{dataset}"
        if scorer == "text":
            out = {}
            for e in plan.engines_for(datasets[0]):
                out[f"ocr_{e}"] = f"results/ocr/{e}/{{model}}/{{dataset}}.csv"
                out[f"ocr_vtbench_{e}"] = f"results/ocr/{e}/{{model}}/{{dataset}}.vtbench.csv"
                out[f"text_{e}"] = f"{metrics}/text_{e}.csv"
                out[f"text_set_{e}"] = f"{metrics}/text_set_{e}.csv"
            return out
        keys = {"image_quality": ["image_quality", "set"], "perceptual": ["lpips", "distribution"]}
        return {k: f"{metrics}/{k}.csv" for k in keys[scorer]}


EVALUATION = VTBench()
