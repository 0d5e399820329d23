"""CHD and CMMS's declaration to the workflow (:class:`roundtrip.core.evaluation.Evaluation`)."""
from __future__ import annotations

from pathlib import Path

from roundtrip.core.config import ConfigError
from roundtrip.core.comparison import ComparedMetric
from roundtrip.core.evaluation import Evaluation
from roundtrip.evals.chd.plan import CMMS_TRAINING, TokenPlan, cmms_only_datasets


#: What a comparison of two checkpoints reads (docs/comparing.md): per-item CMMS and the set's
#: CHD recomputed from the items' token grids (Sec. 4.1-4.2).
_TOKENS = "metrics/{name}/{dataset}/tokens.csv"
_COMPARISONS = (
    ComparedMetric("cmms", _TOKENS, column="cmms", tables=("token_metrics",), headline=True,
                   definition="CMMS per item (Sec. 4.2): the run's regressor on the tokens of "
                              "{metrics.tokens.reference} at {metrics.tokens.size} px, v1"),
    ComparedMetric("chd", _TOKENS, kind="set", column="cmms", tables=("token_metrics",),
                   headline=True, set_value="roundtrip.evals.chd.compare:chd_from_tokens",
                   definition="CHD of the set (Eq. 14): tokens of {metrics.tokens.reference} "
                              "at {metrics.tokens.size} px, layout {metrics.tokens.layout}, v1"),
)

