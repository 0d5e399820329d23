"""Chat VLMs run in process (``type: transformers``): the OCR engine and the render judge.

The model is a tiny random Gemma 3 (``Gemma3ForConditionalGeneration``, built by
``benchmarks/inprocess_vlm.py``'s ``random_gemma3``: a 1-layer SigLIP vision tower on 32 px
images, 4 image tokens, a Gemma 3 text model of width 32 with one sliding and one full
attention layer), with a word-level tokenizer built from a few sentences (the ``tokenizers``
package), Gemma 3's ``generation_config`` (sampling, top-k 64, top-p 0.95, as the hub's
instruction-tuned Gemma 3 folders ship it) and a chat template in Gemma's turn format, saved
with ``save_pretrained`` and loaded back by path, as a real folder is. Its answers are
meaningless words; the code paths, the batching, the cache and the usage are the real ones.
"""
import copy
import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from doc_examples import yaml_after
from in_process import fresh_process, generations, one_thread  # noqa: F401 - fixtures

from roundtrip.api.client import append_usage, clear_clients
from roundtrip.api.settings import ApiConfigError, resolve_api
from roundtrip.core.config import ConfigError
from roundtrip.core.weights import WeightsMissing, local_model
from roundtrip.readers import (JUDGE_TYPES, OCR_TYPES, TransformersJudge, TransformersOCR,
                               build_ocr, ocr_items, read_in_batches)
from roundtrip.readers.transformers_vlm import (ChatVLM, folder_fingerprint, prepared_image,
                                                runs_in_process, unload_all)

pytest.importorskip("transformers")

PROMPT = "Extract and output only the text from the image in its original language."


def _bench():
    """benchmarks/inprocess_vlm.py, whose random Gemma 3 builder the tests use."""
    spec = importlib.util.spec_from_file_location("inprocess_vlm_bench",
                                                  REPO / "benchmarks/inprocess_vlm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def tiny_gemma3(folder: Path, constant: bool = False) -> Path:
    """The tiny random Gemma 3 (module docstring); ``constant``: every logit 0, so greedy
    decoding answers token 0, a verdict of score 2."""
    return BENCH.random_gemma3(folder, "tiny", constant=constant)


@pytest.fixture(scope="session")
def gemma(tmp_path_factory) -> Path:
    return tiny_gemma3(tmp_path_factory.mktemp("tiny-gemma3"))


@pytest.fixture(scope="session")
def constant_gemma(tmp_path_factory) -> Path:
    return tiny_gemma3(tmp_path_factory.mktemp("tiny-gemma3-constant"), constant=True)


def images(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (24 + 4 * k, 40, 3), dtype=np.uint8) for k in range(n)]


def engine(folder: Path, cache: Path, **kw) -> TransformersOCR:
    spec = {"type": "transformers", "model": str(folder), "prompt": PROMPT, "batch_size": 4,
            "image_size": [32, 32], "max_new_tokens": 6, "cache_dir": str(cache)} | kw
    return build_ocr("tiny", spec)


# -- the OCR engine ------------------------------------------------------------------------------
def test_ocr_engine_batched_equals_one_by_one(gemma, tmp_path, generations):
    """ocr.engines.<name> with type: transformers, through the OCR jobs' batching
    (read_in_batches): 6 images in batches of 4 give the texts of 6 batches of 1."""
    imgs = images(6)
    batched = engine(gemma, tmp_path / "a")
    rows = ocr_items(batched, [(f"i{k}", im, "eng") for k, im in enumerate(imgs)])
    assert generations == [4, 2]
    one = engine(gemma, tmp_path / "b", batch_size=1)
    singles = [one.read(im, "eng") for im in imgs]
    assert generations == [4, 2, 1, 1, 1, 1, 1, 1]
    assert rows["text"].tolist() == singles
    assert (rows["status"] == "ok").all()
    # answers of at most 6 tokens (max_new_tokens), words of the vocabulary, not all alike
    assert all(1 <= len(t.split()) <= 6 for t in singles) and len(set(singles)) > 1
    assert OCR_TYPES["transformers"] is TransformersOCR
    print("batched:", rows["text"].tolist())


