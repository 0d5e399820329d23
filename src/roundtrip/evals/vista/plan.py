"""What a config asks of VISTA-Bench: readers, question sets, answer jobs and their files.

One :class:`VistaPlan` per run (:meth:`roundtrip.workflow.plan.Plan.view`), read by the rules
(``rules/evals/vista.smk``) and the spec (:mod:`.spec`); unit-tested in ``tests/test_plan.py``.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.datasets import QUESTION_TYPES
from roundtrip.core.manifest import ORIGINAL

#: Reader types that answer from an OCR engine's reading of the question image.
OCR_READER_TYPES = ("ocr_llm", "ocr_solver")


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
        """Question sets the readers answer: ``vista.datasets``, default every
        ``vista_questions`` and ``vista_release`` set; none without readers."""
        if not self.readers:
            return []
        chosen = self.section.get("datasets")
        specs = self.plan.config["datasets"]
        return [d for d in self.plan.datasets
                if (d in chosen if chosen else specs[d]["type"] in QUESTION_TYPES)]

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
        """Question sets read through OCR (the reconstruction jobs read the reconstructed question
        images; the OCR readers reuse that reading), so they are text sets."""
        return list(self.datasets) if self.ocr_engines else []

    def models(self, dataset: str) -> list[str]:
        """``original`` and the models whose reconstructions of the question images are read:
        the models run on the set, limited to ``vista.models`` when given."""
        allowed = self.section.get("models")
        return [ORIGINAL] + [m for m in self.plan.models_on(dataset)
                             if allowed is None or m in allowed]

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
