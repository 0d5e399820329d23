"""The decoding-speed settings of the in-process readers (``type: transformers``): a static KV
cache, ``torch.compile`` of the decoding step, the attention kernels, length-sorted batches and
the prefetch thread. Each must give the eager path's answers under greedy decoding, on the tiny
random Gemma 3 (and Janus) of ``tests/tiny_models.py``, on the CPU; none may change a cache key.
"""
import logging
import shlex
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import yaml
from conftest import REPO
from doc_examples import yaml_after
from in_process import fresh_process, generations, one_thread  # noqa: F401 - fixtures

import roundtrip.readers.transformers_vlm as tv
from roundtrip.api.client import clear_clients
from roundtrip.readers import build_ocr
from roundtrip.readers.transformers_vlm import (ChatVLM, GenerationFailed, check_decoding_path,
                                                decoding_path, unload_all)

pytest.importorskip("transformers")

PROMPT = "Extract and output only the text from the image in its original language."
#: The eager path: a dynamic cache, nothing compiled, batches in the order the requests came,
#: prepared in the generating thread.
EAGER = {"cache_implementation": "dynamic", "compile": False, "sort_by_length": False,
         "prefetch": False}
#: Prompts of 2 to 15 tokens (words and punctuation) of the tiny tokenizer's vocabulary.
PROMPTS = ["The quick brown fox jumps over the lazy dog.", "user model",
           "If there is no text, return nothing.", PROMPT, "The lazy dog.",
           "Compare the text in the image with it and answer with a JSON object."]


@pytest.fixture(scope="module")
def gemma(tmp_path_factory) -> Path:
    return tiny_models.tiny_gemma3(tmp_path_factory.mktemp("tiny-gemma3"))


def images(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (24 + 4 * k, 40, 3), dtype=np.uint8) for k in range(n)]


def vlm(folder: Path, cache: Path, **kw) -> ChatVLM:
    settings = {"max_new_tokens": 6, "batch_size": 4, "image_size": [32, 32]} | kw
    return ChatVLM(str(folder), "ocr.engines.tiny.model", cache_dir=str(cache), **settings)


def engine(folder: Path, cache: Path, **kw):
    spec = {"type": "transformers", "model": str(folder), "prompt": PROMPT, "batch_size": 4,
            "image_size": [32, 32], "max_new_tokens": 6, "cache_dir": str(cache)} | kw
    return build_ocr("tiny", spec)


def requests(n: int = 6) -> list[list]:
    """``n`` requests [image, prompt] with prompts of different lengths."""
    return [[im, PROMPTS[k % len(PROMPTS)]] for k, im in enumerate(images(n))]


@pytest.fixture()
def generate_calls(monkeypatch) -> list[dict]:
    """Every ``generate`` call of the tiny Gemma 3: its batch, prompt width (padded tokens),
    decoding-path arguments, thread, start and end (``time.monotonic``)."""
    from transformers import Gemma3ForConditionalGeneration

    calls = []
    real = Gemma3ForConditionalGeneration.generate

    def spy(self, *args, **kwargs):
        call = {"batch": int(kwargs["input_ids"].shape[0]),
                "width": int(kwargs["input_ids"].shape[1]),
                "path": {k: kwargs[k] for k in ("cache_implementation", "disable_compile",
                                                "compile_config") if k in kwargs},
                "thread": threading.current_thread().name, "start": time.monotonic()}
        calls.append(call)
        try:
            return real(self, *args, **kwargs)
        finally:
            call["end"] = time.monotonic()

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", spy)
    return calls


@pytest.fixture()
def static_caches(monkeypatch) -> list[int]:
    """The length of every static KV cache ``generate`` builds (its full-attention layer)."""
    from transformers import Gemma3ForConditionalGeneration

    built = []
    real = Gemma3ForConditionalGeneration._prepare_static_cache

    def spy(self, *args, **kwargs):
        cache = real(self, *args, **kwargs)
        built.append(int(cache.layers[-1].max_cache_len))  # the full-attention layer
        return cache

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "_prepare_static_cache", spy)
    return built


