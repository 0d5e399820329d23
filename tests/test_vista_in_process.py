"""VISTA-Bench readers run in process (``vista.readers.<name>: {type: transformers, ...}``).

The model is the tiny random Gemma 3 of ``tests/tiny_models.py`` (``tiny_gemma3``: a 1-layer
SigLIP tower on 32 px images, a word-level tokenizer, Gemma's chat template), saved and loaded
back by path as a real model folder is. Its answers are meaningless words (every one an invalid
answer); the requests, the batching, the cache, the progress lines and the jobs are the real
ones. The question set is a hand-made manifest: three family questions rendered at two sizes
and one multimodal question with a picture of its own and a hint.
"""
import copy
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from doc_examples import yaml_after
from in_process import fresh_process, generations, one_thread  # noqa: F401 - fixtures
from PIL import Image
from tiny_models import tiny_gemma3

from roundtrip.api.client import clear_clients
from roundtrip.core.config import ConfigError
from roundtrip.datasets.rendered.questions import prompt_text
from roundtrip.evals.vista.answers import answer_set
from roundtrip.evals.vista.prompts import TEXT_INSTRUCTION
from roundtrip.readers import ANSWERER_TYPES, build_answerer
from roundtrip.readers.answerers import (PROMPT_PRESETS, Question, TransformersAnswerer,
                                         vlm_parts)
from roundtrip.readers.question_family import generate
from roundtrip.readers.transformers_vlm import ChatVLM, unload_all

pytest.importorskip("transformers")

HINT = "The picture was taken at noon."


@pytest.fixture(scope="session")
def gemma(tmp_path_factory) -> Path:
    return tiny_gemma3(tmp_path_factory.mktemp("tiny-gemma3"))


def question_set(root: Path) -> Path:
    """Three family questions (9 and 16 pt renders) and one multimodal question with a picture
    and a hint (one render): 4 text requests (3 without a picture, 1 with one) and 7 VT
    requests (6 with the question image, 1 with the picture and the question image)."""
    rng = np.random.default_rng(0)
    ds = root / "ds"
    (ds / "images").mkdir(parents=True)
    (ds / "item_images").mkdir()

    def png(rel: str, h: int) -> str:
        Image.fromarray(rng.integers(0, 256, (h, 40, 3), dtype=np.uint8)).save(ds / rel)
        return rel

    rows = []
    for q in generate(3, seed=1):
        for size in (9, 16):
            item = f"{q['id']}__arial_{size}pt"
            rows.append({"item_id": item, "path": png(f"images/{item}.png", 20), "status": "ok",
                         "reason": "", "font": "arial", "font_size_pt": size,
                         "question_id": q["id"], "question_text": prompt_text(q),
                         "answer": q["answer"], "category": q["category"],
                         "subfield": q["subfield"], "hint": "",
                         "options": json.dumps(q["options"]), "item_images": "",
                         "table1": "1" if size == 16 else "0"})
    rows.append({"item_id": "mm1__arial_16pt", "path": png("images/mm1.png", 24), "status": "ok",
                 "reason": "", "font": "arial", "font_size_pt": 16, "question_id": "mm1",
                 "question_text": "What colour is the car?\nA. red\nB. blue",
                 "question": "What colour is the car?", "answer": "A",
                 "category": "Multimodal Perception", "subfield": "colour", "hint": HINT,
                 "options": json.dumps([["A", "red"], ["B", "blue"]]),
                 "item_images": png("item_images/mm1_0.png", 16), "table1": "1"})
    pd.DataFrame(rows).to_csv(ds / "manifest.csv", index=False)
    return ds / "manifest.csv"


def reader(folder: Path, cache: Path, **kw) -> TransformersAnswerer:
    spec = {"type": "transformers", "model": str(folder), "batch_size": 4,
            "image_size": [32, 32], "max_new_tokens": 5, "cache_dir": str(cache)} | kw
    return build_answerer("tiny", spec)


@pytest.fixture()
def requests_sent(monkeypatch) -> list:
    """Every request the in-process component is given, as its list of parts."""
    sent = []
    real = ChatVLM.answer_many

    def spy(self, requests):
        sent.extend(requests)
        return real(self, requests)

    monkeypatch.setattr(ChatVLM, "answer_many", spy)
    return sent


