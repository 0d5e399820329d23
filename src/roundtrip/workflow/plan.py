"""The plan of a run: what a (schema-validated) config asks the workflow to compute.

:class:`Plan` answers what every evaluation shares, so that the Snakemake rules hold no logic
of their own and the answers are unit-tested (``tests/test_plan.py``):

- **datasets by role** (images, text, medical 2D, volumes, chain inputs; roundtrip.datasets);
- **model_datasets**: the (model, dataset) combinations that run (``datasets.<name>.models``)
  and, for the others, the reason their table cells read n/a; their jobs and reconstruction scorers in a view
  (:attr:`Plan.recon_jobs`);
- **model specs**: the checkpoint a trained model gets, its training settings, every
  checkpoint of the run;
- **builds**: what each dataset's build job builds and which sets share a job
  (:attr:`Plan.builds`);
- **resources**: threads a job can use, whether it runs a network on a GPU;
- **targets**: the final files of ``rule all``, gathered from the registered evaluations
  (:mod:`roundtrip.core.evaluation`), each of which plans its own part in a view of the plan
  (:meth:`Plan.view`), and the report's galleries (:attr:`Plan.galleries`);
- **weighted metrics**: LPIPS and FID/KID, where their weights are (:attr:`Plan.weighted`).

The Snakefile builds one Plan per run (``rules/common.smk``).
"""
from __future__ import annotations

import re
from functools import cached_property

from roundtrip.core.evaluation import Evaluation, load_evaluations
from roundtrip.datasets import IMAGES, MEDICAL_2D, TEXT, VOLUMES, expected_item_count, role_of
from roundtrip.models import CODEC_TYPES, ORIGINAL, TRAINED_TYPES
from roundtrip.readers.transformers_vlm import runs_in_process
from roundtrip.stages.train import TRAIN_DEFAULTS
from roundtrip.workflow.builds import DatasetBuilds
from roundtrip.workflow.galleries import Galleries
from roundtrip.workflow.metric_weights import WeightedMetrics
from roundtrip.workflow.recon_jobs import ReconJobs

#: The PDF report: every table and figure with its provenance.
REPORT = "results/report.pdf"
#: The comparison's tables and figures (config ``compare:``; rule ``compare``,
#: roundtrip.tables.compare): the tables' names and the figures.
COMPARE_TABLES = ("compare", "compare_items")
COMPARE_FIGURES = ("results/figures/compare/differences.png",
                   "results/figures/compare/changed.png",
                   "results/figures/compare/flipped.png")


#: Items from which a job of Tesseract work claims several threads (:meth:`Plan.item_threads`).
PARALLEL_ITEMS = 200


def table_files(name: str) -> list[str]:
    """``results/tables/{name}.csv``, ``.md`` and ``.tex``."""
    return [f"results/tables/{name}.{ext}" for ext in ("csv", "md", "tex")]