# -- which path ----------------------------------------------------------------------------------
def test_auto_is_the_static_cache_and_compile_on_cuda_only():
    """auto: a static cache on a GPU for a model transformers can compile (which then compiles
    its decoding step by itself); on the CPU, or for a model it cannot compile, nothing passed
    (generate's own defaults); compile: false always passes disable_compile."""
    assert decoding_path("auto", "auto", "cuda", True) == {"cache_implementation": "static"}
    assert decoding_path("auto", "auto", "cuda:1", True) == {"cache_implementation": "static"}
    assert decoding_path("auto", "auto", "cpu", True) == {}
    assert decoding_path("auto", "auto", "cuda", False) == {}
    assert decoding_path("auto", False, "cuda", True) == {"disable_compile": True}
    assert decoding_path("dynamic", "auto", "cuda", True) == {"cache_implementation": "dynamic"}
    assert decoding_path("static", False, "cpu", False) == {"cache_implementation": "static",
                                                            "disable_compile": True}
    asked = decoding_path("auto", True, "cpu", True)  # compile asked for: on the CPU too
    assert asked["cache_implementation"] == "static"
    config = asked["compile_config"]
    assert (config.backend, config.mode, config.fullgraph) == ("inductor", "reduce-overhead",
                                                               False)
    assert config._compile_all_devices is True
    eager_backend = decoding_path("static", {"backend": "eager"}, "cpu")["compile_config"]
    assert (eager_backend.backend, eager_backend.mode) == ("eager", None)
    assert decoding_path("static", {"mode": "max-autotune"}, "cuda")["compile_config"].mode \
        == "max-autotune"


def test_a_bad_speed_setting_names_its_key(gemma, tmp_path):
    with pytest.raises(ValueError, match=r"^compile: compiling the decoding step needs a static "
                                         r"cache \(cache_implementation: static or auto\), not "
                                         r"dynamic$"):
        check_decoding_path("dynamic", True)
    with pytest.raises(ValueError, match=r"^cache_implementation: 'hybrid' is not one of "
                                         r"\['auto', 'static', 'dynamic'\]$"):
        check_decoding_path("hybrid")
    with pytest.raises(ValueError, match=r"^compile: unknown \['modes'\]"):
        check_decoding_path("auto", {"modes": "x"})
    with pytest.raises(ValueError, match=r"^compile: 'yes' is not auto, true, false"):
        check_decoding_path("auto", "yes")
    with pytest.raises(ValueError, match=r"^ocr.engines.tiny: compile: compiling"):
        engine(gemma, tmp_path, cache_implementation="dynamic", compile={"backend": "eager"})
    # an attention implementation transformers does not know fails at loading, naming the key
    bad = engine(gemma, tmp_path, attn_implementation="no_such_kernel")
    with pytest.raises(ValueError, match=r"^ocr.engines.tiny.attn_implementation: "
                                         r"'no_such_kernel': Specified `attn_implementation="
                                         r"\"no_such_kernel\"` is not supported"):
        bad.read(images(1)[0])


def test_the_reader_resolves_auto_per_device_and_model(tmp_path):
    """Without loading anything: the device and the model class decide (a stand-in model)."""
    compilable = type("Model", (), {"_can_compile_fullgraph": True})()
    plain = type("Model", (), {})()
    gpu = ChatVLM("some/model", cache_dir=str(tmp_path), device="cuda:0")
    assert gpu.decoding_args(compilable) == ({"cache_implementation": "static"}, True)
    assert gpu.decoding_args(plain) == ({}, False)
    cpu = ChatVLM("some/model", cache_dir=str(tmp_path), device="cpu")
    assert cpu.decoding_args(compilable) == ({}, False)
    explicit = ChatVLM("some/model", cache_dir=str(tmp_path), device="cuda",
                       cache_implementation="static")
    assert explicit.decoding_args(compilable) == ({"cache_implementation": "static"}, False)
    # the prefetch thread: auto on a GPU only (on the CPU it would take the model's cores)
    assert (gpu.prefetching(), cpu.prefetching()) == (True, False)
    assert ChatVLM("m", cache_dir=str(tmp_path), device="cpu", prefetch=True).prefetching()
    assert not ChatVLM("m", cache_dir=str(tmp_path), device="cuda", prefetch=False).prefetching()
    with pytest.raises(ValueError, match=r"^prefetch: 'yes' is not auto, true or false$"):
        ChatVLM("m", cache_dir=str(tmp_path), prefetch="yes")


