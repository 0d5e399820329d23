"""Readers, judges and pairs that run a model in process are checked before any job: the schema
of every slot (the render judge's keys, ``device``), the model of every slot located and, where
it reads images, an image-text model by its ``config.json``; every problem of a config in one
``check-config`` message; each endpoint in use asked once whether it answers. A judge that gives
no verdict is said: the render audit did not run.

The models are tiny random ones built here (``tests/tiny_models.py``); the checks run in process
(:func:`roundtrip.workflow.checks.check_file`), as ``roundtrip check-config`` runs them.
"""
import copy
import json
import logging
import socket
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import yaml
from conftest import REPO, requires_tesseract
from in_process import fresh_process, one_thread  # noqa: F401 - fixtures

from roundtrip.readers import JUDGE_TYPES
from roundtrip.readers.transformers_vlm import NotImageText, image_text_architecture
from roundtrip.workflow.checks import check_config, check_file, schema_problems, validate_config

SCHEMA = str(REPO / "config.schema.yaml")
#: A config of one's own that passes the check in a second: one packaged set, one model.
BASE = {"datasets": {"mine": {"type": "skimage", "images": ["camera"]}},
        "models": {"identity": {"type": "identity"}}}
#: The end of every message about a model that is no image-text model.
NEED = ("a reader needs an image-text model (a model_type transformers 5.23.0 loads with "
        "AutoModelForImageTextToText: a chat VLM such as gemma3, llava or qwen2_5_vl, or a "
        "vision-encoder-decoder captioner)")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Tiny saved models: an image-text chat VLM (Gemma 3), a unified model (Janus), a
    VisionEncoderDecoder captioner, a text-only GPT-2, and a folder that only looks like a
    diffusers pipeline (``model_index.json``: the text-to-image slot is located, never loaded
    here)."""
    root = tmp_path_factory.mktemp("reader-checks")
    pipeline = root / "pipeline"
    pipeline.mkdir()
    (pipeline / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
    return {"gemma": tiny_models.tiny_gemma3(root / "gemma"),
            "janus": tiny_models.tiny_janus(root / "janus"),
            "captioner": tiny_models.tiny_captioner(root / "captioner"),
            "gpt2": tiny_models.tiny_gpt2(root / "gpt2"), "pipeline": pipeline}


def slots(folders: dict, model: str) -> dict[str, dict]:
    """Each slot that runs a model reading images, holding ``model``: config key -> the
    config's sections that put it there."""
    return {
        "vista.readers.my_vlm.model": {"vista": {"readers": {"my_vlm": {
            "type": "transformers", "model": model}}}},
        "ocr.engines.my_ocr.model": {"ocr": {"engines": {"my_ocr": {
            "type": "transformers", "model": model}}}},
        "audit.judge.model": {"audit": {"judge": {"type": "transformers", "model": model}}},
        "telephone.pairs.unified.model": {"telephone": {"pairs": {"unified": {
            "type": "transformers", "model": model}}}},
        "telephone.pairs.decoupled.i2t": {"telephone": {"pairs": {"decoupled": {
            "type": "diffusers", "t2i": str(folders["pipeline"]), "i2t": model}}}},
    }


def check(tmp_path: Path, config: dict, probe_endpoints: bool = False) -> str | None:
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump(config))
    return check_file(str(path), SCHEMA, probe_endpoints)


def with_sections(*sections: dict) -> dict:
    config = copy.deepcopy(BASE)
    for section in sections:
        for key, value in copy.deepcopy(section).items():
            config[key] = config.get(key, {}) | value
    return config


