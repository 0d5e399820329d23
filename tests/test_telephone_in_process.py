"""The Telephone Game's pairs that run their models in process, on tiny random models built
here and loaded back from their folders (``tests/tiny_models.py``):

- ``type: diffusers``: a Stable Diffusion pipeline (32 px latents, 64 px images) with the tiny
  Gemma 3 chat VLM as the captioner (``benchmarks/inprocess_vlm.py``'s ``random_gemma3``);
- ``type: transformers``: a tiny Janus (``JanusForConditionalGeneration``: a 2-layer Llama, a
  SigLIP tower, a VQ decoder of 64 codes giving 32 px images), both directions.

Their images and captions are meaningless; the batching, seeding, caching, chat templates,
prompts and chains are the real code paths.
"""
import copy
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import yaml
from conftest import REPO
from doc_examples import yaml_after
from in_process import fresh_process, one_thread  # noqa: F401 - fixtures

from roundtrip.api.client import append_usage, clear_clients
from roundtrip.api.settings import resolve_api
from roundtrip.core.config import ConfigError
from roundtrip.datasets import chain_layout as layout
from roundtrip.evals.telephone.chains import Seed, run_chain
from roundtrip.evals.telephone.spec import EVALUATION
from roundtrip.evals.telephone.unified import build_pair
from roundtrip.readers.transformers_vlm import ChatVLM, unload_all

pytest.importorskip("diffusers")

T2I = 'Create an image that shows the following description faithfully: "{caption}"'
I2T = ("Describe this image in one detailed paragraph: the objects, their count, colours, "
       "positions and any visible text.")
