"""What an evaluation declares to the workflow, and the registry that finds evaluations.

An evaluation is one package holding one :class:`Evaluation` object (its *spec*). The shared
code (the plan, the Snakefile, the config checks, the report) asks the registered specs what
they add to a run and names no evaluation itself:

- ``rules``: the evaluation's own Snakemake rules file, included when :meth:`Evaluation.active`;
  its rules take every path from ``input``/``output``/``params`` and may join a cluster group
  with Snakemake's ``group:`` directive (``prepare``, ``tables``; see ``profiles/slurm``);
- ``recon_scorers`` and :meth:`Evaluation.scorers_for`: scorers that run inside the job of a
  (model, dataset), on each reconstruction as the job makes it (:mod:`roundtrip.core.scoring`);
  :meth:`Evaluation.reads_reconstructions` for sets whose reconstruction files its later jobs
  read;
- :meth:`Evaluation.tables`, :meth:`Evaluation.figures`: its final files (``rule all``, the
  report), each table written by one of its rules with a provenance record;
- ``title``, ``paper``, ``report_tables``, ``report_columns``, ``report_figures``,
  ``definitions``: its section of the PDF report (every other table of its goes to the
  appendix, all columns); :meth:`Evaluation.summary` and :meth:`Evaluation.why_not` the front
  page's lines; :meth:`Evaluation.findings` its sentences there and
  :meth:`Evaluation.headline_figure` its figure on the pages after;
- :meth:`Evaluation.check`: its cross-key config checks, run before any job;
- ``config_section`` and ``schema``: the top-level config key it reads and that section's JSON
  schema (the built-ins' in ``evals/<name>/config.schema.yaml``), checked and filled in with
  the rest of the config before any job;
- ``weight_folders``: the model folders it loads, fetched by ``roundtrip weights fetch``;
- ``comparisons``: its metrics for a paired comparison of two checkpoints
  (:class:`roundtrip.core.comparison.ComparedMetric`: per-item files, direction, item and
  cluster keys, how a set-level number is recomputed), read by :mod:`roundtrip.tables.compare`
  for the config's ``compare:`` entries and ``roundtrip compare``.

Evaluations are registered under the entry-point group :data:`ENTRY_POINT_GROUP` (the built-in
ones in roundtrip's ``pyproject.toml``, a third-party package in its own), or named in the config
(``evaluations.plugins``: importable modules that define ``EVALUATION``; ``evaluations.paths``:
folders to import them from). ``docs/evaluations/writing-an-evaluation.md`` walks through one.
"""
from __future__ import annotations

import importlib
import os
import sys
from importlib import metadata
from pathlib import Path

#: Entry-point group under which packages register evaluations (``name = "module:OBJECT"``).
ENTRY_POINT_GROUP = "roundtrip.evaluations"

#: roundtrip's own project file, read where the package runs from a checkout that was not
#: installed (or whose installed entry points predate the file).
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


