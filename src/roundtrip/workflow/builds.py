"""The dataset stage's part of the plan: what each build job builds, from which keys, in which job.

A dataset is built once into ``results/datasets/{dataset}/`` (``manifest.csv`` and the files it
names) by rule ``build_dataset``, or, for the small sets made from packaged data, together with
the other sets of its kind in one batched job (``build_image_sets``, ``build_rendered_sets``,
``build_volume_sets``), which writes the same files. :class:`DatasetBuilds` is a view of the
:class:`~roundtrip.workflow.plan.Plan` (``plan.builds``).
"""
from __future__ import annotations

from roundtrip.core.imaging import DEFAULT_MAX_PIXELS
from roundtrip.datasets import (DATASET_TYPES, SYNTHETIC_TYPES, dataset_fingerprint, file_keys,
                                is_volume_spec)
from roundtrip.datasets.volumes import DEFAULT_MAX_VOXELS

#: The defaults of config ``limits`` (config.schema.yaml), as the readers apply them.
LIMIT_DEFAULTS = {"max_pixels": DEFAULT_MAX_PIXELS, "max_voxels": DEFAULT_MAX_VOXELS}
#: Batched build groups (:meth:`DatasetBuilds.group`) -> their rule.
BUILD_RULES = {"images": "build_image_sets", "rendered": "build_rendered_sets",
               "volumes": "build_volume_sets"}


class DatasetBuilds:
    """The build jobs of a plan.

    Args:
        plan: the run's :class:`~roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan
        self.config = plan.config

    def spec(self, dataset: str) -> dict:
        """The keys of ``datasets.<name>`` that change its built files (a change of
        ``protocol`` or ``models`` must not rebuild it); rendered sets also depend on the
        ``render`` and ``audit`` sections (but ``audit.max_no_verdict``) and the OCR
        normalization."""
        spec = self.config["datasets"][dataset]
        out = {k: spec[k] for k in file_keys(spec) if k in spec}
        # limits other than the defaults are part of what a dataset is built from (a default
        # one changes nothing, so results built before the key existed stay valid)
        limits = {k: v for k, v in self.config.get("limits", {}).items()
                  if v is not None and v != LIMIT_DEFAULTS.get(k)}
        if limits:
            out["limits"] = limits
        if spec["type"] in SYNTHETIC_TYPES:
            # max_no_verdict decides what page 1 says of the audit, not what is built
            audit = {k: v for k, v in self.config["audit"].items() if k != "max_no_verdict"}
            out |= {"render": self.config["render"], "audit": audit,
                    "normalization": self.config["ocr"]["normalization"]}
        return out

    def fingerprint(self, dataset: str) -> str:
        """Changes when the files a dataset is read from change, so that it is rebuilt: a
        folder's images (and its labels file), a release TSV with the folders beside it, a
        webdataset's shards, an HF dataset's files, any other ``path``
        (:func:`roundtrip.datasets.dataset_fingerprint`)."""
        return dataset_fingerprint(self.config["datasets"][dataset])

    def group(self, dataset: str) -> str | None:
        """The batched build job a dataset is built in (:meth:`batches`), or None for a job of
        its own: with ``run.batch_packaged_sets`` on (the default), a set of a packaged type
        (:attr:`roundtrip.datasets.DatasetType.packaged`) is built with the other sets of its
        kind (``"rendered"`` text sets, ``"images"``), and a volume set with no ``path``
        (nibabel's bundled volumes, MONAI's synthetic ones) with the other such sets
        (``"volumes"``). Such a build takes a second of work after 1-5 s of Python, torch and
        MONAI start-up. A user's set (``path``) keeps a job of its own, cached and rebuilt on
        its own."""
        spec = self.config["datasets"][dataset]
        if not self.config["run"].get("batch_packaged_sets", True):
            return None
        if is_volume_spec(spec):
            return None if spec.get("path") else "volumes"
        kind = DATASET_TYPES.get(spec["type"])
        if kind is None or not kind.packaged:
            return None
        return "rendered" if kind.rendered else "images"

    def batches(self) -> list[tuple[str, list[str]]]:
        """``(rule name, datasets)`` of the batched build jobs (:meth:`group`), in the order of
        the groups' first sets: ``build_image_sets``, ``build_rendered_sets``,
        ``build_volume_sets``. Each set gets the files its own ``build_dataset`` job would
        write."""
        groups: dict[str, list[str]] = {}
        for d in self.plan.datasets:
            group = self.group(d)
            if group:
                groups.setdefault(group, []).append(d)
        return [(BUILD_RULES[g], sets) for g, sets in groups.items()]

    def priority(self, datasets: list[str]) -> int:
        """The priority of the batched build of ``datasets``: 50, the training's own, where one
        is a training set of a model an evaluation needs first (CHD's reference tokenizer,
        whose CMMS training waits for it: the run's longest chain), else 20."""
        first = {d for m in self.plan.trained_first
                 for d in self.plan.train_settings(m)["datasets"]}
        return 50 if first & set(datasets) else 20

    def jobs(self, datasets: list[str]) -> list[dict]:
        """What a build job does, per dataset in order: ``dataset``, ``spec`` (:meth:`spec`)
        and ``manifest`` (the file it writes)."""
        return [{"dataset": d, "spec": self.spec(d),
                 "manifest": f"results/datasets/{d}/manifest.csv"} for d in datasets]

    def threads(self, dataset: str) -> int:
        """Rendered text sets read every render back with ``audit.threads`` Tesseract
        processes; every other set is built by one process."""
        if self.config["datasets"][dataset]["type"] not in SYNTHETIC_TYPES:
            return 1
        return self.plan.item_threads(dataset, self.config["audit"]["threads"])