def regex_of(names: list[str]) -> str:
    """A wildcard constraint matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def registered(config: dict) -> dict[str, Evaluation]:
    """The evaluations registered for ``config``: entry points plus ``evaluations.plugins``
    (importable from ``evaluations.paths``), by key in their order."""
    section = config.get("evaluations") or {}
    return load_evaluations(section.get("plugins") or (), section.get("paths") or ())


class Plan:
    """The work a config asks for (see the module docstring).

    Args:
        config: a config validated against ``config.schema.yaml`` (defaults filled in).
        cores: the cores of this run (``workflow.cores``), or None where it is not known
            (a cluster run plans without it).
        cluster: jobs run elsewhere (an executor plugin such as Slurm): the machine making the
            plan says nothing about the GPUs of the machines that run the jobs.

    Raises:
        roundtrip.core.evaluation.RegistryError: an evaluation that does not load.
    """

    def __init__(self, config: dict, cores: int | None = None, cluster: bool = False):
        self.config = config
        self.cores = cores
        self.cluster = cluster
        self.models: list[str] = list(config["models"])
        self.datasets: list[str] = list(config["datasets"])
        self.evaluations: dict[str, Evaluation] = registered(config)
        self.roles = {d: role_of(config["datasets"][d]) for d in self.datasets}
        for ev in self.evaluations.values():
            self.roles |= ev.dataset_roles(config)
        self.metrics = config["metrics"]
        #: LPIPS and FID/KID: whether their weights are here (:mod:`.metric_weights`)
        self.weighted = WeightedMetrics(self.metrics)
        self.ocr_engines: list[str] = list(config["ocr"]["engines"])
        self.table_ocr = config["tables"].get(
            "ocr_engine", self.ocr_engines[0] if self.ocr_engines else None)
        self._views: dict[str, object] = {}

    def view(self, key: str, factory):
        """The evaluation ``key``'s own plan, ``factory(self)``, made once per Plan."""
        if key not in self._views:
            self._views[key] = factory(self)
        return self._views[key]

    @cached_property
    def recon_jobs(self) -> ReconJobs:
        """The (model, dataset) jobs and their reconstruction scorers (:mod:`.recon_jobs`)."""
        return ReconJobs(self)

    @cached_property
    def builds(self) -> DatasetBuilds:
        """The build jobs of the datasets (:mod:`.builds`)."""
        return DatasetBuilds(self)

    @cached_property
    def galleries(self) -> Galleries:
        """The report's reconstruction galleries (:mod:`.galleries`)."""
        return Galleries(self)

    @cached_property
    def active(self) -> list[Evaluation]:
        """The evaluations the config asks for, in order."""
        return [ev for ev in self.evaluations.values() if ev.active(self)]

    # -- datasets by role ---------------------------------------------------------------------
    def with_role(self, *roles: str) -> list[str]:
        """Datasets whose role is one of ``roles``, in config order."""
        return [d for d in self.datasets if self.roles[d] in roles]

    @cached_property
    def text_datasets(self) -> list[str]:
        """Sets whose reconstructions are read by OCR (CER/WER, VTBench Tables 3 and 5): those
        with ``text_eval`` and those an evaluation reads through OCR
        (:meth:`~roundtrip.core.evaluation.Evaluation.text_datasets`)."""
        extra = {d for ev in self.evaluations.values() for d in ev.text_datasets(self)}
        return [d for d in self.datasets
                if self.config["datasets"][d].get("text_eval") or d in extra]

    @cached_property
    def general_datasets(self) -> list[str]:
        """Image and text sets (detail statistics cover them all)."""
        return self.with_role(IMAGES, TEXT)

    @cached_property
    def recon_datasets(self) -> list[str]:
        """Sets of the reconstruction tables: rendered and poster sets are text sets."""
        return self.with_role(IMAGES)

    @cached_property
    def image_datasets(self) -> list[str]:
        """Sets reconstructed image by image (everything but volume sets)."""
        return self.with_role(IMAGES, TEXT, MEDICAL_2D)

    def engines_for(self, dataset: str) -> list[str]:
        """OCR engines that read ``dataset``: those whose ``ocr.engines.<name>.datasets`` names
        it, or that have no ``datasets`` key (they read every text set)."""
        engines = self.config["ocr"]["engines"]
        return [e for e in self.ocr_engines
                if dataset in (engines[e].get("datasets") or [dataset])]

    # -- (model, dataset) ------------------------------------------------------------------------
    def models_on(self, dataset: str) -> list[str]:
        """Models run on ``dataset`` (``datasets.<name>.models``, default all)."""
        return self.config["datasets"][dataset].get("models") or self.models

    def model_datasets(self, datasets: list[str], models: list[str] | None = None
                       ) -> list[tuple[str, str]]:
        """``(model, dataset)`` combinations that run, dataset-major, models in config order."""
        models = self.models if models is None else models
        return [(m, d) for d in datasets for m in models if m in self.models_on(d)]

    def model_dataset_files(self, pattern: str, datasets: list[str], models: list[str] | None = None
                   ) -> list[str]:
        """``pattern.format(model=, dataset=)`` for every combination of :meth:`model_datasets`."""
        return [pattern.format(model=m, dataset=d) for m, d in self.model_datasets(datasets, models)]

    def not_run(self, datasets: list[str]) -> dict[tuple[str, str], str]:
        """``(model, dataset) -> reason`` of the combinations excluded by
        ``datasets.<name>.models``."""
        return {(m, d): f"not run on this dataset (datasets.{d}.models)" for d in datasets
                for m in self.models if m not in self.models_on(d)}

    def status_files(self) -> dict[tuple[str, str], str]:
        """``(model, dataset) -> results/recon/{model}/{dataset}/status.csv`` of every
        reconstruction the run makes (image, text, medical and volume sets), for the summary
        of failed items at the end of a run and on the report's first page
        (:mod:`roundtrip.tables.failures`)."""
        sets = self.with_role(IMAGES, TEXT, MEDICAL_2D, VOLUMES)
        return {(m, d): f"results/recon/{m}/{d}/status.csv" for m, d in self.model_datasets(sets)}

    # -- models ----------------------------------------------------------------------------------
    def is_trained(self, model: str) -> bool:
        return self.config["models"][model]["type"] in TRAINED_TYPES

    @cached_property
    def trained_models(self) -> list[str]:
        return [m for m in self.models if self.is_trained(m)]

    @cached_property
    def trained_first(self) -> list[str]:
        """Trained models an active evaluation needs before its other jobs."""
        return list(dict.fromkeys(m for ev in self.active for m in ev.trained_first(self)))

    @cached_property
    def checkpoints(self) -> list[str]:
        """Every checkpoint the run trains, sorted: the trained models of the (model, dataset)
        jobs and what the active evaluations add (:meth:`Evaluation.checkpoints`)."""
        reconstructed = self.with_role(IMAGES, TEXT, MEDICAL_2D, VOLUMES)
        models = {m for m, _ in self.model_datasets(reconstructed)} | set(self.trained_first)
        files = {f for m in models for f in self.weights_of(m)}
        return sorted(files.union(*(ev.checkpoints(self) for ev in self.active)))

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

    # -- datasets --------------------------------------------------------------------------------
    def shards(self, dataset: str) -> int:
        """Reconstruction jobs a dataset is cut into (``datasets.<name>.shards``)."""
        return int(self.config["datasets"][dataset].get("shards", 1))

    def shard_files(self, model: str, dataset: str) -> list[str]:
        """The shard status files the reconstruction of a (model, dataset) merges: none when
        the dataset is one shard (the reconstruction job does it all), else one per shard."""
        n = self.shards(dataset)
        if n == 1:
            return []
        return [f"results/recon/{model}/{dataset}/shards/{k}-of-{n}.csv" for k in range(n)]

    # -- resources -------------------------------------------------------------------------------
    def item_threads(self, dataset: str, cap: int) -> int:
        """Threads of a job that spreads a dataset's items over up to ``cap`` workers (Tesseract
        processes): 1 for a set the config makes smaller than :data:`PARALLEL_ITEMS`, whose
        job takes seconds on one core but, claiming two, waits until no other job runs
        (docs/design.md, "Threads")."""
        n = expected_item_count(self.config["datasets"][dataset])
        return cap if n is None or n >= PARALLEL_ITEMS else 1

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

    def reader_gpu(self, *specs: dict | None) -> int:
        """The GPU request of a job that runs the readers ``specs`` (OCR engines, a render
        judge: their config entries): 1 where one runs in the job's process (``type:
        transformers``) with its own ``device`` naming CUDA, the run's request
        (:meth:`gpu_for_device`) where one's ``device`` is ``auto``, else 0 (``cpu``, ``mps``,
        or no reader in process)."""
        devices = {str(s.get("device") or "auto") for s in specs if runs_in_process(s)}
        if any(d.startswith("cuda") for d in devices):
            return 1
        return self.gpu_for_device() if "auto" in devices else 0

    def ocr_gpu(self, datasets: list[str]) -> int:
        """:meth:`reader_gpu` of the OCR engines that read ``datasets`` (text sets only)."""
        engines = self.config["ocr"]["engines"]
        return self.reader_gpu(*(engines[e] for d in datasets if d in self.text_datasets
                                 for e in self.engines_for(d)))

    def judge_gpu(self, datasets: list[str]) -> int:
        """:meth:`reader_gpu` of the render judges of ``datasets``' audits."""
        return self.reader_gpu(*((self.builds.spec(d).get("audit") or {}).get("judge")
                                 for d in datasets))

    def gpu_for(self, model: str) -> int:
        """1 when a job of ``model`` runs a network on CUDA; codecs never do."""
        if model == ORIGINAL or self.config["models"][model]["type"] in CODEC_TYPES:
            return 0
        return self.gpu_for_device()

    # -- the report ---------------------------------------------------------------------------------
    def evaluations_run(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """``(ran, not_ran)``: ``(evaluation name, what / why)`` for the report's cover, one
        per registered evaluation, then the metric files that cannot run here."""
        ran, not_ran = [], []
        for ev in self.evaluations.values():
            if ev in self.active:
                ran.append((ev.label, ev.summary(self)))
            else:
                not_ran.append((ev.label, ev.why_not(self)))
        not_ran += [(f"metric file {kind}", note) for kind, note in
                    self.weighted.unavailable().items()]
        return ran, not_ran

    def report_sections(self) -> list[dict]:
        """The report's sections (:class:`roundtrip.report.sections.Section` fields), one per
        registered evaluation, in order."""
        return [{"key": ev.key, "name": ev.label, "title": ev.title, "paper": ev.paper,
                 "tables": tuple(ev.report_tables), "figures": tuple(ev.report_figures),
                 "columns": {t: tuple(c) for t, c in ev.report_columns.items()},
                 "all_tables": tuple(ev.tables(self)) if ev in self.active else (),
                 "definitions": tuple(tuple(d) for d in ev.definitions)}
                for ev in self.evaluations.values()]

    @cached_property
    def headline_figures(self) -> dict[str, str]:
        """Evaluation key -> its headline figure (``results/figures/headline/{key}.png``, drawn
        by the report job), for the active evaluations that draw one."""
        return {ev.key: f"results/figures/headline/{ev.key}.png" for ev in self.active
                if ev.has_headline_figure()}

    @cached_property
    def findings_inputs(self) -> dict[str, list[str]]:
        """Evaluation key -> the per-item files its findings read, for every active evaluation
        (the report job's inputs, and its parameter saying whose they are)."""
        return {ev.key: ev.findings_inputs(self) for ev in self.active}

    # -- targets ---------------------------------------------------------------------------------
    @cached_property
    def tables(self) -> list[str]:
        """Names of the tables this config produces, evaluation by evaluation."""
        return [name for ev in self.active for name in ev.tables(self)]

    @cached_property
    def figures(self) -> list[str]:
        """The figures of the active evaluations, then the reconstruction galleries."""
        return [f for ev in self.active for f in ev.figures(self)] + self.galleries.figures

    @cached_property
    def compares(self) -> bool:
        """Whether the config's ``compare:`` names any comparison (rule ``compare`` runs)."""
        from roundtrip.tables.compare import compare_config

        return bool(compare_config(self.config)["pairs"])

    @property
    def compare_files(self) -> list[str]:
        """The comparison's tables (CSV, Markdown, LaTeX) and figures, or none without
        ``compare:`` entries."""
        if not self.compares:
            return []
        return [f for name in COMPARE_TABLES for f in table_files(name)] + list(COMPARE_FIGURES)

    def targets(self) -> list[str]:
        """The final files of a run (``rule all``): every table (CSV, Markdown, LaTeX), figure,
        the comparison's files (``compare:``) and the PDF report."""
        return ([f for name in self.tables for f in table_files(name)] + self.figures
                + self.compare_files + [REPORT])
