"""An error is never an answer: an endpoint that goes down, items that fail on every attempt,
and what the answer job, the tables, page 1 and the usage ledger make of them, against the
loopback server (tests/fake_openai.py) through the production client path.

- the first request checks the endpoint once (``probe_endpoint``) and names the one that is down;
- the circuit breaker counts failures of the connection only: 500s on every request open it, a
  wrong key's 401s and malformed answers never do;
- an endpoint killed mid-run, under the answer job itself (scripts/vista_answers.py run as its
  rule runs it): the breaker stops the job in a fraction of the time that retrying every item
  takes, and the items left (however many) are recorded within a second of it opening; the
  answers received are cached; the failed items are errors with their reason, left out of the
  accuracies and counted apart, page 1 says so and states no gap; the ledger's HTTP requests are
  what the server received, refused connections apart;
- the job's console says the endpoint is down (the breaker's line, then the count of errors),
  and its log too; the end of the run (rules/common.smk's ``end_of_run``, on the ledger the job
  wrote) exits with status 1 saying why, 0 under ``run.tolerate_reader_errors``;
- a question whose text answer is an error is left out of both accuracies of the gap on page 1
  (its VT answer too), as one whose VT answer is;
- the next run asks exactly the failed items (counted at the server), and the answer job's
  re-ask record changes only when a run leaves errors to ask again; an item malformed on every
  attempt is asked again by one later run only (``api.max_reask_runs``), which does not open the
  breaker, and then makes no job run again;
- 4 % of items malformed on every attempt keep the endpoint busy (asked again at once, before
  fresh items);
- the usage ledger counts what a counting server saw;
- transport settings are out of what Snakemake tracks, the report's config included.
"""
import contextlib
import io
import json
import logging
import os
import re
import runpy
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_openai import FakeOpenAI
from PIL import Image

from roundtrip.api.client import (
    ApiClient,
    Endpoint,
    EndpointDown,
    TRANSPORT_KEYS,
    USAGE_FIELDS,
    append_usage,
    clear_clients,
    client_for,
    config_without_transport,
    endpoints_down,
    probe_endpoint,
    with_transport,
    without_transport,
    write_usage_summary,
)
from roundtrip.api.usage import endpoints_went_down
from roundtrip.evals.vista import tables
from roundtrip.evals.vista.answers import (
    ANSWER_COLUMNS,
    NO_ERRORS,
    NOT_ASKED_AGAIN,
    REASK_FILE,
    answer_set,
    exhausted,
    reask_marker,
    write_answers,
)
from roundtrip.evals.vista.findings import findings
from roundtrip.readers import build_answerer
from roundtrip.report.findings import RunResults
from roundtrip.tables import write_table

KEY = "sk-endpoint-errors-0123"
BOOT = {"samples": 100, "confidence": 0.95, "seed": 0}


