"""The reconstruction jobs: the job that reconstructs one (model, dataset) and runs, on the same
reconstructions, every reconstruction scorer the active evaluations ask for
(:func:`roundtrip.workflow.recon_job.run_recon_job`).

:class:`ReconJobs` is a view of the :class:`~roundtrip.workflow.plan.Plan` (``plan.recon_jobs``):
which scorers run on a dataset, where each is defined, what they add to the job's inputs and
outputs, and the reconstruction rules that follow (one per distinct set of scorers, since a
rule's outputs are fixed).

Sets built from data inside installed packages (a few items each) are *batched*: one job per
model reconstructs and scores all of them (:meth:`ReconJobs.batches`), since a job of a few
items is mostly Python, torch and metric-library start-up (about 6 of its 8-15 s on a 2-core
machine). Each set keeps its own files, written by the same code, so the results are the same
bytes either way.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.core.evaluation import Evaluation


#: ``run.batch_size: auto``: items per forward pass on the CPU (where a larger batch gains
#: nothing and holds more memory) and for a network on CUDA (benchmarks/results/gpu.json).
AUTO_BATCH = {"cpu": 8, "cuda": 16}


#: Cores up to which a model's packaged sets are one batched job (:meth:`ReconJobs.batches`).
FEW_CORES = 4


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

    def batch_size(self, model: str) -> int:
        """Items per forward pass of ``model``: ``models.<name>.batch_size``, else
        ``run.batch_size``; ``auto`` is :data:`AUTO_BATCH` by where the model runs (a network
        on CUDA, or the CPU)."""
        p = self.plan
        value = p.config["models"][model].get("batch_size", p.config["run"]["batch_size"])
        if value != "auto":
            return int(value)
        return AUTO_BATCH["cuda" if p.gpu_for(model) else "cpu"]

    def keep(self, dataset: str) -> int | None:
        """Reconstructions of ``dataset`` written as files per model: the first N items the
        dataset holds (:func:`roundtrip.stages.reconstruct.kept_items`)
        (``datasets.<name>.keep_reconstructions``, else ``run.keep_reconstructions``; ``none``
        is 0), at least ``report.gallery_items`` for a set with a gallery; None (all) for
        ``all`` or when an active evaluation reads them after the job
        (:meth:`~roundtrip.core.evaluation.Evaluation.reads_reconstructions`)."""
        p = self.plan
        value = p.config["datasets"][dataset].get("keep_reconstructions",
                                                  p.config["run"].get("keep_reconstructions", 16))
        if value == "all" or any(ev.reads_reconstructions(p, dataset) for ev in p.active):
            return None
        keep = 0 if value == "none" else int(value)
        if dataset in p.galleries.datasets:
            keep = max(keep, int(p.config.get("report", {}).get("gallery_items", 1)))
        return keep

    def targets(self, scorers) -> dict[str, str]:
        """``name -> "module:name"`` of reconstruction scorers, for the reconstruction job
        to import.

        Raises:
            KeyError: no registered evaluation registers a scorer (names the known ones).
        """
        unknown = [s for s in scorers if s not in self.owners]
        if unknown:
            raise KeyError(f"no reconstruction scorer {unknown}; known: {sorted(self.owners)}")
        return {s: self.owners[s].recon_scorers[s] for s in scorers}

    def inputs(self, scorers: tuple[str, ...], datasets: list[str]
               ) -> dict[str, str | list[str]]:
        """Inputs the scorers add to the job of a reconstruction rule covering ``datasets``,
        beside the manifest and model weights."""
        out: dict[str, str | list[str]] = {}
        for name in scorers:
            out |= self.owners[name].recon_inputs(self.plan, name, datasets)
        return out

    def outputs(self, scorers: tuple[str, ...], datasets: list[str]) -> dict[str, str]:
        """Files the job of a reconstruction rule covering ``datasets`` writes (patterns in
        ``{model}``, ``{dataset}``): ``status`` and every frame of the scorers, by output
        name."""
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

    # -- batched jobs ------------------------------------------------------------------------
    def batched(self, dataset: str) -> bool:
        """Whether a dataset is reconstructed in its models' batched jobs (:meth:`batches`)
        rather than in one job per (model, dataset): a set of a packaged type
        (:attr:`roundtrip.datasets.DatasetType.packaged`) in one shard, with
        ``run.batch_packaged_sets`` on (the default). A user's set keeps jobs of its own, so
        that it is cached, sharded and rerun on its own."""
        # the sets built in a batched job (Plan.builds.group), unless cut into shards
        return self.plan.builds.group(dataset) is not None and self.plan.shards(dataset) == 1

    def unbatched(self, datasets: list[str]) -> list[str]:
        """The datasets of ``datasets`` that get one job per (model, dataset)."""
        return [d for d in datasets if not self.batched(d)]

    def waits_on(self, dataset: str) -> tuple[str, ...]:
        """Files of this run (under ``results/``) that the scorers of ``dataset`` read and that
        are not the dataset's own (the reference tokenizer, the CMMS regressor), sorted. Sets
        that wait on different files go to different batched jobs, so that a set need not
        wait for a training its scorers do not read."""
        return tuple(sorted({f for s in self.scorers(dataset)
                             for f in self._run_wide_inputs(s, dataset)}))

    def separate_waits(self) -> bool:
        """Whether a model's sets that wait on a run-wide file (the reference tokenizer, CMMS)
        get a batched job of their own (:meth:`batches`): with more than
        :data:`FEW_CORES` cores, or on a cluster, where the other sets can start at once. On a
        small machine one job per model pays one start-up for all its sets, and the cores are
        busy with the trainings while the sets wait."""
        return self.plan.cores is None or self.plan.cores > FEW_CORES

    def batches(self) -> list[tuple[str, list[str], list[str]]]:
        """``(rule name, models, datasets)`` of the batched jobs: per model, its batched sets,
        grouped by the run-wide files they wait on (:meth:`waits_on`) where
        :meth:`separate_waits`; models with the same groups share a rule (wildcard ``model``).
        Names: ``reconstruct_sets``, plus the scorers that wait (``reconstruct_sets_tokens``),
        plus ``_2``, ``_3``... where models cover different sets."""
        groups: dict[tuple, list[str]] = {}
        for model in self.plan.models:
            by_wait: dict[tuple, list[str]] = {}
            for d in self.plan.image_datasets:
                if self.batched(d) and model in self.plan.models_on(d):
                    wait = self.waits_on(d) if self.separate_waits() else ()
                    by_wait.setdefault(wait, []).append(d)
            for wait, datasets in by_wait.items():
                groups.setdefault((wait, tuple(datasets)), []).append(model)
        out, taken = [], set()
        for (wait, datasets), models in groups.items():
            waiting = sorted({s for d in datasets for s in self.scorers(d)
                              if self._run_wide_inputs(s, d)})
            name = "_".join(["reconstruct_sets", *waiting])
            base, k = name, 2
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            out.append((name, models, list(datasets)))
        return out

    @staticmethod
    def batch_priority(datasets: list[str]) -> int:
        """Scheduling priority of a batched job: its number of sets, at most 9 (below the
        trainings, 10). The longest jobs then start first and the short ones fill the end of
        the run, instead of one long job running alone on one core while the others idle."""
        return min(9, len(datasets))

    def _input_patterns(self, scorer: str, dataset: str) -> list[str]:
        """The files ``scorer`` reads on ``dataset`` (:meth:`inputs`), one list, in
        ``{dataset}`` patterns."""
        values = self.owners[scorer].recon_inputs(self.plan, scorer, [dataset]).values()
        return [f for v in values for f in ([v] if isinstance(v, str) else v)]

    def _run_wide_inputs(self, scorer: str, dataset: str) -> set[str]:
        """Inputs of ``scorer`` made by this run and not of ``dataset`` alone (metric weights
        in the user's cache are there from the start: they make nobody wait)."""
        return {f for f in self._input_patterns(scorer, dataset)
                if "{dataset}" not in f and f.startswith("results/")}

    def batch_inputs(self, datasets: list[str]) -> list[str]:
        """The files the scorers of a batched job read, beside the manifests and the model's
        weights (each dataset's :meth:`inputs`, formatted), without repeats."""
        files = [f.format(dataset=d) for d in datasets for s in self.scorers(d)
                 for f in self._input_patterns(s, d)]
        return list(dict.fromkeys(files))

    def batch_outputs(self, datasets: list[str]) -> list[str]:
        """Every file a batched job writes (patterns in ``{model}``): each dataset's
        :meth:`outputs`, the same files its own job would write."""
        return [f for d in datasets for f in self._outputs_of(d, "{model}").values()]

    def batch_jobs(self, datasets: list[str], model: str) -> list[dict]:
        """What a batched job of ``model`` does, per dataset in order: ``dataset``,
        ``manifest``, ``outputs`` (name -> file), ``scorers`` (name -> options), ``targets``
        (name -> ``module:name``), ``protocol``, ``size`` and ``keep`` (:meth:`keep`)
        (:func:`roundtrip.workflow.recon_job.run_recon_jobs`)."""
        jobs = []
        for d in datasets:
            spec = self.plan.config["datasets"][d]
            scorers = self.scorers(d)
            jobs.append({"dataset": d, "manifest": f"results/datasets/{d}/manifest.csv",
                         "outputs": self._outputs_of(d, model), "scorers": scorers,
                         "targets": self.targets(tuple(scorers)),
                         "protocol": spec.get("protocol"), "size": spec.get("size"),
                         "keep": self.keep(d)})
        return jobs

    def _outputs_of(self, dataset: str, model: str) -> dict[str, str]:
        patterns = self.outputs(tuple(self.scorers(dataset)), [dataset])
        return {k: v.format(model=model, dataset=dataset) for k, v in patterns.items()}
