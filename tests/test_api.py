"""The OpenAI-compatible client and the components built on it, against a real loopback server
(tests/fake_openai.py) through the production code path (the openai SDK with base_url set)."""
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, default_prompts, requires_tesseract
from fake_openai import FakeOpenAI
from PIL import Image, ImageDraw, ImageFont

from roundtrip.api import client as api_client
from roundtrip.api.client import (
    ApiClient,
    ApiError,
    Endpoint,
    MissingApiKey,
    ResponseCache,
    append_usage,
    client_for,
    retry_after_s,
    summarize_usage,
)
from roundtrip.api.settings import resolve_api
from roundtrip.core.config import ConfigError
from roundtrip.datasets.generated import GptSetSpec, build_gpt_set, parse_jsonl, translate_blocks
from roundtrip.evals.vtbench.ocr_robustness import rank_agreement
from roundtrip.readers.vlm import VlmJudge, VlmOCR, parse_verdict
from roundtrip.workflow.checks import check_config

KEY = "sk-roundtrip-test-0123456789"
PROMPTS = default_prompts()


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("RT_TEST_KEY", KEY)
    with FakeOpenAI(key=KEY, slow_s=1.5) as srv:
        yield srv
    api_client.clear_clients()


def endpoint(srv, tmp_path, **kw):
    spec = {"base_url": srv.base_url, "key_env": "RT_TEST_KEY", "timeout_s": 0.8,
            "max_retries": 4, "backoff_s": 0.01, "max_backoff_s": 5,
            "cache_dir": str(tmp_path / "cache")} | kw
    return {"name": "fake", **spec}


def make_client(srv, tmp_path, **kw):
    waits = []
    ep = Endpoint.from_config("fake", endpoint(srv, tmp_path, **kw))
    return ApiClient(ep, sleep=waits.append), waits


def text_image(lines, size=(640, 160)):
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 28)
    for i, line in enumerate(lines):
        draw.text((20, 20 + 45 * i), line, fill="black", font=font)
    return np.asarray(img)


# -- the client --------------------------------------------------------------------------------
def test_retries_every_transient_fault_and_honors_retry_after(server, tmp_path):
    client, waits = make_client(server, tmp_path)
    server.inject("429", "500", "malformed", "timeout")
    reply = client.chat("m", [{"role": "user", "content": "Invent 3 scenes"}])
    assert len(parse_jsonl(reply.text)) == 3
    assert server.counts["/v1/chat/completions"] == 5 and reply.attempts == 5
    # the server's Retry-After, not the 0.01 s backoff; then exponential backoff, 0.01 * 2**k
    # jittered by at most 25 %, after the 500 (k = 1) and the timeout (k = 3); the malformed
    # answer is asked again at once (the server answered: nothing to wait out)
    assert len(waits) == 3 and waits[0] == pytest.approx(0.2)
    for k, w in zip((1, 3), waits[1:]):
        assert 0.01 * 2 ** k <= w <= 0.01 * 2 ** k * 1.25
    assert client.usage.retries == 4 and client.usage.requests == 1


def test_gives_up_after_max_retries_with_the_last_error(server, tmp_path):
    client, waits = make_client(server, tmp_path, max_retries=2)
    server.inject("500", "500", "500")
    with pytest.raises(ApiError, match="gave up after 3 attempts; last error: HTTP 500"):
        client.chat("m", [{"role": "user", "content": "Invent 2 scenes"}])
    assert server.total() == 3 and len(waits) == 2 and client.usage.failures == 1
    # nothing cached for a failure: the next call asks again
    assert client.chat("m", [{"role": "user", "content": "Invent 2 scenes"}]).cached is False


