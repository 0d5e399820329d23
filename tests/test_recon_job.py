"""The batched reconstruction job (roundtrip.workflow.recon_job.run_recon_jobs): every set gets
the bytes its own job (run_recon_job) writes, and the model is loaded once for all of them."""
from __future__ import annotations

import filecmp

import pandas as pd
import pytest

from roundtrip.datasets import build_dataset
from roundtrip.stages import reconstruct
from roundtrip.workflow import recon_job

SETS = {"photos": ["astronaut", "coffee"], "gray": ["camera"]}
JPEG = {"type": "jpeg", "quality": 40}
TARGETS = {"image_quality": "roundtrip.evals.vtbench.image_quality:ImageQualityScorer"}


def _jobs(root, sets) -> list[dict]:
    jobs = []
    for name in sets:
        recon, metrics = root / "recon" / name, root / "metrics" / name
        metrics.mkdir(parents=True, exist_ok=True)
        jobs.append({"dataset": name, "manifest": str(root.parent / "datasets" / name / "manifest.csv"),
                     "outputs": {"status": str(recon / "status.csv"),
                                 "image_quality": str(metrics / "image_quality.csv"),
                                 "set": str(metrics / "set.csv")},
                     "scorers": {"image_quality": {}}, "targets": TARGETS,
                     "protocol": "native", "size": None})
    return jobs


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("sets")
    for name, images in SETS.items():
        build_dataset(name, {"type": "skimage", "images": images}, root / "datasets" / name)
    return root


def test_batched_job_writes_the_bytes_of_the_per_set_jobs(datasets, monkeypatch):
    loads = []
    real = reconstruct.load_model
    monkeypatch.setattr(reconstruct, "load_model",
                        lambda *a, **k: loads.append(a[0]) or real(*a, **k))
    alone, batched = datasets / "alone", datasets / "batched"
    for job in _jobs(alone, SETS):
        recon_job.run_recon_job("jpeg", JPEG, job["manifest"], job["outputs"], job["scorers"],
                                job["targets"], device="cpu", protocol="native", size=None)
    assert loads == ["jpeg", "jpeg"]  # one load per job
    recon_job.run_recon_jobs("jpeg", JPEG, _jobs(batched, SETS), device="cpu")
    assert loads == ["jpeg"] * 3  # the batched job loads the model once for both sets
    files = sorted(p.relative_to(alone) for p in alone.rglob("*")
                   if p.is_file() and not p.name.endswith(".journal.csv"))
    assert len([f for f in files if f.suffix == ".png"]) == 3
    assert {f.name for f in files} >= {"status.csv", "image_quality.csv", "set.csv"}
    for rel in files:
        if rel.name == "status.csv" or (rel.parent.name == "shards" and rel.suffix == ".csv"):
            # status files: every column but the wall-clock seconds, which no table reads
            a, b = (pd.read_csv(root / rel, dtype=str, keep_default_na=False)
                    for root in (alone, batched))
            assert a.drop(columns="seconds").equals(b.drop(columns="seconds")), rel
            assert pd.to_numeric(b["seconds"]).ge(0).all()
            continue
        assert filecmp.cmp(alone / rel, batched / rel, shallow=False), rel
    # the batched job's files are not all empty copies: PSNR of JPEG q40 is finite and < 60 dB
    quality = pd.read_csv(batched / "metrics/photos/image_quality.csv")
    assert quality["status"].eq("ok").all() and quality["psnr"].between(20, 60).all()