class Evaluation:
    """Base class of an evaluation's spec: override the attributes and methods that apply.

    ``plan`` arguments are the run's :class:`roundtrip.workflow.plan.Plan` (datasets by role,
    models, (model, dataset) combinations, resources); a spec reads the config through
    ``plan.config``.

    Attributes:
        key: registry name and report section key (``[a-z0-9_]+``).
        name: short name on the report's cover (what ran, what did not); default ``key``.
        title: heading of its report section.
        paper: the work it reproduces (title), or ``""``.
        order: position among evaluations in tables, targets and the report (built-ins use
            10-50; the default puts a plugin after them).
        rules: absolute path of its Snakemake rules file.
        config_section: the top-level config key it reads, if any.
        schema: the JSON schema of that section: a mapping, or the path of a YAML or JSON
            file (the built-ins ship ``config.schema.yaml`` beside their spec). It is added to
            ``config.schema.yaml``'s properties, so the section is checked and its defaults are
            filled in by the same validation as the rest of the config
            (:func:`roundtrip.workflow.checks.validate_config`). None: any mapping.
        recon_scorers: reconstruction scorer name -> ``"module:name"``: a
            :class:`roundtrip.core.scoring.ReconScorer` class (streamed: it scores each item as
            it is reconstructed, from memory), or a function ``(ctx:
            roundtrip.core.recon_items.ReconContext, options: dict)`` that reads the job's
            reconstruction files after they are all made (the job then writes them all). Both
            give ``{output name: DataFrame}``, each written to the reconstruction rule's output
            of that name (``results/metrics/{model}/{dataset}/{name}.csv``, see
            :meth:`recon_outputs`).
        report_tables: table names (or prefixes ending in ``_``) its report section shows, in
            order; its other tables (long listings) go to the report's appendix.
        report_columns: table name -> the column names (the part after ``group: `` in the
            Markdown header) the report's body shows of it; the table then appears in full,
            every column, in the appendix. Tables not named here are shown whole.
        report_figures: figure paths under ``results/figures/`` (``*`` patterns) it shows.
        definitions: ``(metric, definition, source)`` rows of its report section.
        weight_folders: the Hugging Face model folders it loads
            (:class:`roundtrip.core.weights.HubFolder`), listed and fetched by
            ``roundtrip weights list/fetch`` and named in config values by their ``name``.
        comparisons: :class:`roundtrip.core.comparison.ComparedMetric` entries, what a
            comparison of two checkpoints reads of its files (config ``compare:``,
            ``roundtrip compare``; docs/comparing.md); empty: it takes no part.
    """

    key: str = ""
    name: str = ""
    title: str = ""
    paper: str = ""
    order: int = 100
    rules: Path | None = None
    config_section: str | None = None
    schema: dict | Path | None = None
    recon_scorers: dict[str, str] = {}
    report_tables: tuple[str, ...] = ()
    report_columns: dict[str, tuple[str, ...]] = {}
    report_figures: tuple[str, ...] = ()
    definitions: tuple[tuple[str, str, str], ...] = ()
    # HubFolder entries; not imported for the annotation: roundtrip.core.weights reads this
    # registry, and the layering keeps imports acyclic
    weight_folders: tuple = ()
    # ComparedMetric entries (roundtrip.core.comparison), read by roundtrip.tables.compare
    comparisons: tuple = ()

    def active(self, plan) -> bool:
        """Whether the config asks for this evaluation (its rules are included, its targets
        built); default: always."""
        return True

    def why_not(self, plan) -> str:
        """One line for the report's cover when :meth:`active` is false."""
        return "not configured"

    def summary(self, plan) -> str:
        """One line for the report's cover when it ran: what it ran on."""
        return ""

    def tables(self, plan) -> list[str]:
        """Names of the tables it writes (``results/tables/{name}.csv``, ``.md``, ``.tex``,
        ``.provenance.json``)."""
        return []

    def figures(self, plan) -> list[str]:
        """Paths of the figures it writes (``results/figures/...``)."""
        return []

    def findings_inputs(self, plan) -> list[str]:
        """Per-item files (beyond its tables) its :meth:`findings` read, e.g. the per-item
        metric CSVs a paired comparison needs; they become inputs of the report job. Default
        none."""
        return []

    def findings(self, results) -> list[str]:
        """Two to four sentences with numbers for the report's first page, generated from the
        run's tables (``results``: :class:`roundtrip.report.findings.RunResults`): the best and
        worst model on its headline metric with their 95 % CIs, the best against the runner-up
        as a paired difference, and the comparison its paper makes. Default none."""
        return []

    def headline_figure(self, results, path: Path) -> str | None:
        """Draw its headline figure from ``results`` (:class:`roundtrip.report.findings
        .RunResults`) into the PNG ``path`` (:func:`roundtrip.report.style.figure` sizes it for
        print) and return its caption; None where this run's tables hold nothing to draw (the
        report then says so in the figure's place). Evaluations that leave this method alone
        have no headline figure."""
        return None

    def published_cells(self, results):
        """This run's numbers for cells of its paper's published tables, where the run used the
        paper's own data and protocol (then they are printed in the same table as the published
        rows): a frame with the columns ``table``, ``row_group``, ``row``, ``column_group``,
        ``column``, ``printed`` (formatted to the paper's precision), or None (default: the
        published tables are shown as a reference on other data)."""
        return None

    @property
    def package(self) -> str:
        """The package the spec lives in (its ``published/`` folder holds the paper's numbers,
        :mod:`roundtrip.tables.published`)."""
        return type(self).__module__.rpartition(".")[0]

    def has_headline_figure(self) -> bool:
        """Whether the spec overrides :meth:`headline_figure`."""
        return type(self).headline_figure is not Evaluation.headline_figure

    def scorers_for(self, plan, dataset: str) -> dict[str, dict]:
        """Reconstruction scorers (names of any registered evaluation's ``recon_scorers``) that
        must run on the reconstructions of ``dataset``, with their options (JSON-able)."""
        return {}

    def recon_outputs(self, plan, scorer: str, datasets: list[str]) -> dict[str, str]:
        """Output name -> file pattern (in ``{model}``, ``{dataset}``) of a reconstruction
        scorer it registers, for a reconstruction rule covering ``datasets``; default: one frame
        written to ``results/metrics/{model}/{dataset}/{scorer}.csv``."""
        return {scorer: f"results/metrics/{{model}}/{{dataset}}/{scorer}.csv"}

    def recon_inputs(self, plan, scorer: str, datasets: list[str]) -> dict[str, str | list[str]]:
        """Input name -> file(s) a reconstruction scorer it registers reads beside the manifest
        and the model's weights (patterns in ``{dataset}``), for a reconstruction rule covering
        ``datasets``; default none."""
        return {}

    def dataset_roles(self, config: dict) -> dict[str, str]:
        """Dataset -> role for sets only this evaluation uses in a way their type does not say
        (e.g. training images that are built but never reconstructed); default none."""
        return {}

    def trained_first(self, plan) -> list[str]:
        """Trained models (``type: small``) it needs before its other jobs; their training
        runs with high priority (rule ``train_reference_tokenizer``); default none."""
        return []

    def checkpoints(self, plan) -> list[str]:
        """Checkpoints its jobs train or read (``results/weights/.../model.pt``) beyond the
        trained models of the (model, dataset) jobs, which the plan adds itself; the report
        lists every checkpoint with its digest. Default none."""
        return []

    def reads_reconstructions(self, plan, dataset: str) -> bool:
        """Whether its jobs read the reconstruction files of ``dataset`` after the
        reconstruction job (e.g. images sent to a reader): the job then keeps every one,
        whatever ``keep_reconstructions`` says. Default False: its scorers get them in memory."""
        return False

    def text_datasets(self, plan) -> list[str]:
        """Sets whose reconstructions it reads through OCR although they lack ``text_eval``
        (the reconstruction job then runs the OCR scorer on them); default none."""
        return []

    def api_uses(self, config: dict) -> list[tuple[str, dict, dict[str, str]]]:
        """``(config path, spec, {prompt field: default template name})`` of every API use in
        its config section, resolved with the shared ones before any job
        (:func:`roundtrip.api.settings.resolve_api`); default none."""
        return []

    def compared_names(self, plan) -> list[str]:
        """Names beyond the config's models that a ``compare:`` entry may name for this
        evaluation (its readers, its model pairs); default none."""
        return []

    def check(self, plan) -> None:
        """Cross-key checks of its part of a schema-validated config (``plan.config``).

        Raises:
            roundtrip.core.config.ConfigError: naming the key and the fix.
        """

    @property
    def label(self) -> str:
        """``name``, else ``key``."""
        return self.name or self.key

    def __repr__(self) -> str:
        return f"<evaluation {self.key}>"


