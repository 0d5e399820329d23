"""The plan of a run: what a (schema-validated) config asks the workflow to compute.

:class:`Plan` answers every question the Snakemake rules ask of the config, so that the rules
hold no logic of their own and the answers are unit-tested (``tests/test_plan.py``):

- **dataset roles**: which sets feed VTBench's reconstruction table (Table 1), its
  text-preservation table (Table 3), the token metrics, MediBench 2D and 3D, VISTA-Bench;
- **pairs**: the (model, dataset) pairs that run (``datasets.<name>.models``) and, for the
  others, the reason their table cells read n/a;
- **model specs**: the checkpoint a trained model gets, the training settings with their
  defaults, the CMMS training sets;
- **resources**: threads a job can use, whether it runs a network on a GPU;
- **targets**: the final files of ``rule all``.

The Snakefile builds one Plan per run (``rules/common.smk``).
"""
from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from roundtrip.core import weights
from roundtrip.core.imaging import DEFAULT_MAX_PIXELS
from roundtrip.datasets import (
    CHAIN_INPUTS,
    IMAGES,
    MEDICAL_2D,
    QUESTION_TYPES,
    SYNTHETIC_TYPES,
    TEXT,
    VOLUMES,
    expected_item_count,
    file_keys,
    role_of,
)
from roundtrip.datasets.volumes import DEFAULT_MAX_VOXELS
from roundtrip.models import CODEC_TYPES, ORIGINAL, TRAINED_TYPES
from roundtrip.stages.train import TRAIN_DEFAULTS

#: Table names of the MediBench branch (one rule writes them all but the latent shapes).
MEDIBENCH_TABLES = ["medibench_2d_fidelity", "medibench_2d_latent", "medibench_3d_fidelity",
                    "medibench_3d_structure", "medibench_3d_latent", "medibench_classifiers"]
#: Table names of VISTA-Bench (roundtrip.evals.vista.tables.TABLES; one rule writes them all).
VISTA_TABLES = ["vista_accuracy", "vista_font", "vista_rendering_errors", "vista_subfield",
                "vista_source", "vista_tokenizers"]
#: The PDF report (issue 25): every table and figure with its provenance.
REPORT = "results/report.pdf"
#: Table names of The Telephone Game (roundtrip.evals.telephone.tables.TABLES).
TELEPHONE_TABLES = ["telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_sdr_fits",
                    "telephone_mgg", "telephone_mgg_grid"]
#: Its figures (roundtrip.evals.telephone.figures).
TELEPHONE_FIGURES = [f"results/figures/telephone_{n}.png"
                     for n in ("similarity", "sdr", "mgg", "mgg_mcd", "strip")]
#: Reader types that answer from an OCR engine's reading of the question image.
OCR_READER_TYPES = ("ocr_llm", "ocr_solver")
#: Config keys of the metrics that need pretrained weights -> the table file they fill.
WEIGHTED_METRIC_FILES = {"metrics.lpips": "lpips", "metrics.fid": "distribution"}


#: The defaults of config ``limits`` (config.schema.yaml), as the readers apply them.
LIMIT_DEFAULTS = {"max_pixels": DEFAULT_MAX_PIXELS, "max_voxels": DEFAULT_MAX_VOXELS}


def table_files(name: str) -> list[str]:
    """``results/tables/{name}.csv``, ``.md`` and ``.tex``."""
    return [f"results/tables/{name}.{ext}" for ext in ("csv", "md", "tex")]