# -- what config.json says ------------------------------------------------------------------------
def test_an_image_text_model_is_told_from_its_config_json_alone(folders, tmp_path):
    """The chat VLMs and a VisionEncoderDecoder are image-text; a text-only model, an image
    model that writes no text (CLIP: a vision_config; ViT: an image processor), a model type
    transformers does not know and a diffusers pipeline are not, each named as such. Only
    config.json is read: folders holding nothing else give the same answers."""
    assert image_text_architecture(folders["gemma"]) == "Gemma3ForConditionalGeneration"
    assert image_text_architecture(folders["janus"]) == "JanusForConditionalGeneration"
    assert image_text_architecture(folders["captioner"]) == "VisionEncoderDecoderModel"

    def bare(name: str, config: dict) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        return folder

    cases = {
        bare("gpt2", {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}):
            "GPT2LMHeadModel, a text-only model",
        bare("clip", {"model_type": "clip", "architectures": ["CLIPModel"],
                      "vision_config": {}, "text_config": {}}):
            "CLIPModel, an image model that writes no text",
        bare("vit", {"model_type": "vit"}): "vit, an image model that writes no text",
        bare("custom", {"model_type": "multi_modality", "architectures": ["MultiModality"]}):
            "MultiModality, a model_type (multi_modality) transformers 5.23.0 does not know "
            "(roundtrip runs no model code of its own, trust_remote_code)",
    }
    for folder, held in cases.items():
        with pytest.raises(NotImageText) as exc:
            image_text_architecture(folder)
        assert str(exc.value) == f"{folder} holds {held}: {NEED}"
    assert image_text_architecture(bare("llava", {"model_type": "llava"})) == "llava"
    with pytest.raises(NotImageText, match=r"pipeline holds a diffusers pipeline "
                                           r"\(model_index.json\): a reader needs"):
        image_text_architecture(folders["pipeline"])


# -- each slot ------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", list(slots({"pipeline": ""}, "")))
def test_a_text_only_model_in_a_reader_slot_is_named_before_any_job(key, folders, tmp_path):
    """A tiny GPT-2 folder as a VISTA reader, an OCR engine, the render judge, a unified pair
    or a diffusers pair's captioner: check-config names the key, the folder and the
    architecture, in one line, before any job (an image-text model in the same slot passes)."""
    gpt2 = str(folders["gpt2"])
    message = check(tmp_path, with_sections(slots(folders, gpt2)[key]))
    assert message == f"{key}: {gpt2} holds GPT2LMHeadModel, a text-only model: {NEED}"
    fine = str(folders["janus"] if key.startswith("telephone.pairs.unified")
               else folders["captioner"] if key.endswith(".i2t") else folders["gemma"])
    assert check(tmp_path, with_sections(slots(folders, fine)[key])) is None


def test_the_docs_message_is_the_checks(folders, tmp_path):
    """docs/api.md's example of a text-only reader is what check-config says (its folder
    /models/gpt2 here the tiny GPT-2's)."""
    text = (REPO / "docs/api.md").read_text()
    example = text[text.index("**Checked before any job.**"):].split("```\n", 2)[1].strip()
    gpt2 = str(folders["gpt2"])
    config = with_sections(slots(folders, gpt2)["vista.readers.my_vlm.model"])
    assert check(tmp_path, config) == example.replace("/models/gpt2", gpt2)


def test_every_image_text_model_passes_in_every_slot_at_once(folders, tmp_path):
    """The tiny Gemma 3 as VISTA reader, OCR engine and judge, Janus as a unified pair, the
    tiny captioner beside a pipeline: the config passes, the prompts filled in."""
    gemma = str(folders["gemma"])
    sections = slots(folders, gemma)
    sections["telephone.pairs.unified.model"]["telephone"]["pairs"]["unified"]["model"] = \
        str(folders["janus"])
    sections["telephone.pairs.decoupled.i2t"]["telephone"]["pairs"]["decoupled"]["i2t"] = \
        str(folders["captioner"])
    merged = {"vista": sections["vista.readers.my_vlm.model"]["vista"],
              "ocr": sections["ocr.engines.my_ocr.model"]["ocr"],
              "audit": sections["audit.judge.model"]["audit"],
              "telephone": {"pairs": {
                  **sections["telephone.pairs.unified.model"]["telephone"]["pairs"],
                  **sections["telephone.pairs.decoupled.i2t"]["telephone"]["pairs"]}}}
    config = with_sections(merged)
    assert check(tmp_path, config) is None
    validate_config(config, SCHEMA)
    check_config(config)
    assert config["audit"]["judge"]["prompt"].startswith("The image should show exactly")