# -- same answers --------------------------------------------------------------------------------
def test_static_cache_gives_the_eager_answers(gemma, tmp_path, generate_calls, static_caches):
    """6 requests of different prompt lengths, batches of 4: a static cache (not compiled) gives
    the eager path's answers and one-by-one answers; the default on the CPU builds none."""
    reqs = requests(6)
    eager = vlm(gemma, tmp_path / "e", **EAGER).answer_many(reqs)
    assert [c["path"] for c in generate_calls] == [{"cache_implementation": "dynamic",
                                                    "disable_compile": True}] * 2
    static = vlm(gemma, tmp_path / "s", cache_implementation="static", compile=False)
    assert static.answer_many(reqs) == eager
    assert [c["path"] for c in generate_calls[2:]] == [{"cache_implementation": "static",
                                                        "disable_compile": True}] * 2
    # one cache per generate call, sized to its prompt plus 6 new tokens, never shrinking
    assert len(static_caches) == 2 and static_caches[0] == generate_calls[2]["width"] + 5
    assert static_caches[1] == max(static_caches[0], generate_calls[3]["width"] + 5)
    default = vlm(gemma, tmp_path / "d").answer_many(reqs)
    assert default == eager and len(static_caches) == 2  # auto on the CPU: no static cache
    assert [c["path"] for c in generate_calls[4:]] == [{}, {}]
    singles = [vlm(gemma, tmp_path / "1", batch_size=1, **EAGER).answer_many([r])[0]
               for r in reqs]
    assert eager == singles
    assert all(isinstance(a, str) and 1 <= len(a.split()) <= 6 for a in eager)
    assert len(set(eager)) > 1


def test_compiled_decoding_gives_the_eager_answers(gemma, tmp_path, monkeypatch):
    """compile with the eager backend on the CPU (torch.compile traces the decoding step with
    TorchDynamo; the inductor backend takes minutes here): the eager path's answers, and
    transformers compiled the decoding step with the config asked for."""
    from transformers import Gemma3ForConditionalGeneration

    compiled = []
    real = Gemma3ForConditionalGeneration.get_compiled_call

    def spy(self, compile_config):
        compiled.append(compile_config)
        return real(self, compile_config)

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "get_compiled_call", spy)
    reqs = requests(3)
    eager = vlm(gemma, tmp_path / "e", **EAGER).answer_many(reqs)
    assert compiled == []
    fast = vlm(gemma, tmp_path / "c", compile={"backend": "eager"}).answer_many(reqs)
    assert fast == eager
    assert [(c.backend, c.mode) for c in compiled] == [("eager", None)]


def test_compile_true_hands_the_decoding_step_to_torch_compile(gemma, tmp_path, monkeypatch):
    """compile: true on the CPU: transformers' automatic compilation is asked for with its
    default config (inductor, reduce-overhead); torch.compile itself is stood in for (it takes
    minutes on two cores), so the decoding steps run the function it was given."""
    import torch

    compiled = []

    def fake_compile(fn, **kwargs):
        compiled.append(kwargs)
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    reqs = requests(3)
    eager = vlm(gemma, tmp_path / "e", **EAGER).answer_many(reqs)
    assert vlm(gemma, tmp_path / "t", compile=True).answer_many(reqs) == eager
    assert len(compiled) == 1
    assert compiled[0]["backend"] == "inductor" and compiled[0]["mode"] == "reduce-overhead"


def test_attention_implementations_give_the_same_answers(gemma, tmp_path):
    """eager and sdpa attention: the same answers; auto is transformers' choice (sdpa)."""
    reqs = requests(4)
    answers = {}
    for attn in ("auto", "eager", "sdpa"):
        reader = vlm(gemma, tmp_path / attn, attn_implementation=attn)
        answers[attn] = reader.answer_many(reqs)
        model = reader.loaded()[0]
        assert model.config._attn_implementation == ("sdpa" if attn == "auto" else attn)
    assert answers["eager"] == answers["sdpa"] == answers["auto"]


def test_janus_chat_with_a_static_cache_gives_the_eager_answers(tmp_path):
    """The Telephone Game's unified model (Janus) captions through the same component."""
    janus = tiny_models.tiny_janus(tmp_path / "janus")
    reqs = [[tiny_models.JANUS_SENTENCES[0], im] for im in images(3)]
    reqs.append([tiny_models.JANUS_SENTENCES[2], images(1, seed=1)[0]])
    eager = vlm(janus, tmp_path / "e", **EAGER).answer_many(reqs)
    static = vlm(janus, tmp_path / "s", cache_implementation="static", compile=False)
    assert static.answer_many(reqs) == eager and len(set(eager)) > 1