def test_a_bad_key_fails_at_once(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RT_TEST_KEY", "sk-wrong")
    client, waits = make_client(server, tmp_path)
    with pytest.raises(ApiError, match="HTTP 401"):
        client.chat("m", [{"role": "user", "content": "hi"}])
    assert server.total() == 1 and waits == []


def test_cache_answers_reruns_without_requests_and_holds_no_key(server, tmp_path):
    client, _ = make_client(server, tmp_path)
    png = io.BytesIO()
    Image.fromarray(text_image(["cache me"])).save(png, format="PNG")
    first = client.edit_image("gpt-image-1", png.getvalue(), "recreate", size="auto")
    client.chat("m", [{"role": "user", "content": "Invent 2 scenes"}])
    n = server.total()
    again, _ = make_client(server, tmp_path)  # a new process would build a new client
    second = again.edit_image("gpt-image-1", png.getvalue(), "recreate", size="auto")
    again.chat("m", [{"role": "user", "content": "Invent 2 scenes"}])
    assert server.total() == n and second.cached and again.usage.cache_hits == 2
    assert second.image_bytes() == first.image_bytes()
    # another image, parameter or model is another request
    again.edit_image("gpt-image-1", png.getvalue(), "recreate", size="1024x1024")
    assert server.total() == n + 1
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 3
    for f in files:
        text = f.read_text()
        assert KEY not in text and "base64" not in text.split('"response"')[0]
        assert json.loads(text)["request"]["model"] in ("gpt-image-1", "m")


def test_damaged_cache_entry_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache.key({"kind": "chat", "model": "m"})
    cache.path(key).parent.mkdir(parents=True)
    cache.path(key).write_text('{"response": ')
    assert cache.get(key) is None


def test_retry_after_forms():
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({}) is None
    assert 0 <= retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) < 1


def test_missing_key_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("RT_ABSENT_KEY", raising=False)
    ep = Endpoint("svc", "http://127.0.0.1:9/v1", key_env="RT_ABSENT_KEY")
    with pytest.raises(MissingApiKey, match="RT_ABSENT_KEY"):
        ep.api_key()
    assert Endpoint("local", "http://127.0.0.1:9/v1", key_env=None).api_key() == "not-needed"
    config = {"datasets": {"d": {"type": "skimage", "images": ["page"]}},
              "models": {"gpt": {"type": "api_image", "endpoint": "svc"}},
              "api": {"endpoints": {"svc": {"base_url": "http://127.0.0.1:9/v1",
                                            "key_env": "RT_ABSENT_KEY"}},
                      "prompts": PROMPTS},
              # the metric weights have their own check and test; not this one's concern
              "metrics": {"missing_weights": "n/a"}}
    with pytest.raises(ConfigError, match="RT_ABSENT_KEY is not set"):
        check_config(config)


def test_config_resolution_names_bad_keys():
    base = {"datasets": {}, "models": {}, "api": {"endpoints": {"e": {"base_url": "u"}},
                                                  "prompts": {}}}
    with pytest.raises(ValueError, match=r"models.g.endpoint: unknown endpoint 'nope'"):
        resolve_api(base | {"models": {"g": {"type": "api_image", "endpoint": "nope"}}})
    with pytest.raises(ValueError, match=r"ocr.engines.v.prompt: no prompt given and no default "
                                         r"template api.prompts.ocr"):
        resolve_api(base | {"ocr": {"engines": {"v": {"type": "vlm", "endpoint": "e",
                                                      "model": "m"}}}})
    cfg = base | {"models": {"g": {"type": "api_image", "endpoint": "e", "prompt": "p"}}}
    assert resolve_api(cfg) == ["e"] and cfg["models"]["g"]["endpoint"]["base_url"] == "u"


def test_usage_ledger_sums_per_endpoint(server, tmp_path):
    client = client_for(endpoint(server, tmp_path))
    client.chat("m", [{"role": "user", "content": "Invent 2 scenes"}])
    client.chat("m", [{"role": "user", "content": "Invent 2 scenes"}])
    ledger = tmp_path / "usage.jsonl"
    append_usage(ledger, "job/a")
    append_usage(ledger, "job/b")
    (row,) = summarize_usage(ledger)
    assert row["jobs"] == 2 and row["requests"] == 2 and row["cache_hits"] == 2
    assert row["output_tokens"] > 0 and KEY not in ledger.read_text()
    # the seconds of the one request sent, counted in both jobs' lines (the client's running sum)
    assert row["seconds"] == round(2 * client.usage.seconds, 3) and client.usage.seconds > 0
    assert summarize_usage(ledger, since=9e12) == []


# -- VLM OCR and judge ------------------------------------------------------------------------
@requires_tesseract
def test_vlm_ocr_reads_through_the_chat_endpoint(server, tmp_path):
    ocr = VlmOCR(endpoint(server, tmp_path), "fake-vlm", PROMPTS["ocr"])
    assert ocr.check(["eng"]) == f"fake-vlm at {server.base_url}"
    text = ocr.read(text_image(["Round trip", "through pixels"]), lang="eng")
    assert "Round trip" in text and "through pixels" in text