class CHD(Evaluation):
    key = "chd"
    name = "CHD / CMMS"
    title = "CHD and CMMS: token-space metrics"
    paper = "Evaluating Generative Models via One-Dimensional Code Distributions"
    order = 20
    rules = Path(__file__).resolve().parents[4] / "rules/evals/chd.smk"
    config_section = "metrics.tokens"
    recon_scorers = {"tokens": "roundtrip.evals.chd.scoring:TokenScorer"}
    # the sensitivity curves are the headline figure; their per-level listing is in the appendix
    report_tables = ("token_metrics", "token_sensitivity_spearman")
    report_figures = ()
    comparisons = _COMPARISONS
    definitions = (
        ("CHD", "the mean of CHD-1D, the Hellinger distance between the unigram token "
         "histograms of the originals and the reconstructions in a reference tokenizer's tokens "
         "(Eqs. 8-9), and CHD-2D, that of their symmetrized right/down co-occurrence histograms "
         "(Eqs. 10-13)", "CHD paper Sec. 4.1, Eq. 14"),
        ("CMMS", "a Transformer regressor's no-reference quality score of a token sequence, "
         "trained to predict exp(-20 p) (Eq. 16) for sequences degraded with severity p by "
         "uniform token injection (Eq. 15), semantic fragment swapping between or within "
         "images, and pixel-space distortions before tokenization", "CHD paper Sec. 4.2"),
        ("Sensitivity", "CHD and CMMS under ten levels of noise, blur and block shuffling; "
         "Spearman correlation with the level", "CHD paper Fig. 2"))

    @staticmethod
    def view(plan) -> TokenPlan:
        return plan.view("chd", TokenPlan)

    def active(self, plan) -> bool:
        return bool(self.view(plan).reference)

    def why_not(self, plan) -> str:
        return "metrics.tokens.reference is null"

    def summary(self, plan) -> str:
        t = self.view(plan)
        return f"tokens of {t.reference} on {', '.join(t.datasets)}"

    def dataset_roles(self, config: dict) -> dict[str, str]:
        return {d: CMMS_TRAINING for d in cmms_only_datasets(config)}

    def trained_first(self, plan) -> list[str]:
        t = self.view(plan)
        return [t.reference] if t.reference and plan.is_trained(t.reference) else []

    def checkpoints(self, plan) -> list[str]:
        t = self.view(plan)
        return [*plan.weights_of(t.reference), t.cmms_file] if t.reference else []

    def tables(self, plan) -> list[str]:
        names = ["token_metrics"]
        if self.view(plan).sensitivity_dataset:
            names += ["token_sensitivity", "token_sensitivity_spearman"]
        return names

    def figures(self, plan) -> list[str]:
        return ["results/figures/token_sensitivity.png"] \
            if self.view(plan).sensitivity_dataset else []

    def findings_inputs(self, plan) -> list[str]:
        # the per-item CMMS of the first scored set: the paired best vs runner-up
        from roundtrip.evals.chd.findings import ITEM_PATTERN

        return plan.model_dataset_files(ITEM_PATTERN, self.view(plan).datasets[:1])

    def findings(self, results) -> list[str]:
        from roundtrip.evals.chd.findings import findings

        return findings(results)

    def headline_figure(self, results, path: Path) -> str | None:
        from roundtrip.evals.chd.findings import headline_figure

        return headline_figure(results, path)

    def scorers_for(self, plan, dataset: str) -> dict[str, dict]:
        t = self.view(plan)
        if dataset not in t.datasets:
            return {}
        return {"tokens": {"reference": t.reference, "spec": plan.spec_of(t.reference),
                           "size": t.tokens["size"], "cmms": t.cmms_file,
                           "layout": t.tokens.get("layout")}}

    def recon_inputs(self, plan, scorer: str, datasets: list[str]) -> dict:
        t = self.view(plan)
        return {"tokenizer": plan.weights_of(t.reference), "cmms": t.cmms_file}

    def recon_outputs(self, plan, scorer: str, datasets: list[str]) -> dict[str, str]:
        metrics = "results/metrics/{model}/{dataset}"
        return {"tokens": f"{metrics}/tokens.csv", "token_set": f"{metrics}/token_set.csv"}

    def check(self, plan) -> None:
        """The reference tokenizer is discrete; token, CMMS and sensitivity sets exist and are
        2D; CMMS trains on images it does not score (CHD paper Sec. 4.2) unless allowed."""
        from roundtrip.datasets import is_volume_spec
        from roundtrip.evals.chd.training import overlap_message, training_overlap
        from roundtrip.evals.chd.plan import training_datasets
        from roundtrip.models import DISCRETE_FAMILIES

        config = plan.config
        tokens = config.get("metrics", {}).get("tokens", {})
        reference = tokens.get("reference")
        datasets = config.get("datasets", {})
        if reference is not None:
            spec = config.get("models", {}).get(reference)
            if spec is None:
                raise ConfigError(f"metrics.tokens.reference: {reference!r} is not in models")
            family = model_family(reference, spec)
            if family not in DISCRETE_FAMILIES:
                raise ConfigError(f"metrics.tokens.reference: {reference!r} is a {family} model; "
                                  f"CHD and CMMS need discrete tokens ({', '.join(DISCRETE_FAMILIES)})")
        unknown = [d for d in tokens.get("datasets") or [] if d not in datasets]
        if unknown:
            raise ConfigError(f"metrics.tokens.datasets: unknown datasets {unknown}")
        volumes = [d for d in tokens.get("datasets") or [] if is_volume_spec(datasets[d])]
        if volumes:
            raise ConfigError(f"metrics.tokens.datasets: {volumes} are volume datasets; CHD and "
                              "CMMS are computed on the token grids of 2D images")
        unknown = [d for d in tokens.get("cmms", {}).get("datasets", []) if d not in datasets]
        if unknown:
            raise ConfigError(f"metrics.tokens.cmms.datasets: unknown datasets {unknown}")
        sens = tokens.get("sensitivity", {}).get("dataset")
        if sens is not None:
            if sens not in datasets:
                raise ConfigError(f"metrics.tokens.sensitivity.dataset: unknown dataset {sens!r}")
            if reference is None:
                raise ConfigError("metrics.tokens.sensitivity.dataset: needs "
                                  "metrics.tokens.reference (the tokenizer whose tokens are "
                                  "compared)")
        if reference is not None and not tokens.get("cmms", {}).get("allow_overlap"):
            t = self.view(plan)
            scored = list(dict.fromkeys(t.datasets + [d for d in [t.sensitivity_dataset] if d]))
            overlaps = training_overlap(training_datasets(config), scored, datasets)
            if overlaps:
                raise ConfigError(overlap_message(overlaps))


#: Families of the model types whose family is known without loading weights.
_TYPE_FAMILIES = {"diffusers_kl": "continuous", "monai_kl": "continuous", "diffusers_vq": "VQ",
                  "monai_vqvae": "VQ", "identity": "codec", "jpeg": "codec", "webp": "codec",
                  "resample": "codec"}


def model_family(name: str, spec: dict) -> str:
    """A model's family without loading weights (trained models have none yet)."""
    from roundtrip.models import TRAINED_TYPES, build_model

    if spec["type"] in TRAINED_TYPES:
        return spec["family"]
    if spec["type"] in _TYPE_FAMILIES:
        return _TYPE_FAMILIES[spec["type"]]
    return build_model(name, spec).info().family


EVALUATION = CHD()