# -- the requests --------------------------------------------------------------------------------
def test_the_in_process_reader_sends_the_endpoint_readers_requests(gemma, tmp_path, monkeypatch):
    """One layout for both paths (vlm_parts): the in-process reader is given exactly the images
    and the text the endpoint reader sends, in the same order, in both modes; the prompt is the
    same string (PROMPT_PRESETS)."""
    picture = np.full((6, 6, 3), 7, np.uint8)
    question_image = np.full((8, 12, 3), 200, np.uint8)
    q = Question("q", "Which animal?\nA. cat\nB. dog", hint=HINT,
                 options=[("A", "cat"), ("B", "dog")], images=[picture],
                 question_image=question_image)
    endpoint = build_answerer("e", {"type": "vlm", "endpoint": {"name": "x", "base_url": "u"},
                                    "model": "m", "prompt": "CoT"})
    sent = []
    monkeypatch.setattr(endpoint, "_chat", lambda content: sent.append(content) or "A")
    inside = reader(gemma, tmp_path, prompt="CoT")
    for mode in ("text", "vt"):
        endpoint.answer(q, mode)
        parts = vlm_parts(q, mode, inside.prompts)
        content = sent[-1]
        assert [p["type"] for p in content] == ["image_url" if isinstance(p, np.ndarray)
                                                else "text" for p in parts]
        assert content[-1]["text"] == parts[-1]
        assert parts[-1].startswith(HINT + "\n")  # the hint travels as text in both modes
        assert parts[-1].endswith(PROMPT_PRESETS["CoT"][mode])
    assert vlm_parts(q, "text", inside.prompts)[0] is picture
    assert [p is x for p, x in zip(vlm_parts(q, "vt", inside.prompts), (picture, question_image))]\
        == [True, True]
    with pytest.raises(ValueError, match="no question image"):
        vlm_parts(Question("q", "t"), "vt", inside.prompts)
    assert ANSWERER_TYPES["transformers"] is TransformersAnswerer


@pytest.mark.parametrize("layout", ["release", "matched"])
def test_both_modes_carry_the_hint_in_process(gemma, tmp_path, requests_sent, layout):
    """Through answer_set: the multimodal question's text request is [picture, text] and its VT
    request [picture, question image, text]; the hint is in the text of both (the release
    layout's "Hint: ...", the matched layout's plain line), the question's words only in the
    text mode."""
    manifest = question_set(tmp_path)
    answer_set(manifest, reader(gemma, tmp_path / "cache"), prompt_layout=layout)
    mm = [r for r in requests_sent if any(HINT in p for p in r if isinstance(p, str))]
    text, vt = sorted(mm, key=len)
    assert [type(p).__name__ for p in text] == ["ndarray", "str"]
    assert [type(p).__name__ for p in vt] == ["ndarray", "ndarray", "str"]
    assert text[0].shape == vt[0].shape == (16, 40, 3) and vt[1].shape == (24, 40, 3)
    if layout == "release":
        assert text[-1] == (f"Hint: {HINT}\nQuestion: What colour is the car?\nOptions:\n"
                            f"A. red\nB. blue\n{TEXT_INSTRUCTION}\n")
        assert vt[-1] == f"Hint: {HINT}\n" + PROMPT_PRESETS["Original"]["vt"]
    else:
        assert text[-1].startswith(f"{HINT}\nWhat colour is the car?\nA. red\nB. blue\n\n")
        assert vt[-1] == f"{HINT}\n" + PROMPT_PRESETS["Original"]["vt"]
    assert "What colour" not in vt[-1]
    assert len(requests_sent) == 11  # 4 questions as text, 7 renders