class RegistryError(ValueError):
    """An evaluation that cannot be loaded or registered (the message names its source)."""


def _entry_points() -> dict[str, str]:
    """``name -> "module:OBJECT"`` of the installed entry points of :data:`ENTRY_POINT_GROUP`,
    completed from roundtrip's own ``pyproject.toml`` where the checkout was not installed."""
    found = {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if PYPROJECT.is_file():
        import tomllib

        project = tomllib.loads(PYPROJECT.read_text()).get("project", {})
        for name, value in project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {}).items():
            found.setdefault(name, value)
    return found


def _load(target: str) -> Evaluation:
    module, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in (attr or "EVALUATION").split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise RegistryError(f"evaluation {target!r} cannot be loaded: {exc}") from exc
    if isinstance(obj, type):
        obj = obj()
    if not isinstance(obj, Evaluation) or not obj.key:
        raise RegistryError(f"{target!r} is not an Evaluation with a key "
                            "(roundtrip.core.evaluation.Evaluation)")
    return obj


def load_evaluations(plugins: list[str] | tuple = (), paths: list[str] | tuple = ()
                     ) -> dict[str, Evaluation]:
    """Every registered evaluation, ordered by ``(order, key)``.

    Args:
        plugins: config ``evaluations.plugins``: modules (``pkg.mod`` or ``pkg.mod:OBJECT``)
            defining ``EVALUATION``, loaded after the entry points.
        paths: config ``evaluations.paths``: folders put first on ``sys.path`` and on
            ``PYTHONPATH`` (so the jobs Snakemake starts import the plugins too).

    Raises:
        RegistryError: a target that does not load, is not an :class:`Evaluation`, or reuses a
            key another evaluation registered.
    """
    for folder in paths:
        folder = str(Path(folder).expanduser().resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
        inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if folder not in inherited:
            os.environ["PYTHONPATH"] = os.pathsep.join([folder, *filter(None, inherited)])
    found: dict[str, Evaluation] = {}
    sources = [(value, f"entry point {name}") for name, value in _entry_points().items()]
    sources += [(p if ":" in p else f"{p}:EVALUATION", f"evaluations.plugins ({p})")
                for p in plugins]
    for target, source in sources:
        ev = _load(target)
        if ev.key in found and type(found[ev.key]) is not type(ev):
            raise RegistryError(f"{source}: an evaluation named {ev.key!r} is registered twice")
        found[ev.key] = ev
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))