def test_ocr_engine_sends_the_image_then_the_prompt_at_the_size_asked(gemma, tmp_path,
                                                                      monkeypatch):
    """The released OCR's message: [image, text], the image resized to image_size with PIL's
    default filter; {language} filled from the item's language."""
    from PIL import Image

    seen = []
    real = ChatVLM.request_key

    def spy(self, parts):
        seen.append(parts)
        return real(self, parts)

    monkeypatch.setattr(ChatVLM, "request_key", spy)
    ocr = engine(gemma, tmp_path, prompt="Read the {language} text.", image_size=[48, 40])
    im = images(1)[0]
    ocr.read_many([im], "eng+hin")
    assert isinstance(seen[0][0], np.ndarray) and seen[0][1] == "Read the English and Hindi text."
    _, canonical, (pil,) = ChatVLM.request_key(ocr.vlm, seen[0])
    assert pil.size == (48, 40) and canonical["content"][0]["size"] == [48, 40]
    assert np.array_equal(np.asarray(pil), np.asarray(Image.fromarray(im).resize((48, 40))))


def test_prepared_image_is_the_released_ocr_input():
    """VTBench's released OCR: Image.fromarray(x).convert("RGB").resize((1024, 1024)) (PIL's
    default filter, bicubic); 16-bit images are rounded to 8 bits first."""
    from PIL import Image

    im = images(1)[0]
    out = np.asarray(prepared_image(im, (1024, 1024)))
    assert out.shape == (1024, 1024, 3)
    assert np.array_equal(out, np.asarray(Image.fromarray(im).resize((1024, 1024),
                                                                      Image.BICUBIC)))
    assert np.array_equal(np.asarray(prepared_image(im.astype(np.uint16) * 257)), im)
    with pytest.raises(ValueError, match="uint8/uint16"):
        prepared_image(im.astype(np.float32))


def test_a_killed_job_resumes_from_the_cache(gemma, tmp_path, generations):
    """Answers are cached the moment their batch returns: a job killed during its second batch
    keeps the first batch's 4 answers; the rerun generates only the 2 others, and a third run
    generates nothing."""
    imgs = images(6)
    generations.kill_at = 1  # killed during the second batch
    with pytest.raises(KeyboardInterrupt):
        engine(gemma, tmp_path).read_many(imgs, "eng")
    assert generations == [4] and len(list(tmp_path.rglob("*.json"))) == 4

    generations.kill_at = None
    unload_all(), clear_clients()  # a new job
    resumed = engine(gemma, tmp_path).read_many(imgs, "eng")
    assert generations == [4, 2]

    unload_all(), clear_clients()
    again = engine(gemma, tmp_path)
    assert again.read_many(imgs, "eng") == resumed
    assert generations == [4, 2]  # the third run: 0 generations
    assert again.vlm.usage.requests == 0 and again.vlm.usage.cache_hits == 6
    fresh = engine(gemma, tmp_path / "fresh", batch_size=1).read_many(imgs, "eng")
    assert resumed == fresh  # the cached answers are the answers


def test_cache_key_follows_prompt_image_settings_and_folder(gemma, tmp_path):
    im = images(1)[0]
    base = engine(gemma, tmp_path)
    key = base.vlm.request_key([im, PROMPT])[0]
    assert engine(gemma, tmp_path).vlm.request_key([im, PROMPT])[0] == key
    assert engine(gemma, tmp_path, batch_size=2).vlm.request_key([im, PROMPT])[0] == key
    other = im.copy()
    other[0, 0, 0] ^= 1
    changed = {
        "prompt": base.vlm.request_key([im, PROMPT + " "])[0],
        "image bytes": base.vlm.request_key([other, PROMPT])[0],
        "image size": engine(gemma, tmp_path, image_size=[32, 40]).vlm.request_key(
            [im, PROMPT])[0],
        "max_new_tokens": engine(gemma, tmp_path, max_new_tokens=7).vlm.request_key(
            [im, PROMPT])[0],
        "decoding": engine(gemma, tmp_path, decoding={"num_beams": 2}).vlm.request_key(
            [im, PROMPT])[0],
        "dtype": engine(gemma, tmp_path, dtype="bfloat16").vlm.request_key([im, PROMPT])[0],
    }
    copied = tmp_path / "copy"
    shutil.copytree(gemma, copied)
    changed["folder copy"] = engine(copied, tmp_path).vlm.request_key([im, PROMPT])[0]
    assert folder_fingerprint(copied) == folder_fingerprint(gemma)
    cfg = json.loads((copied / "generation_config.json").read_text()) | {"top_k": 1}
    (copied / "generation_config.json").write_text(json.dumps(cfg))
    changed["folder"] = engine(copied, tmp_path).vlm.request_key([im, PROMPT])[0]
    assert changed.pop("folder copy") == key  # same files: same answers
    assert len({key, *changed.values()}) == 1 + len(changed), changed