# -- the automatic path falls back -----------------------------------------------------------------
def _fails_static(monkeypatch) -> list[dict]:
    """``generate`` raises for a static cache (a compiler failing); the decoding paths asked."""
    from transformers import Gemma3ForConditionalGeneration

    paths = []
    real = Gemma3ForConditionalGeneration.generate

    def generate(self, *args, **kwargs):
        paths.append(kwargs.get("cache_implementation"))
        if kwargs.get("cache_implementation") == "static":
            raise RuntimeError("BackendCompilerFailed: inductor raised")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", generate)
    return paths


def test_the_automatic_fast_path_falls_back_to_eager(gemma, tmp_path, monkeypatch, caplog):
    """auto as on a GPU (the device stood in for): the first batch's static cache fails, the
    batch is generated again on the eager path, which the reader keeps; the answers are the
    eager ones and nothing counts as failed."""
    reqs = requests(6)
    eager = vlm(gemma, tmp_path / "e", **EAGER).answer_many(reqs)
    paths = _fails_static(monkeypatch)
    real = tv.decoding_path
    monkeypatch.setattr(tv, "decoding_path",
                        lambda cache, comp, device, compilable: real(cache, comp, "cuda",
                                                                     compilable))
    reader = vlm(gemma, tmp_path / "a")
    with caplog.at_level(logging.WARNING, logger=tv.__name__):
        assert reader.answer_many(reqs) == eager
    assert paths == ["static", "dynamic", "dynamic"]  # batches of 4 and 2
    assert reader.usage.failures == 0
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "the fast decoding path (['cache_implementation']) failed: RuntimeError: " \
           "BackendCompilerFailed: inductor raised; this reader generates on the eager path " \
           "from now on" in warning


def test_an_explicit_setting_is_not_replaced(gemma, tmp_path, monkeypatch):
    """cache_implementation: static given: its failure is each item's error, not cached."""
    paths = _fails_static(monkeypatch)
    reader = vlm(gemma, tmp_path, cache_implementation="static")
    out = reader.answer_many(requests(2))
    assert [type(a) for a in out] == [GenerationFailed] * 2
    assert str(out[0]) == f"{gemma}: BackendCompilerFailed: inductor raised"
    assert paths == ["static"] and reader.usage.failures == 2
    assert not list(tmp_path.rglob("*.json"))


# -- length-sorted batches -----------------------------------------------------------------------
def test_length_sorted_batches_keep_the_callers_order(gemma, tmp_path, generate_calls):
    """9 requests (prompts of 2 to 15 tokens; 7 with an image, 2 without) in batches of 3: each
    image count's requests go to its batches longest first, so a batch pads less; the batch
    sizes are those of the unsorted path; the answers, in the caller's order, are the unsorted
    and the one-by-one answers."""
    reqs = requests(7) + [[PROMPTS[3]], [PROMPTS[1]]]
    plain = vlm(gemma, tmp_path / "u", batch_size=3, sort_by_length=False)
    unsorted = plain.answer_many(reqs)
    sorted_ = vlm(gemma, tmp_path / "s", batch_size=3).answer_many(reqs)
    assert sorted_ == unsorted
    before, after = generate_calls[:4], generate_calls[4:]
    assert [c["batch"] for c in before] == [c["batch"] for c in after] == [3, 3, 1, 2]
    # an image request is 12 tokens and its words (the turn markers 6, the image 6: begin, 4
    # image tokens, end), a text request 6 and its words: [22, 14, 21, 26, 16, 27, 22] and
    # [20, 8], 176 tokens. Unsorted, the batches [22 14 21] [26 16 27] [22] [20 8] pad to 22,
    # 27, 22, 20 (209 tokens); sorted, [27 26 22] [22 21 16] [14] [20 8] to 27, 22, 14, 20 (201)
    assert [c["width"] for c in before] == [22, 27, 22, 20]
    assert [c["width"] for c in after] == [27, 22, 14, 20]
    padded = [sum(c["batch"] * c["width"] for c in calls) - 176 for calls in (before, after)]
    assert padded == [33, 25]
    singles = [vlm(gemma, tmp_path / "1", batch_size=1, **EAGER).answer_many([r])[0]
               for r in reqs]
    assert sorted_ == singles