def test_a_missing_folder_of_a_reader_names_image_text_models_not_registry_folders(folders,
                                                                                    tmp_path):
    """A VLM slot's folder that holds no model: the message says to fetch an image-text model
    there (not one of the registry's CLIP, DINO or MPNet folders, which no reader can use); a
    pipeline slot's, a diffusers pipeline."""
    none = tmp_path / "no-model"
    message = check(tmp_path, with_sections(slots(folders, str(none))["ocr.engines.my_ocr.model"]))
    assert message == (
        f"ocr.engines.my_ocr.model: {none} holds no saved model (config.json). On a machine with "
        f"internet run `hf download <hub id> --local-dir {none}` with the hub id of an image-text "
        "model (a chat VLM such as google/gemma-3-12b-it or llava-hf/llava-1.5-7b-hf, or a "
        "VisionEncoderDecoder captioner) and copy the folder here, or set "
        "ocr.engines.my_ocr.model to the hub id when its snapshot is in the Hugging Face cache")
    assert "clip" not in message and "dino" not in message
    pair = {"telephone": {"pairs": {"p": {"type": "diffusers", "t2i": str(none),
                                          "i2t": str(folders["captioner"])}}}}
    assert check(tmp_path, with_sections(pair)).startswith(
        f"telephone.pairs.p.t2i: {none} holds no saved model (config.json). On a machine with "
        f"internet run `hf download <hub id> --local-dir {none}` with the hub id of a diffusers "
        "text-to-image pipeline (such as stabilityai/stable-diffusion-xl-base-1.0)")


# -- the judge's schema and every device -----------------------------------------------------------
@pytest.mark.parametrize("judge,message", [
    ({"type": "transformers", "model": "/m", "modle": "/m"},
     "audit.judge: Additional properties are not allowed ('modle' was unexpected); did you "
     "mean 'model'?"),
    ({"type": "transformer", "model": "/m"},
     "audit.judge.type: 'transformer' is not a type here; set it to one of:"),
    ({"type": "transformers", "model": "/m", "batch_size": 0},
     "audit.judge.batch_size: 0 is less than the minimum of 1"),
    ({"type": "transformers", "model": "/m", "compile": "yes"},
     "audit.judge.compile: 'yes' is not valid under any of the given schemas"),
    ({"type": "vlm", "model": "gpt-4o"}, "audit.judge: 'endpoint' is a required property"),
], ids=["misspelt key", "misspelt type", "batch_size 0", "compile", "vlm without endpoint"])
def test_the_judge_is_checked_by_the_schema(judge, message, tmp_path):
    """audit.judge: its type among the judges, its keys only, the OCR engines' in-process keys
    (the decoding-speed ones included) with their ranges; each problem in one line naming the
    key, before any job."""
    got = check(tmp_path, with_sections({"audit": {"judge": judge}}))
    assert message in got.splitlines()


def test_the_judge_types_are_the_registry():
    schema = yaml.safe_load((REPO / "config.schema.yaml").read_text())
    judge = schema["properties"]["audit"]["properties"]["judge"]
    assert set(judge["properties"]["type"]["enum"]) == set(JUDGE_TYPES) == {"vlm", "transformers"}


@pytest.mark.parametrize("key,section", [
    ("run.device", {"run": {"device": "gpu0"}}),
    ("ocr.engines.g.device", {"ocr": {"engines": {"g": {"type": "transformers", "model": "/m",
                                                         "device": "gpu0"}}}}),
    ("audit.judge.device", {"audit": {"judge": {"type": "transformers", "model": "/m",
                                                "device": "gpu0"}}}),
    ("vista.readers.r.device", {"vista": {"readers": {"r": {"type": "transformers",
                                                            "model": "/m", "device": "gpu0"}}}}),
])
def test_a_device_is_auto_cpu_cuda_cuda_n_or_mps_in_every_slot(key, section, tmp_path):
    config = with_sections(section)
    message = check(tmp_path, config)
    assert message.splitlines()[0] == (f"{key}: 'gpu0' does not match "
                                       "'^(auto|cpu|cuda(:[0-9]+)?|mps)$'")
    for device in ("auto", "cpu", "cuda", "cuda:1", "mps"):
        node = config
        for part in key.split(".")[:-1]:
            node = node[part]
        node["device"] = device
        assert schema_problems(config, SCHEMA) == [], device