# -- batching, the cache, progress ----------------------------------------------------------------
def test_batched_equals_one_by_one(gemma, tmp_path, generations):
    """4 text requests and 7 VT requests, batch size 4, requests with as many images together:
    no picture (3), one image (1 text + 6 VT: 4 + 3), two images (1): generate calls of 3, 4, 3,
    1; one by one, 11 calls of 1; the same raw answers row for row."""
    manifest = question_set(tmp_path)
    batched = answer_set(manifest, reader(gemma, tmp_path / "a"))
    assert generations == [3, 4, 3, 1]
    single = answer_set(manifest, reader(gemma, tmp_path / "b", batch_size=1))
    assert generations[4:] == [1] * 11
    assert batched["raw"].tolist() == single["raw"].tolist()
    assert batched.drop(columns=["raw"]).equals(single.drop(columns=["raw"]))
    assert (batched["status"] == "ok").all() and len(batched) == 11
    # the random model's words never name an option: invalid answers, counted wrong
    assert set(batched["extracted_by"]) == {"invalid"} and (batched["hit"] == 0.0).all()
    assert len(set(batched["raw"])) > 1
    print("raw answers:", batched["raw"].tolist())


def test_a_killed_answer_job_resumes_from_the_cache(gemma, tmp_path, generations):
    """Answers are cached as each batch returns: a job killed in its second batch keeps the
    first batch's 3 answers; the rerun generates the 8 others (4, 3, 1), a third run generates
    nothing (0 generations, 11 cache hits) and writes the same answers."""
    manifest = question_set(tmp_path)
    generations.kill_at = 1  # killed during the second batch
    with pytest.raises(KeyboardInterrupt):
        answer_set(manifest, reader(gemma, tmp_path / "cache"))
    assert generations == [3] and len(list((tmp_path / "cache").rglob("*.json"))) == 3

    generations.kill_at = None
    unload_all(), clear_clients()  # a new job
    resumed = answer_set(manifest, reader(gemma, tmp_path / "cache"))
    assert generations == [3, 4, 3, 1]

    unload_all(), clear_clients()
    again = reader(gemma, tmp_path / "cache")
    assert answer_set(manifest, again).equals(resumed)
    assert generations == [3, 4, 3, 1]  # the third run: 0 generations
    assert again.vlm.usage.requests == 0 and again.vlm.usage.cache_hits == 11


def test_the_answer_job_logs_its_progress(gemma, tmp_path, caplog, monkeypatch):
    """Items done, rate and time left at a steady interval (here: every batch), then the
    total: roundtrip.core.progress.Progress, as the reconstruction and OCR jobs."""
    import roundtrip.core.progress as progress

    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.0)
    manifest = question_set(tmp_path)
    with caplog.at_level(logging.INFO, logger="roundtrip.evals.vista.answers"):
        answer_set(manifest, reader(gemma, tmp_path / "cache"))
    lines = [r.getMessage() for r in caplog.records if "VISTA answers of" in r.getMessage()]
    what = "VISTA answers of vista.readers.tiny (original) on ds"
    assert [line.split(",")[0] for line in lines[:4]] == [
        f"{what}: 3 of 11 answers (27 %)", f"{what}: 7 of 11 answers (64 %)",
        f"{what}: 10 of 11 answers (91 %)", f"{what}: 11 of 11 answers (100 %)"]
    assert "answers/s, about" in lines[0] and "left" in lines[0]
    assert lines[-1].startswith(f"{what}: 11 of 11 answers done in ")


def test_an_unreadable_render_costs_its_answer_only(gemma, tmp_path):
    """A render whose file is gone is not scored, with its reason; the batch goes on."""
    manifest = question_set(tmp_path)
    (manifest.parent / "images" / "mm1.png").unlink()
    df = answer_set(manifest, reader(gemma, tmp_path / "cache")).set_index("item_id")
    assert df.loc["mm1__arial_16pt", "status"] == "not_scored"
    assert df.loc["mm1__arial_16pt", "reason"].startswith("image:")
    assert (df.drop(index="mm1__arial_16pt")["status"] == "ok").all()


# -- the config --------------------------------------------------------------------------------
def test_a_missing_model_fails_the_config_check_with_key_and_hub_id(tmp_path, monkeypatch):
    """Before any job: the reader's key, the hub id and the command that fetches it."""
    import huggingface_hub.constants as hc

    from roundtrip.workflow.checks import check_config

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["vista"]["readers"]["qwen"] = {"type": "transformers",
                                          "model": "Qwen/Qwen2.5-VL-7B-Instruct"}
    with pytest.raises(ConfigError) as exc:
        check_config(config)
    message = str(exc.value)
    assert message.startswith("vista.readers.qwen.model: Qwen/Qwen2.5-VL-7B-Instruct is not a "
                              "saved model folder here")
    assert "`hf download Qwen/Qwen2.5-VL-7B-Instruct`" in message