# -- the prefetch thread -------------------------------------------------------------------------
def test_prefetch_prepares_the_next_batch_while_one_generates(gemma, tmp_path, generate_calls,
                                                              monkeypatch):
    """prefetch: true: the 3 batches are prepared in the worker thread, batches 2 and 3 each
    while the batch before it generates (generate is slowed down to make the overlap certain);
    the same answers as without."""
    reqs = requests(9)
    without = vlm(gemma, tmp_path / "n", batch_size=3, prefetch=False).answer_many(reqs)
    prepared = []
    real_inputs = tv._inputs

    def traced(processor, batch):
        prepared.append((threading.current_thread().name, time.monotonic()))
        return real_inputs(processor, batch)

    monkeypatch.setattr(tv, "_inputs", traced)
    from transformers import Gemma3ForConditionalGeneration

    real = Gemma3ForConditionalGeneration.generate  # generate_calls' spy

    def slow(self, *args, **kwargs):
        time.sleep(0.3)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", slow)
    calls = len(generate_calls)
    with_prefetch = vlm(gemma, tmp_path / "p", batch_size=3, prefetch=True).answer_many(reqs)
    assert with_prefetch == without
    threads = [name for name, _ in prepared]
    assert len(threads) == 3 and all(t.startswith("roundtrip-prefetch") for t in threads)
    assert all(c["thread"] == threading.current_thread().name for c in generate_calls)
    mine = generate_calls[calls:]
    for k in (1, 2):  # batch k's preparation started before batch k - 1 finished generating
        assert prepared[k - 1][1] < prepared[k][1] < mine[k - 1]["end"]


def test_a_preprocessing_error_is_that_items_error(gemma, tmp_path, monkeypatch):
    """The processor refuses one request of a prefetched batch: that request's answer is a
    GenerationFailed with the processor's message, not cached, counted as a failure; the other
    requests of its batch and of the others get their answers; a rerun asks only for it."""
    reqs = requests(6)
    reqs[4] = [reqs[4][0], "BROKEN " + PROMPTS[1]]
    real_inputs = tv._inputs

    def refusing(processor, batch):
        if any("BROKEN" in p for parts, _ in batch for p in parts if isinstance(p, str)):
            raise ValueError("the processor refuses this request")
        return real_inputs(processor, batch)

    expected = vlm(gemma, tmp_path / "e", batch_size=1, **EAGER).answer_many(reqs)
    clear_clients()  # count this reader's usage alone
    monkeypatch.setattr(tv, "_inputs", refusing)
    reader = vlm(gemma, tmp_path / "p", batch_size=4, prefetch=True)
    out = reader.answer_many(reqs)
    assert isinstance(out[4], GenerationFailed)
    assert str(out[4]) == f"{gemma}: the processor refuses this request"
    assert out[:4] + out[5:] == expected[:4] + expected[5:]
    assert reader.usage.failures == 1 and reader.usage.requests == 5
    assert len(list((tmp_path / "p").rglob("*.json"))) == 5
    unload_all(), clear_clients()  # a new job
    again = vlm(gemma, tmp_path / "p", batch_size=4, prefetch=True)
    assert isinstance(again.answer_many(reqs)[4], GenerationFailed)
    assert again.usage.cache_hits == 5 and again.usage.failures == 1


# -- the cache key -------------------------------------------------------------------------------
def test_the_decoding_path_is_not_in_the_cache_key(gemma, tmp_path, generations):
    """Greedy answers do not depend on the path: answers generated on the static path are
    served from the cache to an eager reader (no generate call), and no speed setting changes
    a key."""
    im = images(1)[0]
    base = vlm(gemma, tmp_path)
    key = base.request_key([im, PROMPT])[0]
    for setting in ({"cache_implementation": "static"}, {"cache_implementation": "dynamic"},
                    {"compile": False}, {"compile": {"backend": "eager"}},
                    {"attn_implementation": "eager"}, {"sort_by_length": False},
                    {"prefetch": False}):
        assert vlm(gemma, tmp_path, **setting).request_key([im, PROMPT])[0] == key, setting
    reqs = requests(4)
    first = vlm(gemma, tmp_path / "c", cache_implementation="static", compile=False)
    answers = first.answer_many(reqs)
    assert generations == [4]
    unload_all(), clear_clients()  # a new job
    eager = vlm(gemma, tmp_path / "c", **EAGER)
    assert eager.answer_many(reqs) == answers
    assert generations == [4] and eager.usage.cache_hits == 4


