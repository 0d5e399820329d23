"""MediBench's declaration to the workflow (:class:`roundtrip.core.evaluation.Evaluation`)."""
from __future__ import annotations

from pathlib import Path

from roundtrip.core.config import ConfigError
from roundtrip.core.comparison import ComparedMetric
from roundtrip.core.evaluation import Evaluation
from roundtrip.datasets import MEDICAL_2D
from roundtrip.evals.medibench.plan import MedicalPlan

#: Table names of rule medical_tables (one job writes them all).
TABLES = ["medibench_2d_fidelity", "medibench_2d_latent", "medibench_3d_fidelity",
          "medibench_3d_structure", "medibench_3d_latent", "medibench_classifiers"]
#: The latent shapes of the models (rule medibench_latent_shapes).
LATENT_SHAPES = "medibench_latent_shapes"


#: What a comparison of two checkpoints reads (docs/comparing.md): per-image and per-volume
#: PSNR and SSIM (pillar 1), SegSim, Dice and HD95 of the volumes (pillar 2).
_FIDELITY = ("medibench_2d_fidelity", "medibench_3d_fidelity")
_QUALITY = "metrics/{name}/{dataset}/image_quality.csv"
_STRUCTURE = "metrics/{name}/{dataset}/structure.csv"
#: The structure metrics' definitions: the label maps are the segmenter's (``medical.segmenter``).
_SEGMENTED = ("{}, on the label maps of {{medical.segmenter.type}} ({{medical.segmenter.classes}} "
              "classes, seed {{medical.segmenter.seed}}, robust {{medical.segmenter.robust}}), v1")
_COMPARISONS = (
    ComparedMetric("psnr", _QUALITY, column="psnr", tables=_FIDELITY, headline=True,
                   images="recon/{name}/{dataset}/{item}.png",
                   original="datasets/{dataset}/images/{item}.png",
                   definition="PSNR per image or volume: 10 log10(1 / MSE) over all values in "
                              "[0, 1], v1"),
    ComparedMetric("ssim", _QUALITY, column="ssim", tables=_FIDELITY, headline=True,
                   definition="SSIM per image or volume: MONAI SSIMMetric, Gaussian 11, sigma "
                              "1.5, data range 1, v1"),
    ComparedMetric("segsim", _STRUCTURE, column="segsim", tables=("medibench_3d_structure",),
                   headline=True, definition=_SEGMENTED.format(
                       "SegSim: share of voxels with equal labels (Eq. 4)")),
    ComparedMetric("dice_mean", _STRUCTURE, column="dice_mean",
                   tables=("medibench_3d_structure",), definition=_SEGMENTED.format(
                       "Dice: MONAI DiceMetric, mean over labels, background excluded")),
    ComparedMetric("hd95_mean", _STRUCTURE, column="hd95_mean",
                   tables=("medibench_3d_structure",), definition=_SEGMENTED.format(
                       "HD95: MONAI HausdorffDistanceMetric at 95 %, mm, mean over labels")),
)