# -- every problem at once ------------------------------------------------------------------------
def test_one_check_lists_every_problem_of_a_config(folders, tmp_path):
    """A text-only model, two missing model folders, a misspelt key of the judge and a device
    gpu0: one message, one line each (the schema's first, with the description of the key
    under each), not one problem per attempt."""
    gpt2, none = str(folders["gpt2"]), tmp_path / "none"
    config = with_sections(
        {"vista": {"readers": {"my_vlm": {"type": "transformers", "model": gpt2}}}},
        {"ocr": {"engines": {"a": {"type": "transformers", "model": str(none / "a"),
                                   "device": "gpu0"}}}},
        {"audit": {"judge": {"type": "transformers", "model": str(folders["gemma"]),
                             "modle": "x"}}},
        {"telephone": {"pairs": {"p": {"type": "diffusers", "t2i": str(folders["pipeline"]),
                                       "i2t": str(none / "b")}}}})
    lines = [line for line in check(tmp_path, config).splitlines() if not line.startswith("  ")]
    assert [line.split(": ", 1)[0] for line in lines] == [
        "audit.judge", "ocr.engines.a.device", "ocr.engines.a.model", "vista.readers.my_vlm.model",
        "telephone.pairs.p.i2t"]
    assert lines[0].endswith("('modle' was unexpected); did you mean 'model'?")
    assert lines[3] == f"vista.readers.my_vlm.model: {gpt2} holds GPT2LMHeadModel, a text-only " \
                       f"model: {NEED}"
    assert all(f"{none / x} holds no saved model" in line for x, line in zip("ab", lines[2::2]))
    # the schema fixed: the same model problems, in the same lines
    del config["audit"]["judge"]["modle"]
    config["ocr"]["engines"]["a"]["device"] = "cpu"
    assert check(tmp_path, config).splitlines() == lines[2:]


def test_a_missing_folder_and_a_bad_judge_come_together(tmp_path):
    """The schema refuses the judge (its model misspelt): its problems, then the OCR engine's
    missing folder, which the schema cannot see, in the same message; the judge's model is not
    reported a third time."""
    none = tmp_path / "none"
    config = with_sections(
        {"audit": {"judge": {"type": "transformers", "modle": str(none)}}},
        {"ocr": {"engines": {"g": {"type": "transformers", "model": str(none)}}}})
    lines = [line for line in check(tmp_path, config).splitlines() if not line.startswith("  ")]
    assert lines[:2] == [
        "audit.judge: 'model' is a required property",
        "audit.judge: Additional properties are not allowed ('modle' was unexpected); did you "
        "mean 'model'?"]
    assert len(lines) == 3 and lines[2].startswith(
        f"ocr.engines.g.model: {none} holds no saved model (config.json).")


def test_a_required_key_with_a_bad_value_is_one_problem_not_two(tmp_path):
    """The schema's problems are found one by one, the part reported taken out each time: an
    OCR engine whose (required) model is not a string is that one problem, not also a missing
    model; the next entry's problem follows."""
    config = with_sections({"ocr": {"engines": {"g": {"type": "transformers", "model": 5}}}},
                           {"run": {"device": "gpu0"}})
    lines = [line for line in schema_problems(config, SCHEMA) if not line.startswith("  ")]
    assert [line.splitlines()[0] for line in lines] == [
        "run.device: 'gpu0' does not match '^(auto|cpu|cuda(:[0-9]+)?|mps)$'",
        "ocr.engines.g.model: 5 is not of type 'string'"]
    assert config["ocr"]["engines"]["g"]["model"] == 5  # the config itself is left as it is
    # a misspelt required key: missing, and unknown with the key it is close to; the entry's
    # other problems follow
    judge = with_sections({"audit": {"judge": {"type": "transformers", "modle": "/m",
                                               "device": "gpu0"}}})
    assert [line for line in schema_problems(judge, SCHEMA) if not line.startswith("  ")] == [
        "audit.judge: 'model' is a required property",
        "audit.judge: Additional properties are not allowed ('modle' was unexpected); did you "
        "mean 'model'?\n  (audit.judge: " + " ".join(yaml.safe_load(
            (REPO / "config.schema.yaml").read_text())["properties"]["audit"]["properties"][
            "judge"]["description"].split())[:300] + ")",
        "audit.judge.device: 'gpu0' does not match '^(auto|cpu|cuda(:[0-9]+)?|mps)$'\n"
        "  (audit.judge.device: Torch device: auto (CUDA when the process sees a GPU), cpu, "
        "cuda, cuda:N (the GPU of index N) or mps.)"]


