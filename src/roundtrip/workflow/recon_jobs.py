"""The reconstruction jobs: the job that reconstructs one (model, dataset) and runs, on the same
reconstructions, every reconstruction scorer the active evaluations ask for
(:func:`roundtrip.workflow.recon_job.run_recon_job`).

:class:`ReconJobs` is a view of the :class:`~roundtrip.workflow.plan.Plan` (``plan.recon_jobs``):
which scorers run on a dataset, where each is defined, what they add to the job's inputs and
outputs, and the reconstruction rules that follow (one per distinct set of scorers, since a
rule's outputs are fixed).
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.core.evaluation import Evaluation


class ReconJobs:
    """The reconstruction jobs of a plan.

    Args:
        plan: the run's :class:`~roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan

    @cached_property
    def owners(self) -> dict[str, Evaluation]:
        """Reconstruction scorer name -> the evaluation that registers it."""
        return {name: ev for ev in self.plan.evaluations.values() for name in ev.recon_scorers}

    def scorers(self, dataset: str) -> dict[str, dict]:
        """The reconstruction scorers that run in the reconstruction job of an image dataset, with
        their options: what the active evaluations need from its reconstructions
        (:meth:`~roundtrip.core.evaluation.Evaluation.scorers_for`), in evaluation order."""
        out: dict[str, dict] = {}
        for ev in self.plan.active:
            for name, options in ev.scorers_for(self.plan, dataset).items():
                out.setdefault(name, options)
        return out

    def targets(self, scorers) -> dict[str, str]:
        """``name -> "module:function"`` of reconstruction scorers, for the reconstruction job to import.

        Raises:
            KeyError: no registered evaluation registers a scorer (names the known ones).
        """
        unknown = [s for s in scorers if s not in self.owners]
        if unknown:
            raise KeyError(f"no reconstruction scorer {unknown}; known: {sorted(self.owners)}")
        return {s: self.owners[s].recon_scorers[s] for s in scorers}

    def inputs(self, scorers: tuple[str, ...], datasets: list[str]
               ) -> dict[str, str | list[str]]:
        """Inputs the scorers add to the job of a reconstruction rule covering ``datasets``, beside the
        manifest and model weights."""
        out: dict[str, str | list[str]] = {}
        for name in scorers:
            out |= self.owners[name].recon_inputs(self.plan, name, datasets)
        return out

    def outputs(self, scorers: tuple[str, ...], datasets: list[str]) -> dict[str, str]:
        """Files the job of a reconstruction rule covering ``datasets`` writes (patterns in ``{model}``,
        ``{dataset}``): ``status`` and every frame of the scorers, by output name."""
        out = {"status": "results/recon/{model}/{dataset}/status.csv"}
        for name in scorers:
            out |= self.owners[name].recon_outputs(self.plan, name, datasets)
        return out

    def variants(self) -> list[tuple[str, list[str], tuple[str, ...]]]:
        """``(rule name, datasets, scorers)``: one reconstruction rule per distinct set of
        scorers, since a rule's outputs are fixed. ``reconstruct`` scores image quality only;
        ``reconstruct_tokens``, ``reconstruct_text``... add the named scorers to it, and a
        ``_only`` suffix marks a variant without image quality. Text sets read by some of the
        OCR engines only (``ocr.engines.<name>.datasets``) get a rule of their own, named with
        those engines (``reconstruct_text_tesseract``)."""
        groups: dict[tuple, list[str]] = {}
        for d in self.plan.image_datasets:
            scorers = tuple(self.scorers(d))
            engines = tuple(self.plan.engines_for(d)) if d in self.plan.text_datasets else ()
            groups.setdefault((scorers, engines), []).append(d)
        variants = []
        for (scorers, engines), datasets in groups.items():
            extra = [s for s in scorers if s != "image_quality"]
            if engines and list(engines) != self.plan.ocr_engines:
                extra += list(engines)
            name = "_".join(["reconstruct", *extra]) + ("" if "image_quality" in scorers
                                                       else "_only")
            variants.append((name, datasets, scorers))
        return variants