def test_vlm_judge_and_verdict_parsing(server, tmp_path):
    judge = VlmJudge(endpoint(server, tmp_path), "fake-vlm", PROMPTS["judge"])
    assert judge.judge(text_image(["Hello"]), "Hello").score == 2
    assert judge.judge(np.full((64, 64, 3), 255, np.uint8), "Hello").score == 0
    assert parse_verdict('Sure! {"score": 1, "explanation": "minor"}')["score"] == 1
    for bad in ("no json", '{"score": 3}', '{"explanation": "x"}'):
        with pytest.raises(ApiError):
            parse_verdict(bad)


@requires_tesseract
def test_render_audit_stores_the_judge_verdict(server, tmp_path):
    from roundtrip.core.manifest import Item
    from roundtrip.datasets.rendered.audit import AuditSettings, audit_items, build_judge

    judge = build_judge({"type": "vlm", "endpoint": endpoint(server, tmp_path),
                         "model": "fake-vlm", "prompt": PROMPTS["judge"]})
    items = [Item("a", "x", image=text_image(["Judge me"]), extra={"text": "Judge me"}),
             Item("b", "x", image=text_image(["FAIL-ALWAYS"]), extra={"text": "FAIL-ALWAYS"})]
    server.inject()
    audit = audit_items(items, AuditSettings(threads=1), judge=judge).set_index("item_id")
    assert audit.loc["a", "judge_score"] == 2 and audit.loc["a", "judge"] == "vlm:fake-vlm"
    # the reference text is in the prompt: this request always fails; recorded, run goes on
    assert math.isnan(audit.loc["b", "judge_score"])
    assert audit.loc["b", "judge_explanation"].startswith("failed: ")


# -- synthesis and translation ------------------------------------------------------------------
def gpt_spec(server, tmp_path, kind, **kw):
    spec = {"type": f"gpt_{kind}", "endpoint": endpoint(server, tmp_path),
            "scenes_prompt": PROMPTS[f"{kind}_scenes"], "image_prompt": PROMPTS[f"{kind}_image"],
            "rounds": 2, "per_round": 2, "image_size": "128x128"} | kw
    return GptSetSpec.from_config(spec)


def test_gpt_highres_set_records_each_image(server, tmp_path):
    # in order (concurrency 1): chat 1 rate-limited, its retry, chat 2, then the first image
    # comes back at half the size
    server.inject("429", "ok", "ok", "wrong_size")
    spec = gpt_spec(server, tmp_path, "highres")
    items = build_gpt_set(GptSetSpec(**{**spec.__dict__, "endpoint": endpoint(
        server, tmp_path, concurrency=1)}))
    assert [it.item_id for it in items] == ["highres_00_00", "highres_00_01", "highres_01_00",
                                            "highres_01_01"]
    assert all(it.image is not None and it.image.shape == (128, 128, 3) for it in items)
    descriptions = {it.extra["description"] for it in items}
    assert len(descriptions) == 4  # the round number makes each request distinct
    for it in items:
        assert it.extra["description"] in it.extra["prompt"]
        assert it.extra["api_model"] == "gpt-image-1" and it.extra["generated_at"].endswith("Z")
    notes = [it.extra["note"] for it in items if it.extra["note"]]
    assert notes == ["API returned 64x64; resized to 128x128 (Lanczos)"]


def test_gpt_set_records_missing_descriptions_and_failed_images(server, tmp_path):
    spec = gpt_spec(server, tmp_path, "detail", rounds=1, per_round=3, max_attempts=2,
                    image_prompt="FAIL-ALWAYS {description}",
                    scenes_prompt="Design 2 prompts as JSONL (round {round})")
    items = build_gpt_set(spec)
    assert [it.image is None for it in items] == [True, True, True]
    assert items[2].reason == "round 1 answered 2 usable records of 3"
    assert "no image after 2 attempts" in items[0].reason


def test_gpt_posters_carry_title_and_slogan(server, tmp_path):
    items = build_gpt_set(gpt_spec(server, tmp_path, "posters", rounds=1, image_size="512x512"))
    assert len(items) == 2
    for it in items:
        assert it.extra["text"] == f"{it.extra['title']}\n{it.extra['slogan']}"
        assert f'"{it.extra["title"]}"' in it.extra["prompt"] and it.extra["lang"] == "eng"


