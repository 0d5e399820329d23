"""What a config asks of the Telephone Game: pairs, chain-input sets, chain jobs and files.

One :class:`TelephonePlan` per run (:meth:`roundtrip.workflow.plan.Plan.view`), read by the rules
(``rules/evals/telephone.smk``) and the spec (:mod:`.spec`); unit-tested in ``tests/test_plan.py``.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.core import weights
from roundtrip.datasets import CHAIN_INPUTS
from roundtrip.evals.telephone.unified import IN_PROCESS_TYPES


class TelephonePlan:
    """The Telephone Game part of a run.

    Args:
        plan: the run's :class:`roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan
        self.section: dict = plan.config.get("telephone") or {}

    @cached_property
    def pairs(self) -> dict[str, dict]:
        """``telephone.pairs``: name -> unified model spec."""
        return dict(self.section.get("pairs") or {})

    @cached_property
    def datasets(self) -> list[str]:
        """Chain-input sets (captions, geneval, chains): ``telephone.datasets``, default all."""
        chosen = self.section.get("datasets")
        return [d for d in self.plan.datasets
                if self.plan.roles[d] == CHAIN_INPUTS and (not chosen or d in chosen)]

    def models(self, dataset: str) -> list[str]:
        """Who makes the chains of a set: every pair, or, for a ``chains`` set, its own model
        name (``datasets.<d>.model``, default the set's name)."""
        spec = self.plan.config["datasets"][dataset]
        if spec["type"] == "chains":
            return [spec.get("model") or dataset]
        return list(self.pairs)

    @cached_property
    def keys(self) -> list[tuple[str, str]]:
        """``(model, dataset)`` of every Telephone Game job."""
        return [(m, d) for d in self.datasets for m in self.models(d)]

    @staticmethod
    def files(model: str, dataset: str) -> dict[str, str]:
        base = f"results/telephone/{model}/{dataset}"
        return {"similarity": f"{base}/similarity.csv", "mgg": f"{base}/mgg.csv"}

    def chain_root(self, model: str, dataset: str) -> str:
        """Where the chains are: ``results/telephone/{model}/{dataset}/chains``, or a ``chains``
        set's own folder."""
        spec = self.plan.config["datasets"][dataset]
        if spec["type"] == "chains":
            return str(spec["path"])
        return f"results/telephone/{model}/{dataset}/chains"

    def pair_spec(self, model: str, dataset: str) -> dict | None:
        """The pair's spec with a ``render_ocr`` tokenizer resolved into ``{name, spec}`` (its
        trained checkpoint included); None for a ``chains`` set (nothing is generated)."""
        if self.plan.config["datasets"][dataset]["type"] == "chains":
            return None
        spec = dict(self.pairs[model])
        for key in ("t2i", "i2t", "model"):  # in-process pairs: registry names into the cache
            if key in spec:
                spec[key] = self._folder(spec[key])
        tok = spec.get("tokenizer")
        if tok:
            spec["tokenizer"] = {"name": tok, "spec": self.plan.spec_of(tok)}
        return spec

    def _folder(self, value: str | None) -> str | None:
        """A model folder value with a registry name (``clip-vit-b32``...) resolved into the
        weights cache (``metrics.weights_cache``)."""
        if not value:
            return value
        # the run's evaluations, so that a plugin's folders (evaluations.plugins) resolve too
        return str(weights.resolve_folder(value, self.plan.metrics.get("weights_cache"),
                                          weights.folders_of(self.plan.evaluations.values())))

    @cached_property
    def backbones(self) -> dict[str, dict]:
        """``telephone.backbones`` with their folders resolved."""
        return {n: spec | ({"weights": self._folder(spec["weights"])} if "weights" in spec else {})
                for n, spec in (self.section.get("backbones") or {}).items()}

    @cached_property
    def mgg(self) -> dict:
        """``telephone.mgg`` with the detector and colour folders resolved."""
        out = {}
        for part, spec in (self.section.get("mgg") or {}).items():
            out[part] = spec | ({"weights": self._folder(spec["weights"])}
                                if spec and "weights" in spec else {})
        return out

    def inputs(self, model: str, dataset: str) -> dict[str, object]:
        """The set's manifest and a trained tokenizer's checkpoint."""
        spec = self.pair_spec(model, dataset) or {}
        tok = (spec.get("tokenizer") or {}).get("name")
        return {"manifest": f"results/datasets/{dataset}/manifest.csv",
                "weights": self.plan.weights_of(tok) if tok else []}

    @cached_property
    def batched_datasets(self) -> list[str]:
        """Chain-input sets whose offline pairs run in one job per set
        (``telephone_chains_sets``): the built-in captions (``captions: builtin``, a few
        items), with ``run.batch_packaged_sets`` on. Such a chain job is mostly the start-up
        of Python, torch and the tokenizer."""
        if not self.plan.config["run"].get("batch_packaged_sets", True):
            return []
        specs = self.plan.config["datasets"]
        return [d for d in self.datasets
                if specs[d]["type"] == "captions"
                and specs[d].get("captions", "builtin") == "builtin"]

    @cached_property
    def batched_pairs(self) -> list[str]:
        """The pairs that run in the batched jobs: the offline ``render_ocr`` pairs (XeLaTeX,
        a tokenizer, Tesseract: seconds per chain). Networked pairs (API, diffusers) keep a
        job per (pair, set), like every pair on a user's captions."""
        return [m for m, spec in self.pairs.items() if spec.get("type") == "render_ocr"]

    def batched(self, model: str, dataset: str) -> bool:
        """Whether the chains of ``(model, dataset)`` run in the set's batched job."""
        return model in self.batched_pairs and dataset in self.batched_datasets

    def jobs(self, models: list[str], dataset: str) -> list[dict]:
        """What a chain job does per pair (``params.jobs``: one pair for rule
        ``telephone_chains``, a set's batched pairs for ``telephone_chains_sets``): ``pair``,
        ``spec`` (:meth:`pair_spec`), ``chain_root`` and the output files (:meth:`files`)."""
        return [{"pair": m, "spec": self.pair_spec(m, dataset),
                 "chain_root": self.chain_root(m, dataset), **self.files(m, dataset)}
                for m in models]

    def gpu(self, model: str, dataset: str) -> int:
        """1 when the job runs a network on CUDA: a pair whose models run in process
        (:data:`.unified.IN_PROCESS_TYPES`: diffusers, transformers) or a learned tokenizer,
        with the run's device a GPU (:meth:`roundtrip.workflow.plan.Plan.gpu_for_device`)."""
        spec = self.pair_spec(model, dataset) or {}
        if spec.get("type") in IN_PROCESS_TYPES:
            return self.plan.gpu_for_device()
        tok = (spec.get("tokenizer") or {}).get("name")
        return self.plan.gpu_for(tok) if tok else 0
