"""VISTA-Bench's declaration to the workflow (:class:`roundtrip.core.evaluation.Evaluation`)."""
from __future__ import annotations

from pathlib import Path

from roundtrip.api.settings import IN_PROCESS
from roundtrip.core.config import ConfigError
from roundtrip.core.comparison import ComparedMetric
from roundtrip.core.evaluation import Evaluation
from roundtrip.evals.vista.plan import (OCR_READER_TYPES, QUESTIONS_ONLY, VistaPlan,
                                        unreconstructed_sets)
from roundtrip.core.manifest import ORIGINAL

#: Reader types that send their requests to an endpoint of ``api.endpoints``.
ENDPOINT_READER_TYPES = ("vlm", "ocr_llm")
#: Table names (roundtrip.evals.vista.tables; one rule writes them all).
TABLES = ["vista_accuracy", "vista_font", "vista_rendering_errors", "vista_subfield",
          "vista_source", "vista_tokenizers"]


#: What a comparison of two checkpoints reads (docs/comparing.md): right or wrong per question
#: (exact McNemar), as visualized text on its Table 1 render and as pure text, and over every
#: render with a question's renders resampled together; two readers on the same renders, or
#: two models' reconstructions under the same reader.
_BY_READER = "vista/{name}/{model}/{dataset}/answers.csv"
_BY_MODEL = "vista/{reader}/{name}/{dataset}/answers.csv"
_ACCURACY = ("vista_accuracy", "vista_font", "vista_tokenizers")


#: What must not change between two runs for a row to compare: two readers on one model's
#: reconstructions need that model unchanged (its fingerprint); two models under one reader need
#: that reader unchanged (its answers on the renders themselves, the same bytes).
_SAME = {_BY_READER: ("recon/{model}/{dataset}/model.json",),
         _BY_MODEL: ("vista/{reader}/original/{dataset}/answers.csv",)}


#: The render a VT answer read, for the gallery of the answers that flipped: two models' own
#: reconstructions under one reader; two readers on one model's reconstruction, or on the
#: render itself (model ``original``).
_IMAGES = {_BY_READER: ("recon/{model}/{dataset}/{item}.png",
                       "datasets/{dataset}/images/{item}.png"),
           _BY_MODEL: "recon/{name}/{dataset}/{item}.png"}


#: What makes an answer right: the answer extraction and the judge that maps unreadable ones.
_RIGHT = ("answer right or wrong: extraction {vista.extraction}, judge {vista.judge}, v1")


def _answers(files: str, metric: str, where: dict, item=("question_id",), cluster=(),
             label: str = "", headline: bool = False) -> ComparedMetric:
    vt = where.get("mode") == "vt"
    return ComparedMetric(metric, files, kind="binary", column="hit", tables=_ACCURACY,
                          item=item, cluster=cluster, where=where, headline=headline,
                          scale=100.0, label=label, text="extracted", references=_SAME[files],
                          definition=_RIGHT,
                          images=_IMAGES[files] if vt else "",
                          original="datasets/{dataset}/images/{item}.png" if vt else "",
                          image_item="item_id" if vt else "")


_COMPARISONS = (
    _answers(_BY_READER, "vt_accuracy", {"mode": "vt", "table1": "1"}, headline=True),
    _answers(_BY_READER, "text_accuracy", {"mode": "text"}, headline=True),
    _answers(_BY_READER, "vt_accuracy", {"mode": "vt"}, item=("item_id",),
             cluster=("question_id",), label="VT (every render)"),
    _answers(_BY_MODEL, "vt_accuracy", {"mode": "vt", "table1": "1"}, headline=True),
    _answers(_BY_MODEL, "vt_accuracy", {"mode": "vt"}, item=("item_id",),
             cluster=("question_id",), label="VT (every render)"),
)