def test_translation_keeps_lines_and_falls_back_per_line(server, tmp_path):
    cfg = {"endpoint": endpoint(server, tmp_path), "model": "m", "prompt": PROMPTS["translate"]}
    blocks = [["A title", "First sentence.", "Second sentence."], ["Other", "Only one."]]
    assert translate_blocks(blocks, "Korean", cfg) == [[s.upper() for s in b] for b in blocks]
    # an answer with the wrong number of lines: each line is asked for alone
    odd = {**cfg, "prompt": "Translate into {language} ({n} lines):\n\n{text}\nextra line"}
    assert translate_blocks([["a", "b"]], "Hindi", odd) == [["A EXTRA LINE", "B EXTRA LINE"]]


# -- GPT-image as a model, through the reconstruction harness ----------------------------------
def test_api_image_model_in_the_harness(server, tmp_path):
    import hashlib

    from roundtrip.core.manifest import Item, write_dataset
    from roundtrip.models import build_model
    from roundtrip.stages.reconstruct import reconstruct_shard

    images = [text_image([f"item {i}"], size=(96, 64)) for i in range(3)]
    write_dataset([Item(f"i{i}", "x", image=im) for i, im in enumerate(images)], tmp_path / "ds")
    png = io.BytesIO()
    Image.fromarray(images[1]).save(png, format="PNG")
    server.fail_images.add(hashlib.sha256(png.getvalue()).hexdigest())
    model = build_model("gpt_image", {"type": "api_image", "endpoint": endpoint(
        server, tmp_path, max_retries=1, concurrency=1), "prompt": PROMPTS["recreate"]})
    assert model.info().family == "api"
    server.inject("wrong_size")  # i0's answer (requests go in order at concurrency 1)
    status = reconstruct_shard(model, tmp_path / "ds/manifest.csv", tmp_path / "out",
                               batch_size=8).set_index("item_id")
    assert list(status["status"]) == ["ok", "error", "ok"]
    assert "gave up after 2 attempts" in status.loc["i1", "reason"]
    assert status.loc["i0", "reason"] == "API returned 48x32; resized to 96x64 (Lanczos)"
    assert status.loc["i2", "reason"] == ""
    out = np.asarray(Image.open(tmp_path / "out/i2.png"))
    assert out.shape == images[2].shape and 0 < np.abs(out.astype(int) - images[2]).max() <= 7


# -- OCR robustness ------------------------------------------------------------------------------
def test_rank_agreement_measures_kendall_tau():
    means = pd.DataFrame({"a.cer": [0.1, 0.2, 0.3, 0.4], "b.cer": [0.15, 0.25, 0.2, 0.5],
                          "c.cer": [0.4, 0.3, 0.2, 0.1]}, index=list("wxyz"))
    got = rank_agreement(means, metrics=("cer",)).set_index(["engine_a", "engine_b"])
    assert got.loc[("a", "c"), "kendall_tau"] == pytest.approx(-1.0)
    assert got.loc[("a", "b"), "kendall_tau"] == pytest.approx(4 / 6)  # one discordant pair of 6
    assert got.loc[("a", "b"), "n_models"] == 4
    few = rank_agreement(means.iloc[:2], metrics=("cer",))
    assert few["kendall_tau"].isna().all() and "at least 3 models" in few["note"].iloc[0]
    one = rank_agreement(means[["a.cer"]], metrics=("cer",))
    assert "needs two OCR engines" in one["note"].iloc[0]


