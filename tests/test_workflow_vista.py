"""VISTA-Bench end to end: a VLM on an OpenAI-compatible endpoint (tests/fake_openai.py: it reads
question images with Tesseract and solves the offline family) and the offline OCR solver answer
rendered questions as text and as images, on the renders and on a model's reconstructions;
faults are recorded per item as errors, never scored; a run whose reader's errors exceed
vista.max_error_share ends with exit status 1 once every table and the report are written, its
last console line saying why, and with 0 under run.tolerate_reader_errors; a rerun from scratch
asks only what failed; a plain run afterwards would ask the failed items again and nothing
else, whatever the endpoint's transport settings say (a dry run)."""
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from fake_openai import FakeOpenAI

from roundtrip.datasets.rendered.questions import table1_assignment

pytestmark = [pytest.mark.workflow, requires_tesseract]

KEY = "sk-vista-secret-0123456789"
RETRIES = 2


def smk(workdir, env, status=0):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2"],
                          cwd=workdir, capture_output=True, text=True, env=env)
    assert proc.returncode == status, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def config_for(base_url, jsonl, tolerate=False):
    fake = {"base_url": base_url, "key_env": "RT_FAKE_KEY", "timeout_s": 20,
            "max_retries": RETRIES, "backoff_s": 0.05, "concurrency": 2, "cache_dir": "api_cache"}
    return {
        "datasets": {
            "family": {"type": "vista_questions", "questions": "family", "count": 3,
                       "styles": ["arial", "brush"], "sizes": [9, 16, 32]},
            "mine": {"type": "vista_questions", "questions": str(jsonl), "styles": ["arial"],
                     "sizes": [16], "models": ["identity"]},
        },
        "models": {"identity": {"type": "identity"},
                   "bicubic_x4": {"type": "resample", "factor": 4}},
        "ocr": {"engines": {"tesseract": {"type": "tesseract", "psm": 3, "oem": 1}}},
        "vista": {"readers": {
            "fakevlm": {"type": "vlm", "endpoint": "fake", "model": "fake-vlm",
                        "prompt": "words20", "max_tokens": 32},
            "ocr_solver": {"type": "ocr_solver", "ocr": "tesseract"}}},
        "api": {"endpoints": {"fake": fake}},
        "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                    "tokens": {"reference": None}},
        "tables": {"bootstrap": {"samples": 200}},
        "run": {"tolerate_reader_errors": tolerate},
    }


#: What the fixture's runs printed and the server counted beyond its yielded tuple.
SEEN: dict = {}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("vista_wf")
    jsonl = work / "mine.jsonl"
    jsonl.write_text("\n".join(json.dumps(q) for q in [
        # the server fails every request that carries FAIL-ALWAYS: the text mode of this one
        {"id": "fails", "question": "FAIL-ALWAYS What is 2 + 3?", "options": ["4", "5"],
         "answer": "B"},
        {"id": "open", "question": "What is 6 + 1?", "answer": "7"},
    ]) + "\n")
    env = dict(os.environ, RT_FAKE_KEY=KEY)
    with FakeOpenAI(key=KEY) as srv:
        (work / "config.yaml").write_text(yaml.safe_dump(config_for(srv.base_url, jsonl)))
        srv.inject("429", "500")  # transient faults at the start: retried, not recorded
        # fakevlm's errors on mine (1 of 4 answers) exceed vista.max_error_share (10 %): exit 1
        SEEN["first"] = smk(work, env, status=1).stderr
        SEEN["first_outputs"] = {p: (work / p).is_file() for p in (
            "results/report.pdf", "results/summary.rst", "results/tables/vista_accuracy.csv",
            "results/tables/vista_tokenizers.csv")}
        first = srv.counts["/v1/chat/completions"]
        tables = {p.name: p.read_bytes() for p in (work / "results/tables").glob("vista_*.csv")}
        subprocess.run(["rm", "-rf", "results", ".snakemake"], cwd=work, check=True)
        (work / "config.yaml").write_text(yaml.safe_dump(config_for(srv.base_url, jsonl, True)))
        SEEN["second"] = smk(work, env).stderr
        second = srv.counts["/v1/chat/completions"] - first
        SEEN["server"] = {"attempts": srv.total() - first, "images": srv.images_seen}
        yield work, first, second, tables