@pytest.fixture(scope="module")
def server():
    """One live server for the module: every chat answer is "A" (no reading), no delay."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RT_ERR_KEY", KEY)
    with FakeOpenAI(key=KEY, answer="The answer is A.") as srv:
        yield srv
    mp.undo()


@pytest.fixture(autouse=True)
def fresh_clients():
    clear_clients()
    yield
    clear_clients()


def endpoint(srv, tmp_path, **kw) -> dict:
    """A resolved api.endpoints entry for ``srv``; its own cache under ``tmp_path``."""
    return {"name": "fake", "base_url": srv.base_url, "key_env": "RT_ERR_KEY",
            "cache_dir": str(tmp_path / "cache"), "timeout_s": 5, "max_retries": 3,
            "backoff_s": 0.01, "max_backoff_s": 5, "concurrency": 4} | kw


def question_set(root, n: int, marked=(), hint_marker: str = "MALFORMED-ALWAYS"):
    """``n`` unimodal questions (answer A) with one render each (Table 1): 2 n requests. The
    questions whose index is in ``marked`` carry ``hint_marker`` in their hint, which both of
    their requests send."""
    ds = root / "ds"
    (ds / "images").mkdir(parents=True)
    rows = []
    for k in range(n):
        q, item = f"q{k:03d}", f"q{k:03d}__arial_16pt"
        img = np.full((20, 40, 3), 255, np.uint8)
        img[0, 0, :2] = k % 256, k // 256  # each render its own request
        Image.fromarray(img).save(ds / "images" / f"{item}.png")
        rows.append({"item_id": item, "path": f"images/{item}.png", "status": "ok", "reason": "",
                     "font": "arial", "font_size_pt": 16, "question_id": q,
                     "question_text": f"What is {k} + 1?\nA. {k + 1}\nB. {k + 2}",
                     "question": f"What is {k} + 1?", "answer": "A",
                     "category": "arithmetic", "subfield": "addition",
                     "hint": hint_marker if k in marked else "",
                     "options": json.dumps([["A", str(k + 1)], ["B", str(k + 2)]]),
                     "item_images": "", "table1": "1"})
    pd.DataFrame(rows).to_csv(ds / "manifest.csv", index=False)
    return ds / "manifest.csv"


def vlm_spec(ep: dict) -> dict:
    """vista.readers.fakevlm: a VLM on ``ep`` (a resolved api.endpoints entry)."""
    return {"type": "vlm", "endpoint": ep, "model": "fake-vlm", "prompt": "short",
            "max_tokens": 8}


def vlm(ep: dict):
    return build_answerer("fakevlm", vlm_spec(ep))


REPO = Path(__file__).resolve().parents[1]
ANSWER_JOB = ("fakevlm", "original", "qs")  # reader, model, question set


def answer_job(root: Path, manifest: Path, ep: dict) -> dict:
    """Rule vista_answers for :data:`ANSWER_JOB` as Snakemake runs it: scripts/vista_answers.py
    as ``__main__`` with the ``snakemake`` object of the job, in the working directory ``root``
    (its answers, log and the usage ledger, results/api/usage.jsonl, under it); the reader's
    endpoint in its parameters without the transport settings, which the job reads from the
    config. Returns the script's rows, its console (stderr) lines and its log; the job's
    logging setup, the working directory and the environment are undone afterwards."""
    from snakemake.iocontainers import (InputFiles, Log, OutputFiles, Params, ResourceList,
                                        Snakemake, Wildcards)

    reader, model, dataset = ANSWER_JOB
    log_file = f"logs/vista_answers/{reader}/{model}/{dataset}.log"
    output = f"results/vista/{reader}/{model}/{dataset}/answers.csv"
    for made in (log_file, output):  # Snakemake makes their folders before the job
        (root / made).parent.mkdir(parents=True, exist_ok=True)
    smk = Snakemake(
        InputFiles(fromdict={"manifest": str(manifest)}),
        OutputFiles([output]),
        Params(fromdict={"reader": without_transport(vlm_spec(ep)), "recon_dir": None,
                         "judge": None, "extraction": "release", "prompt_layout": "release",
                         "reask": NO_ERRORS, "max_reask_runs": 1}),
        Wildcards(fromdict={"reader": reader, "model": model, "dataset": dataset}),
        1, ResourceList(), Log([log_file]),
        {"api": {"endpoints": {ep["name"]: ep}, "max_reask_runs": 1}}, "vista_answers", None,
        str(REPO / "scripts"))
    root_logger = logging.getLogger()
    handlers, level, hook, env = root_logger.handlers[:], root_logger.level, sys.excepthook, \
        dict(os.environ)
    root_logger.handlers = []  # the job's basicConfig(force=True) closes what it finds
    console = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.syspath_prepend(str(REPO / "scripts"))
        try:
            with contextlib.redirect_stderr(console):
                job = runpy.run_path(str(REPO / "scripts/vista_answers.py"),
                                     init_globals={"snakemake": smk}, run_name="__main__")
        finally:
            for h in root_logger.handlers:
                h.close()
            root_logger.handlers = handlers
            root_logger.setLevel(level)
            sys.excepthook = hook
            os.environ.clear()
            os.environ.update(env)
    return {"rows": job["rows"], "console": console.getvalue().splitlines(),
            "log": (root / log_file).read_text()}


def end_of_run(started: float, tolerate: bool = False, checks=()):
    """rules/common.smk's ``end_of_run`` itself (its source, run with the globals it reads:
    ``RUN``, the run's start and ``RUN_CHECKS``); call it in the workflow's directory."""
    smk = (REPO / "rules/common.smk").read_text()
    source = re.search(r"^def end_of_run\(\):\n.*?(?=^\S)", smk, re.S | re.M).group(0)
    scope = {"sys": sys, "RUN": {"tolerate_reader_errors": tolerate}, "RUN_STARTED": started,
             "RUN_CHECKS": list(checks)}
    exec(compile(source, "rules/common.smk", "exec"), scope)
    return scope["end_of_run"]()


# -- the first check ------------------------------------------------------------------------------
def test_probe_names_the_endpoint_that_is_down(server, tmp_path):
    assert probe_endpoint(endpoint(server, tmp_path), 2.0) is None
    # an answer of any status is an answer: a server without /models still answers
    other = Endpoint("other", server.base_url.replace("/v1", "/nothing"), key_env=None)
    assert probe_endpoint(other, 2.0) is None
    # a connection accepted whose answer is slow: there (a hung server is the breaker's to find)
    import socket

    with socket.create_server(("127.0.0.1", 0)) as mute:
        slow = {"name": "mute", "base_url": f"http://127.0.0.1:{mute.getsockname()[1]}/v1"}
        assert probe_endpoint(slow | {"key_env": None}, 0.3) is None
    with FakeOpenAI(key=KEY) as gone:
        url = gone.base_url
    down = probe_endpoint({"name": "local_vllm", "base_url": url, "key_env": None}, 2.0)
    assert down.startswith(f"api.endpoints.local_vllm ({url}) is unreachable: ")
    assert "Connection refused" in down and down.endswith(f"(GET {url}/models, 2 s timeout)")
    assert "\n" not in down


def test_a_client_checks_once_and_sends_nothing_to_an_endpoint_that_is_down(tmp_path):
    with FakeOpenAI(key=KEY) as gone:
        url = gone.base_url
    ep = Endpoint("local_vllm", url, key_env=None, cache_dir=str(tmp_path / "c"),
                  max_retries=5, backoff_s=10.0)
    client = ApiClient(ep)
    started = time.monotonic()
    with pytest.raises(EndpointDown, match=r"not sent: api\.endpoints\.local_vllm \(http://"):
        client.chat("m", [{"role": "user", "content": "hi"}])
    out = client.map(lambda k: client.chat("m", [{"role": "user", "content": f"q{k}"}]), range(5))
    assert time.monotonic() - started < 3  # no backoff of 10, 20, 40 ... s
    assert all(isinstance(o, EndpointDown) and o.kind == "endpoint down" for o in out)
    u = client.usage
    assert (u.attempts, u.requests, u.failures, u.not_sent) == (0, 0, 6, 6)
    assert client.down.startswith(f"api.endpoints.local_vllm ({url}) is unreachable")


def test_server_errors_open_the_breaker_and_a_bad_key_does_not(server, tmp_path, monkeypatch):
    """Every request gets a 500 (its body carries FAIL-ALWAYS): after 5 attempts in a row (the
    breaker's setting) nothing more is sent, and the items not sent name the breaker. A wrong
    key answers 401 at once: a server that is up, so the breaker stays closed and each item
    fails on its own, one request each."""
    ep = Endpoint.from_config("fake", endpoint(server, tmp_path, max_consecutive_failures=5))
    client, before = ApiClient(ep), server.total()
    out = client.map(lambda k: client.chat("m", [{"role": "user", "content": f"FAIL-ALWAYS {k}"}]),
                     range(30))
    sent = server.total() - before
    in_flight = 2 * ep.concurrency  # attempts already made when the fifth failure came back
    assert 5 <= sent <= 5 + in_flight and client.usage.attempts == sent
    assert client.usage.failures == 30 and client.usage.refused == 0
    assert client.down.startswith(f"api.endpoints.fake ({server.base_url}): 5 attempts in a row "
                                  "failed by the connection (last: HTTP 500: ")
    refused = [o for o in out if isinstance(o, EndpointDown)]
    assert len(refused) >= 30 - sent and str(refused[-1]) == f"not sent: {client.down}"
    assert client.usage.not_sent == sum(str(o).startswith("not sent") for o in refused)

    monkeypatch.setenv("RT_ERR_KEY", "sk-wrong")
    clear_clients()
    client, before = ApiClient(ep), server.total()
    out = client.map(lambda k: client.chat("m", [{"role": "user", "content": f"key {k}"}]),
                     range(30))
    assert client.down is None and server.total() - before == 30
    assert all(o.kind == "HTTP 401" for o in out) and client.usage.not_sent == 0


# -- an endpoint killed mid-run -------------------------------------------------------------------
N_QUESTIONS = 40  # 80 requests


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The answer job (scripts/vista_answers.py, :func:`answer_job`) of one VLM on 40 questions
    whose endpoint dies after 50 requests (the 40 text requests go first, then the renders'),
    then the next run of it against a live endpoint (the same cache)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RT_ERR_KEY", KEY)
    root = tmp_path_factory.mktemp("killed")
    manifest = question_set(root, N_QUESTIONS)
    answers = root / "results/vista/fakevlm/original/qs/answers.csv"
    slow = {"max_retries": 3, "backoff_s": 0.5, "concurrency": 2, "max_consecutive_failures": 4}
    clear_clients()
    marker_before = reask_marker(answers)
    with FakeOpenAI(key=KEY, answer="The answer is A.", die_after=50) as srv:
        ep = endpoint(srv, root, **slow)
        started = time.time()
        job = answer_job(root, manifest, ep)
        seconds = time.time() - started
        down = endpoints_down()
        usage = client_for(ep).usage
        received = srv.total() + srv.outcomes["dropped"]
    cached = len(list((root / "cache").rglob("*.json")))
    marker_after = reask_marker(answers)
    clear_clients()
    with FakeOpenAI(key=KEY, answer="The answer is A.") as again:
        rows2 = answer_set(manifest, vlm(endpoint(again, root, **slow)))
        second = dict(again.counts), again.total()
    clear_clients()
    mp.undo()
    yield {"rows": job["rows"], "seconds": seconds, "down": down, "usage": usage, "srv": srv,
           "rows2": rows2, "second": second, "answers": answers, "root": root,
           "markers": (marker_before, marker_after), "ep": ep, "cached": cached,
           "received": received, "console": job["console"], "log": job["log"],
           "started": started, "ledger": root / "results/api/usage.jsonl"}


def test_a_killed_endpoint_stops_the_job_early_with_the_answers_received(killed):
    rows, srv, usage = killed["rows"], killed["srv"], killed["usage"]
    assert list(rows.columns) == ANSWER_COLUMNS and len(rows) == 2 * N_QUESTIONS
    ok, err = rows[rows["status"] == "ok"], rows[rows["status"] == "error"]
    answered = srv.outcomes["ok"]
    assert 50 <= answered <= 51 and len(ok) == answered and len(err) == 80 - answered
    assert (ok["hit"] == 1.0).all()  # the answers received are scored
    # errors are not answers: no score, no extraction, a reason that says what went wrong
    assert err["hit"].isna().all() and err["exact_match"].isna().all()
    assert (err["extracted_by"] == "").all() and (err["raw"] == "").all()
    kinds = err["reason"].str.split(":").str[0]
    assert set(kinds) <= {"connection error", "endpoint down"} and (kinds == "endpoint down").any()
    # the breaker opened after 4 failed attempts: most items were never sent
    assert usage.not_sent >= len(err) - 8 and usage.attempts + usage.refused <= answered + 8
    assert usage.requests == answered and usage.failures == len(err)
    # the HTTP requests sent are what the server received (give or take the 2 in flight when
    # it died: written to a connection it then closed unread); refused connections apart
    assert killed["received"] <= usage.attempts <= killed["received"] + 2
    assert usage.attempts + usage.refused == (usage.requests + usage.failures - usage.not_sent
                                              + usage.retries)
    (line,) = killed["down"]
    assert line.startswith(f"api.endpoints.fake ({srv.base_url}): 4 attempts in a row failed by "
                           "the connection (last: connection error")
    assert line.endswith("(circuit breaker, api.endpoints.fake.max_consecutive_failures: 4)")
    # retrying every failed item: 3 retries waiting 0.5 + 1 + 2 s, on 2 slots
    every_item = len(err) * (0.5 + 1 + 2) / 2
    print(f"killed endpoint: {killed['seconds']:.2f} s for {len(rows)} answers; retrying every "
          f"failed item would take at least {every_item:.0f} s")
    assert killed["seconds"] < min(5.0, every_item / 10)
    # the answers received are cached: one file each
    assert killed["cached"] == answered
    # the ledger says the endpoint went down, for the end of the run
    (went,) = endpoints_went_down(killed["ledger"])
    assert went == f"{line} (job vista/fakevlm/original/qs)"


def test_the_job_says_on_the_console_that_its_endpoint_is_down(killed):
    """The answer job's console (scripts/vista_answers.py): first the line of the breaker that
    opened, then the count of the errors, which names the endpoint down; its log holds both, and
    the client's own line that the endpoint is down."""
    (line,) = killed["down"]
    assert "; nothing more is sent (circuit breaker" in line
    failed = int((killed["rows"]["status"] == "error").sum())
    first, second = killed["console"]
    # the job and the client's log line say "endpoint down: " before the reason
    # endpoints_down() gives (ApiClient.down, no prefix)
    assert first == f"[roundtrip] endpoint down: {line}"
    assert second == (f"[roundtrip] vista answers of fakevlm on original/qs: {failed} of 80 "
                      "answers are errors (no answer: left out, not counted wrong): endpoint down "
                      f"({failed}x); the next run asks them again")
    log = killed["log"]
    assert f" ERROR roundtrip.api.client: endpoint down: {line}\n" in log
    for shown in (first, second):
        assert f" ERROR roundtrip: {shown.removeprefix('[roundtrip] ')}\n" in log


def test_an_endpoint_that_went_down_ends_the_run_with_exit_status_1(killed, monkeypatch,
                                                                   capsys):
    """rules/common.smk's end_of_run on the ledger the killed job wrote
    (results/api/usage.jsonl): the run ends with exit status 1, its last line saying why, once
    every table and the report are written; run.tolerate_reader_errors: true prints the same and
    ends with 0; a reader's errors over their share as well make two problems; a ledger line of
    a job from before the run started counts nothing. (tests/test_workflow_vista.py sees a
    workflow run set Snakemake's exit status from it.)"""
    (line,) = killed["down"]
    went = f"endpoint down: {line} (job vista/fakevlm/original/qs)"
    monkeypatch.chdir(killed["root"])
    with pytest.raises(SystemExit) as ended:
        end_of_run(killed["started"])
    assert ended.value.code == (f"[roundtrip] exit status 1: {went}; every table and the report "
                                "are written (run.tolerate_reader_errors: true exits 0)")
    assert capsys.readouterr().err.splitlines() == [f"[roundtrip] {went}"]
    # tolerated: the same line, and exit status 0
    assert end_of_run(killed["started"], tolerate=True) is None
    assert capsys.readouterr().err.splitlines() == [
        f"[roundtrip] {went}",
        f"[roundtrip] exit status 0 despite {went}: run.tolerate_reader_errors is true"]
    # a reader's errors over their share as well
    share = ("VISTA-Bench reader fakevlm (original): 30 of 80 answers (37.5 %) are errors "
             "(endpoint down (30x)), more than vista.max_error_share (10 %)")
    with pytest.raises(SystemExit) as ended:
        end_of_run(killed["started"], checks=[lambda: [share]])
    assert ended.value.code == ("[roundtrip] exit status 1: 2 problems (above); every table and "
                                "the report are written (run.tolerate_reader_errors: true exits 0)")
    assert capsys.readouterr().err.splitlines() == [f"[roundtrip] {went}", f"[roundtrip] {share}"]
    # the ledger's line is from before this run: nothing to say, exit status 0
    assert killed["ledger"].is_file()
    assert end_of_run(time.time() + 1) is None and capsys.readouterr().err == ""


def test_a_server_killed_after_a_third_stops_the_job_at_once(tmp_path, monkeypatch, caplog):
    """600 questions (1,200 requests at concurrency 8) against a server that dies after 400:
    the breaker opens within a few failed attempts, and the 800 items left are error rows
    within a second of it (not after each waits its turn)."""
    monkeypatch.setenv("RT_ERR_KEY", KEY)
    manifest = question_set(tmp_path, 600)
    with FakeOpenAI(key=KEY, answer="The answer is A.", die_after=400) as srv:
        ep = endpoint(srv, tmp_path, concurrency=8, backoff_s=0.2)
        with caplog.at_level(logging.ERROR, logger="roundtrip.api.client"):
            rows = answer_set(manifest, vlm(ep))
        ended = time.time()
    (opened,) = [r.created for r in caplog.records if "circuit breaker" in r.getMessage()]
    err = rows[rows["status"] == "error"]
    print(f"{len(err)} items recorded {ended - opened:.3f} s after the breaker opened")
    assert len(err) >= 1200 - 400 - 1 and ended - opened < 1.0
    assert err["reason"].str.startswith(("endpoint down: ", "connection error: ")).all()
    assert client_for(ep).usage.not_sent >= 700


def test_the_next_run_asks_exactly_the_failed_items(killed):
    rows, rows2 = killed["rows"], killed["rows2"]
    counts, total = killed["second"]
    failed = int((rows["status"] == "error").sum())
    assert total == failed and counts == {"/v1/chat/completions": failed}
    assert (rows2["status"] == "ok").all() and (rows2["hit"] == 1.0).all()
    # the re-ask record: none before, a new one after a run that left errors ...
    before, after = killed["markers"]
    assert before == NO_ERRORS
    assert after == f"round 1: {failed} of 80 answers were errors; asked again"
    # ... and the same after a run without errors: the run after it has nothing to do
    write_answers(rows2, killed["answers"])
    assert reask_marker(killed["answers"]) == after
    assert json.loads(killed["answers"].with_name(REASK_FILE).read_text())["round"] == 1


def test_tables_count_errors_apart_and_page_one_states_no_gap(killed, tmp_path):
    rows = killed["rows"]
    failed = int((rows["status"] == "error").sum())
    f = killed["answers"]
    write_answers(rows, f)
    answers, notes = tables.prepare({("fakevlm", "original", "qs"): tables.read_answers(f)})
    scorer = tables.Scorer(BOOT)
    out = tmp_path / "tables"
    out.mkdir()
    for table in (tables.accuracy_table(answers, scorer), tables.tokenizer_table(answers, scorer)):
        write_table(table, out)
    acc = pd.read_csv(out / "vista_accuracy.csv").iloc[0]
    vt_err = int(((rows["mode"] == "vt") & (rows["status"] == "error")).sum())
    assert vt_err == failed  # the text requests went first
    # the accuracies are over the answers received (all right here): not VT 25 % with the
    # errors counted wrong, and no gap of 75 points made of them
    assert acc["overall.vt_accuracy"] == 100.0 and acc["overall.vt_accuracy.n"] == 40 - vt_err
    assert acc["overall.text_accuracy"] == 100.0 and acc["overall.modality_gap"] == 0.0
    md = (out / "vista_accuracy.md").read_text()
    assert (f"{vt_err} of 40 answers are errors (no answer: left out, not counted wrong): "
            f"endpoint down ({vt_err}x)") in md
    assert f"{vt_err} of 80 answers are errors" in md and "invalid" not in md
    results = RunResults({p.stem: p for p in out.glob("*.csv")}, files=[f], bootstrap=BOOT,
                         config={"vista": {"max_error_share": 0.1}})
    page = findings(results)
    assert page[0] == ("No modality gap is reported: every reader's answers are more than 10 % "
                       "errors (vista.max_error_share).")
    share = f"{100 * failed / 80:.1f} %"
    assert page[1].startswith(f"fakevlm: {failed} of 80 answers ({share}) are errors (")
    assert "more than vista.max_error_share (10 %), so no finding is reported for it" in page[1]
    assert not any("largest for" in s or "answers" in s and "right as visualized" in s
                   for s in page)


def twenty_questions(tmp_path, error_mode: str):
    """One reader's answers on 20 questions, answered right as text, as visualized text right on
    the first 15 (q00 to q14), q00's answer in ``error_mode`` ("text" or "vt") an error (timed
    out) and q01's VT answer invalid (counted wrong); the accuracy table written from them.
    Returns the table's Markdown, its CSV row and page 1's sentences."""
    rows = []
    for k in range(20):
        q = f"q{k:02d}"
        base = {"question_id": q, "category": "c", "subfield": "", "source": "",
                "modality": "unimodal", "table1": "1", "audit": "", "status": "ok",
                "reason": "", "extracted_by": "letter", "raw": "A"}
        rows.append(base | {"item_id": q, "mode": "text", "hit": 1.0})
        rows.append(base | {"item_id": f"{q}_16", "mode": "vt", "font": "arial", "size": "16",
                            "hit": 1.0 if k < 15 else 0.0})
    rows[{"text": 0, "vt": 1}[error_mode]] |= {
        "status": "error", "reason": "timed out: chat m at fake: gave up", "hit": np.nan,
        "extracted_by": "", "raw": ""}
    rows[3] |= {"extracted_by": "invalid", "hit": 0.0, "raw": "I think so"}
    f = tmp_path / "results/vista/fakevlm/original/qs/answers.csv"
    f.parent.mkdir(parents=True)
    pd.DataFrame(rows).reindex(columns=ANSWER_COLUMNS).to_csv(f, index=False)
    answers, _ = tables.prepare({("fakevlm", "original", "qs"): tables.read_answers(f)})
    out = tmp_path / "tables"
    out.mkdir()
    write_table(tables.accuracy_table(answers, tables.Scorer(BOOT)), out)
    page = findings(RunResults({"vista_accuracy": out / "vista_accuracy.csv"}, files=[f],
                               bootstrap=BOOT, config={"vista": {}}))
    return (out / "vista_accuracy.md").read_text(), \
        pd.read_csv(out / "vista_accuracy.csv").iloc[0], page


def test_a_few_errors_are_counted_and_the_gap_stays(tmp_path):
    """One error in 40 answers (2.5 %): page 1 names it, the gap sentence stays; an invalid
    answer is counted wrong, in its own count."""
    md, acc, page = twenty_questions(tmp_path, "vt")
    assert "1 of 20 answers are errors (no answer: left out, not counted wrong): timed out (1x)" \
        in md
    assert "1 of 19 answers invalid (counted wrong)" in md
    assert acc["overall.vt_accuracy.n"] == 19
    assert acc["overall.vt_accuracy"] == pytest.approx(100 * 13 / 19)  # q00 left out, q01 wrong
    # the gap's accuracies are over the 19 questions scored in both modes, n stated once: VT
    # 13 of 19 right (q00's VT answer is the error), Text 19 of 19
    assert page[0].startswith(f"fakevlm answers {100 * 13 / 19:.1f} [") and \
        "% of 19 questions right as visualized text" in page[0]
    assert "and 100.0 [" in page[0] and "% as pure text: a modality gap (Text - VT) of +" \
        f"{100 * 6 / 19:.1f} [" in page[0]
    assert "of 20 questions" not in page[0] and "of 40" not in page[0].split(". ")[0]
    assert page[0].endswith("fakevlm's gap is over 19 of its 20 questions; 1 is left out: 1 "
                            "without a scored VT answer (error: timed out (1x)).")
    assert page[1] == ("fakevlm: 1 of 40 answers (2.5 %) are errors (timed out (1x)): left out "
                       "of its accuracies, not counted wrong, and asked again by the next run; "
                       "1 of 40 (2.5 %) are invalid (no option could be read: counted wrong, as "
                       "the release counts them).")


def test_a_missing_text_answer_leaves_its_question_out_of_both_accuracies(tmp_path):
    """q00's text answer is the error, its VT answer right: the table's VT accuracy keeps q00
    (14 of 20 right, 70.0 %) and its text accuracy is over 19; page 1's gap is over the 19
    questions scored in both modes, q00 out of both: VT 13 of 19 (68.4 %, not 14 of 19 with q00
    still counted as visualized text), Text 19 of 19, a gap of +31.6, n stated once."""
    md, acc, page = twenty_questions(tmp_path, "text")
    assert "1 of 20 answers are errors (no answer: left out, not counted wrong): timed out (1x)" \
        in md
    assert acc["overall.vt_accuracy"] == pytest.approx(70.0)
    assert acc["overall.vt_accuracy.n"] == 20
    assert acc["overall.text_accuracy"] == 100.0 and acc["overall.text_accuracy.n"] == 19
    assert page[0].startswith(f"fakevlm answers {100 * 13 / 19:.1f} [") and \
        "% of 19 questions right as visualized text" in page[0]
    assert f"{100 * 14 / 19:.1f} [" not in page[0] and "70.0 [" not in page[0]
    assert "and 100.0 [" in page[0] and "% as pure text: a modality gap (Text - VT) of +" \
        f"{100 * 6 / 19:.1f} [" in page[0]
    assert page[0].count("19 questions") == 1 and "of 20 questions" not in page[0]
    assert page[0].endswith("fakevlm's gap is over 19 of its 20 questions; 1 is left out: 1 "
                            "without a scored text answer (error: timed out (1x)).")


# -- the endpoint stays busy ----------------------------------------------------------------------
def test_items_malformed_on_every_attempt_do_not_hold_the_endpoint(tmp_path):
    """400 requests taking 20 ms each at concurrency 4; 4 % of the items are malformed on every
    attempt (4 attempts each, asked again at once, before fresh items). Waiting behind the
    fresh items, or in the workers, their retries would add their backoff to the run; here the
    run takes about the 12 % more requests it sends, with as many requests in flight at the
    server as the clean run. (The benchmark, benchmarks/api_client.py, measures the ratio.)"""
    n, marked = 200, {k for k in range(200) if k % 25 == 3}  # 8 questions, 16 requests (4 %)
    assert len(marked) * 2 / (2 * n) == 0.04
    timings, flight = {}, {}
    for name, marks in (("clean", ()), ("malformed", marked)):
        root = tmp_path / name
        manifest = question_set(root, n, marks)
        clear_clients()
        with FakeOpenAI(key=KEY, answer="The answer is A.", delay_s=0.02) as srv:
            ep = endpoint(srv, root, backoff_s=0.07, max_retries=3, concurrency=4)
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("RT_ERR_KEY", KEY)
                started = time.monotonic()
                rows = answer_set(manifest, vlm(ep))
                timings[name] = time.monotonic() - started
            flight[name] = srv.mean_in_flight()
            if name == "malformed":
                assert srv.outcomes["malformed"] == 4 * 2 * len(marked)
                assert client_for(ep).down is None  # malformed answers never open the breaker
        errors = rows[rows["status"] == "error"]
        assert len(errors) == 2 * len(marks)
        assert errors["reason"].str.startswith("malformed response: ").all()
    ratio = timings["malformed"] / timings["clean"]
    print(f"400 requests at concurrency 4: clean {timings['clean']:.2f} s, 4 % malformed "
          f"{timings['malformed']:.2f} s (x{ratio:.2f}); mean in flight {flight['clean']:.2f} "
          f"and {flight['malformed']:.2f}")
    assert ratio < 1.5
    assert flight["malformed"] > 0.75 * flight["clean"]


def test_map_keeps_order_and_retries_inside_the_client(server, tmp_path):
    client = ApiClient(Endpoint.from_config("fake", endpoint(server, tmp_path, concurrency=2)))
    server.inject("500", "malformed")
    done = []
    out = client.map(lambda k: client.chat("m", [{"role": "user", "content": f"q{k}"}]).text,
                     range(6), on_done=lambda i, o: done.append(i))
    assert out == ["The answer is A."] * 6 and sorted(done) == list(range(6))
    assert client.usage.retries == 2 and client.usage.cache_hits == 0
    assert client.usage.attempts == 8 and client.usage.requests == 6
    from roundtrip.api.scheduler import pool_map

    assert pool_map(lambda k: 1 / k, [1, 0, 2], 2)[1].__class__ is ZeroDivisionError


def test_the_progress_counts_answers(server, tmp_path, caplog):
    manifest = question_set(tmp_path, 3)
    server.inject("500", "malformed")
    with caplog.at_level(logging.INFO, logger="roundtrip.evals.vista.answers"):
        rows = answer_set(manifest, vlm(endpoint(server, tmp_path)))
    assert (rows["status"] == "ok").all()
    last = [r.getMessage() for r in caplog.records if "VISTA answers of" in r.getMessage()][-1]
    # 6 answers; the two retries are the client's (its usage counts them)
    assert last.startswith("VISTA answers of vlm (original) on ds: 6 of 6 answers done in ")


# -- requests malformed on every attempt end --------------------------------------------------------
def test_an_item_malformed_on_every_attempt_is_asked_again_by_one_run_only(tmp_path, monkeypatch):
    """Three runs of one answer job (api.max_reask_runs: 1) on 20 questions, 3 of them
    malformed on every attempt: the first run leaves 6 errors and a new re-ask round (the next
    run of the workflow runs the job); the second asks exactly those 6 again, 4 attempts each,
    all malformed in a row without opening the breaker (limit 10, the server answers), and
    leaves the round as it was (so no later run runs the job); a third run, were it made,
    sends nothing."""
    monkeypatch.setenv("RT_ERR_KEY", KEY)
    manifest = question_set(tmp_path, 20, marked={2, 9, 17})
    answers = tmp_path / "results/vista/fakevlm/original/ds/answers.csv"
    answers.parent.mkdir(parents=True)
    fp, seen, markers = "job-1", [], []
    with FakeOpenAI(key=KEY, answer="The answer is A.") as srv:
        ep = endpoint(srv, tmp_path, max_retries=3, max_consecutive_failures=10)
        for run in range(3):
            clear_clients()
            skip = exhausted(answers, fp, 1)
            before = srv.total()
            rows = answer_set(manifest, vlm(ep), skip=skip)
            seen.append((srv.total() - before, client_for(ep).down, len(skip)))
            write_answers(rows, answers, fp, 1, skip)
            markers.append(reask_marker(answers))
            err = rows[rows["status"] == "error"]
            assert len(err) == 6 and err["reason"].str.startswith("malformed response: ").all()
    assert seen[0] == (40 - 6 + 6 * 4, None, 0)  # 34 answers, 6 requests 4 attempts each
    assert seen[1] == (6 * 4, None, 0)  # only the 6 again; 24 malformed in a row: not "down"
    assert seen[2] == (0, None, 6)  # not asked again: nothing sent
    assert markers[0] == "round 1: 6 of 40 answers were errors; asked again"
    assert markers[1] == markers[2] == markers[0]  # no run after the second runs the job
    assert (err["reason"].str.endswith(f"malformed on every attempt of 2 runs: {NOT_ASKED_AGAIN}, "
                                       "api.max_reask_runs: 1)")).all()
    assert "gave up after 4 attempts" in err["reason"].iloc[0]
    # another job fingerprint (a prompt changed): counted afresh, asked again
    assert exhausted(answers, "job-2", 1) == {} and len(exhausted(answers, fp, 1)) == 6
    assert len(exhausted(answers, fp, 2)) == 0  # raising the limit asks them again


# -- the ledger -----------------------------------------------------------------------------------
def test_usage_summary_counts_what_the_server_saw(tmp_path, monkeypatch):
    """429, 500 and malformed answers retried, one question failing on every attempt (500),
    one with a picture of its own, cache hits on a second pass: the ledger's HTTP requests,
    answers, images sent and tokens are the server's counts."""
    monkeypatch.setenv("RT_ERR_KEY", KEY)
    manifest = question_set(tmp_path, 12, marked={5}, hint_marker="FAIL-ALWAYS")
    m = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    (tmp_path / "ds/item_images").mkdir()
    Image.new("RGB", (8, 8), "red").save(tmp_path / "ds/item_images/p.png")
    m.loc[0, "item_images"] = "item_images/p.png"
    m.to_csv(manifest, index=False)
    ledger = tmp_path / "usage.jsonl"
    with FakeOpenAI(key=KEY, answer="The answer is A.") as srv:
        srv.inject("429", "500", "malformed", "ok", "500")
        ep = endpoint(srv, tmp_path, max_retries=2, backoff_s=0.01)
        answer_set(manifest, vlm(ep))
        append_usage(ledger, "job/first")
        clear_clients()
        answer_set(manifest, vlm(ep))  # the second job: cache hits, and the failing item again
        append_usage(ledger, "job/second")
        seen = {"attempts": srv.total(), "answered": srv.outcomes["ok"],
                "images": srv.images_seen, "tokens": dict(srv.tokens)}
    (row,) = write_usage_summary(ledger, tmp_path / "usage_summary.csv", 0)
    csv = pd.read_csv(tmp_path / "usage_summary.csv").iloc[0]
    assert list(csv.index) == ["endpoint", "base_url", "jobs", *USAGE_FIELDS]
    assert csv["attempts"] == seen["attempts"] and csv["requests"] == seen["answered"]
    assert csv["images_sent"] == seen["images"]
    # 12 VT requests with the question image, 2 more with the picture (its text and VT)
    assert seen["images"] >= 14
    assert csv["input_tokens"] == seen["tokens"]["prompt_tokens"]
    assert csv["output_tokens"] == seen["tokens"]["completion_tokens"]
    # the failing question's two requests, 3 attempts each, in both jobs; 22 answers cached
    assert csv["failures"] == 4 and csv["not_sent"] == 0 and csv["cache_hits"] == 22
    assert csv["refused"] == 0
    assert csv["retries"] == csv["attempts"] - csv["requests"] - csv["failures"]
    assert csv["jobs"] == 2 and csv["images"] == 0


# -- transport settings rerun nothing -------------------------------------------------------------
def test_transport_settings_are_not_tracked_parameters():
    from types import SimpleNamespace

    from roundtrip.evals.vista.plan import VistaPlan

    def plan(**transport):
        ep = {"name": "local", "base_url": "http://localhost:8000/v1", "key_env": None,
              "cache_dir": "api_cache"} | transport
        config = {"vista": {"readers": {"r": {"type": "vlm", "endpoint": dict(ep), "model": "m"}},
                            "judge": {"endpoint": dict(ep), "model": "j"}},
                  "datasets": {}, "api": {"endpoints": {"local": ep}}}
        return VistaPlan(SimpleNamespace(config=config)), config

    a, _ = plan(concurrency=4, timeout_s=120)
    b, config = plan(concurrency=16, timeout_s=30, max_retries=2, backoff_s=0.5, max_backoff_s=9,
                     max_consecutive_failures=3)
    assert a.reader_params("r") == b.reader_params("r") and a.judge_params() == b.judge_params()
    assert not set(TRANSPORT_KEYS) & set(b.reader_params("r")["endpoint"])
    # the job gets them back from the config
    back = with_transport(b.reader_params("r"), config["api"]["endpoints"])
    assert back == config["vista"]["readers"]["r"]
    assert with_transport(None, {}) is None and without_transport({"type": "ocr_solver"}) == {
        "type": "ocr_solver"}
    assert build_answerer("r", back).concurrency == 16
    # the report's config (rule report_pdf's parameter) holds none of them either
    report_a = config_without_transport(plan(concurrency=4, timeout_s=120)[1])
    report_b = config_without_transport(config)
    assert report_a == report_b and not set(TRANSPORT_KEYS) & (
        set(report_b["api"]["endpoints"]["local"]) | set(report_b["vista"]["judge"]["endpoint"]))
    assert config["api"]["endpoints"]["local"]["concurrency"] == 16  # the config is not changed


def test_usage_line_reads_as_counts():
    from roundtrip.api.client import usage_line

    row = {"endpoint": "v", "base_url": "http://x/v1", "jobs": 3, "attempts": 737, "refused": 9,
           "requests": 575, "failures": 30, "not_sent": 12, "retries": 132, "cache_hits": 2040,
           "input_tokens": 412006, "output_tokens": 2901, "images_sent": 641, "images": 0,
           "seconds": 412.34}
    assert usage_line(row) == (
        "API usage (v) at http://x/v1: 737 HTTP requests sent (9 more refused: no connection), "
        "575 answered, 30 failed (12 not sent: endpoint down), 132 retries, 2,040 cache hits, "
        "641 images sent, 0 received, 412,006 tokens in, 2,901 out, 412.3 s in 3 jobs")
    assert usage_line(row | {"refused": 0}).startswith(
        "API usage (v) at http://x/v1: 737 HTTP requests sent, 575 answered")