def test_robustness_is_per_dataset_with_cer_only_for_scripts_without_spaces():
    from roundtrip.evals.vtbench.ocr_robustness import agreement_per_dataset, robustness_columns

    # The released set CER/WER first, then roundtrip's per-item means; CER only without spaces.
    cols = robustness_columns(["posters", "zh"], ["tess", "rapid"], cer_only={"zh"})
    assert [(c.dataset, c.metric) for c in cols] == [
        ("posters/tess", "cer_vtbench"), ("posters/tess", "wer_vtbench"),
        ("posters/tess", "cer"), ("posters/tess", "wer"),
        ("posters/rapid", "cer_vtbench"), ("posters/rapid", "wer_vtbench"),
        ("posters/rapid", "cer"), ("posters/rapid", "wer"),
        ("zh/tess", "cer_vtbench"), ("zh/tess", "cer"), ("zh/rapid", "cer_vtbench"),
        ("zh/rapid", "cer")]
    only_means = robustness_columns(["posters"], ["tess"], cer_only=set(), released=set())
    assert [c.metric for c in only_means] == ["cer", "wer"]
    assert cols[0].group == "posters (tess)"
    means = pd.DataFrame({"posters/tess.cer": [0.1, 0.2, 0.3], "posters/rapid.cer": [0.3, 0.2, 0.1],
                          "zh/tess.cer": [0.1, 0.2, 0.3], "zh/rapid.cer": [0.2, 0.3, 0.4]},
                         index=list("xyz"))
    got = agreement_per_dataset(means, ["posters", "zh"], ["tess", "rapid"]).set_index("dataset")
    assert got.loc["posters", "kendall_tau"] == pytest.approx(-1.0)
    assert got.loc["zh", "kendall_tau"] == pytest.approx(1.0)
    assert list(got["metric"]) == ["CER", "CER"]  # no WER columns: no WER rows
    # engines per dataset (ocr.engines.<name>.datasets): rapid reads the posters only
    per_set = {"posters": ["tess", "rapid"], "zh": ["tess"]}
    cols = robustness_columns(["posters", "zh"], per_set, cer_only={"zh"})
    assert [c.dataset for c in cols][-1] == "zh/tess" and len(cols) == 10  # 4 + 4 + 2 columns
    got = agreement_per_dataset(means.drop(columns="zh/rapid.cer"), ["posters", "zh"], per_set)
    assert got.set_index("dataset").loc["posters", "kendall_tau"] == pytest.approx(-1.0)
    assert "reading the dataset" in got.set_index("dataset").loc["zh", "note"]


def test_translated_multilingual_set_renders_the_translation(server, tmp_path):
    """datasets.<name>.translate: the English grammar text of the same seed, translated (the
    fake server upper-cases), is what the Korean canvas shows and what its ground truth says."""
    from roundtrip.datasets.rendered.abstracts import AbstractsSpec, build_abstracts
    from roundtrip.render import RenderSettings

    translate = {"endpoint": endpoint(server, tmp_path), "model": "m",
                 "prompt": PROMPTS["translate"]}
    (item,) = build_abstracts(AbstractsSpec(language="ko", count=1, canvas_px=384, size_pt=14,
                                            translate=translate), RenderSettings())
    english = build_abstracts(AbstractsSpec(language="en", count=1, canvas_px=384, size_pt=14),
                              RenderSettings())[0]
    assert item.image is not None and item.extra["lang"] == "kor"
    text = item.extra["text"]
    assert text and text == text.upper()
    first_title = english.extra["text"].split("\n")[0]
    assert text.split("\n")[0] == first_title.upper()
    assert server.counts["/v1/chat/completions"] >= 1


def test_stream_builds_off_the_loop_and_keeps_concurrency_in_flight(tmp_path, monkeypatch):
    """24 requests of 300 ms at concurrency 8 through the client's stream: the requests are built
    on the builder threads (never the event loop's), the server sees exactly 8 in flight at
    most and more than 5 on average (the in-process test server staggers new connections), the answers come back as they arrive (each index once), and a
    second stream is answered from the cache with nothing sent."""
    import threading

    from roundtrip.api.client import Reply
    from roundtrip.api.scheduler import event_loop

    monkeypatch.setenv("RT_TEST_KEY", KEY)
    with FakeOpenAI(key=KEY, answer="B", delay_s=0.3) as srv:
        client = ApiClient(Endpoint.from_config("fake", endpoint(srv, tmp_path, concurrency=8)))
        threads = set()

        def build(k):
            threads.add(threading.current_thread().name)
            return client.prepare_chat("m", [{"role": "user", "content": f"question {k}"}])
        out = list(client.stream(range(24), build))
        assert sorted(i for i, _ in out) == list(range(24))
        assert all(isinstance(r, Reply) and r.text == "B" and not r.cached for _, r in out)
        assert threads and all(t.startswith("roundtrip build") for t in threads)
        assert event_loop().thread.name not in threads
        assert srv.max_in_flight == 8 and srv.mean_in_flight() > 5
        again = dict(client.stream(range(24), build))
        assert srv.total() == 24 and all(r.cached for r in again.values())
        assert client.usage.requests == 24 and client.usage.cache_hits == 24
        # a build that raises, or returns something else, is the item's result as it is
        odd = dict(client.stream(["x", "y"], lambda v: 1 / 0 if v == "x" else "kept"))
        assert isinstance(odd[0], ZeroDivisionError) and odd[1] == "kept"
