"""The Telephone Game end to end: offline render_ocr pairs (identity and a lossy codec), an api
pair against the loopback OpenAI-compatible server (tests/fake_openai.py draws the quoted prompt
text as the "generated" image and captions by reading it with Tesseract), and a chain folder in
the released code's layout made elsewhere; faults are recorded per item, a rerun from scratch
asks the server only what failed, and raising G computes only the new generations. Pairs whose
models run in process (tiny random models built by the test) ask for the GPU of a CUDA run and
run on the CPU."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from fake_openai import FakeOpenAI
from PIL import Image

pytestmark = [pytest.mark.workflow, requires_tesseract]

KEY = "sk-telephone-secret-0123456789"
CAPTIONS = [{"id": "bus", "caption": "The red bus"}, {"id": "cat", "caption": "Two cats"},
            {"id": "bad", "caption": "FAIL-ALWAYS lamp"}]


def smk(workdir, env, *extra):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *extra],
                          cwd=workdir, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def released_chains(root):
    tf = root / "text-first"
    (tf / "gen-1").mkdir(parents=True)
    pd.DataFrame({"filename": ["x1.png"], "caption": ["a red bus"]}).to_csv(tf / "gen-0.csv",
                                                                             index=False)
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(tf / "gen-1/x1.jpg")
    for g, text in ((2, "a red bus"), (4, "a bus"), (6, "a car")):
        pd.DataFrame({"filename": ["x1.png"], "caption": [text]}).to_csv(tf / f"gen-{g}.csv",
                                                                         index=False)
        (tf / f"gen-{g + 1}").mkdir()
        Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(tf / f"gen-{g + 1}/x1.jpg")
    (tf / "gen-7").rename(tf / "gen-7-unused")  # the folder ends at generation 6


def config_for(base_url, work, generations=6):
    fake = {"base_url": base_url, "key_env": "RT_FAKE_KEY", "timeout_s": 20, "max_retries": 1,
            "backoff_s": 0.05, "concurrency": 2, "cache_dir": "api_cache"}
    return {
        "datasets": {"caps": {"type": "captions", "captions": str(work / "caps.jsonl"),
                              "render": True},
                     "elsewhere": {"type": "chains", "path": str(work / "made_elsewhere"),
                                   "model": "other_um"}},
        "models": {"identity": {"type": "identity"},
                   "bicubic_x8": {"type": "resample", "factor": 8}},
        "ocr": {"engines": {"tesseract": {"type": "tesseract"}}},
        "api": {"endpoints": {"fake": fake},
                "prompts": {"telephone_t2i": 'Draw this: "{caption}"',
                            "telephone_i2t": "Describe this image."}},
        "telephone": {"generations": generations,
                      "pairs": {"render_id": {"type": "render_ocr"},
                                "render_bicubic": {"type": "render_ocr", "tokenizer": "bicubic_x8"},
                                "fakeum": {"type": "api", "endpoint": "fake", "t2i_model": "img",
                                           "i2t_model": "cap", "size": "512x512"}},
                      "backbones": {"wordllama": {"type": "wordllama"}, "cer": {"type": "cer"}}},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                    "tokens": {"reference": None}},
        "tables": {"bootstrap": {"samples": 200}},
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("telephone_wf")
    (work / "caps.jsonl").write_text("\n".join(json.dumps(c) for c in CAPTIONS) + "\n")
    released_chains(work / "made_elsewhere")
    env = dict(os.environ, RT_FAKE_KEY=KEY)
    with FakeOpenAI(key=KEY) as srv:
        (work / "config.yaml").write_text(yaml.safe_dump(config_for(srv.base_url, work)))
        smk(work, env)
        first = srv.total()
        smk(work, env)  # nothing to do: not one request
        idle = srv.total() - first
        tables = {p.name: p.read_bytes() for p in (work / "results/tables").glob("telephone_*.csv")}
        subprocess.run(["rm", "-rf", "results", ".snakemake"], cwd=work, check=True)
        smk(work, env)
        rerun = srv.total() - first
        rerun_tables = {p.name: p.read_bytes()
                        for p in (work / "results/tables").glob("telephone_*.csv")}
        # G 6 -> 8: only generations 7 and 8 are new
        (work / "config.yaml").write_text(yaml.safe_dump(config_for(srv.base_url, work, 8)))
        status = sorted((work / "results/telephone").glob("*/caps/chains/*/gen-*.status.csv"))
        stamps = {p: p.stat().st_mtime_ns for p in status}
        before = srv.total()
        smk(work, env)
        extended = srv.total() - before
        kept = all(p.stat().st_mtime_ns == t for p, t in stamps.items())
        new = {p.name for p in (work / "results/telephone").glob("*/caps/chains/*/gen-*.status.csv")
               if p not in stamps}
    return {"work": work, "first": first, "idle": idle, "rerun": rerun, "tables": tables,
            "rerun_tables": rerun_tables, "extended": extended, "kept": kept, "new": new}


def test_tables_and_figures(run):
    work = run["work"]
    for name in ("telephone_similarity", "telephone_mcd", "telephone_sdr", "telephone_sdr_fits",
                 "telephone_mgg", "telephone_mgg_grid"):
        for ext in ("csv", "md", "tex"):
            assert (work / f"results/tables/{name}.{ext}").stat().st_size > 0
    for name in ("similarity", "sdr", "mgg", "mgg_mcd", "strip"):
        assert (work / f"results/figures/telephone_{name}.png").stat().st_size > 1000
    for name in ("telephone_mgg", "telephone_mgg_grid"):
        assert "n/a: no GenEval prompt set" in (work / f"results/tables/{name}.md").read_text()


def test_drift_grows_with_the_loss_and_identity_is_a_fixed_point(run):
    mcd = pd.read_csv(run["work"] / "results/tables/telephone_mcd.csv").set_index("model")
    # G = 8 after the extension run; the identity pair reads its renders back exactly
    # the paper's MCD_avg needs MPNet, CLIP and DINO (not in this offline config): n/a
    assert mcd["MCD_avg"].isna().all()
    assert mcd.loc["render_id", "MCD_avg_all_experiments"] == pytest.approx(1.0)
    assert mcd.loc["render_bicubic", "MCD_avg_all_experiments"] < 0.5
    assert mcd.loc["render_id", "generations"] == 8


def test_api_pair_records_faults_per_item(run):
    sim = pd.read_csv(run["work"] / "results/telephone/fakeum/caps/similarity.csv",
                      keep_default_na=False, dtype=str)
    bad = sim[sim["item_id"] == "bad"]
    # its T2I always fails (HTTP 500 after the retry): every text-first value, and image-first
    # after generation 1 (I2T of the input image, which succeeds)
    failed = bad[(bad["chain"] == "text-first") | (bad["generation"] != "1")]
    assert (failed["status"] == "failed").all()
    assert failed["reason"].str.contains("images.generate img at fake: gave up").all()
    assert (bad[(bad["chain"] == "image-first") & (bad["generation"] == "1")]["status"] == "ok").all()
    good = sim[sim["item_id"] != "bad"]
    assert (good["status"] == "ok").all()
    tf = pd.read_csv(run["work"] / "results/telephone/fakeum/caps/chains/text-first/gen-2.csv")
    assert "red bus" in tf.set_index("filename").loc["bus", "caption"].lower()


def test_rerun_asks_only_what_failed_and_raising_g_only_new_generations(run):
    assert run["first"] > 0 and run["idle"] == 0
    # from scratch: every successful request is a cache hit; the FAIL-ALWAYS item's failing
    # T2I requests are sent again (1 retry each): text-first at generation 1, image-first at 2
    assert run["rerun"] == 2 * 2
    assert run["rerun_tables"] == run["tables"]
    # G 6 -> 8: generations 1..6 are kept untouched, only 7 and 8 are made (the api pair's
    # fixed-point chains repeat earlier requests: mostly cache hits)
    assert run["kept"] and run["new"] == {"gen-7.status.csv", "gen-8.status.csv"}
    assert run["extended"] < run["first"]


def test_chains_made_elsewhere_are_scored(run):
    sim = pd.read_csv(run["work"] / "results/telephone/other_um/elsewhere/similarity.csv")
    tt = sim[(sim["direction"] == "text_text") & (sim["backbone"] == "cer")]
    values = tt.set_index("generation")["similarity"]
    assert values[2] == 1.0 and values[4] < 1.0 and values[6] < values[4]
    later = tt[tt["generation"] == 8]
    assert (later["status"] == "error").all()  # the folder stops at generation 6
    assert not (run["work"] / "results/telephone/other_um/elsewhere/chains").exists()


def test_offline_pairs_on_the_builtin_captions_share_one_job(tmp_path):
    """The render_ocr pairs on the built-in captions run in one job per set
    (telephone_chains_sets), each writing the bytes its own telephone_chains job writes
    (``run.batch_packaged_sets: false``)."""
    files = {}
    for batched in (True, False):
        work = tmp_path / f"batched_{batched}"
        work.mkdir()
        config = {"datasets": {"caps": {"type": "captions", "captions": "builtin", "count": 1}},
                  "models": {"identity": {"type": "identity"},
                             "bicubic_x8": {"type": "resample", "factor": 8}},
                  "ocr": {"engines": {"tesseract": {"type": "tesseract"}}},
                  "run": {"batch_packaged_sets": batched},
                  "telephone": {"generations": 2,
                                "pairs": {"render_id": {"type": "render_ocr"},
                                          "render_bicubic": {"type": "render_ocr",
                                                             "tokenizer": "bicubic_x8"}},
                                "backbones": {"cer": {"type": "cer"}}},
                  "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                              "tokens": {"reference": None}},
                  "tables": {"bootstrap": {"samples": 100}}}
        (work / "config.yaml").write_text(yaml.safe_dump(config))
        plan = smk(work, dict(os.environ), "-n", "--quiet", "rules").stdout
        chain_rule = "telephone_chains_sets" if batched else "telephone_chains"
        counts = dict(line.split() for line in plan.splitlines()
                      if line.startswith("telephone_chains"))
        assert counts == {chain_rule: "1" if batched else "2"}
        smk(work, dict(os.environ))
        files[batched] = {p.relative_to(work).as_posix(): p.read_bytes()
                          for p in (work / "results/telephone").glob("*/caps/*.csv")}
    assert len(files[True]) == 4 and files[True] == files[False]
    assert (tmp_path / "batched_True/logs/telephone_chains_sets/caps.log").is_file()


def _declared_resources(dry_run: str) -> dict[str, list[str]]:
    """``rule name -> its jobs' resources lines`` of a ``snakemake -n`` printout."""
    import re

    out, rule = {}, None
    for line in dry_run.splitlines():
        if m := re.match(r"\s*rule (\w+):$", line):
            rule = m.group(1)
        elif rule and line.strip().startswith("resources:"):
            out.setdefault(rule, []).append(line.strip())
    return out


