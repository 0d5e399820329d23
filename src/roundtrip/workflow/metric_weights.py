"""Metrics that need pretrained weights (LPIPS, FID/KID): whether they can run on this machine,
and the note a table prints where they cannot.

Weights cannot be downloaded inside a job: they are fetched beforehand into
``metrics.weights_cache`` (``roundtrip weights fetch``). Where they are missing, the jobs that
would compute the metric are not planned and the table cells read n/a with
:meth:`WeightedMetrics.unavailable`'s note.
"""
from __future__ import annotations

from functools import cached_property

from roundtrip.core import weights

#: Config keys of the metrics that need pretrained weights -> the table file they fill.
WEIGHTED_METRIC_FILES = {"metrics.lpips": "lpips", "metrics.fid": "distribution"}


def metric_weight_names(metrics: dict) -> dict[str, str]:
    """``config key -> weights registry name`` of every enabled metric that needs weights."""
    files = {}
    if metrics.get("lpips", {}).get("enabled", True):
        files["metrics.lpips"] = weights.LPIPS_NETS[metrics.get("lpips", {}).get("net", "alex")]
    if metrics.get("fid", {}).get("enabled", True):
        files["metrics.fid"] = "inception-fid"
    return files


class WeightedMetrics:
    """What the config's ``metrics`` section can run with the weights in its cache.

    Args:
        metrics: the config's ``metrics`` section (``lpips``, ``fid``, ``weights_cache``).
    """

    def __init__(self, metrics: dict):
        self.metrics = metrics

    def files(self, key: str) -> list[str]:
        """The weight file of metric config key ``key`` when it is in the cache, else nothing.

        As an input, a file fetched later changes the job's input set, so Snakemake reruns the
        job that wrote "n/a" cells (rerun trigger "input").
        """
        name = metric_weight_names(self.metrics).get(key)
        if name is None:
            return []
        path = weights.path_of(name, self.metrics["weights_cache"])
        return [str(path)] if path.is_file() else []

    @cached_property
    def lpips_run(self) -> bool:
        """LPIPS runs: enabled and its weights in the cache (else the tables print n/a and no
        job is spent writing empty files; fetching the weights adds the work)."""
        return self.metrics["lpips"]["enabled"] and bool(self.files("metrics.lpips"))

    @cached_property
    def fid_run(self) -> bool:
        """FID/KID run: enabled and the Inception weights in the cache."""
        return self.metrics["fid"]["enabled"] and bool(self.files("metrics.fid"))

    @cached_property
    def perceptual_run(self) -> bool:
        """The reconstruction jobs also score LPIPS or FID/KID."""
        return self.lpips_run or self.fid_run

    def unavailable(self) -> dict[str, str]:
        """Table file kinds (``lpips``, ``distribution``) whose metric cannot run here, with
        the footnote saying why and what to fetch."""
        return {WEIGHTED_METRIC_FILES[key]: weights.missing_note(name, self.metrics["weights_cache"])
                for key, name in metric_weight_names(self.metrics).items()
                if not self.files(key)}
