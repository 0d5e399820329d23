"""The Telephone Game's declaration to the workflow
(:class:`roundtrip.core.evaluation.Evaluation`)."""
from __future__ import annotations

from pathlib import Path

from roundtrip.core.config import ConfigError
from roundtrip.core.comparison import ComparedMetric
from roundtrip.core.evaluation import Evaluation
from roundtrip.core.weights import HubFolder, WeightsMissing
from roundtrip.evals.telephone.plan import TelephonePlan

#: Table names (roundtrip.evals.telephone.tables; one rule writes them all).
TABLES = ["telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_sdr_fits",
          "telephone_mgg", "telephone_mgg_grid"]
#: Its figures (roundtrip.evals.telephone.figures).
FIGURES = [f"results/figures/telephone_{n}.png"
           for n in ("similarity", "sdr", "mgg", "mgg_mcd", "strip")]

#: The model folders its backbones and MGG scorers load (``roundtrip weights fetch NAME``).
WEIGHT_FOLDERS = (
    HubFolder("mpnet", "sentence-transformers/all-mpnet-base-v2",
              "Telephone Game text backbone (MPNet)"),
    HubFolder("clip-vit-b32", "openai/clip-vit-base-patch32",
              "Telephone Game CLIP backbone (the released code's)"),
    HubFolder("dino-vitb16", "facebook/dino-vitb16",
              "Telephone Game image->image backbone (the paper's DINO v1 ViT-B/16)"),
    HubFolder("dinov2-base", "facebook/dinov2-base", "Telephone Game DINOv2 backbone (option)"),
    HubFolder("owlv2-large", "google/owlv2-large-patch14-ensemble",
              "MGG detector (OWLv2 large, the released code's)"),
    HubFolder("owlv2-base", "google/owlv2-base-patch16-ensemble", "MGG detector (OWLv2 base)"),
    HubFolder("clip-vit-l14", "openai/clip-vit-large-patch14",
              "GenEval's colour check beside MGG (CLIP)"),
)

#: Pair type -> the prompt fields it sends and their default templates in ``api.prompts`` (a
#: diffusers pipeline takes the caption itself as its prompt).
PAIR_PROMPTS = {
    "api": {"t2i_prompt": "telephone_t2i", "i2t_prompt": "telephone_i2t"},
    "diffusers": {"i2t_prompt": "telephone_i2t"},
    "transformers": {"t2i_prompt": "telephone_t2i", "i2t_prompt": "telephone_i2t"},
}


#: What a comparison of two model pairs reads (docs/comparing.md): each item's MCD over every
#: measured experiment (Eq. 2), and MGG's verdicts per generation, an item's generations
#: resampled together (Sec. 3.3).
_COMPARISONS = (
    ComparedMetric("mcd", "telephone/{name}/{dataset}/similarity.csv", column="mcd",
                   tables=("telephone_mcd",), headline=True,
                   rows="roundtrip.evals.telephone.compare:mcd_rows",
                   definition="MCD per item (Eq. 2): mean S(g) over generations and "
                              "experiments, a failed generation 0, backbones "
                              "{telephone.backbones}, v1"),
    ComparedMetric("mgg", "telephone/{name}/{dataset}/mgg.csv", kind="binary",
                   column="correct", tables=("telephone_mgg",), item=("item_id", "generation"),
                   cluster=("item_id",), label="MGG verdict", headline=True,
                   definition="MGG verdict per generation: the released code's rules on "
                              "OWLv2 {telephone.mgg.detector.weights} detections above "
                              "{telephone.mgg.detector.threshold}, v1"),
)

