"""A user's first config of their own works as written: LPIPS/FID/KID without weights are left
out with a note (``metrics.missing_weights`` defaults to ``n/a``), the prompt templates have
defaults (``api.prompts`` in config.schema.yaml), a key named twice is refused with both
lines, and a long job reports items, rate and time left on the console every 30 s
(roundtrip.core.progress)."""
from __future__ import annotations

import copy
import io
import logging
import re
import subprocess
import sys
import time

import pytest
import yaml
from conftest import REPO

from roundtrip.core import progress as progress_module
from roundtrip.core.config import ConfigError, DuplicateKey, load_yaml, yaml_error
from roundtrip.core.progress import Progress
from roundtrip.workflow.checks import check_config, check_file, validate_config

SCHEMA = str(REPO / "config.schema.yaml")
PROMPT_SCHEMA = yaml.safe_load((REPO / "config.schema.yaml").read_text())[
    "properties"]["api"]["properties"]["prompts"]

#: A config of one's own: one set, one model, nothing copied from config.yaml.
OWN = {"datasets": {"mine": {"type": "skimage", "images": ["astronaut", "camera"]}},
       "models": {"identity": {"type": "identity"}}}


@pytest.fixture()
def no_weights(tmp_path, monkeypatch):
    """An empty metric weights cache, whatever this machine has fetched."""
    cache = tmp_path / "no_weights"
    cache.mkdir()
    monkeypatch.setenv("ROUNDTRIP_WEIGHTS", str(cache))
    return cache