def regex_of(names: list[str]) -> str:
    """A wildcard constraint matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def training_datasets(config: dict) -> list[str]:
    """The datasets CMMS trains on: ``metrics.tokens.cmms.datasets``, else the reference
    tokenizer's ``train.datasets``, else the first configured dataset.

    Raises:
        KeyError: ``metrics.tokens.reference`` or the model it names is missing.
    """
    tokens = config["metrics"]["tokens"]
    if "datasets" in tokens.get("cmms", {}):
        return list(tokens["cmms"]["datasets"])
    spec = config["models"][tokens["reference"]]
    return list(spec.get("train", {}).get("datasets", [next(iter(config["datasets"]))]))


#: Role of a set that only CMMS trains on (:func:`cmms_only_datasets`): built, not reconstructed.
CMMS_TRAINING = "cmms_training"


def cmms_only_datasets(config: dict) -> list[str]:
    """Sets named in ``metrics.tokens.cmms.datasets`` and scored nowhere (not in
    ``metrics.tokens.datasets``, not the sensitivity set): CMMS's
    held-out training images (CHD paper Sec. 4.2, 5.1), built but not reconstructed. Empty
    without a reference tokenizer or with ``allow_overlap: true``."""
    tokens = config["metrics"]["tokens"]
    cmms = tokens.get("cmms") or {}
    if not tokens.get("reference") or cmms.get("allow_overlap"):
        return []
    used = set(tokens.get("datasets") or []) | {(tokens.get("sensitivity") or {}).get("dataset")}
    return [d for d in cmms.get("datasets", []) if d not in used]


class Plan:
    """The work a config asks for (see the module docstring).

    Args:
        config: a config validated against ``config.schema.yaml`` (defaults filled in).
        cores: the cores of this run (``workflow.cores``), or None where it is not known
            (a cluster run plans without it).
        cluster: jobs run elsewhere (an executor plugin such as Slurm): the machine making the
            plan says nothing about the GPUs of the machines that run the jobs.
    """

    def __init__(self, config: dict, cores: int | None = None, cluster: bool = False):
        self.config = config
        self.cores = cores
        self.cluster = cluster
        self.models: list[str] = list(config["models"])
        self.datasets: list[str] = list(config["datasets"])
        self.roles = {d: role_of(config["datasets"][d]) for d in self.datasets}
        self.roles |= {d: CMMS_TRAINING for d in cmms_only_datasets(config)}
        self.metrics = config["metrics"]
        self.tokens = self.metrics["tokens"]
        self.token_reference: str | None = self.tokens["reference"]
        self.ocr_engines: list[str] = list(config["ocr"]["engines"])
        self.table_ocr = config["tables"].get(
            "ocr_engine", self.ocr_engines[0] if self.ocr_engines else None)

    # -- datasets by role ---------------------------------------------------------------------
    def _with_role(self, *roles: str) -> list[str]:
        return [d for d in self.datasets if self.roles[d] in roles]

    @cached_property
    def text_datasets(self) -> list[str]:
        """Sets with ``text_eval``: OCR, CER/WER, VTBench Table 3 and Table 5. VISTA question
        sets join them when a reader answers from OCR (the pair jobs read the reconstructed
        question images; the readers reuse that reading)."""
        ocr_sets = set(self.vista_datasets) if self.vista_ocr_engines else set()
        return [d for d in self.datasets
                if self.config["datasets"][d].get("text_eval") or d in ocr_sets]

    @cached_property
    def medical_datasets(self) -> list[str]:
        """The MediBench branch: medical 2D sets and volume sets."""
        return self._with_role(MEDICAL_2D, VOLUMES)

    @cached_property
    def volume_datasets(self) -> list[str]:
        return self._with_role(VOLUMES)

    @cached_property
    def medical_2d(self) -> list[str]:
        return self._with_role(MEDICAL_2D)

    @cached_property
    def general_datasets(self) -> list[str]:
        """Every set outside the medical branch (detail statistics cover them all)."""
        return self._with_role(IMAGES, TEXT)

    @cached_property
    def recon_datasets(self) -> list[str]:
        """Sets of the reconstruction table (VTBench Table 1): rendered and GPT poster sets are
        text sets (Table 3 only)."""
        return self._with_role(IMAGES)

    @cached_property
    def image_datasets(self) -> list[str]:
        """Sets reconstructed image by image (everything but volume sets)."""
        return self._with_role(IMAGES, TEXT, MEDICAL_2D)

    @cached_property
    def token_datasets(self) -> list[str]:
        """Sets scored in the reference tokenizer's tokens (CHD, CMMS); none without one."""
        if not self.token_reference:
            return []
        return list(self.tokens["datasets"] or self.recon_datasets)

    @cached_property
    def sensitivity_dataset(self) -> str | None:
        """The set of the CHD paper's sensitivity experiment (Figure 2), if any."""
        return self.tokens["sensitivity"]["dataset"] if self.token_reference else None

    def has_labels(self, dataset: str) -> bool:
        """Whether a medical dataset's items carry class labels (latent utility needs them)."""
        spec = self.config["datasets"][dataset]
        return (spec["type"] in ("skimage_medical", "medmnist", "synthetic_volumes")
                or bool(spec.get("labels_csv")) or bool(spec.get("label_column")))

    @cached_property
    def latent_datasets(self) -> list[str]:
        """Medical sets whose items carry labels: MediBench's latent utility."""
        return [d for d in self.medical_datasets if self.has_labels(d)]

    # -- The Telephone Game ----------------------------------------------------------------------
    @cached_property
    def telephone(self) -> dict:
        return self.config.get("telephone") or {}

    @cached_property
    def telephone_pairs(self) -> dict[str, dict]:
        """``telephone.pairs``: name -> unified model spec."""
        return dict(self.telephone.get("pairs") or {})

    @cached_property
    def telephone_datasets(self) -> list[str]:
        """Chain-input sets (captions, geneval, chains): ``telephone.datasets``, default all."""
        chosen = self.telephone.get("datasets")
        return [d for d in self._with_role(CHAIN_INPUTS) if not chosen or d in chosen]

    def telephone_models(self, dataset: str) -> list[str]:
        """Who makes the chains of a set: every pair, or, for a ``chains`` set, its own model
        name (``datasets.<d>.model``, default the set's name)."""
        spec = self.config["datasets"][dataset]
        if spec["type"] == "chains":
            return [spec.get("model") or dataset]
        return list(self.telephone_pairs)

    @cached_property
    def telephone_keys(self) -> list[tuple[str, str]]:
        """``(model, dataset)`` of every Telephone Game job."""
        return [(m, d) for d in self.telephone_datasets for m in self.telephone_models(d)]

    @staticmethod
    def telephone_files(model: str, dataset: str) -> dict[str, str]:
        base = f"results/telephone/{model}/{dataset}"
        return {"similarity": f"{base}/similarity.csv", "mgg": f"{base}/mgg.csv"}

    def telephone_chain_root(self, model: str, dataset: str) -> str:
        """Where the chains are: ``results/telephone/{model}/{dataset}/chains``, or a ``chains``
        set's own folder."""
        spec = self.config["datasets"][dataset]
        if spec["type"] == "chains":
            return str(spec["path"])
        return f"results/telephone/{model}/{dataset}/chains"

    def telephone_pair_spec(self, model: str, dataset: str) -> dict | None:
        """The pair's spec with a ``render_ocr`` tokenizer resolved into ``{name, spec}`` (its
        trained checkpoint included); None for a ``chains`` set (nothing is generated)."""
        if self.config["datasets"][dataset]["type"] == "chains":
            return None
        spec = dict(self.telephone_pairs[model])
        for key in ("t2i", "i2t"):  # diffusers pairs: registry names into the cache
            if key in spec:
                spec[key] = self._folder(spec[key])
        tok = spec.get("tokenizer")
        if tok:
            spec["tokenizer"] = {"name": tok, "spec": self.spec_of(tok)}
        return spec

    def _folder(self, value: str | None) -> str | None:
        """A model folder value with a registry name (``clip-vit-b32``...) resolved into the
        weights cache (``metrics.weights_cache``)."""
        if not value:
            return value
        return str(weights.resolve_folder(value, self.metrics.get("weights_cache")))

    @cached_property
    def telephone_backbones(self) -> dict[str, dict]:
        """``telephone.backbones`` with their folders resolved."""
        return {n: spec | ({"weights": self._folder(spec["weights"])} if "weights" in spec else {})
                for n, spec in (self.telephone.get("backbones") or {}).items()}

    @cached_property
    def telephone_mgg(self) -> dict:
        """``telephone.mgg`` with the detector and colour folders resolved."""
        out = {}
        for part, spec in (self.telephone.get("mgg") or {}).items():
            out[part] = spec | ({"weights": self._folder(spec["weights"])}
                                if spec and "weights" in spec else {})
        return out

    def telephone_inputs(self, model: str, dataset: str) -> dict[str, object]:
        """The set's manifest and a trained tokenizer's checkpoint."""
        spec = self.telephone_pair_spec(model, dataset) or {}
        tok = (spec.get("tokenizer") or {}).get("name")
        return {"manifest": f"results/datasets/{dataset}/manifest.csv",
                "weights": self.weights_of(tok) if tok else []}

    def telephone_gpu(self, model: str, dataset: str) -> int:
        """1 when the job runs a network on CUDA (diffusers pairs, learned tokenizers)."""
        spec = self.telephone_pair_spec(model, dataset) or {}
        if spec.get("type") == "diffusers":
            return self.gpu_for_device()
        tok = (spec.get("tokenizer") or {}).get("name")
        return self.gpu_for(tok) if tok else 0

    # -- VISTA-Bench ------------------------------------------------------------------------------
    @cached_property
    def vista(self) -> dict:
        return self.config.get("vista") or {}

    @cached_property
    def vista_readers(self) -> dict[str, dict]:
        """``vista.readers``: name -> reader spec (none: no VISTA evaluation)."""
        return dict(self.vista.get("readers") or {})

    @cached_property
    def vista_datasets(self) -> list[str]:
        """Question sets the readers answer: ``vista.datasets``, default every
        ``vista_questions`` and ``vista_release`` set; none without readers."""
        if not self.vista_readers:
            return []
        chosen = self.vista.get("datasets")
        return [d for d in self.datasets if (d in chosen if chosen else
                                             self.config["datasets"][d]["type"] in QUESTION_TYPES)]

    def engines_for(self, dataset: str) -> list[str]:
        """OCR engines that read ``dataset``: those whose ``ocr.engines.<name>.datasets`` names
        it, or that have no ``datasets`` key (they read every text set)."""
        engines = self.config["ocr"]["engines"]
        return [e for e in self.ocr_engines
                if dataset in (engines[e].get("datasets") or [dataset])]

    def reader_ocr(self, reader: str) -> str | None:
        """The OCR engine a reader answers from (OCR reader types), else None."""
        spec = self.vista_readers[reader]
        return spec.get("ocr", "tesseract") if spec["type"] in OCR_READER_TYPES else None

    @cached_property
    def vista_ocr_engines(self) -> list[str]:
        return sorted({e for r in self.vista_readers if (e := self.reader_ocr(r))})

    def vista_models(self, dataset: str) -> list[str]:
        """``original`` and the models whose reconstructions of the question images are read:
        the models run on the set, limited to ``vista.models`` when given."""
        allowed = self.vista.get("models")
        return [ORIGINAL] + [m for m in self.models_on(dataset)
                             if allowed is None or m in allowed]

    @cached_property
    def vista_keys(self) -> list[tuple[str, str, str]]:
        """``(reader, model, dataset)`` of every answer file."""
        return [(r, m, d) for d in self.vista_datasets for r in self.vista_readers
                for m in self.vista_models(d)]

    @staticmethod
    def vista_answer_file(reader: str, model: str, dataset: str) -> str:
        return f"results/vista/{reader}/{model}/{dataset}/answers.csv"

    def vista_inputs(self, reader: str, model: str, dataset: str) -> dict[str, str]:
        """The manifest, the reconstruction status (a model's answers) and the OCR of the
        question images (OCR readers) that an answer job reads."""
        out = {"manifest": f"results/datasets/{dataset}/manifest.csv"}
        if model != ORIGINAL:
            out["status"] = f"results/recon/{model}/{dataset}/status.csv"
        engine = self.reader_ocr(reader)
        if engine:
            out["ocr"] = f"results/ocr/{engine}/{model}/{dataset}.csv"
        return out

    def vista_sweeps(self) -> dict[str, dict | None]:
        """Per question set, the paper's two sweeps when it was rendered on that grid
        (``size_style``: the style sizes are compared in; ``style_size``: the size styles are
        compared at), else None (every render of a size or style counts)."""
        out = {}
        for d in self.vista_datasets:
            spec = self.config["datasets"][d]
            paper = spec["type"] == "vista_questions" and spec.get("grid", "paper") == "paper"
            out[d] = ({"size_style": spec.get("size_sweep_style", "arial"),
                       "style_size": spec.get("style_sweep_pt", 16)} if paper else None)
        return out

    # -- pairs -----------------------------------------------------------------------------------
    def models_on(self, dataset: str) -> list[str]:
        """Models run on ``dataset`` (``datasets.<name>.models``, default all)."""
        return self.config["datasets"][dataset].get("models") or self.models

    def pairs(self, datasets: list[str], models: list[str] | None = None
              ) -> list[tuple[str, str]]:
        """``(model, dataset)`` pairs that run, dataset-major, models in config order."""
        models = self.models if models is None else models
        return [(m, d) for d in datasets for m in models if m in self.models_on(d)]

    def pair_files(self, pattern: str, datasets: list[str], models: list[str] | None = None
                   ) -> list[str]:
        """``pattern.format(model=, dataset=)`` for every pair of :meth:`pairs`."""
        return [pattern.format(model=m, dataset=d) for m, d in self.pairs(datasets, models)]

    def not_run(self, datasets: list[str]) -> dict[tuple[str, str], str]:
        """``(model, dataset) -> reason`` of the pairs excluded by ``datasets.<name>.models``."""
        return {(m, d): f"not run on this dataset (datasets.{d}.models)" for d in datasets
                for m in self.models if m not in self.models_on(d)}

    @cached_property
    def medical_models(self) -> list[str]:
        """Models run on at least one medical dataset (the MediBench table columns)."""
        return [m for m in self.models
                if any(m in self.models_on(d) for d in self.medical_datasets)]

    # -- models ----------------------------------------------------------------------------------
    def is_trained(self, model: str) -> bool:
        return self.config["models"][model]["type"] in TRAINED_TYPES

    @cached_property
    def trained_models(self) -> list[str]:
        return [m for m in self.models if self.is_trained(m)]

    def spec_of(self, model: str) -> dict:
        """The model's config entry; trained models get the checkpoint the workflow produces."""
        spec = dict(self.config["models"][model])
        if self.is_trained(model):
            spec["checkpoint"] = f"results/weights/{model}/model.pt"
        return spec

    def weights_of(self, model: str) -> list[str]:
        """The checkpoint the workflow trains for ``model`` (type: small), else nothing."""
        return [f"results/weights/{model}/model.pt"] if self.is_trained(model) else []

    def train_settings(self, model: str) -> dict:
        """``models.<m>.train`` with the defaults of :data:`roundtrip.stages.train.TRAIN_DEFAULTS`
        and ``datasets`` (default: the first dataset)."""
        settings = TRAIN_DEFAULTS | dict(self.config["models"][model].get("train", {}))
        settings.setdefault("datasets", [self.datasets[0]])
        return settings

    def cmms_settings(self) -> dict:
        """``metrics.tokens.cmms`` with the datasets CMMS trains on."""
        return {**self.tokens["cmms"], "datasets": training_datasets(self.config)}

    # -- datasets --------------------------------------------------------------------------------
    def dataset_spec(self, dataset: str) -> dict:
        """The keys of ``datasets.<name>`` that change its built files (a change of
        ``protocol`` or ``models`` must not rebuild it); rendered sets also depend on the
        ``render`` and ``audit`` sections and the OCR normalization."""
        spec = self.config["datasets"][dataset]
        out = {k: spec[k] for k in file_keys(spec) if k in spec}
        # limits other than the defaults are part of what a dataset is built from (a default
        # one changes nothing, so results built before the key existed stay valid)
        limits = {k: v for k, v in self.config.get("limits", {}).items()
                  if v is not None and v != LIMIT_DEFAULTS.get(k)}
        if limits:
            out["limits"] = limits
        if spec["type"] in SYNTHETIC_TYPES:
            out |= {"render": self.config["render"], "audit": self.config["audit"],
                    "normalization": self.config["ocr"]["normalization"]}
        return out

    def dataset_fingerprint(self, dataset: str) -> str:
        """Changes when the files of a folder, medical or VISTA release dataset change, so it is
        rebuilt."""
        from roundtrip.datasets.folder import folder_fingerprint

        spec = self.config["datasets"][dataset]
        if spec["type"] == "folder":
            return folder_fingerprint(spec["path"]) + path_fingerprint(spec.get("labels_csv"))
        if spec["type"] == "vista_release":  # the TSV and the images/, questions/ beside it
            return path_fingerprint(Path(spec["path"]).parent)
        return path_fingerprint(spec.get("path")) if dataset in self.medical_datasets else ""

    def shards(self, dataset: str) -> int:
        """Reconstruction jobs a dataset is cut into (``datasets.<name>.shards``)."""
        return int(self.config["datasets"][dataset].get("shards", 1))

    def shard_files(self, model: str, dataset: str) -> list[str]:
        """The shard status files the reconstruction of a pair merges: none when the dataset
        is one shard (the pair's job reconstructs it), else one per shard."""
        n = self.shards(dataset)
        if n == 1:
            return []
        return [f"results/recon/{model}/{dataset}/shards/{k}-of-{n}.csv" for k in range(n)]

    # -- the job of a (model, dataset) pair (roundtrip.workflow.pair) ----------------------------
    def pair_scorers(self, dataset: str) -> dict[str, dict]:
        """The per-pair scorers that run in the reconstruction job of an image dataset, with
        their options: what the evaluations covering the set need from its reconstructions.

        - ``image_quality`` (VTBench Tables 1 and 3, MediBench 2D): image, text and medical 2D
          sets;
        - ``perceptual`` (LPIPS, FID/KID): image and text sets, when a weight file is in the
          cache;
        - ``tokens`` (CHD, CMMS): ``metrics.tokens.datasets``;
        - ``text`` (OCR, CER/WER; VTBench Table 3): sets with ``text_eval``;
        - ``latent_utility`` (MediBench): labeled medical 2D sets.
        """
        role, out = self.roles[dataset], {}
        if role in (IMAGES, TEXT, MEDICAL_2D):
            out["image_quality"] = {}
        if role in (IMAGES, TEXT) and self.perceptual_run:
            out["perceptual"] = {"lpips": self.metrics["lpips"], "fid": self.metrics["fid"],
                                 "cache": self.metrics["weights_cache"]}
        if dataset in self.token_datasets:
            out["tokens"] = {"reference": self.token_reference,
                             "spec": self.spec_of(self.token_reference),
                             "size": self.tokens["size"], "cmms": self.cmms_file,
                             "layout": self.tokens.get("layout")}
        if dataset in self.text_datasets:
            engines = self.engines_for(dataset)
            out["text"] = {"engines": {e: self.config["ocr"]["engines"][e] for e in engines},
                           "ocr_original": {e: f"results/ocr/{e}/original/{dataset}.csv"
                                            for e in engines},
                           "lang": self.config["datasets"][dataset]["lang"],
                           "normalization": self.config["ocr"]["normalization"]}
        if dataset in self.latent_datasets and role == MEDICAL_2D:
            out["latent_utility"] = {"kind": "image", "settings": self.latent_settings(dataset)}
        return out

    @property
    def cmms_file(self) -> str:
        """The CMMS regressor of the reference tokenizer (rule ``train_cmms``)."""
        return f"results/weights/cmms/{self.token_reference}/model.pt"

    def latent_settings(self, dataset: str) -> dict:
        """``medical.latent_utility`` with the dataset's ``patch``, 2D ``size`` and split keys
        (its ``latent_utility`` mapping) and the slicing ``axis``."""
        medical, spec = self.config["medical"], self.config["datasets"][dataset]
        size = {"size": spec["size"]} if spec.get("protocol") == "fixed" and spec.get("size") else {}
        return (medical["latent_utility"] | size | spec.get("latent_utility", {})
                | {"patch": spec.get("patch"), "axis": medical["axis"]})

    def pair_inputs(self, scorers: tuple[str, ...], engines: list[str] | None = None
                    ) -> dict[str, str | list[str]]:
        """Inputs the scorers add to a pair's job, beside the manifest and model weights;
        ``engines``: the OCR engines of its datasets (default all)."""
        out: dict[str, str | list[str]] = {}
        if "perceptual" in scorers:
            out["metric_weights"] = (self.metric_weights("metrics.lpips")
                                     + self.metric_weights("metrics.fid"))
        if "tokens" in scorers:
            out |= {"tokenizer": self.weights_of(self.token_reference), "cmms": self.cmms_file}
        if "text" in scorers:
            out |= {f"ocr_original_{e}": f"results/ocr/{e}/original/{{dataset}}.csv"
                    for e in (self.ocr_engines if engines is None else engines)}
        return out

    def pair_outputs(self, scorers: tuple[str, ...], engines: list[str] | None = None
                     ) -> dict[str, str]:
        """Files a pair's job writes (patterns in ``{model}``, ``{dataset}``): ``status`` and
        every frame of the scorers, by output name; ``engines`` as in :meth:`pair_inputs`."""
        metrics = "results/metrics/{model}/{dataset}"
        out = {"status": "results/recon/{model}/{dataset}/status.csv"}
        files = {"image_quality": ["image_quality", "set"], "perceptual": ["lpips", "distribution"],
                 "tokens": ["tokens", "token_set"], "latent_utility": ["latent_utility"]}
        for name in scorers:
            out |= {key: f"{metrics}/{key}.csv" for key in files.get(name, [])}
            if name == "text":
                for e in (self.ocr_engines if engines is None else engines):
                    out[f"ocr_{e}"] = f"results/ocr/{e}/{{model}}/{{dataset}}.csv"
                    out[f"text_{e}"] = f"{metrics}/text_{e}.csv"
        return out

    def pair_variants(self) -> list[tuple[str, list[str], tuple[str, ...]]]:
        """``(rule name, datasets, scorers)``: one reconstruction rule per distinct set of
        scorers, since a rule's outputs are fixed. ``reconstruct`` scores image quality only;
        ``reconstruct_tokens``, ``reconstruct_text``... add the named scorers to it, and a
        ``_only`` suffix marks a variant without image quality. Text sets read by some of the
        OCR engines only (``ocr.engines.<name>.datasets``) get a rule of their own, named with
        those engines (``reconstruct_text_tesseract``); :meth:`engines_for` its first dataset
        gives them."""
        groups: dict[tuple, list[str]] = {}
        for d in self.image_datasets:
            scorers = tuple(self.pair_scorers(d))
            engines = tuple(self.engines_for(d)) if "text" in scorers else ()
            groups.setdefault((scorers, engines), []).append(d)
        variants = []
        for (scorers, engines), datasets in groups.items():
            extra = [s for s in scorers if s != "image_quality"]
            if engines and list(engines) != self.ocr_engines:
                extra += list(engines)
            name = "_".join(["reconstruct", *extra]) + ("" if "image_quality" in scorers
                                                       else "_only")
            variants.append((name, datasets, scorers))
        return variants

    # -- resources -------------------------------------------------------------------------------
    def item_threads(self, dataset: str, cap: int) -> int:
        """Threads of a job that spreads a dataset's items over up to ``cap`` workers (Tesseract
        processes): no more than the set has items, where the config says how many. A one-item
        set claiming two cores would hold the second one idle (docs/design.md, "Threads")."""
        n = expected_item_count(self.config["datasets"][dataset])
        return cap if n is None else max(1, min(cap, n))

    def build_threads(self, dataset: str) -> int:
        """Rendered text sets read every render back with ``audit.threads`` Tesseract
        processes; every other set is built by one process."""
        if self.config["datasets"][dataset]["type"] not in SYNTHETIC_TYPES:
            return 1
        return self.item_threads(dataset, self.config["audit"]["threads"])

    def half_cores(self) -> int:
        """Half the cores of a local run (at least 1); 1 where the cores are not known."""
        return max(1, (self.cores or 2) // 2)

    def gpu_for_device(self) -> int:
        """1 when networks run on CUDA: ``run.device`` names CUDA, or is ``auto`` in a local run
        on a machine where CUDA is available (the workstation profile limits concurrent GPU
        jobs). On a cluster the request follows the config alone: a CPU-only login node must
        not decide, so ``auto`` requests no GPU there (set ``run.device: cuda`` for GPUs)."""
        device = self.config["run"]["device"]
        if device == "cpu" or device == "mps":
            return 0
        if device.startswith("cuda"):
            return 1
        if self.cluster:
            return 0
        import torch  # "auto" in a local run: decided where the plan is made

        return int(torch.cuda.is_available())

    def gpu_for(self, model: str) -> int:
        """1 when a job of ``model`` runs a network on CUDA; codecs never do."""
        if model == ORIGINAL or self.config["models"][model]["type"] in CODEC_TYPES:
            return 0
        return self.gpu_for_device()

    # -- metrics with pretrained weights -----------------------------------------------------------
    def metric_weights(self, key: str) -> list[str]:
        """The weight file of metric config key ``key`` when it is in the cache, else nothing.

        As an input, a file fetched later changes the job's input set, so Snakemake reruns the
        job that wrote "n/a" cells (rerun trigger "input").
        """
        name = metric_weight_names(self.metrics).get(key)
        if name is None:
            return []
        path = weights.path_of(name, self.metrics["weights_cache"])
        return [str(path)] if path.is_file() else []

    @cached_property
    def lpips_run(self) -> bool:
        """LPIPS runs: enabled and its weights in the cache (else the tables print n/a and no
        job is spent writing empty files; fetching the weights adds the work)."""
        return self.metrics["lpips"]["enabled"] and bool(self.metric_weights("metrics.lpips"))

    @cached_property
    def fid_run(self) -> bool:
        return self.metrics["fid"]["enabled"] and bool(self.metric_weights("metrics.fid"))

    @cached_property
    def perceptual_run(self) -> bool:
        """The reconstruction jobs also score LPIPS and FID/KID."""
        return self.lpips_run or self.fid_run

    def unavailable_metrics(self) -> dict[str, str]:
        """Table file kinds whose metric cannot run here, with the footnote saying why."""
        return {WEIGHTED_METRIC_FILES[key]: weights.missing_note(name, self.metrics["weights_cache"])
                for key, name in metric_weight_names(self.metrics).items()
                if not self.metric_weights(key)}

    @cached_property
    def reconstruction_tables(self) -> dict[str, list[str]]:
        """VTBench Table 1, one table per setting with datasets: ``reconstruction_model_size``,
        ``reconstruction_1024``, ``reconstruction_native`` -> their datasets; Table 2
        (``reconstruction_detail``) holds the detail-preservation sets."""
        from roundtrip.evals.vtbench.tables import is_detail_set, reconstruction_tables

        specs = self.config["datasets"]
        return reconstruction_tables({d: specs[d]["protocol"] for d in self.recon_datasets},
                                     [d for d in self.recon_datasets if is_detail_set(specs[d])])

    # -- the report (issue 25) ---------------------------------------------------------------------
    @cached_property
    def gallery_datasets(self) -> list[str]:
        """Image and text sets shown in the reconstruction galleries (VTBench Figs. 4, 5)."""
        return [d for d in self.general_datasets if self.models_on(d)]

    def gallery_ocr(self, dataset: str) -> str | None:
        """The OCR engine whose lines the gallery prints under the crops of a text set."""
        if dataset not in self.text_datasets:
            return None
        engines = self.engines_for(dataset)
        return self.table_ocr if self.table_ocr in engines else (engines[0] if engines else None)

    def gallery_inputs(self) -> dict[str, list[str]]:
        """Manifests, the pair jobs' status files (the reconstructions are written with them)
        and the OCR files of the text sets."""
        out = {"manifests": [], "status": [], "ocr": []}
        for d in self.gallery_datasets:
            out["manifests"].append(f"results/datasets/{d}/manifest.csv")
            engine = self.gallery_ocr(d)
            if engine:
                out["ocr"].append(f"results/ocr/{engine}/original/{d}.csv")
            for m in self.models_on(d):
                out["status"].append(f"results/recon/{m}/{d}/status.csv")
                if engine:
                    out["ocr"].append(f"results/ocr/{engine}/{m}/{d}.csv")
        return out

    @cached_property
    def gallery_figures(self) -> list[str]:
        return [f"results/figures/gallery/{d}.png" for d in self.gallery_datasets]

    def evaluations_run(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """``(ran, not_ran)``: ``(evaluation, what / why)`` for the report's cover."""
        ran, not_ran = [], []
        ran.append(("VTBench", f"{len(self.recon_datasets)} image sets, "
                               f"{len(self.text_datasets)} text sets, {len(self.models)} models"))
        checks = [
            ("CHD / CMMS", bool(self.token_reference),
             f"tokens of {self.token_reference} on {', '.join(self.token_datasets)}",
             "metrics.tokens.reference is null"),
            ("MediBench", bool(self.medical_datasets),
             f"{len(self.medical_datasets)} medical sets", "no medical dataset configured"),
            ("VISTA-Bench", bool(self.vista_keys),
             f"{len(self.vista_readers)} readers on {', '.join(self.vista_datasets)}",
             "no vista.readers or no question set"),
            ("The Telephone Game", bool(self.telephone_keys),
             f"{len(self.telephone_keys)} (pair, set) chains of "
             f"{self.telephone.get('generations')} generations",
             "no telephone.pairs or no chain-input set (captions, geneval, chains)"),
        ]
        for name, ok, what, why in checks:
            (ran if ok else not_ran).append((name, what if ok else why))
        not_ran += [(f"metric file {kind}", note) for kind, note in
                    self.unavailable_metrics().items()]
        return ran, not_ran

    # -- targets ---------------------------------------------------------------------------------
    @cached_property
    def tables(self) -> list[str]:
        """Names of the tables this config produces."""
        names = [*self.reconstruction_tables, "detail_statistics", "model_card"]
        if self.reconstruction_tables:  # VTBench Table 1's combined layout, same job
            names.insert(0, "vtbench_table1")
        if self.text_datasets:
            names += ["text_preservation", "ocr_robustness", "ocr_rank_agreement"]
        if self.token_reference:
            names.append("token_metrics")
        if self.sensitivity_dataset:
            names += ["token_sensitivity", "token_sensitivity_spearman"]
        if self.medical_datasets:
            names += MEDIBENCH_TABLES + ["medibench_latent_shapes"]
        if self.vista_keys:
            names += VISTA_TABLES
        if self.telephone_keys:
            names += TELEPHONE_TABLES
        return names

    @cached_property
    def figures(self) -> list[str]:
        out = [f"results/figures/medical/{d}.png" for d in self.medical_datasets]
        if self.sensitivity_dataset:
            out.append("results/figures/token_sensitivity.png")
        if self.vista_keys:
            out.append("results/figures/vista_gap.png")
        if self.telephone_keys:
            out += TELEPHONE_FIGURES
        return out + self.gallery_figures

    def targets(self) -> list[str]:
        """The final files of a run (``rule all``): every table (CSV, Markdown, LaTeX), figure and
        the PDF report."""
        return [f for name in self.tables for f in table_files(name)] + self.figures + [REPORT]


def metric_weight_names(metrics: dict) -> dict[str, str]:
    """``config key -> weights registry name`` of every enabled metric that needs weights."""
    files = {}
    if metrics.get("lpips", {}).get("enabled", True):
        files["metrics.lpips"] = weights.LPIPS_NETS[metrics.get("lpips", {}).get("net", "alex")]
    if metrics.get("fid", {}).get("enabled", True):
        files["metrics.fid"] = "inception-fid"
    return files


def path_fingerprint(path: str | Path | None) -> str:
    """Digest of the names, sizes and mtimes of a file or of the files under a folder (stat
    only); a Snakemake param, so that changed data rebuilds the dataset. ``""`` for no path,
    ``missing`` for a path that does not exist."""
    import hashlib

    if not path:
        return ""
    path = Path(path)
    if not path.exists():
        return "missing"
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