def answers(work, reader, model, dataset):
    return pd.read_csv(work / f"results/vista/{reader}/{model}/{dataset}/answers.csv",
                       dtype={"item_id": str, "reason": str, "raw": str}, keep_default_na=False)


def test_the_vlm_answers_text_and_images(run):
    work, *_ = run
    df = answers(work, "fakevlm", "original", "family")
    text, vt = df[df["mode"] == "text"], df[df["mode"] == "vt"]
    grid = {("arial", 9.0), ("arial", 16.0), ("arial", 32.0), ("brush", 16.0)}
    extra = sum((st, float(sz)) not in grid for st, sz in table1_assignment(3, 0))
    # 9/16/32 pt in arial, brush at 16 pt, and each question's Table 1 render (App. B.2)
    assert len(text) == 3 and len(vt) == 3 * 4 + extra
    assert (vt["table1"] == 1).sum() == 3  # one Table 1 render per question
    assert (text["hit"] == 1).all() and (text["extracted_by"] == "letter").all()
    assert (text["reasoning"] == "solving the question").all()  # cut at </think> and kept
    large = vt[vt["size"].astype(float) == 32]
    assert large["hit"].mean() >= 2 / 3  # Tesseract reads 32 pt Arial
    small = vt[vt["size"].astype(float) == 9]
    assert small["hit"].mean() < large["hit"].mean()  # the smallest font widens the gap


def test_faults_are_recorded_per_item(run):
    work, *_ = run
    df = answers(work, "fakevlm", "original", "mine").set_index(["item_id", "mode"])
    failed = df.loc[("fails", "text")]
    # an error is not an answer: no score (left out of the accuracies, not counted wrong)
    assert failed["status"] == "error" and failed["hit"] == ""
    assert failed["reason"].startswith("HTTP 500: ") and "gave up after 3 attempts" in \
        failed["reason"]
    # the same question as an image does not carry the marker: answered (the solver reads it)
    assert df.loc[("fails__arial_16pt", "vt"), "status"] == "ok"
    open_q = df.loc[("open", "text")]
    assert open_q["extracted_by"] == "open" and open_q["status"] == "ok"


def test_tables_have_every_reader_and_model(run):
    work, *_ = run
    acc = pd.read_csv(work / "results/tables/vista_accuracy.csv")
    assert set(acc["reader"]) == {"fakevlm (family)", "ocr_solver (family)", "fakevlm (mine)",
                                  "ocr_solver (mine)"}
    row = acc.set_index("reader").loc["ocr_solver (family)"]
    assert row["overall.text_accuracy"] == 100.0
    # one render per question: the mean paired gap is Text - VT of the means (App. D.1 sign)
    assert row["overall.modality_gap"] == pytest.approx(
        row["overall.text_accuracy"] - row["overall.vt_accuracy"])
    tok = pd.read_csv(work / "results/tables/vista_tokenizers.csv").set_index("reader / model")
    assert {"fakevlm / identity (family)", "ocr_solver / bicubic_x4 (family)"} <= set(tok.index)
    # the 4x bicubic round trip blurs the question images: the reader loses accuracy
    bic = tok.loc["ocr_solver / bicubic_x4 (family)"]
    assert bic["recon.vt_accuracy"] < bic["original.vt_accuracy"]
    assert tok.loc["ocr_solver / identity (family)", "recon.delta_vt"] == 0.0
    assert (work / "results/figures/vista_gap.png").stat().st_size > 10_000


def test_a_rerun_asks_only_what_failed(run):
    work, first, second, tables = run
    assert first > 0
    # only the failing text request is sent again, once per answer file that holds it
    # (fakevlm on original and identity), each with its retries
    assert second == 2 * (RETRIES + 1)
    assert tables == {p.name: p.read_bytes() for p in (work / "results/tables").glob("vista_*.csv")}