def test_in_process_pairs_ask_for_the_gpu_and_run_on_the_cpu(tmp_path):
    """A diffusers pair (a tiny Stable Diffusion + the tiny Gemma 3 chat VLM) and a transformers
    pair (a tiny Janus, both directions) beside an offline pair: with run.device cuda their
    chain jobs declare gpu=1 and the render_ocr job gpu=0; with run.device cpu the jobs run
    here, write their usage, and a rerun from scratch (results removed, the response cache
    kept) generates nothing and writes the same similarity files."""
    import shutil

    import tiny_models

    models = tmp_path / "models"
    sd = tiny_models.tiny_stable_diffusion(models / "sd")
    gemma = tiny_models.tiny_gemma3(models / "gemma")
    janus = tiny_models.tiny_janus(models / "janus")
    work = tmp_path / "work"
    work.mkdir()
    config = {"datasets": {"caps": {"type": "captions", "captions": "builtin", "count": 2}},
              "models": {"identity": {"type": "identity"}},
              "ocr": {"engines": {"tesseract": {"type": "tesseract"}}},
              "api": {"prompts": {"telephone_t2i": 'Draw this: "{caption}"',
                                  "telephone_i2t": "Describe this image."}},
              "telephone": {"generations": 2,
                            "pairs": {"render_id": {"type": "render_ocr"},
                                      "sd_gemma": {"type": "diffusers", "t2i": str(sd),
                                                   "i2t": str(gemma), "steps": 2, "size": 64,
                                                   "max_new_tokens": 5},
                                      "janus": {"type": "transformers", "model": str(janus),
                                                "max_new_tokens": 5}},
                            "backbones": {"cer": {"type": "cer"}}},
              "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                          "tokens": {"reference": None}},
              "tables": {"bootstrap": {"samples": 100}},
              "run": {"device": "cuda"}}
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    jobs = _declared_resources(smk(work, dict(os.environ), "-n").stdout)
    assert len(jobs["telephone_chains"]) == 2
    assert all("gpu=1" in r for r in jobs["telephone_chains"]), jobs
    assert all("gpu=0" in r for r in jobs["telephone_chains_sets"]), jobs

    config["run"]["device"] = "cpu"
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    smk(work, dict(os.environ))
    files = {p.relative_to(work).as_posix(): p.read_bytes()
             for p in (work / "results/telephone").glob("*/caps/similarity.csv")}
    assert len(files) == 3
    for pair in ("sd_gemma", "janus"):
        root = work / f"results/telephone/{pair}/caps/chains"
        for chain in ("text-first", "image-first"):
            status = pd.read_csv(root / chain / "gen-2.status.csv")
            assert (status["status"] == "ok").all() and len(status) == 2
    ledger = [json.loads(x)
              for x in (work / "results/api/usage.jsonl").read_text().splitlines()]
    by_model = {x["endpoint"]: x for x in ledger}
    assert set(by_model) == {f"diffusers:{sd}", f"transformers:{gemma}",
                             f"transformers:{janus}"}
    # 2 items x (1 image + 1 caption) per chain and pair, 2 chains
    assert by_model[f"transformers:{janus}"]["requests"] == 8
    assert by_model[f"transformers:{janus}"]["images"] == 4
    assert by_model[f"diffusers:{sd}"]["images"] == 4

    shutil.rmtree(work / "results")
    smk(work, dict(os.environ))
    again = [json.loads(x)
             for x in (work / "results/api/usage.jsonl").read_text().splitlines()]
    assert sum(x["requests"] for x in again) == 0  # the rerun: 0 generations
    assert sum(x["cache_hits"] for x in again) == 8 + 4 + 4  # Janus; SD's images, Gemma's
    assert {p.relative_to(work).as_posix(): p.read_bytes()
            for p in (work / "results/telephone").glob("*/caps/similarity.csv")} == files