def _write(tmp_path, config, name="my.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


# -- 1. Missing LPIPS/FID weights: columns left out with a note, unless the config says error --
def _notes(cache) -> dict[str, str]:
    alex, inception = (cache / "alexnet-owt-7be5be79.pth",
                       cache / "weights-inception-2015-12-05-6726825d.pth")
    return {"lpips": f"n/a: LPIPS (net: alex) needs {alex}; on a machine with internet run "
                     f"`roundtrip weights fetch lpips-alex --cache {cache}` and copy the file "
                     f"there",
            "distribution": f"n/a: FID and KID needs {inception}; on a machine with internet "
                            f"run `roundtrip weights fetch inception-fid --cache {cache}` and "
                            f"copy the file there"}


def test_an_own_config_without_metric_weights_passes_and_notes_the_columns(tmp_path,
                                                                          no_weights):
    from roundtrip.evals.vtbench.tables import weighted_metrics
    from roundtrip.workflow.plan import Plan

    assert check_file(str(_write(tmp_path, OWN)), SCHEMA) is None
    config = validate_config(copy.deepcopy(OWN), SCHEMA)
    assert config["metrics"]["missing_weights"] == "n/a"
    plan = Plan(config)
    notes = _notes(no_weights)
    assert plan.weighted.unavailable() == notes
    assert not plan.weighted.perceptual_run  # no job spent on empty LPIPS/FID files
    # page 1, "What did not run, and why"
    not_ran = plan.evaluations_run()[1]
    assert ("metric file lpips", notes["lpips"]) in not_ran
    assert ("metric file distribution", notes["distribution"]) in not_ran
    # under the reconstruction and text tables: the columns are left out, one note each
    assert weighted_metrics(True, True, plan.weighted.unavailable()) == (
        False, False, [f"LPIPS not shown, {notes['lpips']}",
                       f"FID, KID not shown, {notes['distribution']}"])


def test_missing_weights_error_still_stops_before_any_job(tmp_path, no_weights):
    config = copy.deepcopy(OWN) | {"metrics": {"missing_weights": "error"}}
    path = _write(tmp_path, config)
    lines = check_file(str(path), SCHEMA).splitlines()
    assert lines[0] == ("metrics: 2 metrics lack their weights; put them there or fix the keys "
                        f"in {path}:")
    assert [line.split(":")[0] for line in lines[1:]] == ["  metrics.lpips", "  metrics.fid"]
    assert "roundtrip weights fetch lpips-alex" in lines[1]
    assert "roundtrip weights fetch inception-fid" in lines[2]


def test_every_preset_that_computes_a_weighted_metric_says_error():
    """The presets relied on the old default (error): one that computes LPIPS or FID keeps it by
    setting it; the others compute neither, so the default changes nothing for them."""
    seen = {}
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        metrics = yaml.safe_load(path.read_text()).get("metrics") or {}
        weighted = [k for k in ("lpips", "fid") if (metrics.get(k) or {}).get("enabled", True)]
        seen[path.name] = metrics.get("missing_weights") if weighted else "none computed"
    assert seen == {"chd.yaml": "none computed", "medibench.yaml": "none computed",
                    "telephone.yaml": "none computed", "vista.yaml": "none computed",
                    "vtbench.yaml": "error"}


# -- 2. Prompt templates: one default each, overridable one at a time ------------------------
def _template_names() -> set[str]:
    """Every template name a use of the shared sections or of an evaluation asks for."""
    from roundtrip.api.settings import api_uses
    from roundtrip.evals.telephone.spec import PAIR_PROMPTS

    config = {"models": {"g": {"type": "api_image"}},
              "ocr": {"engines": {"v": {"type": "vlm"}}},
              "audit": {"judge": {"type": "vlm"}},
              "datasets": {k: {"type": f"gpt_{k}"} for k in ("highres", "detail", "posters")}
              | {"zh": {"type": "abstracts", "translate": {"endpoint": "e"}}}}
    names = {name for _, _, fields in api_uses(config) for name in fields.values()}
    return names | {name for fields in PAIR_PROMPTS.values() for name in fields.values()}


def test_every_template_a_use_asks_for_has_its_default_in_the_schema():
    defaults = PROMPT_SCHEMA["properties"]
    assert set(defaults) == _template_names()
    assert len(defaults) == 12
    assert all(isinstance(spec["default"], str) and spec["default"].strip()
               for spec in defaults.values())
    # VTBench's GPT-4o prompt, verbatim (Sec. 4)
    assert " ".join(defaults["recreate"]["default"].split()) == (
        "Please recreate the exact same image without any alterations and preserve the "
        "original resolution.")
    # each template fills the fields its use passes, and nothing else
    assert re.findall(r"(?<!\{)\{(\w+)\}", defaults["ocr"]["default"]) == ["language"]
    assert re.findall(r"(?<!\{)\{(\w+)\}", defaults["judge"]["default"]) == ["reference"]
    assert defaults["judge"]["default"].format(reference="x").count('{"score": S,') == 1


def test_the_templates_are_defined_once():
    """config.yaml and the presets name no template: the schema's defaults are the one copy."""
    for path in [REPO / "config.yaml", *sorted((REPO / "configs").rglob("*.yaml"))]:
        config = yaml.safe_load(path.read_text())
        assert "prompts" not in (config.get("api") or {}), path.name
    shipped = validate_config(yaml.safe_load((REPO / "config.yaml").read_text()), SCHEMA)
    assert shipped["api"]["prompts"] == {k: v["default"]
                                         for k, v in PROMPT_SCHEMA["properties"].items()}


def test_a_users_template_replaces_that_one_only():
    """docs/api.md, "Prompts": its block changes the OCR template; the others keep theirs."""
    from doc_examples import fenced_blocks, section

    from roundtrip.api.settings import resolve_api

    page = (REPO / "docs/api.md").read_text(encoding="utf-8")
    [block] = [yaml.safe_load(text) for language, text in
               fenced_blocks(section(page, "## Prompts")) if language == "yaml"]
    mine = block["api"]["prompts"]["ocr"]
    assert list(block["api"]["prompts"]) == ["ocr"] and "{language}" in mine
    config = copy.deepcopy(OWN) | {
        "api": {"endpoints": {"local": {"base_url": "http://127.0.0.1:9/v1", "key_env": None}},
                **block["api"]},
        "ocr": {"engines": {"vlm": {"type": "vlm", "endpoint": "local", "model": "m"}}},
        "audit": {"judge": {"type": "vlm", "endpoint": "local", "model": "m"}}}
    validate_config(config, SCHEMA)
    prompts = config["api"]["prompts"]
    assert prompts["ocr"] == mine != PROMPT_SCHEMA["properties"]["ocr"]["default"]
    assert {k: v for k, v in prompts.items() if k != "ocr"} == {
        k: v["default"] for k, v in PROMPT_SCHEMA["properties"].items() if k != "ocr"}
    assert resolve_api(config) == ["local"]
    assert config["ocr"]["engines"]["vlm"]["prompt"] == mine
    assert config["audit"]["judge"]["prompt"] == PROMPT_SCHEMA["properties"]["judge"]["default"]


def test_an_own_config_with_api_uses_needs_no_prompt(tmp_path, no_weights):
    """A VLM OCR engine and a Telephone Game pair behind an endpoint, no api.prompts: the check
    passes (it failed with 'no default template api.prompts.ocr')."""
    config = copy.deepcopy(OWN) | {
        "api": {"endpoints": {"local": {"base_url": "http://127.0.0.1:9/v1", "key_env": None}}},
        "ocr": {"engines": {"tesseract": {"type": "tesseract"},
                            "vlm": {"type": "vlm", "endpoint": "local", "model": "m"}}},
        "telephone": {"pairs": {"p": {"type": "api", "endpoint": "local", "t2i_model": "a",
                                      "i2t_model": "b"}}}}
    assert check_file(str(_write(tmp_path, config)), SCHEMA) is None
    validate_config(config, SCHEMA)
    check_config(config)  # resolves in place
    defaults = {k: v["default"] for k, v in PROMPT_SCHEMA["properties"].items()}
    assert config["ocr"]["engines"]["vlm"]["prompt"] == defaults["ocr"]
    pair = config["telephone"]["pairs"]["p"]
    assert (pair["t2i_prompt"], pair["i2t_prompt"]) == (defaults["telephone_t2i"],
                                                         defaults["telephone_i2t"])


# -- 3. A key named twice is refused, with both lines ----------------------------------------
TWICE = """\
datasets:
  mine: {type: skimage, images: [astronaut]}
models:
  identity: {type: identity}
  jpeg: {type: jpeg, quality: 50}
metrics: {missing_weights: n/a}
models:
  webp: {type: webp, quality: 50}
"""


def test_yaml_would_drop_the_first_block_silently():
    assert list(yaml.safe_load(TWICE)["models"]) == ["webp"]  # why the check exists


@pytest.mark.parametrize("text,message", [
    (TWICE, "my.yaml:7: duplicate key 'models' (first at line 3)"),
    ("datasets:\n  a: {type: skimage}\n  b: {type: skimage}\n  a: {type: folder}\n",
     "my.yaml:4: duplicate key 'datasets.a' (first at line 2)"),
    ("models:\n  j: {type: jpeg, quality: 5,\n      quality: 9}\n",
     "my.yaml:3: duplicate key 'models.j.quality' (first at line 2)"),
    ("datasets:\n  v: {type: vista_questions, styles: [arial],\n      sizes: [{a: 1, a: 2}]}\n",
     "my.yaml:3: duplicate key 'datasets.v.sizes[0].a' (first at line 3)"),
    ("a: 1\n0x1: 2\n1: 3\n", "my.yaml:3: duplicate key '1' (first at line 2)"),
])
def test_duplicate_keys_are_named_with_both_lines(text, message):
    assert yaml_error(text, "my.yaml") == message
    with pytest.raises(DuplicateKey):
        load_yaml(text)


def test_a_merge_key_may_be_overridden_and_yaml_errors_keep_their_message():
    text = "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n"
    assert yaml_error(text, "m.yaml") is None
    assert load_yaml(text) == {"base": {"x": 1, "y": 2}, "d": {"x": 3, "y": 2}}
    assert yaml_error("a: [1\n", "m.yaml").startswith("m.yaml:2:1: YAML syntax error: ")


def test_check_config_refuses_a_duplicate_key(tmp_path, capsys):
    from roundtrip.cli import main

    (tmp_path / "my.yaml").write_text(TWICE)
    path = tmp_path / "my.yaml"
    assert check_file(str(path), SCHEMA) == f"{path}:7: duplicate key 'models' (first at line 3)"
    assert main(["check-config", str(path)]) == 1
    assert capsys.readouterr().err.strip() == f"{path}:7: duplicate key 'models' (first at line 3)"


def test_snakemake_refuses_a_duplicate_key_in_a_configfile(tmp_path):
    """--configfile is read by Snakemake's own loader (which keeps the last block); the
    Snakefile reads it again and stops before any job."""
    (tmp_path / "my.yaml").write_text(TWICE)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "my.yaml", "--cores", "1", "-n"],
                          cwd=tmp_path, capture_output=True, text=True)
    lines = [line for line in (proc.stderr + proc.stdout).splitlines()
             if line.strip() and not line.startswith("Using workflow specific profile")]
    assert proc.returncode != 0
    assert lines[0] == "my.yaml:7: duplicate key 'models' (first at line 3)", lines
    assert not (tmp_path / "results").exists()


