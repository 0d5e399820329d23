"""What a config asks of VISTA-Bench: readers, question sets, answer jobs and their files.

One :class:`VistaPlan` per run (:meth:`roundtrip.workflow.plan.Plan.view`), read by the rules
(``rules/evals/vista.smk``) and the spec (:mod:`.spec`); unit-tested in ``tests/test_plan.py``.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

from roundtrip.core.manifest import ORIGINAL
from roundtrip.datasets import DATASET_TYPES, QUESTION_TYPES
from roundtrip.readers.transformers_vlm import runs_in_process

#: Reader types that answer from an OCR engine's reading of the question image.
OCR_READER_TYPES = ("ocr_llm", "ocr_solver")
#: The role of a question set that is built and answered but never reconstructed
#: (:func:`unreconstructed_sets`): no model's reconstruction of it is read.
QUESTIONS_ONLY = "vista_questions_only"


def answered_sets(config: dict) -> list[str]:
    """The question sets VISTA-Bench's readers answer (``vista.datasets``, default every
    ``vista_questions`` and ``vista_release`` set); none without readers."""
    vista = config.get("vista") or {}
    if not vista.get("readers"):
        return []
    chosen = vista.get("datasets")
    return [d for d, spec in config["datasets"].items()
            if (d in chosen if chosen else spec["type"] in QUESTION_TYPES)]


def axis_models(config: dict, dataset: str) -> list[str]:
    """The models whose reconstructions of ``dataset``'s question images the readers read (the
    tokenizer axis): the models run on the set (``datasets.<name>.models``, default all),
    limited to ``vista.models`` when given (``[]``: none)."""
    allowed = (config.get("vista") or {}).get("models")
    run = config["datasets"][dataset].get("models") or list(config["models"])
    return [m for m in run if allowed is None or m in allowed]


def unreconstructed_sets(config: dict) -> list[str]:
    """Question sets no evaluation reads a reconstruction of: answered by VISTA-Bench's readers,
    with no tokenizer axis on them (:func:`axis_models` empty) and no ``text_eval`` (VTBench's
    text table). They are built and answered from their renders, never reconstructed.

    Except a packaged set (``vista_questions``) read through OCR while packaged sets are built
    together (``run.batch_packaged_sets``): the renders of such a set are read in the text
    sets' batched OCR job, so it stays a text set (reconstructed as before)."""
    vista = config.get("vista") or {}
    ocr_read = any(spec.get("type") in OCR_READER_TYPES
                   for spec in (vista.get("readers") or {}).values())
    batched = (config.get("run") or {}).get("batch_packaged_sets", True)
    out = []
    for d in answered_sets(config):
        spec = config["datasets"][d]
        kind = DATASET_TYPES.get(spec["type"])
        if spec.get("text_eval") or axis_models(config, d):
            continue
        if ocr_read and batched and kind is not None and kind.packaged:
            continue
        out.append(d)
    return out


