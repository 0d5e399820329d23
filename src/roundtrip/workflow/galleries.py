"""The reconstruction galleries of the report: which sets they show and what they read.

A gallery shows, per image and text set, the first items next to every model's reconstruction
(the layout of VTBench's Figs. 4 and 5) and, under the crops of a text set, the OCR lines of one
engine. :class:`Galleries` is a view of the :class:`~roundtrip.workflow.plan.Plan`
(``plan.galleries``).
"""
from __future__ import annotations

from functools import cached_property


class Galleries:
    """The galleries a plan draws.

    Args:
        plan: the run's :class:`~roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan

    @cached_property
    def datasets(self) -> list[str]:
        """Image and text sets with at least one model run on them, in config order."""
        return [d for d in self.plan.general_datasets if self.plan.models_on(d)]

    def ocr(self, dataset: str) -> str | None:
        """The OCR engine whose lines the gallery prints under the crops of a text set: the
        tables' engine where it reads the set, else the first that does; None for other sets."""
        p = self.plan
        if dataset not in p.text_datasets:
            return None
        engines = p.engines_for(dataset)
        return p.table_ocr if p.table_ocr in engines else (engines[0] if engines else None)

    def inputs(self) -> dict[str, list[str]]:
        """Manifests, the reconstruction jobs' status files (the reconstructions are written
        with them) and the OCR files of the text sets, by input name: the files of
        :meth:`paths`."""
        out = {"manifests": [], "status": [], "ocr": []}
        for d in self.datasets:
            paths = self.paths(d)
            out["manifests"].append(paths["manifest"])
            out["status"] += [f"{folder}/status.csv" for folder in paths["recon"].values()]
            out["ocr"] += list(paths["ocr"].values())
        return out

    def paths(self, dataset: str) -> dict:
        """What the gallery of ``dataset`` reads, for the rule's params: ``manifest``, the set's
        ``folder`` (manifest paths are relative to it), ``recon`` (model -> reconstruction
        folder) and ``ocr`` (``original`` and each model -> OCR file; empty for image sets)."""
        engine = self.ocr(dataset)
        models = self.plan.models_on(dataset)
        return {"manifest": f"results/datasets/{dataset}/manifest.csv",
                "folder": f"results/datasets/{dataset}",
                "recon": {m: f"results/recon/{m}/{dataset}" for m in models},
                "ocr": {m: f"results/ocr/{engine}/{m}/{dataset}.csv"
                        for m in ["original", *models]} if engine else {}}

    @cached_property
    def figures(self) -> list[str]:
        """One PNG per set: ``results/figures/gallery/{dataset}.png``."""
        return [f"results/figures/gallery/{d}.png" for d in self.datasets]