# -- 4. Progress on the console every 30 s ----------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_console_hears_from_a_long_job_every_30_s():
    assert (progress_module.CONSOLE_AFTER_S, progress_module.CONSOLE_INTERVAL_S) == (30.0, 30.0)
    clock, console = Clock(), io.StringIO()
    p = Progress(100, "reconstruct m on d", clock=clock, console=console,
                 logger=logging.getLogger("test.first"))
    for _ in range(100):
        clock.now += 1.0  # one item a second
        p.add()
    p.finish()
    assert console.getvalue().splitlines() == [
        "[roundtrip] reconstruct m on d: 30 of 100 items (30 %), 1.00 items/s, about 1 min 10 s "
        "left",
        "[roundtrip] reconstruct m on d: 60 of 100 items (60 %), 1.00 items/s, about 40 s left",
        "[roundtrip] reconstruct m on d: 90 of 100 items (90 %), 1.00 items/s, about 10 s left",
        "[roundtrip] reconstruct m on d: 100 of 100 items done in 1 min 40 s"]


def test_a_short_job_prints_nothing_on_the_console():
    clock, console = Clock(), io.StringIO()
    p = Progress(29, "ocr", clock=clock, console=console, logger=logging.getLogger("test.first"))
    for _ in range(29):
        clock.now += 1.0
        p.add()
    p.finish()
    assert console.getvalue() == ""