def test_large_files_count_by_their_blob_or_checksum(tmp_path, monkeypatch):
    """Weights over the hashed size are not read: a hub-cache symlink counts by its blob's name
    (the file's SHA-256), a fetched folder's file by its checksum line, else by its mtime."""
    import roundtrip.readers.transformers_vlm as tv

    monkeypatch.setattr(tv, "HASHED_BYTES", 4)
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / ("ab" * 32)).write_bytes(b"weights")
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "model.safetensors").symlink_to(blobs / ("ab" * 32))
    before = folder_fingerprint(snap)
    os.utime(blobs / ("ab" * 32), ns=(1, 1))
    assert folder_fingerprint(snap) == before
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "model.safetensors").write_bytes(b"weights")
    (plain / "roundtrip-sha256.txt").write_text(f"{'cd' * 32}  model.safetensors\n")
    listed = folder_fingerprint(plain)
    os.utime(plain / "model.safetensors", ns=(2, 2))
    assert folder_fingerprint(plain) == listed
    (plain / "roundtrip-sha256.txt").unlink()
    unlisted = folder_fingerprint(plain)
    os.utime(plain / "model.safetensors", ns=(3, 3))
    assert folder_fingerprint(plain) != unlisted


def test_usage_goes_to_the_ledger_like_api_usage(gemma, tmp_path):
    ocr = engine(gemma, tmp_path)
    ocr.read_many(images(3), "eng")
    ocr.read_many(images(3), "eng")
    ledger = tmp_path / "usage.jsonl"
    (line,) = append_usage(ledger, "ocr/tiny/original/set")
    assert line["endpoint"] == f"transformers:{gemma}" and line["base_url"] == str(gemma)
    assert line["requests"] == 3 and line["cache_hits"] == 3 and line["failures"] == 0
    # each prompt: the template's tokens, 4 image tokens and the prompt's 13 words
    assert line["input_tokens"] > 3 * (4 + 13) and line["output_tokens"] == 3 * 6
    assert line["seconds"] > 0


def test_greedy_unless_the_config_says_otherwise(gemma, tmp_path):
    """The folder's generation_config samples (Gemma 3's top-k 64, top-p 0.95): greedy (the
    default) ignores it; decoding: model follows it as VTBench's released OCR does, seeded per
    batch, so one seed gives one answer and another seed another."""
    from transformers import AutoModelForImageTextToText

    im = images(1)[0]
    model = AutoModelForImageTextToText.from_pretrained(gemma, local_files_only=True)
    assert model.generation_config.do_sample and model.generation_config.top_k == 64
    greedy = engine(gemma, tmp_path / "g").read(im)
    assert greedy == engine(gemma, tmp_path / "g2", decoding={"do_sample": False}).read(im)
    sampled = [engine(gemma, tmp_path / f"s{k}", decoding="model", seed=seed).read(im)
               for k, seed in enumerate([0, 0, 2])]
    assert sampled[0] == sampled[1] != sampled[2] and greedy not in sampled
    as_dict = engine(gemma, tmp_path / "d", decoding={"do_sample": True, "top_k": 64,
                                                       "top_p": 0.95}, seed=0).read(im)
    assert as_dict == sampled[0]
    with pytest.raises(ValueError, match=r"ocr.engines.tiny: decoding: unknown \['beams'\]"):
        engine(gemma, tmp_path, decoding={"beams": 2})


def test_cpu_dtype_is_float32_and_gpu_dtype_bfloat16():
    from roundtrip.readers.transformers_vlm import pick_dtype

    assert pick_dtype("auto", "cpu") == "float32" and pick_dtype("auto", "cuda") == "bfloat16"
    assert pick_dtype("auto", "cuda:1") == "bfloat16" and pick_dtype("float16", "cpu") == "float16"
    with pytest.raises(ValueError, match="dtype"):
        pick_dtype("fp8", "cpu")