class Vista(Evaluation):
    key = "vista"
    name = "VISTA-Bench"
    title = "VISTA-Bench: the modality gap"
    paper = "VISTA-Bench: visualized text vs pure text in VLMs"
    order = 40
    rules = Path(__file__).resolve().parents[4] / "rules/evals/vista.smk"
    config_section = "vista"
    schema = Path(__file__).with_name("config.schema.yaml")
    # Table 1 first, then the sweeps; vista_subfield (one column pair per subfield) is a long
    # listing and goes to the appendix
    # the rendering-related errors and the source benchmarks (Fig. 2) are whole in the appendix
    report_tables = ("vista_accuracy", "vista_font", "vista_tokenizers")
    # vista_tokenizers is wider than the page with its five columns (and stacking its two
    # column groups as rows makes it wider still): the body keeps the reconstructions' VT
    # accuracy, their gap and the change against the originals
    report_columns = {"vista_tokenizers": ("VT (recon.)", "Gap Text - VT (recon.)",
                                           "VT recon. - VT orig.")}
    report_figures = ("vista_gap.png",)
    comparisons = _COMPARISONS
    definitions = (
        ("VT, Text accuracy", "share of questions answered right from the rendered image and "
         "from the pure text", "VISTA-Bench Table 1"),
        ("Gap", "Text accuracy minus VT accuracy, in points (the drop from text to visualized "
         "text)", "VISTA-Bench Table 1, App. D.1"),
        ("Rendering-related errors", "VT answers wrong whose question the same reader answers "
         "right as text", "VISTA-Bench Sec. 4.3"))

    @staticmethod
    def view(plan) -> VistaPlan:
        return plan.view("vista", VistaPlan)

    def active(self, plan) -> bool:
        return bool(self.view(plan).keys)

    def why_not(self, plan) -> str:
        return "no vista.readers or no question set"

    def compared_names(self, plan) -> list[str]:
        """Its readers (``vista.readers``): a ``compare:`` entry may pit two of them."""
        return list(self.view(plan).readers)

    def summary(self, plan) -> str:
        v = self.view(plan)
        n = len(v.readers)
        return f"{n} reader{'' if n == 1 else 's'} on {', '.join(v.datasets)}"

    def tables(self, plan) -> list[str]:
        return list(TABLES)

    def figures(self, plan) -> list[str]:
        return ["results/figures/vista_gap.png"]

    def findings_inputs(self, plan) -> list[str]:
        """The answer files of every reader on the original renders (the paired comparison of
        the two best readers over their shared questions)."""
        v = self.view(plan)
        return [v.answer_file(r, m, d) for r, m, d in v.keys if m == ORIGINAL]

    def findings(self, results) -> list[str]:
        """The modality-gap findings, then, where the render judge gave no verdict on too many
        of the question renders, the sentence that the render audit did not run."""
        from roundtrip.datasets.rendered.audit import audit_findings
        from roundtrip.evals.vista.findings import findings
        from roundtrip.evals.vista.plan import answered_sets

        return findings(results) + audit_findings(results.config, answered_sets(results.config))

    def headline_figure(self, results, path: Path) -> str | None:
        from roundtrip.evals.vista.findings import headline_figure

        return headline_figure(results, path)

    def published_cells(self, results):
        """Each reader's Table 1 row, where the run read the release's questions (a
        ``vista_release`` set): the same data and protocol as the paper."""
        from roundtrip.evals.vista.findings import table1_cells

        return table1_cells(results)

    def api_uses(self, config: dict) -> list[tuple[str, dict, dict[str, str]]]:
        """The readers on an endpoint (``vlm``, ``ocr_llm``: the endpoint resolved) and those
        run in process (``transformers``: the model located on this machine before any job,
        :data:`roundtrip.api.settings.IN_PROCESS_MODELS`), and the judge. Their prompts are
        presets (:mod:`roundtrip.readers.answerers`), not ``api.prompts`` templates."""
        vista = config.get("vista") or {}
        uses = [(f"vista.readers.{name}", spec, {})
                for name, spec in (vista.get("readers") or {}).items()
                if spec.get("type") in ENDPOINT_READER_TYPES + (IN_PROCESS,)]
        return uses + ([("vista.judge", vista["judge"], {})] if vista.get("judge") else [])

    def dataset_roles(self, config: dict) -> dict[str, str]:
        """Question sets no model's reconstruction of is read (no tokenizer axis on them, no
        ``text_eval``) are built and answered, never reconstructed
        (:func:`~roundtrip.evals.vista.plan.unreconstructed_sets`): a VISTA-only config with
        ``vista.models: []`` runs no reconstruction job."""
        return {d: QUESTIONS_ONLY for d in unreconstructed_sets(config)}

    def text_datasets(self, plan) -> list[str]:
        return self.view(plan).ocr_datasets

    def reads_reconstructions(self, plan, dataset: str) -> bool:
        """A reader that is sent the images (not their OCR) reads every reconstruction of the
        question sets in its answer jobs."""
        view = self.view(plan)
        return dataset in view.datasets and any(
            spec["type"] not in OCR_READER_TYPES for spec in view.readers.values())

    def check(self, plan) -> None:
        """Readers build and name OCR engines, models and question sets that exist; a release
        set names its TSV."""
        from roundtrip.datasets import QUESTION_TYPES
        from roundtrip.readers import build_answerer

        config = plan.config
        vista = config.get("vista") or {}
        engines = config.get("ocr", {}).get("engines", {})
        datasets = config.get("datasets", {})
        for name, spec in (vista.get("readers") or {}).items():
            try:
                build_answerer(name, spec)
            except ValueError as exc:
                raise ConfigError(str(exc)) from exc
            if spec["type"] in OCR_READER_TYPES:
                engine = spec.get("ocr", "tesseract")
                if engine not in engines:
                    raise ConfigError(f"vista.readers.{name}.ocr: {engine!r} is not an entry of "
                                      f"ocr.engines (known: {sorted(engines)})")
                limited = engines[engine].get("datasets")
                missed = [d for d in vista.get("datasets") or
                          [d for d, s in datasets.items() if s["type"] in QUESTION_TYPES]
                          if limited and d not in limited]
                if missed:
                    raise ConfigError(f"vista.readers.{name}.ocr: {engine} does not read "
                                      f"{missed} (ocr.engines.{engine}.datasets)")
        unknown = [m for m in vista.get("models") or [] if m not in config.get("models", {})]
        if unknown:
            raise ConfigError(f"vista.models: unknown models {unknown}")
        for d in vista.get("datasets") or []:
            if d not in datasets:
                raise ConfigError(f"vista.datasets: unknown dataset {d!r}")
            if datasets[d]["type"] not in QUESTION_TYPES:
                raise ConfigError(f"vista.datasets: {d} is a {datasets[d]['type']} set, not a "
                                  f"question set ({', '.join(QUESTION_TYPES)})")
        for name, spec in datasets.items():
            if spec["type"] == "vista_release":
                if not spec.get("path"):
                    raise ConfigError(f"datasets.{name}.path: a vista_release set needs the TSV")
                if not Path(spec["path"]).is_file():
                    raise ConfigError(f"datasets.{name}.path: {spec['path']} does not exist")


EVALUATION = Vista()