def test_lines_stay_on_the_30_s_grid_when_items_come_late():
    """Items of 45 s: a line at the first item after each due time (30, 60, 90, ... s), never
    two for one interval, and the grid does not drift."""
    clock, console = Clock(), io.StringIO()
    p = Progress(6, "train", unit="steps", clock=clock, console=console,
                 logger=logging.getLogger("test.first"))
    printed = []
    for _ in range(6):
        clock.now += 45.0
        before = console.getvalue().count("\n")
        p.add()
        if console.getvalue().count("\n") > before:
            printed.append(clock.now - 1000.0)
    # due at 30 -> item at 45; due 60 -> 90; due 120 -> 135; due 150 -> 180; due 210 -> 225;
    # due 240 -> 270
    assert printed == [45.0, 90.0, 135.0, 180.0, 225.0, 270.0]


def test_a_batched_job_reports_once_per_interval_with_its_current_part():
    """A job tracker over sets; each set's own tracker (created inside it) counts items. One
    console line per 30 s for the whole job, naming the set at work."""
    clock, console = Clock(), io.StringIO()
    log = logging.getLogger("test.first")
    with Progress(3, "reconstruct m on 3 sets", unit="sets", clock=clock, console=console,
                  logger=log) as job:
        for name in ("a", "b", "c"):
            part = Progress(20, f"reconstruct m on {name}", clock=clock, console=console,
                            logger=log)
            assert part.job is job
            for _ in range(20):
                clock.now += 1.0
                part.add()
            part.finish()
            job.add()
    assert Progress(1, "after", clock=clock).job is None  # the job is closed
    assert console.getvalue().splitlines() == [
        "[roundtrip] reconstruct m on 3 sets: 1 of 3 sets (33 %), 0.03 sets/s, about 1 min 00 s "
        "left; now reconstruct m on b: 10 of 20 items (50 %), 1.00 items/s, about 10 s left",
        "[roundtrip] reconstruct m on 3 sets: 2 of 3 sets (67 %), 0.03 sets/s, about 30 s left; "
        "now reconstruct m on c: 20 of 20 items (100 %), 1.00 items/s",
        "[roundtrip] reconstruct m on 3 sets: 3 of 3 sets done in 1 min 00 s"]


