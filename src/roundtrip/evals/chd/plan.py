"""What a config asks of CHD and CMMS: the reference tokenizer, the scored sets, the CMMS
training sets and the sensitivity experiment.

One :class:`TokenPlan` per run (:meth:`roundtrip.workflow.plan.Plan.view`), read by the rules
(``rules/evals/chd.smk``) and the spec (:mod:`.spec`); unit-tested in ``tests/test_plan.py``.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.datasets import IMAGES

#: Role of a set that only CMMS trains on (:func:`cmms_only_datasets`): built, not reconstructed.
CMMS_TRAINING = "cmms_training"


def training_datasets(config: dict) -> list[str]:
    """The datasets CMMS trains on: ``metrics.tokens.cmms.datasets``, else the reference
    tokenizer's ``train.datasets``, else the first configured dataset.

    Raises:
        KeyError: ``metrics.tokens.reference`` or the model it names is missing.
    """
    tokens = config["metrics"]["tokens"]
    if "datasets" in tokens.get("cmms", {}):
        return list(tokens["cmms"]["datasets"])
    spec = config["models"][tokens["reference"]]
    return list(spec.get("train", {}).get("datasets", [next(iter(config["datasets"]))]))


def cmms_only_datasets(config: dict) -> list[str]:
    """Sets named in ``metrics.tokens.cmms.datasets`` and scored nowhere (not in
    ``metrics.tokens.datasets``, not the sensitivity set): CMMS's held-out training images (CHD
    paper Sec. 4.2, 5.1), built but not reconstructed. Empty without a reference tokenizer or
    with ``allow_overlap: true``."""
    tokens = config["metrics"]["tokens"]
    cmms = tokens.get("cmms") or {}
    if not tokens.get("reference") or cmms.get("allow_overlap"):
        return []
    used = set(tokens.get("datasets") or []) | {(tokens.get("sensitivity") or {}).get("dataset")}
    return [d for d in cmms.get("datasets", []) if d not in used]


class TokenPlan:
    """The CHD/CMMS part of a run.

    Args:
        plan: the run's :class:`roundtrip.workflow.plan.Plan`.
    """

    def __init__(self, plan):
        self.plan = plan
        self.tokens: dict = plan.config["metrics"]["tokens"]
        self.reference: str | None = self.tokens["reference"]

    @cached_property
    def datasets(self) -> list[str]:
        """Sets scored in the reference tokenizer's tokens (CHD, CMMS); none without one."""
        if not self.reference:
            return []
        return list(self.tokens["datasets"] or
                    [d for d in self.plan.datasets if self.plan.roles[d] == IMAGES])

    @cached_property
    def sensitivity_dataset(self) -> str | None:
        """The set of the CHD paper's sensitivity experiment (Figure 2), if any."""
        return self.tokens["sensitivity"]["dataset"] if self.reference else None

    @property
    def cmms_file(self) -> str:
        """The CMMS regressor of the reference tokenizer (rule ``train_cmms``)."""
        return f"results/weights/cmms/{self.reference}/model.pt"

    def cmms_settings(self) -> dict:
        """``metrics.tokens.cmms`` with the datasets CMMS trains on."""
        return {**self.tokens["cmms"], "datasets": training_datasets(self.plan.config)}