# -- endpoints ------------------------------------------------------------------------------------
def test_each_endpoint_in_use_is_asked_once_and_an_unreachable_one_is_named(tmp_path,
                                                                            monkeypatch):
    """Two readers on one endpoint that nothing listens on: check-config (``probe_endpoints``)
    asks it once and names it; the workflow's check (no probe) and an endpoint that answers
    say nothing."""
    import roundtrip.api.client as client

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    asked = []
    real = client.probe_endpoint
    monkeypatch.setattr(client, "probe_endpoint",
                        lambda endpoint, *a, **kw: asked.append(endpoint["name"])
                        or real(endpoint, *a, **kw))
    url = f"http://127.0.0.1:{port}/v1"
    readers = {r: {"type": "vlm", "endpoint": "local", "model": "m"} for r in ("a", "b")}
    config = with_sections({"api": {"endpoints": {"local": {"base_url": url, "key_env": None}}}},
                           {"vista": {"readers": readers}})
    message = check(tmp_path, config, probe_endpoints=True)
    assert asked == ["local"]
    assert message.startswith(f"api.endpoints.local ({url}) is unreachable: ")
    assert message.endswith(f"(GET {url}/models, 5 s timeout)") and "\n" not in message
    assert check(tmp_path, config) is None and asked == ["local"]  # not asked
    monkeypatch.setattr(client, "probe_endpoint", lambda endpoint, *a, **kw: None)
    assert check(tmp_path, config, probe_endpoints=True) is None


# -- a judge that gives no verdict ----------------------------------------------------------------
def test_no_verdict_share_decides_whether_the_audit_ran():
    from roundtrip.datasets.rendered.audit import MAX_NO_VERDICT, JudgeCoverage, no_verdict_sentence

    assert MAX_NO_VERDICT == 0.5
    half, most = JudgeCoverage("j", 10, 5, "failed: x"), JudgeCoverage("j", 10, 6, "failed: y")
    assert half.ran() and not most.ran() and most.ran(0.6) and JudgeCoverage("j", 0, 0).ran()
    assert no_verdict_sentence({"a": half}) is None
    assert no_verdict_sentence({"a": half, "b": most}) == (
        "The render judge (j) gave no verdict on 6 of 10 renders (b): the render audit did not "
        "run (audit.max_no_verdict: 0.5); first reason: failed: y.")
    assert no_verdict_sentence({"a": half, "b": most}, 0.4) == (
        "The render judge (j) gave no verdict on 11 of 20 renders (a, b): the render audit did "
        "not run (audit.max_no_verdict: 0.4); first reason: failed: x.")