class MediBench(Evaluation):
    key = "medibench"
    name = "MediBench"
    title = "MediBench: medical VAEs in 2D and 3D"
    paper = "MediBench: VAEs in medical imaging"
    order = 30
    rules = Path(__file__).resolve().parents[4] / "rules/evals/medibench.smk"
    config_section = "medical"
    schema = Path(__file__).with_name("config.schema.yaml")
    recon_scorers = {
        "latent_utility": "roundtrip.evals.medibench.latent_utility:LatentUtilityScorer"}
    # the paper's Tables 1-5 in order (2D fidelity, 2D latent utility, 3D fidelity, 3D
    # structure, 3D latent utility); the listing of every classifier (two heads per feature set,
    # a long reason column) and the latent shapes (Table 6) go to the appendix
    report_tables = ("medibench_2d_fidelity", "medibench_2d_latent", "medibench_3d_fidelity",
                     "medibench_3d_structure", "medibench_3d_latent")
    report_figures = ("medical/*.png",)
    comparisons = _COMPARISONS
    definitions = (
        ("Fidelity", "PSNR and SSIM (3D SSIM for volumes)", "MediBench pillar 1"),
        ("SegQC, SegSim, Dice, HD95", "segmentation quality of the original, agreement of the "
         "segmentation of the reconstruction with it (Dice, 95th percentile Hausdorff distance "
         "in mm)", "MediBench Sec. 3.2, Eq. 4"),
        ("Latent utility", "accuracy, macro F1 and AUC of a classifier on the latents, against "
         "image baselines", "MediBench Sec. 3.2, Pillar 3"))

    @staticmethod
    def view(plan) -> MedicalPlan:
        return plan.view("medibench", MedicalPlan)

    def active(self, plan) -> bool:
        return bool(self.view(plan).datasets)

    def why_not(self, plan) -> str:
        return "no medical dataset configured"

    def summary(self, plan) -> str:
        return f"{len(self.view(plan).datasets)} medical sets"

    def tables(self, plan) -> list[str]:
        return [*TABLES, LATENT_SHAPES]

    def figures(self, plan) -> list[str]:
        return [f"results/figures/medical/{d}.png" for d in self.view(plan).datasets]

    def findings_inputs(self, plan) -> list[str]:
        """The per-image fidelity files of the medical 2D sets (the PSNR ranking's CIs and the
        paired comparison of the two best models)."""
        m = self.view(plan)
        return [f for (_, d), f in m.table_files["quality"].items() if d in m.medical_2d]

    def findings(self, results) -> list[str]:
        from roundtrip.evals.medibench.findings import findings

        return findings(results)

    def headline_figure(self, results, path: Path) -> str | None:
        from roundtrip.evals.medibench.findings import headline_figure

        return headline_figure(results, path)

    def scorers_for(self, plan, dataset: str) -> dict[str, dict]:
        if plan.roles[dataset] != MEDICAL_2D:
            return {}
        out = {"image_quality": {}}  # fidelity of 2D sets (VTBench's scorer)
        m = self.view(plan)
        if dataset in m.latent_datasets:
            out["latent_utility"] = {"kind": "image", "settings": m.latent_settings(dataset)}
        return out

    def check(self, plan) -> None:
        """Medical datasets name bundled images and paths that exist, and the segmenter can
        run."""
        from roundtrip.datasets import is_medical_spec, is_volume_spec
        from roundtrip.datasets.medical import SKIMAGE_MODALITIES
        from roundtrip.evals.medibench.segment import SegmenterUnavailable, build_segmenter

        config = plan.config
        medical = [n for n, s in config.get("datasets", {}).items() if is_medical_spec(s)]
        for name in medical:
            spec = config["datasets"][name]
            if spec["type"] == "skimage_medical":
                unknown = [i for i in spec.get("images", []) if i not in SKIMAGE_MODALITIES]
                if unknown:
                    raise ConfigError(f"datasets.{name}.images: {unknown} are not bundled medical "
                                      f"images; choose from {sorted(SKIMAGE_MODALITIES)}")
            for key in ("path", "labels_csv"):
                if spec.get(key) and not Path(spec[key]).exists():
                    raise ConfigError(f"datasets.{name}.{key}: {spec[key]} does not exist")
            if spec.get("patch") and is_volume_spec(spec):
                raise ConfigError(f"datasets.{name}.patch: patches are for 2D sets only")
        if not medical:
            return
        seg = config.get("medical", {}).get("segmenter", {"type": "gmm"})
        try:
            segmenter = build_segmenter(seg)
            if hasattr(segmenter, "check"):
                segmenter.check()
        except (SegmenterUnavailable, KeyError, ValueError) as exc:
            raise ConfigError(f"medical.segmenter: {exc}") from exc


EVALUATION = MediBench()