def test_a_hub_id_in_the_cache_passes_the_check_and_builds(gemma, tmp_path, monkeypatch):
    import huggingface_hub.constants as hc

    from roundtrip.workflow.checks import check_config

    repo = tmp_path / "hub" / "models--tiny--gemma3"
    shutil.copytree(gemma, repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["vista"]["readers"]["tiny"] = {"type": "transformers", "model": "tiny/gemma3"}
    check_config(copy.deepcopy(config))
    built = build_answerer("tiny", config["vista"]["readers"]["tiny"])
    assert built.check().startswith("tiny/gemma3 in process (")
    assert built.vlm.key == "vista.readers.tiny.model" and built.concurrency == 1


def test_schema_accepts_the_in_process_reader():
    from roundtrip.workflow.checks import schema_problem

    schema = str(REPO / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["vista"]["readers"]["qwen"] = {
        "type": "transformers", "model": "Qwen/Qwen2.5-VL-7B-Instruct", "prompt": "Original",
        "max_new_tokens": 2048, "batch_size": 8, "image_size": None,
        "decoding": {"do_sample": False, "num_beams": 1}, "seed": 0, "dtype": "auto",
        "device": "auto", "cache_dir": "api_cache"}
    assert schema_problem(config, schema) is None
    config["vista"]["readers"]["qwen"]["decoding"] = "model"
    assert schema_problem(config, schema) is None
    config["vista"]["readers"]["qwen"]["image_size"] = [448]
    assert schema_problem(config, schema).startswith("vista.readers.qwen.image_size: [448] is "
                                                     "too short")
    with pytest.raises(ValueError, match=r"vista.readers.bad: .*decoding"):
        build_answerer("bad", {"type": "transformers", "model": "m", "decoding": "beam"})


def test_the_readers_take_the_decoding_speed_keys(gemma, tmp_path, generations):
    """cache_implementation, compile, attn_implementation, sort_by_length and prefetch, as the
    OCR engines take them (docs/api.md, Decoding speed): checked by the schema, handed to the
    in-process component; a static cache without sorting gives the eager path's answers, and
    answers cached on one path are served to the other (the keys are not in the cache key)."""
    from roundtrip.workflow.checks import schema_problem

    schema = str(REPO / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    speed = {"cache_implementation": "static", "compile": False, "attn_implementation": "eager",
             "sort_by_length": False, "prefetch": True}
    config["vista"]["readers"]["qwen"] = {"type": "transformers", "model": "m", **speed}
    assert schema_problem(config, schema) is None
    config["vista"]["readers"]["qwen"]["cache_implementation"] = "paged"
    assert schema_problem(config, schema).startswith(
        "vista.readers.qwen.cache_implementation: 'paged' is not one of")
    fast = reader(gemma, tmp_path / "static", **speed)
    assert {k: getattr(fast.vlm, k) for k in speed} == speed
    manifest = question_set(tmp_path)
    eager = answer_set(manifest, reader(gemma, tmp_path / "eager"))
    calls = len(generations)
    assert answer_set(manifest, fast)["raw"].tolist() == eager["raw"].tolist()
    assert len(generations) > calls  # generated on the static path, not read from a cache
    calls = len(generations)
    served = answer_set(manifest, reader(gemma, tmp_path / "eager", **speed))
    assert served["raw"].tolist() == eager["raw"].tolist() and len(generations) == calls


def test_the_docs_example_is_a_valid_config_whose_reader_runs(gemma, tmp_path):
    """docs/evaluations/vista.md, "The release in process": the YAML block is valid against the
    schema, plans no reconstruction, and its reader builds with its settings and answers with
    the tiny model in place of Qwen2.5-VL-7B."""
    from roundtrip.workflow.checks import schema_problem, validate_config
    from roundtrip.workflow.plan import Plan

    text = (REPO / "docs/evaluations/vista.md").read_text()
    section = text[text.index("## The release in process"):]
    assert "hf download Qwen/Qwen2.5-VL-7B-Instruct" in section.split("```yaml", 1)[0]
    example = yaml_after(REPO / "docs/evaluations/vista.md", "## The release in process")
    schema = str(REPO / "config.schema.yaml")
    assert schema_problem(copy.deepcopy(example), schema) is None
    config = copy.deepcopy(example)
    validate_config(config, schema)
    plan = Plan(config, cores=2)
    assert plan.recon_jobs.variants() == [] and plan.text_datasets == []
    spec = example["vista"]["readers"]["qwen25vl_7b"]
    built = build_answerer("qwen25vl_7b", spec)
    assert (built.vlm.max_new_tokens, built.batch_size) == (2048, 8)
    assert built.prompts == PROMPT_PRESETS["Original"] and built.vlm.generate_args == {
        "do_sample": False}
    tiny = build_answerer("qwen25vl_7b", spec | {"model": str(gemma), "image_size": [32, 32],
                                                 "max_new_tokens": 3,
                                                 "cache_dir": str(tmp_path)})
    assert isinstance(tiny.answer(Question("q", "2 + 2?\nA. 4\nB. 5",
                                           options=[("A", "4"), ("B", "5")]), "text"), str)


# -- the workflow ------------------------------------------------------------------------------------
def _workflow_config(gemma: Path, device: str) -> dict:
    return {"datasets": {"qs": {"type": "vista_questions", "questions": "family", "count": 2,
                                "sizes": [16], "styles": ["arial"], "table1": "grid"}},
            "models": {"identity": {"type": "identity"}},
            "vista": {"readers": {"tiny": {"type": "transformers", "model": str(gemma),
                                           "image_size": [32, 32], "max_new_tokens": 4,
                                           "batch_size": 2}},
                      "models": []},
            "metrics": {"lpips": {"enabled": False}, "fid": {"enabled": False},
                        "tokens": {"reference": None}},
            "run": {"device": device}}


def _snakemake(work: Path, *args):
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "1", *args],
                          cwd=work, capture_output=True, text=True)


def _resources(dry_run: str, rule: str) -> str:
    lines = dry_run.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"rule {rule}:")
    return next(line.strip() for line in lines[start:] if line.strip().startswith("resources:"))