class VistaPlan:
    """The VISTA-Bench part of a run.

    Args:
        plan: the run's :class:`roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan
        self.section: dict = plan.config.get("vista") or {}

    @cached_property
    def readers(self) -> dict[str, dict]:
        """``vista.readers``: name -> reader spec (none: no VISTA evaluation)."""
        return dict(self.section.get("readers") or {})

    @cached_property
    def datasets(self) -> list[str]:
        """Question sets the readers answer (:func:`answered_sets`), in the plan's order."""
        answered = answered_sets(self.plan.config)
        return [d for d in self.plan.datasets if d in answered]

    def reader_params(self, reader: str) -> dict:
        """The reader's spec as its answer job's tracked parameter: its endpoint without the
        transport settings (:data:`roundtrip.api.endpoint.TRANSPORT_KEYS`: ``concurrency``,
        timeouts, retries, backoff, the circuit breaker), which change how answers are fetched,
        never which, and so rerun no job; the job reads them from the config
        (:func:`roundtrip.api.endpoint.with_transport`)."""
        from roundtrip.api.endpoint import without_transport

        return without_transport(self.readers[reader])

    def judge_params(self) -> dict | None:
        """``vista.judge`` as the answer jobs' tracked parameter, its endpoint without the
        transport settings (as :meth:`reader_params`); None without a judge."""
        from roundtrip.api.endpoint import without_transport

        return without_transport(self.section.get("judge"))

    def error_problems(self) -> list[str]:
        """Why the run's VISTA-Bench results are not whole, one line per reader more than
        ``vista.max_error_share`` of whose answers on the original renders are errors (the
        counts of page 1, :func:`roundtrip.evals.vista.findings.answer_counts_of`, from the
        answer files there are); empty where none is. The end of a run reads it
        (``run.tolerate_reader_errors``)."""
        from roundtrip.evals.vista.findings import MAX_ERROR_SHARE, answer_counts_of

        files = [f for r, m, d in self.keys if m == ORIGINAL
                 and Path(f := self.answer_file(r, m, d)).is_file()]
        limit = self.section.get("max_error_share")
        limit = MAX_ERROR_SHARE if limit is None else float(limit)
        counts = answer_counts_of(files, bool(self.section.get("include_failed_audit", False)))
        return [f"VISTA-Bench reader {c.label}: {c.errors} of {c.asked} answers "
                f"({100 * c.error_share:.1f} %) are errors ({c.reasons}), more than "
                f"vista.max_error_share ({100 * limit:g} %)"
                for c in counts.values() if c.error_share > limit]

    def reask(self, reader: str, model: str, dataset: str) -> str:
        """The answer job's ``reask`` parameter (:func:`roundtrip.evals.vista.answers.
        reask_marker`): it changes when a run of the job leaves errors, so that the next run of
        the workflow runs the job again and asks the failed items (their answers are not
        cached), without anything named on the command line."""
        from roundtrip.evals.vista.answers import reask_marker

        return reask_marker(self.answer_file(reader, model, dataset))

    def answer_rules(self) -> list[tuple[str, list[str], bool]]:
        """``(rule name, readers, in process)`` of the answer rules: ``vista_answers`` for the
        readers on an endpoint and the offline ones, ``vista_answers_in_process`` for those that
        run their model in the job (``type: transformers``: a job of its own on the GPU, not in
        the tables' group); a rule without readers is left out."""
        inside = [r for r, spec in self.readers.items() if runs_in_process(spec)]
        outside = [r for r in self.readers if r not in inside]
        return [(name, readers, flag) for name, readers, flag in
                (("vista_answers", outside, False), ("vista_answers_in_process", inside, True))
                if readers]

    def reader_ocr(self, reader: str) -> str | None:
        """The OCR engine a reader answers from (OCR reader types), else None."""
        spec = self.readers[reader]
        return spec.get("ocr", "tesseract") if spec["type"] in OCR_READER_TYPES else None

    @cached_property
    def ocr_engines(self) -> list[str]:
        """OCR engines some reader answers from."""
        return sorted({e for r in self.readers if (e := self.reader_ocr(r))})

    @cached_property
    def ocr_datasets(self) -> list[str]:
        """Question sets read through OCR that are reconstructed (the reconstruction jobs read
        the reconstructed question images; the OCR readers reuse that reading), so they are
        text sets. A set never reconstructed (:func:`unreconstructed_sets`) is not: the OCR
        of its renders is the originals' reading (``ocr_original``)."""
        if not self.ocr_engines:
            return []
        kept = unreconstructed_sets(self.plan.config)
        return [d for d in self.datasets if d not in kept]

    def models(self, dataset: str) -> list[str]:
        """``original`` and the models whose reconstructions of the question images are read
        (:func:`axis_models`)."""
        return [ORIGINAL] + axis_models(self.plan.config, dataset)

    @cached_property
    def keys(self) -> list[tuple[str, str, str]]:
        """``(reader, model, dataset)`` of every answer file."""
        return [(r, m, d) for d in self.datasets for r in self.readers for m in self.models(d)]

    @staticmethod
    def answer_file(reader: str, model: str, dataset: str) -> str:
        return f"results/vista/{reader}/{model}/{dataset}/answers.csv"

    def inputs(self, reader: str, model: str, dataset: str) -> dict[str, str]:
        """The manifest, the reconstruction status (a model's answers) and the OCR of the
        question images (OCR readers) that an answer job reads."""
        out = {"manifest": f"results/datasets/{dataset}/manifest.csv"}
        if model != ORIGINAL:
            out["status"] = f"results/recon/{model}/{dataset}/status.csv"
        engine = self.reader_ocr(reader)
        if engine:
            out["ocr"] = f"results/ocr/{engine}/{model}/{dataset}.csv"
        return out

    def sweeps(self) -> dict[str, dict | None]:
        """Per question set, how the font tables group its renders
        (:func:`roundtrip.evals.vista.tables.sweep_groups`): ``size_style`` (the style sizes are
        compared in), ``style_size`` (the size styles are compared at) for a set rendered on
        the paper's grid and for the release (``size_sweep_style``, ``style_sweep_pt``; default
        Arial and 16 pt, Sec. 2), and for the release, whose questions are rendered once each
        at a drawn (font, size), ``pooled``: every size over all fonts and every font over all
        sizes beside; None for other sets (every render of a size or style counts)."""
        out = {}
        for d in self.datasets:
            spec = self.plan.config["datasets"][d]
            paper = spec["type"] == "vista_questions" and spec.get("grid", "paper") == "paper"
            release = spec["type"] == "vista_release"
            out[d] = ({"size_style": spec.get("size_sweep_style", "arial"),
                       "style_size": spec.get("style_sweep_pt", 16)} | (
                           {"pooled": True} if release else {})
                      if paper or release else None)
        return out
