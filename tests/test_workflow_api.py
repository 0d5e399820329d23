"""End to end through an OpenAI-compatible server (tests/fake_openai.py on loopback):
GPT synthesis -> reconstruction with a GPT-image row -> VLM OCR -> CER/WER -> OCR robustness,
with injected faults, the cache on a second run, the key kept out of every file, and a missing
key failing before any work."""
import math
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import REPO, default_prompts, requires_tesseract
from fake_openai import FakeOpenAI
from result_tables import reconstruction, reconstruction_text

pytestmark = [pytest.mark.workflow, requires_tesseract]

KEY = "sk-workflow-secret-9876543210"
PROMPTS = default_prompts()


def smk(workdir, env, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *args],
                          cwd=workdir, capture_output=True, text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def config_for(base_url):
    fake = {"base_url": base_url, "key_env": "RT_FAKE_KEY", "timeout_s": 10, "max_retries": 4,
            "backoff_s": 0.05, "concurrency": 2, "cache_dir": "api_cache"}
    small = {"rounds": 1, "per_round": 2}
    return {
        "datasets": {
            "scenes": {"type": "gpt_highres", "endpoint": "fake", "image_size": "256x256", **small},
            "movie_posters": {"type": "gpt_posters", "endpoint": "fake", "image_size": "512x512",
                              "text_eval": True, **small},
            # the server fails every request carrying FAIL-ALWAYS: this item's image never comes
            "broken": {"type": "gpt_detail", "endpoint": "fake", "rounds": 1, "per_round": 1,
                       "max_attempts": 1, "image_prompt": "FAIL-ALWAYS {description}",
                       "image_size": "64x64", "models": ["identity"]},
        },
        "models": {"identity": {"type": "identity"},
                   "jpeg_q30": {"type": "jpeg", "quality": 30},
                   "bicubic_x4": {"type": "resample", "factor": 4},
                   "gpt_image": {"type": "api_image", "endpoint": "fake"}},
        "ocr": {"engines": {"tesseract": {"type": "tesseract", "psm": 6},
                            "vlm": {"type": "vlm", "endpoint": "fake", "model": "fake-vlm"}}},
        "api": {"endpoints": {"fake": fake}, "prompts": PROMPTS},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False}},
        "tables": {"bootstrap": {"samples": 200}},
    }


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    work = tmp_path_factory.mktemp("api_wf")
    env = dict(os.environ, RT_FAKE_KEY=KEY)
    with FakeOpenAI(key=KEY) as srv:
        (work / "config.yaml").write_text(yaml.safe_dump(config_for(srv.base_url)))
        srv.inject("429", "500")  # the run starts with a rate limit and a server error
        first = smk(work, env)
        counts = dict(srv.counts)
        # second run from scratch (results deleted, cache kept): not one request
        snapshot = {p: p.read_bytes() for p in (work / "results/tables").glob("*.csv")}
        first.logs = "".join(p.read_text() for p in (work / "logs").rglob("*.log"))
        first.usage = pd.read_csv(work / "results/api/usage_summary.csv")
        subprocess.run(["rm", "-rf", "results", ".snakemake"], cwd=work, check=True)
        second = smk(work, env)
        yield work, srv, counts, first, second, snapshot


def test_full_chain_fills_the_tables(chain):
    work, srv, counts, *_ = chain
    # 4 images, plus 5 attempts (max_retries 4) at the one that always fails
    assert counts["/v1/chat/completions"] > 0 and counts["/v1/images/generations"] == 4 + 5
    assert counts["/v1/images/edits"] >= 4
    posters = pd.read_csv(work / "results/datasets/movie_posters/manifest.csv")
    assert (posters["status"] == "ok").all()
    assert {"prompt", "api_model", "generated_at", "title", "slogan", "text"} <= set(posters)
    rec = reconstruction(work)
    assert rec.loc["identity", "scenes.psnr"] == math.inf
    # the fake "recreation" keeps 5 bits per channel: about 40 dB, better than JPEG q30
    assert 35 < rec.loc["gpt_image", "scenes.psnr"] < 50
    assert rec.loc["gpt_image", "scenes.psnr"] > rec.loc["jpeg_q30", "scenes.psnr"]
    text = pd.read_csv(work / "results/tables/text_preservation.csv").set_index("model")
    assert text.loc["identity", "movie_posters.cer"] == 0
    assert text.loc["bicubic_x4", "movie_posters.cer"] > text.loc["identity", "movie_posters.cer"]