@pytest.mark.workflow
def test_the_answer_job_declares_the_gpu_and_runs_on_the_cpu(gemma, tmp_path):
    """run.device: cuda: the in-process reader's answer job declares gpu=1 (and is a job of its
    own, outside the tables' group); run.device: cpu: gpu=0, and the job runs: the tiny model
    answers 2 questions as text and 2 renders, the usage goes to the ledger; a rerun from
    scratch (results removed, the cache kept) generates nothing. No reconstruction job runs:
    vista.models is [] and the set has no text_eval."""
    target = "results/vista/tiny/original/qs/answers.csv"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(_workflow_config(gemma, "cuda")))
    proc = _snakemake(tmp_path, "-n", target)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gpu=1" in _resources(proc.stdout, "vista_answers_in_process")
    assert "reconstruct" not in proc.stdout

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(_workflow_config(gemma, "cpu")))
    proc = _snakemake(tmp_path, "-n", target)
    assert "gpu=0" in _resources(proc.stdout, "vista_answers_in_process")
    proc = _snakemake(tmp_path, target)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = pd.read_csv(tmp_path / target)
    assert answers["mode"].value_counts().to_dict() == {"text": 2, "vt": 2}
    assert (answers["status"] == "ok").all()
    ledger = [json.loads(line) for line in
              (tmp_path / "results/api/usage.jsonl").read_text().splitlines()]
    assert {line["endpoint"] for line in ledger} == {f"transformers:{gemma}"}
    assert sum(line["requests"] for line in ledger) == 4
    log = (tmp_path / "logs/vista_answers/tiny/original/qs.log").read_text()
    assert "4 of 4 answers done in" in log

    shutil.rmtree(tmp_path / "results")
    proc = _snakemake(tmp_path, target)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = [json.loads(line) for line in
             (tmp_path / "results/api/usage.jsonl").read_text().splitlines()]
    assert sum(line["requests"] for line in again) == 0
    assert sum(line["cache_hits"] for line in again) == 4
    assert pd.read_csv(tmp_path / target).equals(answers)