@requires_tesseract  # the audit reads every render back with Tesseract
def test_a_judge_answering_garbage_says_the_audit_did_not_run(folders, tmp_path, monkeypatch,
                                                              caplog):
    """The tiny random Gemma 3 as the in-process judge answers words, never a JSON verdict:
    every render is "not judged"; the build logs it and the report's first-page sentence says
    that the judge gave no verdict on 5 of 5 renders and the render audit did not run. A
    config without a judge says nothing."""
    import roundtrip.datasets.rendered.build as build
    from roundtrip.core.manifest import Item
    from roundtrip.datasets.rendered.audit import audit_findings, judge_coverage

    rng = np.random.default_rng(0)
    items = [Item(f"q{k}", "render", rng.integers(200, 256, (24, 48, 3), dtype=np.uint8),
                  extra={"text": f"question {k}", "lang": "eng"}) for k in range(5)]
    monkeypatch.setattr(build, "build_abstracts", lambda spec, settings: items)
    judge = {"type": "transformers", "model": str(folders["gemma"]), "max_new_tokens": 8,
             "prompt": "Judge {reference}", "cache_dir": str(tmp_path / "cache")}
    config = {"audit": {"judge": judge, "threads": 1},
              "datasets": {"mine": {"type": "abstracts"}}}
    out = tmp_path / "results" / "datasets" / "mine"
    with caplog.at_level(logging.WARNING, logger="roundtrip.datasets.rendered.build"):
        build.synthesize("mine", {"type": "abstracts", "audit": config["audit"]}, out)
    coverage = judge_coverage(out / "audit.csv")
    assert (coverage.judge, coverage.renders, coverage.no_verdict) == (
        f"transformers:{folders['gemma']}", 5, 5)
    assert not coverage.ran() and coverage.reason.startswith("failed: ")
    sentence = (f"The render judge (transformers:{folders['gemma']}) gave no verdict on 5 of 5 "
                "renders (mine): the render audit did not run (audit.max_no_verdict: 0.5); "
                f"first reason: {' '.join(coverage.reason.split())[:200]}.")
    assert audit_findings(config, root=tmp_path / "results") == [sentence]
    assert [r.getMessage() for r in caplog.records] == [f"dataset mine: {sentence}"]
    assert audit_findings(config | {"audit": {"judge": judge, "max_no_verdict": 1.0}},
                          root=tmp_path / "results") == []
    assert audit_findings({"audit": {"judge": None}, "datasets": config["datasets"]},
                          root=tmp_path / "results") == []
    # page 1: VISTA-Bench, whose question renders the audit is for, ends its findings with it
    from roundtrip.evals.vista import findings as vista_findings
    from roundtrip.evals.vista.spec import EVALUATION
    from roundtrip.report.findings import RunResults
    monkeypatch.setattr(vista_findings, "findings", lambda results: ["(the gap findings)"])
    monkeypatch.chdir(tmp_path)  # the report job runs where results/ is
    answered = config | {"vista": {"readers": {"solver": {"type": "ocr_solver"}},
                                   "datasets": ["mine"]}}
    assert EVALUATION.findings(RunResults({}, config=answered)) == ["(the gap findings)",
                                                                    sentence]


def test_the_vtbench_page_says_how_the_presets_ocr_reader_runs():
    """configs/papers/vtbench.yaml reads Table 3 in process (type: transformers), image first,
    one image per call at 1024 x 1024, the folder's decoding; docs/evaluations/vtbench.md says
    the same, not an endpoint with the prompt first."""
    preset = yaml.safe_load((REPO / "configs/papers/vtbench.yaml").read_text())
    gemma = preset["ocr"]["engines"]["gemma3"]
    assert (gemma["type"], gemma["model"], gemma["batch_size"], gemma["image_size"],
            gemma["max_new_tokens"], gemma["decoding"]) == (
        "transformers", "google/gemma-3-12b-it", 1, [1024, 1024], 1024, "model")
    assert preset["tables"]["ocr_engine"] == "gemma3" and "api" not in preset
    page = " ".join((REPO / "docs/evaluations/vtbench.md").read_text().split())
    said = page[page.index("## Preset"):page.index("## Deviations from the paper")]
    for words in ("run in the job's process", "`type: transformers`", "the image first, then "
                  "the released prompt", "one image per call (`batch_size: 1`)",
                  "1024 x 1024 (`image_size`)", "at most 1024 new tokens (`max_new_tokens`)",
                  "(`decoding: model`"):
        assert words in said, words
    for wrong in ("local_vllm", "temperature: 0", "max_tokens: 1024", "through an endpoint"):
        assert wrong not in page, wrong
    deviation = page[page.index("- **OCR engine**"):].split("- **", 2)[1]
    assert "reads with the released reader in process, the image before the prompt" in deviation
