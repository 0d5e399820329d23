"""The workflow end to end on the two streamed large-set types, on files written here: a folder
of WebDataset tar shards (one sample's image member is not an image) cut into two
reconstruction jobs, and a Hugging Face ``save_to_disk`` folder (one row's image bytes are not
an image). Each broken item is one error row with its reason; every other item is scored, from
memory, while only ``keep_reconstructions`` PNGs are written."""
import math

import pandas as pd
import pytest
import yaml
from skimage.metrics import peak_signal_noise_ratio
from test_large_set_readers import HF_SPEC, PHOTOS, hf_set, sample, write_shard
from test_workflow import smk

from roundtrip.core.imaging import read_image

MODELS = ("identity", "jpeg")
KEEP = 2


def targets() -> list[str]:
    return [f"results/metrics/{m}/{d}/image_quality.csv" for m in MODELS for d in ("w", "h")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("large")
    shards = work / "shards"
    shards.mkdir()
    write_shard(shards / "shard-000000.tar", [sample("s000"), sample("s001")])
    broken = sample("s002") | {"png": b"these bytes are not an image"}
    write_shard(shards / "shard-000001.tar", [broken, sample("s003"), sample("s004")])
    hf_set(broken_row=2).save_to_disk(str(work / "saved"))
    config = {
        "run": {"keep_reconstructions": KEEP},
        "datasets": {"w": {"type": "webdataset", "path": str(shards), "shards": 2},
                     "h": {**HF_SPEC, "path": str(work / "saved")}},
        "models": {"identity": {"type": "identity"}, "jpeg": {"type": "jpeg", "quality": 75}},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False}},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    smk(work, *targets())
    return work


def test_broken_items_are_error_rows_and_the_rest_are_scored(run):
    for model in MODELS:
        w = pd.read_csv(run / f"results/metrics/{model}/w/image_quality.csv", dtype={
            "item_id": str}).set_index("item_id")
        assert sorted(w.index) == ["s000", "s001", "s002", "s003", "s004"]
        assert w.loc["s002", "status"] == "error"
        assert "not a recognised image format" in w.loc["s002", "reason"]
        assert (w.drop(index="s002")["status"] == "ok").all()
        h = pd.read_csv(run / f"results/metrics/{model}/h/image_quality.csv", dtype={
            "item_id": str}).set_index("item_id")
        assert list(h["status"]) == ["ok", "ok", "error", "ok"]
        assert "cannot decode row 2 img" in h.loc["000002", "reason"]
        if model == "identity":
            assert (h.drop(index="000002")["psnr"] == math.inf).all()


def test_scores_match_a_reference_psnr_on_the_kept_reconstructions(run):
    """Items are scored in memory; the PNGs kept are the set's first ``KEEP`` ok items (in the
    first of the two jobs) and give back the scored values under scikit-image's PSNR."""
    scores = pd.read_csv(run / "results/metrics/jpeg/w/image_quality.csv",
                         dtype={"item_id": str}).set_index("item_id")
    for item_id in ("s000", "s001"):
        recon = read_image(run / f"results/recon/jpeg/w/{item_id}.png")
        reference = PHOTOS[item_id][0]
        assert recon.shape == reference.shape
        assert scores.loc[item_id, "psnr"] == pytest.approx(
            peak_signal_noise_ratio(reference, recon, data_range=255), abs=1e-6)
    psnr = scores["psnr"].dropna()
    assert len(psnr) == 4 and 20 < psnr.min() and psnr.max() < 60


def test_disk_holds_only_the_kept_reconstructions(run):
    kept = {"w": ["s000", "s001"], "h": ["000000", "000001"]}  # the first KEEP ok rows
    for model in MODELS:
        for dataset, ok in (("w", 4), ("h", 3)):
            pngs = sorted(p.stem for p in (run / f"results/recon/{model}/{dataset}").glob("*.png"))
            assert pngs == kept[dataset]
            status = pd.read_csv(run / f"results/recon/{model}/{dataset}/status.csv")
            assert (status["status"] == "ok").sum() == ok


def test_a_second_run_does_nothing(run):
    out = smk(run, *targets())
    assert "Nothing to be done" in out