class Telephone(Evaluation):
    key = "telephone"
    name = "The Telephone Game"
    title = "The Telephone Game: semantic drift"
    paper = "The Telephone Game: Evaluating Semantic Drift in Unified Models"
    order = 50
    rules = Path(__file__).resolve().parents[4] / "rules/evals/telephone.smk"
    config_section = "telephone"
    schema = Path(__file__).with_name("config.schema.yaml")
    # the paper's order: Table 3 (SDR), MCD, MGG per task, MGG per generation (Fig. 8); the long
    # listings (every fit, every S(g) point) go to the appendix
    report_tables = ("telephone_sdr", "telephone_mcd", "telephone_mgg", "telephone_mgg_grid")
    # telephone_sdr's Markdown heads its columns "chain order: α", so the report prints Table 3
    # as one block of rows per chain order (the paper's mappings, then every experiment)
    # S(g) with its fits is the headline figure; the body shows the others
    report_figures = tuple(Path(f).name for f in FIGURES if "similarity" not in Path(f).name)
    comparisons = _COMPARISONS
    weight_folders = WEIGHT_FOLDERS
    definitions = (
        ("S(g)", "mean similarity of generation g's output to the chain's input",
         "Telephone Game Eq. 1"),
        ("MCD", "mean of S(g) over the generations; MCD_avg over the paper's four mappings",
         "Telephone Game Sec. 3.1, Eq. 2"),
        ("SDR", "alpha g^(-beta) + gamma fitted to S(g); beta is the decay rate",
         "Telephone Game Sec. 3.2, Table 3"),
        ("MGG", "accuracy on GenEval's prompts at every image generation (OWLv2 detections, the "
         "released rules), averaged over generations", "Telephone Game Sec. 3.3"))

    @staticmethod
    def view(plan) -> TelephonePlan:
        return plan.view("telephone", TelephonePlan)

    def active(self, plan) -> bool:
        return bool(self.view(plan).keys)

    def compared_names(self, plan) -> list[str]:
        """Its model pairs and the models of its ``chains`` sets: a ``compare:`` entry may pit
        two of them."""
        v = self.view(plan)
        return list(dict.fromkeys(m for d in v.datasets for m in v.models(d))) + list(v.pairs)

    def why_not(self, plan) -> str:
        return "no telephone.pairs or no chain-input set (captions, geneval, chains)"

    def summary(self, plan) -> str:
        t = self.view(plan)
        return (f"{len(t.keys)} (pair, set) chains of {t.section.get('generations')} "
                "generations")

    def api_uses(self, config: dict) -> list[tuple[str, dict, dict[str, str]]]:
        """The pairs that send prompts: ``api`` pairs (their endpoint resolved), ``diffusers``
        and ``transformers`` pairs (run in process: their models are located on this machine,
        :data:`roundtrip.api.settings.IN_PROCESS_MODELS`); each prompt a pair leaves out is
        ``api.prompts``' template, one string for every pair that sends it."""
        pairs = (config.get("telephone") or {}).get("pairs") or {}
        return [(f"telephone.pairs.{name}", spec, PAIR_PROMPTS[spec["type"]])
                for name, spec in pairs.items() if spec.get("type") in PAIR_PROMPTS]

    def findings_inputs(self, plan) -> list[str]:
        """The per-item similarity files (MCD's CIs and paired comparison)."""
        from roundtrip.evals.telephone import findings

        return findings.findings_inputs(plan)

    def findings(self, results) -> list[str]:
        """MCD_avg, SDR and MGG sentences (:func:`roundtrip.evals.telephone.findings.findings`)."""
        from roundtrip.evals.telephone import findings

        return findings.findings(results)

    def headline_figure(self, results, path: Path) -> str | None:
        """S(g) with the fitted SDR curves per chain order
        (:func:`roundtrip.evals.telephone.findings.headline_figure`)."""
        from roundtrip.evals.telephone import findings

        return findings.headline_figure(results, path)

    def published_cells(self, results):
        """The run's Table 3 rows (the paper's mappings' α, β, γ per chain order) for the
        pairs chained on a set marked as the paper's data (``paper_data: true``: ND400,
        GenEval-Rewritten)."""
        from roundtrip.evals.telephone.findings import table3_cells

        return table3_cells(results)

    def checkpoints(self, plan) -> list[str]:
        t = self.view(plan)
        return [f for d in t.datasets for m in t.models(d) for f in t.inputs(m, d)["weights"]]

    def tables(self, plan) -> list[str]:
        return list(TABLES)

    def figures(self, plan) -> list[str]:
        return list(FIGURES)

    def check(self, plan) -> None:
        """Pairs build (a render_ocr tokenizer is a model of the config), its datasets are chain
        inputs, a chains folder has the layout, caption and prompt files exist."""
        from roundtrip.datasets import CHAIN_INPUTS, role_of
        from roundtrip.datasets.telephone import chain_items
        from roundtrip.evals.telephone.unified import build_pair
        from roundtrip.core.manifest import ORIGINAL

        config = plan.config
        tele = config.get("telephone") or {}
        models, datasets = config.get("models", {}), config.get("datasets", {})
        for name, spec in (tele.get("pairs") or {}).items():
            tok = spec.get("tokenizer")
            if tok is not None and tok not in models:
                raise ConfigError(f"telephone.pairs.{name}.tokenizer: {tok!r} is not an entry "
                                  "of models")
            if name == ORIGINAL:
                raise ConfigError(f"telephone.pairs.{name}: the name '{ORIGINAL}' is reserved")
            try:
                build_pair(name, {k: v for k, v in spec.items() if k != "tokenizer"}).check()
            except (ValueError, WeightsMissing) as exc:  # messages start with the key
                raise ConfigError(str(exc)) from exc
        for d in tele.get("datasets") or []:
            if d not in datasets:
                raise ConfigError(f"telephone.datasets: unknown dataset {d!r}")
            if role_of(datasets[d]) != CHAIN_INPUTS:
                raise ConfigError(f"telephone.datasets: {d} is a {datasets[d]['type']} set, not "
                                  "a chain input (captions, geneval, chains)")
        for name, spec in datasets.items():
            if spec["type"] == "chains":
                if not spec.get("path"):
                    raise ConfigError(f"datasets.{name}.path: a chains set needs the chain folder")
                try:
                    chain_items(Path(spec["path"]))
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"datasets.{name}.path: {exc}") from exc
            elif spec["type"] in ("captions", "geneval"):
                key = "captions" if spec["type"] == "captions" else "prompts"
                source = spec.get(key, "builtin")
                if source != "builtin" and not Path(source).expanduser().is_file():
                    raise ConfigError(f"datasets.{name}.{key}: {source} does not exist")


EVALUATION = Telephone()