def test_a_failed_batch_is_recorded_per_item_and_the_run_goes_on(gemma, tmp_path, monkeypatch):
    from transformers import Gemma3ForConditionalGeneration

    def oom(self, *args, **kwargs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", oom)
    ocr = engine(gemma, tmp_path)
    rows = ocr_items(ocr, [(f"i{k}", im, "eng") for k, im in enumerate(images(2))])
    assert rows["status"].tolist() == ["error", "error"]
    assert "out of memory" in rows["reason"][0] and ocr.vlm.usage.failures == 2
    assert not list(tmp_path.rglob("*.json"))  # failures are not cached


# -- the render judge ----------------------------------------------------------------------------
def judge(folder: Path, cache: Path, **kw) -> TransformersJudge:
    from roundtrip.datasets.rendered.audit import build_judge

    spec = {"type": "transformers", "model": str(folder), "batch_size": 4, "max_new_tokens": 1,
            "image_size": [32, 32], "cache_dir": str(cache),
            "prompt": "The image should show exactly the following text.\n\n{reference}\n\n"
                      "Answer with a JSON object."} | kw
    return build_judge(spec)


def test_judge_scores_renders_in_process(constant_gemma, tmp_path):
    """audit.judge with type: transformers: the verdict parsed from the model's answer."""
    from roundtrip.datasets.rendered.audit import _judged

    j = judge(constant_gemma, tmp_path)
    assert j.name == f"transformers:{constant_gemma}" and JUDGE_TYPES["transformers"] is type(j)
    assert BENCH.VERDICT == '{"score": 2, "explanation": "flawless"}'
    verdicts = j.judge_many([(im, "the quick fox") for im in images(3)])
    assert [(v.score, v.explanation) for v in verdicts] == [(2, "flawless")] * 3
    assert _judged(j, images(1)[0], "the quick fox") == {
        "judge": j.name, "judge_score": 2, "judge_explanation": "flawless"}


def test_judge_batched_equals_one_by_one(gemma, tmp_path, generations):
    """The random model's answers, verdicts or not, are the same batched (one generate for 5
    pairs) as one by one; an answer that is no verdict is the item's error, not the run's."""
    def outcome(v):
        return str(v) if isinstance(v, Exception) else (v.score, v.explanation)

    pairs = [(im, f"text {k}") for k, im in enumerate(images(5))]
    batched = judge(gemma, tmp_path / "a", batch_size=8, max_new_tokens=5).judge_many(pairs)
    one = judge(gemma, tmp_path / "b", batch_size=1, max_new_tokens=5)
    singles = [outcome(one.judge_many([pair])[0]) for pair in pairs]
    assert generations == [5, 1, 1, 1, 1, 1]
    assert [outcome(v) for v in batched] == singles
    assert any("not a JSON verdict" in str(s) for s in singles)
    print("judge:", singles)


# -- the model is never downloaded -----------------------------------------------------------------
def test_a_hub_id_loads_from_the_hugging_face_cache(gemma, tmp_path, monkeypatch):
    """A hub id names the snapshot already in the cache (models--owner--name/snapshots/<rev>);
    a folder path loads by path."""
    import huggingface_hub.constants as hc

    repo = tmp_path / "hub" / "models--tiny--gemma3"
    shutil.copytree(gemma, repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert local_model("tiny/gemma3", "k") == repo / "snapshots" / ("0" * 40)
    by_id = engine("tiny/gemma3", tmp_path / "c").read(images(1)[0])
    by_path = engine(gemma, tmp_path / "d").read(images(1)[0])
    assert by_id == by_path


@pytest.mark.parametrize("where", ["ocr", "judge"])
def test_a_missing_model_fails_the_config_check_with_key_and_hub_id(where, tmp_path,
                                                                    monkeypatch):
    """Before any job: the key, the hub id and the command that fetches it."""
    import huggingface_hub.constants as hc

    from roundtrip.workflow.checks import check_config

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    spec = {"type": "transformers", "model": "google/gemma-3-12b-it"}
    if where == "ocr":
        config["ocr"]["engines"]["gemma3"] = spec
        key = "ocr.engines.gemma3.model"
    else:
        config["audit"]["judge"] = spec
        key = "audit.judge.model"
    with pytest.raises(ConfigError) as exc:
        check_config(config)
    message = str(exc.value)
    assert message.startswith(f"{key}: google/gemma-3-12b-it is not a saved model folder here")
    assert "`hf download google/gemma-3-12b-it`" in message
    missing_folder = {"type": "transformers", "model": str(tmp_path / "no-such-folder")}
    with pytest.raises(ApiConfigError, match=r"ocr.engines.x.model: .*no-such-folder holds no "
                                             r"saved model"):
        resolve_api({"ocr": {"engines": {"x": copy.deepcopy(missing_folder)}},
                     "api": {"prompts": {"ocr": "p"}}})
    with pytest.raises(WeightsMissing, match="ocr.engines.y.model"):
        build_ocr("y", missing_folder | {"prompt": "p"}).check()


def test_prompts_default_to_the_api_prompts_of_the_endpoint_path(gemma):
    """One string in one place: a transformers engine and judge take api.prompts.ocr/judge, as
    the vlm ones do; no endpoint is needed."""
    config = {"api": {"prompts": {"ocr": "Read ({language}).", "judge": "Judge {reference}."}},
              "ocr": {"engines": {"a": {"type": "transformers", "model": str(gemma)},
                                  "b": {"type": "transformers", "model": str(gemma),
                                        "prompt": "own"}}},
              "audit": {"judge": {"type": "transformers", "model": str(gemma)}}}
    assert resolve_api(config) == []
    assert config["ocr"]["engines"]["a"]["prompt"] == "Read ({language})."
    assert config["ocr"]["engines"]["b"]["prompt"] == "own"
    assert config["audit"]["judge"]["prompt"] == "Judge {reference}."
    assert runs_in_process(config["audit"]["judge"]) and not runs_in_process({"type": "vlm"})


def test_schema_accepts_the_transformers_entries():
    from roundtrip.workflow.checks import schema_problem

    schema = str(REPO / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["ocr"]["engines"]["gemma3"] = {
        "type": "transformers", "model": "google/gemma-3-12b-it", "batch_size": 8,
        "image_size": [1024, 1024], "max_new_tokens": 1024, "decoding": "model", "seed": 0,
        "dtype": "auto", "device": "auto", "prompt": PROMPT, "cache_dir": "api_cache"}
    config["audit"]["judge"] = {"type": "transformers", "model": "Qwen/Qwen2.5-VL-7B-Instruct",
                                "decoding": {"do_sample": False, "num_beams": 1}}
    assert schema_problem(config, schema) is None
    bad = copy.deepcopy(config)
    del bad["ocr"]["engines"]["gemma3"]["model"]
    assert schema_problem(bad, schema) == "ocr.engines.gemma3: 'model' is a required property"
    bad = copy.deepcopy(config)
    bad["ocr"]["engines"]["gemma3"]["image_size"] = [1024]
    assert schema_problem(bad, schema).startswith("ocr.engines.gemma3.image_size: [1024] is too "
                                                  "short")
    del config["audit"]["judge"]["model"]
    assert schema_problem(config, schema) == "audit.judge: 'model' is a required property"


def test_read_in_batches_cuts_batches_of_the_engine_size(gemma, tmp_path, generations):
    ocr = engine(gemma, tmp_path, batch_size=3)
    texts = read_in_batches(ocr, [("eng", im) for im in images(7)])
    assert generations == [3, 3, 1] and len(texts) == 7 and ocr.concurrency == 1


def test_the_docs_example_is_a_valid_config_that_builds(gemma, tmp_path):
    """docs/api.md's in-process example: valid against the schema; its engine and judge build
    with their settings; the engine reads with the tiny model in place of Gemma 3 12B."""
    from roundtrip.datasets.rendered.audit import build_judge
    from roundtrip.workflow.checks import schema_problem

    example = yaml_after(REPO / "docs/api.md", "## In-process models")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["ocr"]["engines"] |= example["ocr"]["engines"]
    config["audit"] |= example["audit"]
    assert schema_problem(config, str(REPO / "config.schema.yaml")) is None
    spec = example["ocr"]["engines"]["gemma3"]
    ocr = build_ocr("gemma3", spec)
    assert ocr.prompt.startswith("Extract and output only the text") and ocr.batch_size == 8
    assert ocr.vlm.image_size == (1024, 1024) and ocr.vlm.max_new_tokens == 1024
    assert ocr.vlm.generate_args is None  # decoding: model
    judge = build_judge(example["audit"]["judge"] | {"prompt": "{reference}"})
    assert judge.vlm.max_new_tokens == 512 and judge.vlm.generate_args == {"do_sample": False}
    tiny = build_ocr("gemma3", spec | {"model": str(gemma), "image_size": [32, 32],
                                        "max_new_tokens": 3, "cache_dir": str(tmp_path)})
    assert isinstance(tiny.read(images(1)[0]), str)


# -- the workflow ----------------------------------------------------------------------------------
def _workflow_config(gemma: Path, device: str) -> dict:
    return {"datasets": {"scanned": {"type": "skimage", "images": ["page"], "text_eval": True}},
            "models": {"jpeg_q50": {"type": "jpeg", "quality": 50}},
            "ocr": {"engines": {"tiny": {"type": "transformers", "model": str(gemma),
                                         "prompt": PROMPT, "image_size": [32, 32],
                                         "max_new_tokens": 4, "batch_size": 2}}},
            "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False}},
            "run": {"device": device}}


def _snakemake(work: Path, *args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "1", *args],
                          cwd=work, capture_output=True, text=True)


def _declared_resources(dry_run: str) -> dict[str, str]:
    """``rule name -> its resources line`` of a ``snakemake -n`` printout."""
    import re

    out, rule = {}, None
    for line in dry_run.splitlines():
        if m := re.match(r"\s*rule (\w+):$", line):
            rule = m.group(1)
        elif rule and line.strip().startswith("resources:"):
            out[rule] = line.strip()
    return out


@pytest.mark.workflow
def test_jobs_that_run_the_model_ask_for_the_gpu_of_a_cuda_run(gemma, tmp_path):
    """run.device: cuda: the reconstruction job of a text set read by the in-process engine
    declares gpu=1 although its model is a codec, as does the job that reads the originals with
    that engine, and so does the build job of the rendered
    sets whose audit runs the judge in process; the build of the photographs does not."""
    config = _workflow_config(gemma, "cuda")
    config["datasets"]["abstracts"] = {"type": "abstracts", "count": 1, "text_eval": True}
    config["audit"] = {"judge": {"type": "transformers", "model": str(gemma),
                                 "prompt": "{reference}"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = _snakemake(tmp_path, "-n", "results/metrics/jpeg_q50/scanned/text_tiny.csv",
                      "results/datasets/abstracts/manifest.csv")
    assert proc.returncode == 0, proc.stderr[-2000:]
    jobs = _declared_resources(proc.stdout)
    assert "gpu=1" in jobs["reconstruct_sets"], jobs
    assert "gpu=1" in jobs["build_rendered_sets"] and "gpu=0" in jobs["build_image_sets"], jobs
    assert "gpu=1" in jobs["ocr_original_sets"], jobs  # the originals, read by the same model
    config["run"]["device"] = "cpu"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = _snakemake(tmp_path, "-n", "results/metrics/jpeg_q50/scanned/text_tiny.csv")
    assert "gpu=0" in _declared_resources(proc.stdout)["reconstruct_sets"]


@pytest.mark.workflow
def test_the_ocr_jobs_run_on_the_cpu_and_a_rerun_generates_nothing(gemma, tmp_path):
    """run.device: cpu: the originals and the reconstructions are read by the tiny model in the
    jobs; a rerun from scratch (results removed, cache kept) sends everything from the cache."""
    import pandas as pd

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(_workflow_config(gemma, "cpu")))
    targets = ["results/ocr/tiny/original/scanned.csv",
               "results/metrics/jpeg_q50/scanned/text_tiny.csv"]
    proc = _snakemake(tmp_path, *targets)
    assert proc.returncode == 0, proc.stderr[-3000:]
    original = pd.read_csv(tmp_path / targets[0])
    assert original["status"].tolist() == ["ok"] and isinstance(original["text"][0], str)
    ledger = [json.loads(line) for line in
              (tmp_path / "results/api/usage.jsonl").read_text().splitlines()]
    assert {line["endpoint"] for line in ledger} == {f"transformers:{gemma}"}
    assert sum(line["requests"] for line in ledger) >= 2
    shutil.rmtree(tmp_path / "results")
    proc = _snakemake(tmp_path, *targets)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = [json.loads(line) for line in
             (tmp_path / "results/api/usage.jsonl").read_text().splitlines()]
    assert sum(line["requests"] for line in again) == 0
    assert sum(line["cache_hits"] for line in again) >= 2
    assert pd.read_csv(tmp_path / targets[0]).equals(original)