CAPTIONS = ["a red bus on a quiet street", "two cats sleep on a blue sofa", "a red bus",
            "two cats"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-in-process")
    return {"sd": tiny_models.tiny_stable_diffusion(root / "sd"),
            "gemma": tiny_models.tiny_gemma3(root / "gemma"),
            "janus": tiny_models.tiny_janus(root / "janus")}


def spec_of(kind: str, folders: dict, cache: Path, **kw) -> dict:
    """A pair's config entry with its prompts filled in (as check-config fills them)."""
    if kind == "diffusers":
        spec = {"type": "diffusers", "t2i": str(folders["sd"]), "i2t": str(folders["gemma"]),
                "steps": 2, "size": 64, "i2t_prompt": I2T, "max_new_tokens": 6}
    else:
        spec = {"type": "transformers", "model": str(folders["janus"]), "t2i_prompt": T2I,
                "i2t_prompt": I2T, "max_new_tokens": 6}
    return spec | {"cache_dir": str(cache)} | kw


class Calls(list):
    """Model calls, ``("t2i" | "i2t", batch size)``; the call numbered ``kill_at`` (1-based)
    raises KeyboardInterrupt, as a killed job."""
    kill_at: int | None = None


@pytest.fixture()
def calls(monkeypatch) -> Calls:
    """Counts every call of the tiny models (:class:`Calls`)."""
    from diffusers import StableDiffusionPipeline
    from transformers import Gemma3ForConditionalGeneration, JanusForConditionalGeneration

    made = Calls()

    def counted(real, side_of):
        def call(self, *args, **kwargs):
            made.append(side_of(kwargs))
            if made.kill_at == len(made):
                raise KeyboardInterrupt  # the job is killed
            return real(self, *args, **kwargs)
        return call

    monkeypatch.setattr(StableDiffusionPipeline, "__call__", counted(
        StableDiffusionPipeline.__call__, lambda kw: ("t2i", len(kw["prompt"]))))
    monkeypatch.setattr(Gemma3ForConditionalGeneration, "generate", counted(
        Gemma3ForConditionalGeneration.generate, lambda kw: ("i2t", kw["input_ids"].shape[0])))
    monkeypatch.setattr(JanusForConditionalGeneration, "generate", counted(
        JanusForConditionalGeneration.generate,
        lambda kw: ("t2i" if kw.get("generation_mode") == "image" else "i2t",
                    kw["input_ids"].shape[0])))
    return made


def seeds_of(tmp_path: Path) -> list[Seed]:
    """Four chain inputs: a caption each (text-first) and a seeded random image (image-first)."""
    from roundtrip.core.imaging import write_png

    out = []
    for k, caption in enumerate(CAPTIONS):
        path = tmp_path / "inputs" / f"item{k}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_png(path, np.random.default_rng(k).integers(0, 256, (48, 40, 3), dtype=np.uint8))
        out.append(Seed(f"item{k}", caption, path))
    return out


def chain_outputs(root: Path, generations: int) -> dict:
    """``{(chain, g): {item: text or image}}`` of both chains."""
    ids = [f"item{k}" for k in range(len(CAPTIONS))]
    return {(c, g): layout.read_outputs(root, c, g, ids)
            for c in (layout.TEXT_FIRST, layout.IMAGE_FIRST) for g in range(1, generations + 1)}


def run_both_chains(pair, seeds, root: Path, generations: int) -> None:
    for chain in (layout.TEXT_FIRST, layout.IMAGE_FIRST):
        assert run_chain(pair, seeds, root, chain, generations) == generations
        status = layout.read_status(root, chain, generations)
        assert (status["status"] == "ok").all(), status


# -- batched == one by one ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["diffusers", "transformers"])
def test_a_chain_batched_equals_one_by_one(kind, folders, tmp_path, calls):
    """Both chains of 4 items, G = 4, in batches of 4 and of 1: the same captions at every text
    generation; Janus' images are the same bytes, the diffusion pipeline's within one grey
    level (its batched kernels round differently in the last float bits); one model call per
    generation batched, four one by one."""
    seeds, G = seeds_of(tmp_path), 4
    run_both_chains(build_pair("p", spec_of(kind, folders, tmp_path / "c4", batch_size=4), "cpu"),
                    seeds, tmp_path / "b4", G)
    assert [n for _, n in calls] == [4] * (2 * G)
    unload_all(), clear_clients()
    run_both_chains(build_pair("p", spec_of(kind, folders, tmp_path / "c1", batch_size=1), "cpu"),
                    seeds, tmp_path / "b1", G)
    assert [n for _, n in calls[2 * G:]] == [1] * (4 * 2 * G)
    batched, single = chain_outputs(tmp_path / "b4", G), chain_outputs(tmp_path / "b1", G)
    texts = {k: v for k, v in batched.items() if layout.modality_at(k[0], k[1]) == "text"}
    assert texts == {k: single[k] for k in texts}
    diffs = np.stack([np.abs(np.asarray(im, dtype=int) - single[k][i])
                      for k, v in batched.items() if k not in texts for i, im in v.items()])
    assert len(diffs) == 4 * G and diffs.max() <= (0 if kind == "transformers" else 1)
    assert (diffs > 0).mean() < 0.001
    captions = [t for v in texts.values() for t in v.values()]
    assert len(set(captions)) > 4 and all(t and "\n" not in t for t in captions)
    print(kind, "text-first gen 2:", texts[(layout.TEXT_FIRST, 2)], "images:", len(diffs),
          "values differing:", int((diffs > 0).sum()), "of", diffs.size, "max", diffs.max())


def test_an_item_image_follows_its_seed_not_its_batch(folders, tmp_path):
    """Janus: the image of (prompt, seed) is the same alone or among others and in another
    order; another seed, guidance or temperature gives another image."""
    pair = build_pair("j", spec_of("transformers", folders, tmp_path / "a"), "cpu")
    four = pair.t2i(CAPTIONS, [1, 2, 3, 4])
    assert all(im.shape == (32, 32, 3) and im.dtype == np.uint8 for im in four)
    alone = build_pair("j", spec_of("transformers", folders, tmp_path / "b"), "cpu")
    assert np.array_equal(alone.t2i([CAPTIONS[2]], [3])[0], four[2])
    assert np.array_equal(alone.t2i(CAPTIONS[::-1], [4, 3, 2, 1])[3], four[0])
    others = [build_pair("j", spec_of("transformers", folders, tmp_path / f"o{k}", **kw),
                         "cpu").t2i([CAPTIONS[0]], [seed])[0]
              for k, (kw, seed) in enumerate([({}, 9), ({"guidance": 2.0}, 1),
                                              ({"temperature": 0.5}, 1)])]
    assert all(not np.array_equal(o, four[0]) for o in others)


# -- a killed job resumes from the cache ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["diffusers", "transformers"])
def test_a_killed_chain_job_resumes_from_the_cache(kind, folders, tmp_path, calls):
    """Text-first, 4 items in batches of 2, G = 3 (T2I, I2T, T2I): the job is killed during the
    second batch of generation 3. Generations 1-2 are complete on disk and the first batch of
    generation 3 is in the cache: the rerun generates one batch of 2 images. A rerun with the
    chains deleted and the cache kept generates nothing (0 model calls) and writes the same
    chains."""
    seeds, root = seeds_of(tmp_path), tmp_path / "chains"

    def job():
        unload_all(), clear_clients()  # a new process
        return build_pair("p", spec_of(kind, folders, tmp_path / "cache", batch_size=2), "cpu")

    calls.kill_at = 6  # t2i, t2i | i2t, i2t | t2i, [killed]
    with pytest.raises(KeyboardInterrupt):
        run_chain(job(), seeds, root, layout.TEXT_FIRST, 3)
    assert calls == [("t2i", 2), ("t2i", 2), ("i2t", 2), ("i2t", 2), ("t2i", 2), ("t2i", 2)]
    assert layout.read_status(root, layout.TEXT_FIRST, 2) is not None
    assert layout.read_status(root, layout.TEXT_FIRST, 3) is None
    calls.kill_at = None

    assert run_chain(job(), seeds, root, layout.TEXT_FIRST, 3) == 1
    assert calls[6:] == [("t2i", 2)]  # the batch that was killed, only
    first = chain_outputs(root, 3)

    shutil.rmtree(root)
    pair = job()
    assert run_chain(pair, seeds, root, layout.TEXT_FIRST, 3) == 3
    assert calls[7:] == []  # the rerun: 0 generations
    again = chain_outputs(root, 3)
    for key, items in first.items():
        for item, value in items.items():
            assert np.array_equal(np.asarray(value), np.asarray(again[key][item])), (key, item)
    lines = append_usage(tmp_path / "usage.jsonl", "telephone/p/set")
    assert sum(x["requests"] for x in lines) == 0
    assert sum(x["cache_hits"] for x in lines) == 3 * 4


def test_usage_goes_to_the_ledger_per_model(folders, tmp_path):
    """One line per model run in process: the diffusion pipeline's images (diffusers:<t2i>) and
    the captioner's answers (transformers:<i2t>); a unified model's images and answers on one
    line (transformers:<model>)."""
    d = build_pair("d", spec_of("diffusers", folders, tmp_path / "c"), "cpu")
    d.i2t(d.t2i(CAPTIONS[:3], [1, 2, 3]))
    j = build_pair("j", spec_of("transformers", folders, tmp_path / "c"), "cpu")
    j.i2t(j.t2i(CAPTIONS[:2], [1, 2]))
    j.t2i(CAPTIONS[:2], [1, 2])
    lines = {x["endpoint"]: x for x in append_usage(tmp_path / "usage.jsonl", "job")}
    sd = lines[f"diffusers:{folders['sd']}"]
    gemma = lines[f"transformers:{folders['gemma']}"]
    janus = lines[f"transformers:{folders['janus']}"]
    assert (sd["requests"], sd["images"], sd["cache_hits"]) == (3, 3, 0)
    assert (gemma["requests"], gemma["images"]) == (3, 0) and gemma["output_tokens"] <= 3 * 6
    assert (janus["requests"], janus["images"], janus["cache_hits"]) == (4, 2, 2)
    assert sd["seconds"] > 0 and janus["base_url"] == str(folders["janus"])


# -- the prompts and the model check --------------------------------------------------------------
def test_prompts_are_the_api_paths_strings_sent_through_the_chat_template(folders, tmp_path,
                                                                            monkeypatch):
    """check-config fills the in-process pairs' prompts from api.prompts, as the api pairs':
    the captioner gets telephone_i2t then the image as one user turn (ApiPair's order), Janus
    gets telephone_t2i with the caption; no endpoint is resolved."""
    config = {"api": {"prompts": {"telephone_t2i": T2I, "telephone_i2t": I2T}},
              "telephone": {"pairs": {
                  "d": {"type": "diffusers", "t2i": str(folders["sd"]),
                        "i2t": str(folders["gemma"])},
                  "j": {"type": "transformers", "model": str(folders["janus"])},
                  "a": {"type": "render_ocr"}}}}
    assert resolve_api(config, EVALUATION.api_uses(config)) == []
    pairs = config["telephone"]["pairs"]
    assert pairs["d"]["i2t_prompt"] == pairs["j"]["i2t_prompt"] == I2T
    assert pairs["j"]["t2i_prompt"] == T2I and "t2i_prompt" not in pairs["d"]
    assert "i2t_prompt" not in pairs["a"]
    sent, turns = [], []
    real_key = ChatVLM.request_key
    monkeypatch.setattr(ChatVLM, "request_key",
                        lambda self, parts: sent.append(parts) or real_key(self, parts))
    image = np.zeros((32, 32, 3), np.uint8)
    for name in ("d", "j"):
        build_pair(name, pairs[name] | {"cache_dir": str(tmp_path)}, "cpu").i2t([image])
    assert [p[0] for p in sent] == [I2T, I2T] and all(p[1] is image for p in sent)
    from transformers import JanusProcessor

    real_call = JanusProcessor.__call__
    monkeypatch.setattr(JanusProcessor, "__call__", lambda self, text=None, images=None, **kw:
                        turns.append((text, kw.get("generation_mode"))) or
                        real_call(self, text=text, images=images, **kw))
    build_pair("j", pairs["j"] | {"cache_dir": str(tmp_path)}, "cpu").t2i(["a red bus"], [0])
    (texts, mode), = turns
    assert mode == "image" and texts == [f"<bos><|User|>: {T2I.format(caption='a red bus')}"
                                         "\n<|Assistant|>:"]  # the tiny model's template


@pytest.mark.parametrize("kind", ["diffusers", "transformers"])
def test_a_missing_model_fails_the_config_check_with_key_and_hub_id(kind, folders, tmp_path,
                                                                    monkeypatch):
    """Before any job: the pair's key, the hub id and the command that fetches it."""
    import huggingface_hub.constants as hc

    from roundtrip.workflow.checks import check_config

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    if kind == "diffusers":
        spec = {"type": "diffusers", "t2i": "stabilityai/stable-diffusion-xl-base-1.0",
                "i2t": str(folders["gemma"])}
        key, hub = "telephone.pairs.llava_sdxl.t2i", "stabilityai/stable-diffusion-xl-base-1.0"
        config["telephone"]["pairs"]["llava_sdxl"] = spec
    else:
        key, hub = "telephone.pairs.janus_pro_7b.model", "deepseek-community/Janus-Pro-7B"
        config["telephone"]["pairs"]["janus_pro_7b"] = {"type": "transformers", "model": hub}
    with pytest.raises(ConfigError) as exc:
        check_config(config)
    assert str(exc.value).startswith(f"{key}: {hub} is not a saved model folder here")
    assert f"`hf download {hub}`" in str(exc.value)


def test_hub_ids_in_the_hugging_face_cache_pass_the_check(folders, tmp_path, monkeypatch):
    """A diffusers pair named by hub ids whose snapshots are in the Hugging Face cache is
    located without a download, by check-config and by the pair."""
    import huggingface_hub.constants as hc

    for repo, folder in (("tiny/sd", folders["sd"]), ("tiny/gemma", folders["gemma"])):
        snap = tmp_path / "hub" / f"models--{repo.replace('/', '--')}"
        shutil.copytree(folder, snap / "snapshots" / ("0" * 40))
        (snap / "refs").mkdir()
        (snap / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    config = {"api": {"prompts": {"telephone_i2t": I2T}}, "telephone": {"pairs": {
        "p": {"type": "diffusers", "t2i": "tiny/sd", "i2t": "tiny/gemma"}}}}
    resolve_api(config, EVALUATION.api_uses(config))
    pair = build_pair("p", config["telephone"]["pairs"]["p"] | {"cache_dir": str(tmp_path)},
                      "cpu")
    pair.check()
    assert pair.generator.folder.endswith("0" * 40) and pair.chat().folder.endswith("0" * 40)


def test_a_model_transformers_cannot_generate_images_with_is_refused(folders):
    """type: transformers needs an architecture with an image generation mode (Janus): a chat
    VLM is refused at check time, with the way to pair it."""
    from roundtrip.evals.telephone.image_generators import IMAGE_GENERATING

    pair = build_pair("g", {"type": "transformers", "model": str(folders["gemma"]),
                            "t2i_prompt": T2I, "i2t_prompt": I2T}, "cpu")
    with pytest.raises(ValueError, match=r"telephone.pairs.g.model: .* holds a gemma3 model; "
                                         r"transformers generates images with \['janus'\] only"):
        pair.check()
    assert IMAGE_GENERATING == ("janus",)
    build_pair("j", {"type": "transformers", "model": str(folders["janus"]),
                     "t2i_prompt": T2I, "i2t_prompt": I2T}, "cpu").check()
    with pytest.raises(ValueError, match=r"telephone.pairs.x: t2i_prompt: must contain"):
        build_pair("x", {"type": "transformers", "model": "m", "t2i_prompt": "draw",
                         "i2t_prompt": I2T})


def test_schema_accepts_the_in_process_pairs():
    from roundtrip.workflow.checks import schema_problem

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["telephone"]["pairs"] |= {
        "llava_sdxl": {"type": "diffusers", "t2i": "stabilityai/stable-diffusion-xl-base-1.0",
                       "i2t": "llava-hf/llava-1.5-7b-hf", "size": 1024, "batch_size": 4,
                       "max_new_tokens": 300, "dtype": "auto", "cache_dir": "api_cache"},
        "janus_pro_7b": {"type": "transformers", "model": "deepseek-community/Janus-Pro-7B",
                         "guidance": 5, "temperature": 1, "batch_size": 8}}
    assert schema_problem(config, str(REPO / "config.schema.yaml")) is None
    bad = copy.deepcopy(config)
    bad["telephone"]["pairs"]["janus_pro_7b"]["temperature"] = 0
    assert "telephone.pairs.janus_pro_7b.temperature" in schema_problem(
        bad, str(REPO / "config.schema.yaml"))


def test_the_preset_names_where_each_table_2_model_runs():
    """configs/papers/telephone.yaml: LLaVA 1.5 + SDXL and Janus-Pro 7B in process, by hub id;
    BAGEL, BLIP3-o, Show-o, VILA-U and Janus 1.3B behind the endpoint, each with its reason
    in the file's header."""
    text = (REPO / "configs/papers/telephone.yaml").read_text()
    pairs = yaml.safe_load(text)["telephone"]["pairs"]
    where = {name: spec["type"] for name, spec in pairs.items()}
    assert where == {"bagel": "api", "blip3o_4b": "api", "janus_pro_7b": "transformers",
                     "show_o": "api", "janus_1_3b": "api", "vila_u": "api",
                     "llava_sdxl": "diffusers"}
    assert pairs["janus_pro_7b"]["model"] == "deepseek-community/Janus-Pro-7B"
    assert (pairs["llava_sdxl"]["t2i"], pairs["llava_sdxl"]["i2t"]) == (
        "stabilityai/stable-diffusion-xl-base-1.0", "llava-hf/llava-1.5-7b-hf")
    assert "i2t_prompt" not in pairs["llava_sdxl"]  # api.prompts.telephone_i2t, as every pair
    assert "bagel, blip3o_4b, show_o, vila_u: neither transformers 5.23 nor diffusers 0.42" \
        in text
    assert "janus-package layout (deepseek-ai/Janus-1.3B, model_type multi_modality)" in text


def test_the_docs_example_is_a_valid_config_whose_pairs_run(folders, tmp_path):
    """docs/evaluations/telephone.md's in-process example: valid against the schema; its pairs
    build with their settings and, the tiny models in place of SDXL, LLaVA 1.5 and Janus-Pro,
    draw and caption."""
    from roundtrip.workflow.checks import schema_problem

    example = yaml_after(REPO / "docs/evaluations/telephone.md", "## Models run in process")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["telephone"]["pairs"] |= example["telephone"]["pairs"]
    assert schema_problem(config, str(REPO / "config.schema.yaml")) is None
    # the prompts check-config fills in from api.prompts
    prompts = {"llava_sdxl": {"i2t_prompt": I2T, "cache_dir": str(tmp_path)},
               "janus_pro_7b": {"t2i_prompt": T2I, "i2t_prompt": I2T, "cache_dir": str(tmp_path)}}
    llava = example["telephone"]["pairs"]["llava_sdxl"] | prompts["llava_sdxl"]
    janus = example["telephone"]["pairs"]["janus_pro_7b"] | prompts["janus_pro_7b"]
    big = build_pair("llava_sdxl", llava, "cpu")
    assert (big.generator.steps, big.generator.size, big.max_new_tokens) == (30, 1024, 300)
    assert big.chat().attn_implementation == "sdpa"
    unified = build_pair("janus_pro_7b", janus, "cpu")
    assert unified.generator.batch_size == 8
    assert (unified.vlm.cache_implementation, unified.vlm.prefetch) == ("static", True)
    tiny = {"llava_sdxl": llava | {"t2i": str(folders["sd"]), "i2t": str(folders["gemma"]),
                                   "steps": 2, "size": 64, "max_new_tokens": 4},
            "janus_pro_7b": janus | {"model": str(folders["janus"]), "max_new_tokens": 4}}
    for name, spec in tiny.items():
        pair = build_pair(name, spec, "cpu")
        pair.check()
        (caption,) = pair.i2t(pair.t2i(["a red bus"], [0]))
        assert isinstance(caption, str) and caption


# -- the encoder-decoder captioner -----------------------------------------------------------------
@pytest.fixture(scope="module")
def captioners(tmp_path_factory):
    """Tiny VisionEncoderDecoder captioners: one that writes ``max_new_tokens`` tokens, and the
    random one, which ends every caption at its first token (an empty caption)."""
    root = tmp_path_factory.mktemp("tiny-captioners")
    return {"writes": tiny_models.tiny_captioner_that_writes(root / "writes"),
            "empty": tiny_models.tiny_captioner(root / "empty")}


@pytest.fixture()
def captions_generated(monkeypatch) -> list[int]:
    """The batch size of every ``generate`` call of a VisionEncoderDecoder captioner."""
    from transformers import VisionEncoderDecoderModel

    calls = []
    real = VisionEncoderDecoderModel.generate

    def counted(self, pixel_values, *args, **kwargs):
        calls.append(int(pixel_values.shape[0]))
        return real(self, pixel_values, *args, **kwargs)

    monkeypatch.setattr(VisionEncoderDecoderModel, "generate", counted)
    return calls


def captioner_pair(folders, captioner: Path, cache: Path, **kw):
    spec = {"type": "diffusers", "t2i": str(folders["sd"]), "i2t": str(captioner),
            "max_new_tokens": 6, "cache_dir": str(cache)} | kw
    return build_pair("p", spec, "cpu")


def test_the_encoder_decoder_captioner_is_cached_and_counted(folders, captioners, tmp_path,
                                                             captions_generated):
    """Three images in batches of 2: two generate calls, three captions of 6 tokens each, in
    the cache and on the ledger's transformers:<i2t> line; one by one, the same captions. A
    new job with the cache kept generates none: 3 cache hits, 0 requests."""
    images = [np.random.default_rng(k).integers(0, 256, (40, 48, 3), dtype=np.uint8)
              for k in range(3)]
    first = captioner_pair(folders, captioners["writes"], tmp_path / "c", batch_size=2)
    captions = first.i2t(images)
    assert captions_generated == [2, 1]
    assert all(isinstance(c, str) and c and "\n" not in c for c in captions), captions
    assert len(list((tmp_path / "c").rglob("*.json"))) == 3
    line = {x["endpoint"]: x for x in append_usage(tmp_path / "u1.jsonl", "job")}[
        f"transformers:{captioners['writes']}"]
    assert (line["requests"], line["cache_hits"], line["output_tokens"], line["failures"]) == \
        (3, 0, 18, 0)
    assert line["base_url"] == str(captioners["writes"]) and line["seconds"] > 0
    unload_all(), clear_clients()  # a new job, another cache: one by one
    alone = captioner_pair(folders, captioners["writes"], tmp_path / "c1", batch_size=1)
    assert alone.i2t(images) == captions and captions_generated == [2, 1, 1, 1, 1]
    unload_all(), clear_clients()  # a new job, the first cache
    again = captioner_pair(folders, captioners["writes"], tmp_path / "c", batch_size=2)
    assert again.i2t(images) == captions and captions_generated == [2, 1, 1, 1, 1]
    line = {x["endpoint"]: x for x in append_usage(tmp_path / "u2.jsonl", "job")}[
        f"transformers:{captioners['writes']}"]
    assert (line["requests"], line["cache_hits"], line["output_tokens"]) == (0, 3, 0)


def test_an_empty_caption_is_the_items_error_not_a_caption(folders, captioners, tmp_path):
    """The random captioner ends each caption at its first token: an image-first chain's
    generation 1 has no text for the items, each with its reason; the answers are still
    counted (the model answered) and cached (a rerun gives the same error, generating none)."""
    from roundtrip.evals.telephone.unified import EmptyCaption, caption_of

    pair = captioner_pair(folders, captioners["empty"], tmp_path / "c")
    seeds = seeds_of(tmp_path)[:2]
    assert run_chain(pair, seeds, tmp_path / "chains", layout.IMAGE_FIRST, 1) == 1
    status = layout.read_status(tmp_path / "chains", layout.IMAGE_FIRST, 1)
    reason = ("generation 1: telephone.pairs.p.i2t: the captioner wrote no text for this image "
              "(an empty caption is not scored)")
    assert list(status["status"]) == ["error", "error"] and list(status["reason"]) == [reason] * 2
    assert layout.read_outputs(tmp_path / "chains", layout.IMAGE_FIRST, 1, ["item0", "item1"]) == {}
    line = {x["endpoint"]: x for x in append_usage(tmp_path / "u.jsonl", "job")}[
        f"transformers:{captioners['empty']}"]
    assert (line["requests"], line["output_tokens"]) == (2, 2)  # one token each: end of sequence
    assert isinstance(caption_of(" \n\t", "k"), EmptyCaption)
    assert caption_of("a red\n bus ", "k") == "a red bus"
    error = RuntimeError("out of memory")
    assert caption_of(error, "k") is error


# -- the decoding-speed settings --------------------------------------------------------------------
SPEED = {"cache_implementation": "dynamic", "compile": False, "attn_implementation": "eager",
         "sort_by_length": False, "prefetch": False}


def test_the_decoding_speed_settings_reach_the_pairs_chat_models(folders, tmp_path):
    """A diffusers pair's chat captioner and a unified pair's model take the in-process
    readers' decoding-speed settings (the eager path here: the same captions as the defaults,
    which take it on the CPU too); the schema takes them and refuses a bad one by its key; a
    compiled decoding step without a static cache is refused when the pair is built."""
    from roundtrip.workflow.checks import schema_problem

    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    for kind, chat in (("diffusers", lambda p: p.chat()), ("transformers", lambda p: p.vlm)):
        fast = build_pair("p", spec_of(kind, folders, tmp_path / f"{kind}-a", **SPEED), "cpu")
        vlm = chat(fast)
        assert (vlm.cache_implementation, vlm.compile, vlm.attn_implementation,
                vlm.sort_by_length, vlm.prefetch) == tuple(SPEED.values())
        plain = build_pair("p", spec_of(kind, folders, tmp_path / f"{kind}-b"), "cpu")
        assert (chat(plain).cache_implementation, chat(plain).attn_implementation) == ("auto",
                                                                                      "auto")
        assert fast.i2t([image]) == plain.i2t([image])
        unload_all()
        with pytest.raises(ValueError, match=r"telephone.pairs.p: compile: compiling the decoding "
                                             r"step needs a static cache"):
            build_pair("p", spec_of(kind, folders, tmp_path, compile=True,
                                    cache_implementation="dynamic"), "cpu")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["telephone"]["pairs"]["j"] = {"type": "transformers", "model": "m", **SPEED}
    config["telephone"]["pairs"]["d"] = {"type": "diffusers", "t2i": "a", "i2t": "b",
                                         "compile": {"mode": "max-autotune"}, "prefetch": "auto"}
    assert schema_problem(config, str(REPO / "config.schema.yaml")) is None
    config["telephone"]["pairs"]["j"]["cache_implementation"] = "hybrid"
    assert schema_problem(config, str(REPO / "config.schema.yaml")).startswith(
        "telephone.pairs.j.cache_implementation: 'hybrid' is not one of ['auto', 'static', "
        "'dynamic']")
