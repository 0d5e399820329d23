"""What a config asks of MediBench: medical 2D and volume sets, labelled sets for latent
utility, the models run on them.

One :class:`MedicalPlan` per run (:meth:`roundtrip.workflow.plan.Plan.view`), read by the rules
(``rules/evals/medibench.smk``) and the spec (:mod:`.spec`); unit-tested in ``tests/test_plan.py``.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.core.manifest import ORIGINAL
from roundtrip.datasets import MEDICAL_2D, VOLUMES


class MedicalPlan:
    """The MediBench part of a run.

    Args:
        plan: the run's :class:`roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan

    @cached_property
    def datasets(self) -> list[str]:
        """The MediBench branch: medical 2D sets and volume sets."""
        return self.plan.with_role(MEDICAL_2D, VOLUMES)

    @cached_property
    def volume_datasets(self) -> list[str]:
        return self.plan.with_role(VOLUMES)

    @cached_property
    def medical_2d(self) -> list[str]:
        return self.plan.with_role(MEDICAL_2D)

    def has_labels(self, dataset: str) -> bool:
        """Whether a medical dataset's items carry class labels (latent utility needs them)."""
        spec = self.plan.config["datasets"][dataset]
        return (spec["type"] in ("skimage_medical", "medmnist", "synthetic_volumes")
                or bool(spec.get("labels_csv")) or bool(spec.get("label_column")))

    @cached_property
    def latent_datasets(self) -> list[str]:
        """Medical sets whose items carry labels: MediBench's latent utility."""
        return [d for d in self.datasets if self.has_labels(d)]

    @cached_property
    def models(self) -> list[str]:
        """Models run on at least one medical dataset (the MediBench table columns)."""
        return [m for m in self.plan.models
                if any(m in self.plan.models_on(d) for d in self.datasets)]

    def latent_settings(self, dataset: str) -> dict:
        """``medical.latent_utility`` with the dataset's ``patch``, 2D ``size`` and split keys
        (its ``latent_utility`` mapping) and the slicing ``axis``."""
        medical, spec = self.plan.config["medical"], self.plan.config["datasets"][dataset]
        size = {"size": spec["size"]} if spec.get("protocol") == "fixed" and spec.get("size") else {}
        return (medical["latent_utility"] | size | spec.get("latent_utility", {})
                | {"patch": spec.get("patch"), "axis": medical["axis"]})

    @cached_property
    def table_files(self) -> dict[str, dict]:
        """The files rule ``medical_tables`` reads, keyed for its script and listed as its inputs
        from the same mappings (so the declared inputs and the files read cannot disagree).

        Returns:
            ``{"manifests": {dataset: manifest.csv}, "quality" / "structure" / "latent":
            {(model, dataset): image_quality.csv / structure.csv / latent_utility.csv}}`` for
            the (model, dataset) combinations that run, dataset-major; ``latent`` ends with the
            image baselines' ``("original", dataset)`` files.
        """
        def model_dataset_files(name: str, datasets: list[str]) -> dict[tuple[str, str], str]:
            return {(m, d): f"results/metrics/{m}/{d}/{name}.csv"
                    for m, d in self.plan.model_datasets(datasets)}

        return {
            "manifests": {d: f"results/datasets/{d}/manifest.csv" for d in self.datasets},
            "quality": model_dataset_files("image_quality", self.datasets),
            "structure": model_dataset_files("structure", self.volume_datasets),
            "latent": model_dataset_files("latent_utility", self.latent_datasets)
            | {("original", d): f"results/metrics/original/{d}/latent_utility.csv"
               for d in self.latent_datasets},
        }

    def volume_batched(self, dataset: str) -> bool:
        """Whether a volume set is reconstructed in its models' batched jobs
        (:meth:`volume_batches`) rather than in one job per (model, dataset): a set with no
        ``path`` (nibabel's bundled volumes, MONAI's synthetic ones: a few small volumes whose
        job is mostly the start-up of torch and MONAI, about 8 s), with
        ``run.batch_packaged_sets`` on. A user's volumes keep jobs of their own, cached and
        rerun per set."""
        return dataset in self.volume_datasets and self.plan.builds.group(dataset) == "volumes"

    def volume_batches(self) -> list[tuple[str, list[str], list[str]]]:
        """``(rule name, models, datasets)`` of the batched volume jobs: per model, its batched
        volume sets; models with the same sets share a rule (wildcard ``model``). Names:
        ``reconstruct_volume_sets``, then ``_2``, ``_3``... where models cover different sets."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for model in self.plan.models:
            sets = tuple(d for d in self.volume_datasets
                         if self.volume_batched(d) and model in self.plan.models_on(d))
            if sets:
                groups.setdefault(sets, []).append(model)
        return [("reconstruct_volume_sets" + (f"_{k + 1}" if k else ""), models, list(sets))
                for k, (sets, models) in enumerate(groups.items())]

    def volume_outputs(self, dataset: str, model: str = "{model}") -> dict[str, str]:
        """The files of one (model, volume set) reconstruction, whichever job writes them:
        ``status``, ``image_quality``, ``structure``, and ``latent_utility`` on labelled sets."""
        files = {"status": f"results/recon/{model}/{dataset}/status.csv",
                 "image_quality": f"results/metrics/{model}/{dataset}/image_quality.csv",
                 "structure": f"results/metrics/{model}/{dataset}/structure.csv"}
        if dataset in self.latent_datasets:
            files["latent_utility"] = f"results/metrics/{model}/{dataset}/latent_utility.csv"
        return files

    def volume_settings(self, dataset: str) -> dict:
        """What a volume job reads from the config: ``medical``'s ``axis``, ``slice_batch``,
        ``roi_size`` and ``segmenter``, and ``latent`` (:meth:`latent_settings`)."""
        medical = self.plan.config["medical"]
        return {key: medical[key] for key in ("axis", "slice_batch", "roi_size", "segmenter")} | {
            "latent": self.latent_settings(dataset)}

    def segmentation_dir(self, dataset: str, model: str = ORIGINAL) -> str:
        """Where the segmenter's masks of ``model``'s reconstructions of ``dataset`` go
        (``original``: of the originals, beside their ``status.csv``)."""
        segmenter = self.plan.config["medical"]["segmenter"]["type"]
        return f"results/segment/{segmenter}/{model}/{dataset}"

    def segmenter_status(self, dataset: str) -> str:
        """The status file of the segmenter's masks of ``dataset``'s originals."""
        return f"{self.segmentation_dir(dataset)}/status.csv"

    def segment_jobs(self, datasets: list[str]) -> list[dict]:
        """What a job segmenting originals does per set (``params.sets``: one set for rule
        ``segment_original``, the small volume sets (:meth:`volume_batched`) for
        ``segment_original_sets``): ``dataset``, ``manifest`` and ``status``
        (:meth:`segmenter_status`, the masks beside it)."""
        return [{"dataset": d, "manifest": f"results/datasets/{d}/manifest.csv",
                 "status": self.segmenter_status(d)} for d in datasets]

    def volume_jobs(self, datasets: list[str], model: str) -> list[dict]:
        """What a volume job does per set (``params.sets``: one set for rule
        ``reconstruct_volumes``, a model's small sets for ``reconstruct_volume_sets``):
        ``dataset``, ``manifest``, ``outputs`` (:meth:`volume_outputs`), ``seg_status``,
        ``seg_dir`` and ``settings`` (:meth:`volume_settings`)."""
        return [{"dataset": d, "manifest": f"results/datasets/{d}/manifest.csv",
                 "outputs": self.volume_outputs(d, model),
                 "seg_status": self.segmenter_status(d),
                 "seg_dir": self.segmentation_dir(d, model),
                 "settings": self.volume_settings(d)} for d in datasets]

    def panel_status(self, dataset: str) -> dict[str, str]:
        """Model -> the status file of its reconstruction job on ``dataset``, in the panel's
        column order (``datasets.<name>.models``); rule ``medical_panel`` reads the
        reconstructions beside each."""
        return {m: f"results/recon/{m}/{dataset}/status.csv"
                for m in self.plan.models_on(dataset)}