def test_a_job_whose_items_are_slow_still_reports_on_time(monkeypatch):
    """A job tracker writes a due line by itself when no item comes (real clock; the interval
    shortened to 0.1 s here)."""
    monkeypatch.setattr(progress_module, "CONSOLE_AFTER_S", 0.1)
    monkeypatch.setattr(progress_module, "CONSOLE_INTERVAL_S", 0.1)
    console = io.StringIO()
    with Progress(2, "build a, b", unit="sets", console=console) as job:
        time.sleep(0.35)  # the first set takes 3.5 intervals
        job.add()
        time.sleep(0.02)
    lines = console.getvalue().splitlines()
    assert lines[:3] == ["[roundtrip] build a, b: 0 of 2 sets (0 %), 0.00 sets/s"] * 3
    assert lines[-1].startswith("[roundtrip] build a, b: 1 of 2 sets done in ")
    console = io.StringIO()
    with Progress(2, "short", unit="sets", console=console) as job:
        job.add(2)
    assert console.getvalue() == ""  # over before the first due time


def test_the_batched_reconstruction_job_reports_through_one_tracker(tmp_path, monkeypatch, capsys):
    """rule reconstruct_sets: one line for the job, naming the set at work and its items."""
    from roundtrip.datasets import build_dataset
    from roundtrip.workflow import recon_job

    monkeypatch.setattr(progress_module, "CONSOLE_AFTER_S", 0.0)
    monkeypatch.setattr(progress_module, "CONSOLE_INTERVAL_S", 0.0)
    jobs = []
    for name, images in {"photos": ["astronaut", "coffee"], "gray": ["camera"]}.items():
        build_dataset(name, {"type": "skimage", "images": images}, tmp_path / "datasets" / name)
        recon, metrics = tmp_path / "recon/jpeg" / name, tmp_path / "metrics/jpeg" / name
        metrics.mkdir(parents=True)
        jobs.append({"dataset": name, "manifest": str(tmp_path / "datasets" / name /
                                                       "manifest.csv"),
                     "outputs": {"status": str(recon / "status.csv"),
                                 "image_quality": str(metrics / "image_quality.csv"),
                                 "set": str(metrics / "set.csv")},
                     "scorers": {"image_quality": {}},
                     "targets": {"image_quality":
                                 "roundtrip.evals.vtbench.image_quality:ImageQualityScorer"},
                     "protocol": "native", "size": None, "keep": 16})
    capsys.readouterr()
    recon_job.run_recon_jobs("jpeg", {"type": "jpeg", "quality": 40}, jobs, device="cpu")
    lines = set(capsys.readouterr().err.splitlines())
    job = "[roundtrip] reconstruct jpeg on 2 sets"
    assert any(line.startswith(f"{job}: 0 of 2 sets (0 %)") and
               "; now reconstruct jpeg on photos: 2 of 2 items (100 %)" in line for line in lines)
    assert any(line.startswith(f"{job}: 1 of 2 sets (50 %)") and
               "; now reconstruct jpeg on gray: 1 of 1 items (100 %)" in line for line in lines)
    assert any(line.startswith(f"{job}: 2 of 2 sets done in ") for line in lines)


def test_the_long_jobs_count_their_natural_items(tmp_path):
    """The jobs above 30 s in the default run that had no tracker: volumes (per volume), the
    token sensitivity (per degraded set)."""
    import numpy as np

    from roundtrip.evals.chd.sensitivity import KINDS, degraded_tokens

    class Tok:  # the least a tokenizer needs here: 8 x 8 patches, id = mean grey level / 32
        name, device = "tok", "cpu"

        def encode(self, x):
            return x

        def tokens(self, x):
            grey = (x.mean(1) + 1) * 127.5
            return (grey.unfold(1, 8, 8).unfold(2, 8, 8).mean((-1, -2)) // 32).long()

        def checked_tokens(self, x, n):
            return self.tokens(x)

    counted = Progress(1 + len(KINDS) * 2, "sensitivity", unit="sets")
    images = [np.full((40, 40, 3), 128, np.uint8)]
    sets = degraded_tokens(Tok(), images, 32, levels=2, crops_per_image=1, progress=counted)
    assert counted.done == len(sets) == 7