# -- the config ------------------------------------------------------------------------------------
def test_the_schema_takes_the_speed_settings():
    import copy

    from roundtrip.workflow.checks import schema_problem

    schema = str(REPO / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["ocr"]["engines"]["gemma3"] = {
        "type": "transformers", "model": "google/gemma-3-12b-it", "cache_implementation": "auto",
        "compile": {"mode": "max-autotune", "dynamic": None}, "attn_implementation": "sdpa",
        "sort_by_length": False, "prefetch": True}
    config["audit"]["judge"] = {"type": "transformers", "model": "Qwen/Qwen2.5-VL-7B-Instruct",
                                "compile": False, "cache_implementation": "dynamic"}
    assert schema_problem(config, schema) is None
    for value in (True, False, "auto"):
        config["ocr"]["engines"]["gemma3"]["compile"] = value
        config["ocr"]["engines"]["gemma3"]["prefetch"] = value
        assert schema_problem(config, schema) is None
    bad = copy.deepcopy(config)
    bad["ocr"]["engines"]["gemma3"]["cache_implementation"] = "hybrid"
    assert schema_problem(bad, schema).startswith("ocr.engines.gemma3.cache_implementation: "
                                                  "'hybrid' is not one of ['auto', 'static', "
                                                  "'dynamic']")
    for key, value in (("compile", {"modes": "x"}), ("compile", "yes"), ("prefetch", "yes"),
                       ("sort_by_length", "yes")):
        bad = copy.deepcopy(config)
        bad["ocr"]["engines"]["gemma3"][key] = value
        assert schema_problem(bad, schema).startswith(f"ocr.engines.gemma3.{key}: "), key


def test_the_docs_speed_example_is_valid_and_builds(gemma, tmp_path):
    """docs/api.md's decoding-speed example: valid against the schema; the engine it writes
    builds with those settings and reads with the tiny model on the CPU."""
    from roundtrip.workflow.checks import schema_problem

    example = yaml_after(REPO / "docs/api.md", "**Decoding speed.**")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["ocr"]["engines"] |= example["ocr"]["engines"]
    assert schema_problem(config, str(REPO / "config.schema.yaml")) is None
    (name, spec), = example["ocr"]["engines"].items()
    ocr = build_ocr(name, spec | {"prompt": PROMPT})
    assert (ocr.vlm.cache_implementation, ocr.vlm.compile, ocr.vlm.attn_implementation) == \
        ("static", {"mode": "max-autotune-no-cudagraphs"}, "sdpa")
    assert (ocr.vlm.sort_by_length, ocr.vlm.prefetch) == (True, True)
    tiny = build_ocr(name, spec | {"model": str(gemma), "prompt": PROMPT, "image_size": [32, 32],
                                   "max_new_tokens": 3, "cache_dir": str(tmp_path),
                                   "compile": False})
    eager = engine(gemma, tmp_path / "e", max_new_tokens=3, **EAGER)
    assert tiny.read(images(1)[0]) == eager.read(images(1)[0])


# -- the benchmark ---------------------------------------------------------------------------------
def test_the_benchmark_paths_give_the_same_answers(tmp_path):
    """benchmarks/inprocess_vlm.py's paths, run here on the tiny model (one batch size, one
    repeat, in this process): plain transformers generate, roundtrip's eager path and its fast
    path answer alike; the documented GPU command parses with the medium model on CUDA."""
    bench = tiny_models.inprocess_bench()
    text = (REPO / "docs/benchmarks.md").read_text()
    command = next(line for line in text.splitlines()
                   if line.startswith("python benchmarks/inprocess_vlm.py --size medium"))
    args = bench.parser().parse_args(shlex.split(command)[2:])
    assert (args.size, args.device, args.paths) == ("medium", "cuda",
                                                    ["transformers", "eager", "fast"])
    assert bench.SIZES["medium"][:7] == (2560, 34, 1152, 27, 896, 14, 256)
    args = bench.parser().parse_args(["--size", "tiny", "--images", "3", "--repeats", "1",
                                      "--new-tokens", "4", "--device", "cpu"])
    model = bench.random_gemma3(tmp_path / "model", "tiny", eos=False)
    rows = {path: bench.one_setting(model, path, 2, args, tmp_path) for path in args.paths}
    answers = {path: row.pop("answers") for path, row in rows.items()}
    assert answers["transformers"] == answers["eager"] == answers["fast"]
    assert len(answers["fast"]) == 3 and len(set(answers["fast"])) > 1
    for row in rows.values():  # no end token: 4 new tokens per image
        assert row["images"] == 3 and row["tokens_out"] == 12 and row["gpu_peak_allocated_mb"] \
            is None
        assert 0 < row["first_token_s"] <= row["seconds"][0]
        assert len(row["prefill_s"]) == 2  # one per generate call: batches of 2 and 1