def test_the_exit_status_says_a_reader_has_too_many_errors(run):
    """The first run ends with exit status 1 (the fixture checks it) after writing every table
    and the report; its last console line says why. The second, with
    run.tolerate_reader_errors, ends with 0 and says so. (The same end of the run after an
    endpoint went down, on the ledger of a job whose endpoint died: tests/test_endpoint_errors.py,
    test_an_endpoint_that_went_down_ends_the_run_with_exit_status_1.)"""
    assert all(SEEN["first_outputs"].values()), SEEN["first_outputs"]
    why = ("VISTA-Bench reader fakevlm (mine): 1 of 4 answers (25.0 %) are errors (HTTP 500 "
           "(1x)), more than vista.max_error_share (10 %)")
    last = SEEN["first"].strip().splitlines()[-1]
    assert last == (f"[roundtrip] exit status 1: {why}; every table and the report are written "
                    "(run.tolerate_reader_errors: true exits 0)")
    # (Snakemake's own lines, the log's path and the time, follow it)
    assert (f"[roundtrip] exit status 0 despite {why}: run.tolerate_reader_errors is true\n"
            in SEEN["second"])


def test_the_key_stays_out_of_every_file(run):
    work, *_ = run
    for path in list((work / "results").rglob("*")) + list((work / "logs").rglob("*")):
        if path.is_file() and path.suffix in (".csv", ".log", ".json", ".jsonl", ".md", ".tex"):
            assert KEY not in path.read_text(errors="ignore"), path


def test_errors_are_counted_apart_and_said_on_the_console(run):
    work, *_ = run
    md = (work / "results/tables/vista_accuracy.md").read_text()
    assert "1 of 2 answers are errors (no answer: left out, not counted wrong): HTTP 500 (1x)" \
        in md
    assert re.search(r"\[roundtrip\] vista answers of fakevlm on original/mine: 1 of \d+ answers "
                     r"are errors \(no answer: left out, not counted wrong\): HTTP 500 \(1x\); "
                     "the next run asks them again", SEEN["second"])
    # the usage summary of the second run counts what the server saw in it
    usage = pd.read_csv(work / "results/api/usage_summary.csv").set_index("endpoint").loc["fake"]
    assert usage["attempts"] == SEEN["server"]["attempts"] == 2 * (RETRIES + 1)
    assert usage["requests"] == 0 and usage["failures"] == 2 and usage["cache_hits"] > 0
    assert "API usage (fake) at http://127.0.0.1:" in SEEN["second"]
    assert f"{2 * (RETRIES + 1)} HTTP requests sent, 0 answered, 2 failed" in SEEN["second"]


def test_a_plain_run_asks_the_failed_items_again_whatever_the_transport(run):
    """The answer files with an error (fakevlm's on mine, original and identity) are due again
    (their reask parameter changed); changing the endpoint's concurrency, timeout and retries
    adds no job (they are not tracked parameters). A dry run: nothing is asked."""
    work, *_ = run
    config = yaml.safe_load((work / "config.yaml").read_text())
    before = (work / "config.yaml").read_text()
    config["api"]["endpoints"]["fake"] |= {"concurrency": 8, "timeout_s": 45, "max_retries": 4,
                                           "backoff_s": 0.5, "max_consecutive_failures": 3}
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                               "--configfile", "config.yaml", "--cores", "2", "-n"],
                              cwd=work, capture_output=True, text=True,
                              env=dict(os.environ, RT_FAKE_KEY=KEY))
    finally:
        (work / "config.yaml").write_text(before)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    jobs = re.findall(r"rule (\w+):\n(?:(?!\n\n).)*?wildcards: ([^\n]*)", out, re.S)
    answers = sorted(w for rule, w in jobs if rule.startswith("vista_answers"))
    assert answers == ["dataset=mine, reader=fakevlm, model=identity",
                       "dataset=mine, reader=fakevlm, model=original"] or answers == [
        "reader=fakevlm, model=identity, dataset=mine",
        "reader=fakevlm, model=original, dataset=mine"], out[-3000:]
    assert re.search(r"round 1: 1 of \d+ answers were errors; asked again", out)
    rules = set(re.findall(r"^rule (\w+):", out, re.M))
    assert rules <= {"vista_answers", "vista_tables", "report_pdf", "gallery", "all"}, rules