def test_ocr_robustness_table_has_both_engines_and_tau(chain):
    work = chain[0]
    rob = pd.read_csv(work / "results/tables/ocr_robustness.csv").set_index("model")
    for engine in ("tesseract", "vlm"):  # per dataset, as VTBench's Table 5 (posters)
        key = f"movie_posters/{engine}"
        assert rob.loc["identity", f"{key}.cer"] == 0
        assert rob.loc["bicubic_x4", f"{key}.cer"] > 0
        assert rob.loc["gpt_image", f"{key}.cer.n"] == 2
        assert f"{key}.wer" in rob
    # Table 5's first column is Table 3's poster CER (the table engine reads the same rows)
    text = pd.read_csv(work / "results/tables/text_preservation.csv").set_index("model")
    assert rob.loc["bicubic_x4", "movie_posters/tesseract.cer"] == pytest.approx(
        text.loc["bicubic_x4", "movie_posters.cer"])
    tau = pd.read_csv(work / "results/tables/ocr_rank_agreement.csv")
    cer = tau[tau["metric"] == "CER"].iloc[0]
    assert cer["dataset"] == "movie_posters"
    assert (cer["engine_a"], cer["engine_b"]) == ("tesseract", "vlm") and cer["n_models"] == 4
    assert -1 <= cer["kendall_tau"] <= 1
    md = (work / "results/tables/ocr_robustness.md").read_text()
    assert "tesseract" in md and "vlm" in md


def test_a_failing_item_is_recorded_and_the_run_goes_on(chain):
    work = chain[0]
    broken = pd.read_csv(work / "results/datasets/broken/manifest.csv")
    assert list(broken["status"]) == ["error"]
    assert "no image after 1 attempts" in broken.loc[0, "reason"]
    assert "HTTP 500" in broken.loc[0, "reason"]
    md = reconstruction_text(work)
    assert "0 of 1 items scored" in md and "no image after 1 attempts" in md


def test_faults_were_retried_and_usage_summed(chain):
    work, _, _, first, *_ = chain
    assert "429 rate limited" in first.logs and "HTTP 500" in first.logs
    usage = first.usage
    assert usage.loc[0, "endpoint"] == "fake" and usage.loc[0, "images"] >= 8
    assert usage.loc[0, "retries"] >= 2 + 4 and usage.loc[0, "failures"] == 1
    assert "API usage (fake)" in first.stderr


def test_second_run_sends_no_request_and_gives_the_same_tables(chain):
    work, srv, counts, _, second, snapshot = chain
    # only the failed image is asked for again (failures are not cached): its 5 attempts
    expected = dict(counts) | {"/v1/images/generations": counts["/v1/images/generations"] + 5}
    assert dict(srv.counts) == expected
    usage = pd.read_csv(work / "results/api/usage_summary.csv")
    assert usage.loc[0, "requests"] == 0 and usage.loc[0, "cache_hits"] > 0
    assert usage.loc[0, "failures"] == 1
    for path, data in snapshot.items():
        assert path.read_bytes() == data, path.name


def test_the_key_is_in_no_file(chain):
    work = chain[0]
    for folder in ("results", "logs", "api_cache", ".snakemake"):
        for p in (work / folder).rglob("*"):
            if p.is_file():
                assert KEY.encode() not in p.read_bytes(), p


def test_missing_key_fails_before_any_work(chain, tmp_path):
    work = tmp_path
    (work / "config.yaml").write_text((chain[0] / "config.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k != "RT_FAKE_KEY"}
    proc = smk(work, env, check=False)
    assert proc.returncode != 0
    assert "RT_FAKE_KEY is not set" in proc.stderr
    assert not (work / "results").exists()
