"""A bad config fails before any work, naming the key."""
import copy
import re
import subprocess
import sys

import pytest
import yaml
from conftest import REPO

from roundtrip.core.config import ConfigError, config_names
from roundtrip.workflow.checks import check_config, config_problem, validate_config

SCHEMA = str(REPO / "config.schema.yaml")


@pytest.fixture()
def default_config():
    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_default_config_is_valid_and_gets_defaults(default_config):
    cfg = copy.deepcopy(default_config)
    validate_config(cfg, SCHEMA)
    check_config(cfg)
    assert cfg["datasets"]["natural"]["shards"] == 1
    assert cfg["datasets"]["natural"]["text_eval"] is False
    assert cfg["ocr"]["normalization"]["unicode_form"] == "NFKC"


@pytest.mark.parametrize("mutate,match", [
    (lambda c: c["models"].update(bad={"type": "jpeg", "quality": 500}), "500"),
    (lambda c: c["models"].update(bad={"type": "jpeg"}), "quality"),
    (lambda c: c["models"].update(bad={"type": "jpg", "quality": 5}), "jpg"),
    (lambda c: c["datasets"]["natural"].update(shard=2), "shard"),
    (lambda c: c.update(extra_key=1), "extra_key"),
    (lambda c: c["datasets"].update(f={"type": "folder"}), "path"),
])
def test_schema_errors_name_the_key(default_config, mutate, match):
    mutate(default_config)
    with pytest.raises(Exception, match=match):
        validate_config(default_config, SCHEMA)


@pytest.mark.parametrize("mutate,match", [
    (lambda c: c["models"].update(original={"type": "identity"}), r"models\.original"),
    (lambda c: c["models"].update(j={"type": "jpeg", "quality": 5, "factor": 2}), r"models\.j"),
    (lambda c: c["datasets"]["natural"].update(images=["lena"]), r"datasets\.natural\.images"),
    (lambda c: c["vista"]["readers"].update(s={"type": "ocr_solver", "ocr": "easyocr"}),
     r"vista\.readers\.s\.ocr: 'easyocr' is not an entry of ocr\.engines"),
    (lambda c: c["vista"]["readers"].update(v={"type": "vlm", "endpoint": "nowhere",
                                               "model": "m"}), r"vista\.readers\.v\.endpoint"),
    (lambda c: c["vista"]["readers"].update(v={"type": "vlm", "endpoint": "ollama",
                                               "model": "m", "prompt": "loud"}),
     r"vista\.readers\.v: prompt: unknown preset 'loud'"),
    (lambda c: c["vista"].update(models=["gpt9"]), r"vista\.models: unknown models"),
    (lambda c: c["vista"].update(datasets=["natural"]), r"vista\.datasets: natural is a skimage"),
    (lambda c: c["datasets"].update(vb={"type": "vista_release", "path": "/no/such.tsv"}),
     r"datasets\.vb\.path: /no/such.tsv does not exist"),
    # a second OCR engine: its sets exist, it reads their languages, the table engine reads all
    (lambda c: c["ocr"]["engines"]["rapidocr"].update(datasets=["postres"]),
     r"ocr\.engines\.rapidocr\.datasets: unknown datasets \['postres'\]"),
    (lambda c: c["ocr"]["engines"]["rapidocr"].update(datasets=["posters", "multilingual_ko"]),
     r"ocr\.engines\.rapidocr\.datasets: multilingual_ko \(kor\): RapidOCR has no recognizer "
     r"for \['kor'\].*ocr\.engines\.rapidocr\.rec_models\.kor"),
    (lambda c: c["ocr"]["engines"]["rapidocr"].update(
        datasets=["multilingual_ko"], rec_models={"kor": {"model": "/no/k.onnx", "keys": "/no/k.txt"}}),
     r"ocr\.engines\.rapidocr\.datasets: multilingual_ko \(kor\): ocr\.engines\.rapidocr\.rec_models"
     r"\.kor\.model: /no/k\.onnx does not exist"),
    (lambda c: c["tables"].update(ocr_engine="rapidocr"),
     r"ocr\.engines\.rapidocr\.datasets: the text-preservation table's engine"),
    (lambda c: c["vista"]["readers"]["ocr_solver"].update(ocr="rapidocr"),
     r"vista\.readers\.ocr_solver\.ocr: rapidocr does not read \['vista_questions'\]"),
])
def test_cross_key_checks(default_config, mutate, match):
    validate_config(default_config, SCHEMA)
    mutate(default_config)
    with pytest.raises(ConfigError, match=match):
        check_config(default_config)


def test_snakemake_refuses_bad_config_before_any_job(tmp_path, default_config):
    default_config["models"]["jpeg_bad"] = {"type": "jpeg", "quality": 0}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(default_config, sort_keys=False))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "c.yaml", "--cores", "1", "-n"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "jpeg_bad" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("mutate,match", [
    (lambda c: c["metrics"]["tokens"].update(reference="nope"), r"metrics\.tokens\.reference"),
    (lambda c: c["metrics"]["tokens"].update(reference="small_kl"), "discrete tokens"),
    (lambda c: c["metrics"]["tokens"].update(reference="jpeg_q75"), "codec"),
    (lambda c: c["metrics"]["tokens"]["cmms"].update(datasets=["x"]),
     r"metrics\.tokens\.cmms\.datasets"),
    (lambda c: c["metrics"]["tokens"]["sensitivity"].update(dataset="x"),
     r"metrics\.tokens\.sensitivity\.dataset"),
])
def test_token_metric_checks(default_config, mutate, match):
    validate_config(default_config, SCHEMA)
    mutate(default_config)
    with pytest.raises(ConfigError, match=match):
        check_config(default_config)


def test_missing_weights_fail_early_in_an_explicit_config(default_config, tmp_path):
    """A config that sets missing_weights: error (the VTBench preset) names file and command."""
    default_config["metrics"]["missing_weights"] = "error"
    default_config["metrics"]["weights_cache"] = str(tmp_path / "empty")
    validate_config(default_config, SCHEMA)
    with pytest.raises(ConfigError) as exc:
        check_config(default_config)
    lines = str(exc.value).splitlines()
    # both metrics in one message (before: LPIPS, then FID on the next attempt)
    assert lines[0] == ("metrics: 2 metrics lack their weights; put them there or fix the keys "
                        "in config.yaml:")
    assert [line.split(":")[0] for line in lines[1:]] == ["  metrics.lpips", "  metrics.fid"]
    assert str(tmp_path / "empty" / "alexnet-owt-7be5be79.pth") in lines[1]
    assert "roundtrip weights fetch lpips-alex" in lines[1]
    assert "roundtrip weights fetch inception-fid" in lines[2]
    default_config["metrics"]["lpips"]["enabled"] = False
    with pytest.raises(ConfigError, match=r"metrics\.fid:.*inception-fid"):
        check_config(default_config)
    default_config["metrics"]["fid"]["enabled"] = False
    check_config(default_config)  # nothing left that needs weights


# -- A bad config fails before any work with a short message whose first line is the key.
# "Before any work" is checked by what did not happen (no DAG built, no results folder), not by a
# wall-clock bound: Snakemake's start-up time depends on the machine (the Slurm executor plugin
# runs `scontrol show config` at import and waits ~10 s where Slurm clients have no controller).
def _snakemake_n(tmp_path, config_text: str):
    (tmp_path / "c.yaml").write_text(config_text)
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "c.yaml", "--cores", "1", "-n"],
                          cwd=tmp_path, capture_output=True, text=True)


def _message(proc) -> list[str]:
    """The lines of a failed run, without Snakemake's note on the workflow profile."""
    return [line for line in (proc.stderr + proc.stdout).splitlines()
            if line.strip() and not line.startswith("Using workflow specific profile")]


MINIMAL = {"datasets": {"n": {"type": "skimage", "images": ["astronaut"]}},
           "models": {"identity": {"type": "identity"}},
           "metrics": {"missing_weights": "n/a"}}

#: The cases below that run Snakemake, one of each kind of message: a schema violation, an
#: entry without its type, a cross-key check of the shared sections, an evaluation's own check.
THROUGH_SNAKEMAKE = ("models.jpeg_bad.quality: 500 is greater than the maximum of 100",
                     "models.b: 'type' is missing; set models.b.type to one of:",
                     "datasets.f.path: /no/such/folder does not exist",
                     "telephone.pairs.r.tokenizer: 'nope' is not an entry of models")


@pytest.mark.parametrize("mutate,first", [
    (lambda c: c["models"].update(jpeg_bad={"type": "jpeg", "quality": 500}),
     "models.jpeg_bad.quality: 500 is greater than the maximum of 100"),
    (lambda c: c["models"].update(jpeg_bad={"type": "jpeg", "quality": 0}),
     "models.jpeg_bad.quality: 0 is less than the minimum of 1"),
    (lambda c: c["models"].update(s={"type": "small", "family": "XQ"}), "models.s.family: 'XQ'"),
    (lambda c: c["datasets"]["n"].update(shard=2), "datasets.n: Additional properties"),
    (lambda c: c["datasets"].update(f={"type": "folder"}), "datasets.f: 'path' is a required"),
    (lambda c: c["datasets"].update(natural={"images": ["astronaut"]}),
     "datasets.natural: 'type' is missing; set datasets.natural.type to one of:"),
    (lambda c: c["models"].update(b={"factor": 4}),
     "models.b: 'type' is missing; set models.b.type to one of:"),
    (lambda c: c["models"].update(b={"type": "bicubic", "factor": 4}),
     "models.b.type: 'bicubic' is not a type here; set it to one of:"),
    (lambda c: c.update(reproducibility="exact"),
     "reproducibility: 'exact' is not one of ['portable', 'fast']"),
    (lambda c: c["datasets"].update(f={"type": "folder", "path": "/no/such/folder"}),
     "datasets.f.path: /no/such/folder does not exist"),
    (lambda c: c["datasets"].update(v={"type": "nifti", "path": "/no/such"}),
     "datasets.v.path: /no/such "),
    (lambda c: c["datasets"]["n"].update(images=["lena"]), "datasets.n.images: not bundled"),
    (lambda c: c.update(limits={"max_pixels": 0}), "limits.max_pixels: 0 is less than the minimum"),
    (lambda c: c["metrics"].update(lpips=3), "metrics.lpips: 3 is not of type 'object'"),
    (lambda c: c.update(colour="blue"), "config: Additional properties are not allowed"),
    (lambda c: c["ocr"]["engines"].update(v={"type": "vlm"}) if "ocr" in c else
     c.update(ocr={"engines": {"v": {"type": "vlm"}}}), "ocr.engines.v: 'endpoint' is a required"),
    (lambda c: c["models"].update(original={"type": "identity"}), "models.original: the name"),
    (lambda c: c.update(telephone={"pairs": {"r": {"type": "render_ocr", "tokenizer": "nope"}}}),
     "telephone.pairs.r.tokenizer: 'nope' is not an entry of models"),
    (lambda c: c.update(telephone={"datasets": ["n"]}),
     "telephone.datasets: n is a skimage set, not a chain input"),
    (lambda c: c.update(telephone={"pairs": {"g": {"type": "api", "endpoint": "nowhere",
                                                    "t2i_model": "x", "i2t_model": "y"}}}),
     "telephone.pairs.g.endpoint: unknown endpoint 'nowhere'"),
    (lambda c: c["datasets"].update(ch={"type": "chains", "path": "/tmp"}),
     "datasets.ch.path: /tmp: no text-first/gen-0.csv"),
])
def test_bad_configs_fail_fast_with_the_key_first(tmp_path, monkeypatch, mutate, first):
    """The Snakefile stops with the message of ``config_problem``, the function it calls on the
    config it loaded (``roundtrip check-config`` calls it too): one case of each kind of message
    goes through Snakemake itself (``THROUGH_SNAKEMAKE``); the others call that function
    on the file Snakemake would load, from the folder it would run in."""
    config = copy.deepcopy(MINIMAL)
    mutate(config)
    if first in THROUGH_SNAKEMAKE:
        proc = _snakemake_n(tmp_path, yaml.safe_dump(config))
        lines = _message(proc)
        assert proc.returncode != 0
    else:
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
        monkeypatch.chdir(tmp_path)
        loaded = yaml.safe_load((tmp_path / "c.yaml").read_text())
        problem = config_problem(loaded, SCHEMA, config_names(["c.yaml"]))
        assert problem is not None
        lines = [line for line in problem.splitlines() if line.strip()]
    assert lines and lines[0].startswith(first), lines[:3]
    assert len(lines) < 15, lines
    assert not any("Building DAG" in line or "Traceback" in line for line in lines), lines
    assert not (tmp_path / "results").exists()



def test_a_missing_type_names_type_and_lists_the_types_of_its_section():
    """Without a type every type's required keys are missing; the message is about type."""
    from roundtrip.core.config import schema_error
    from roundtrip.datasets import DATASET_TYPES
    from roundtrip.models import MODEL_TYPES
    from roundtrip.readers import OCR_TYPES

    schema = yaml.safe_load(open(SCHEMA))
    cases = [("datasets", "natural", {"images": ["astronaut"]}, DATASET_TYPES),
             ("models", "b", {"factor": 4}, MODEL_TYPES)]
    for section, name, entry, registry in cases:
        config = copy.deepcopy(MINIMAL)
        config[section][name] = entry
        lines = schema_error(config, schema).splitlines()
        assert lines[0] == f"{section}.{name}: 'type' is missing; set {section}.{name}.type to " \
                           "one of:"
        assert lines[1].strip().split(", ") == list(registry) and len(lines) <= 3
    config = copy.deepcopy(MINIMAL)
    config["ocr"] = {"engines": {"t": {"psm": 3}}}
    lines = schema_error(config, schema).splitlines()
    assert lines[0].startswith("ocr.engines.t: 'type' is missing")
    assert set(lines[1].strip().split(", ")) == set(OCR_TYPES)


def test_snakefile_gives_the_line_of_a_yaml_error_in_config_yaml(tmp_path):
    """Plain `snakemake` reading ./config.yaml: file:line:column, not Snakemake's "not valid
    JSON or YAML" (a --configfile is read by Snakemake's command line before the Snakefile runs,
    where no workflow code can add the line: docs/reproducibility.md)."""
    (tmp_path / "config.yaml").write_text("datasets:\n  n: {type: skimage, images: [astronaut]\n"
                                          "models:\n  identity: {type: identity}\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--cores", "1", "-n"], cwd=tmp_path, capture_output=True, text=True)
    lines = _message(proc)
    assert proc.returncode != 0
    assert re.match(r"config\.yaml:3:1: YAML syntax error: expected ',' or '\}'", lines[0]), lines
    assert len(lines) <= 3, lines


def test_empty_folder_is_caught_before_any_job(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "readme.txt").write_text("no images here")
    config = copy.deepcopy(MINIMAL)
    config["datasets"]["mine"] = {"type": "folder", "path": str(tmp_path / "photos")}
    proc = _snakemake_n(tmp_path, yaml.safe_dump(config))
    assert _message(proc)[0].startswith(f"datasets.mine.path: {tmp_path / 'photos'} holds no image")


def test_configfile_replaces_the_showcase(tmp_path):
    """--configfile my.yaml is the whole config, not merged into the shipped config.yaml."""
    proc = _snakemake_n(tmp_path, yaml.safe_dump(MINIMAL))
    assert proc.returncode == 0, proc.stderr[-2000:]
    total = re.search(r"^total\s+(\d+)", proc.stdout, re.M)
    assert total and int(total.group(1)) < 10, proc.stdout[-1500:]
    assert "natural_256" not in proc.stdout


def test_check_config_gives_the_line_of_a_yaml_error(tmp_path, capsys):
    from roundtrip.cli import main

    (tmp_path / "my.yaml").write_text("datasets:\n  n: {type: skimage, images: [astronaut]\n"
                                      "models:\n  identity: {type: identity}\n")
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 1
    err = capsys.readouterr().err.strip()
    assert re.match(rf"{re.escape(str(tmp_path / 'my.yaml'))}:3:\d+: YAML syntax error", err)
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(MINIMAL))
    assert main(["check-config", str(tmp_path / "ok.yaml")]) == 0
    config = copy.deepcopy(MINIMAL)
    config["models"]["j"] = {"type": "jpeg", "quality": 500}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "bad.yaml")]) == 1
    assert capsys.readouterr().err.startswith("models.j.quality: 500 is greater than the maximum")


def test_data_root_resolves_relative_dataset_paths_only():
    from roundtrip.core.config import resolve_data_root

    config = {"data_root": "/data/papers",
              "datasets": {"imnet": {"type": "folder", "path": "imagenet/val"},
                           "abs": {"type": "folder", "path": "/elsewhere/photos"},
                           "caps": {"type": "captions", "captions": "builtin"},
                           "gen": {"type": "geneval", "prompts": "geneval/meta.jsonl"},
                           "q": {"type": "vista_questions", "questions": "family"},
                           "derm": {"type": "folder", "path": "derm",
                                    "labels_csv": "derm/labels.csv"}}}
    resolve_data_root(config)
    ds = config["datasets"]
    assert ds["imnet"]["path"] == "/data/papers/imagenet/val"
    assert ds["abs"]["path"] == "/elsewhere/photos"
    assert ds["caps"]["captions"] == "builtin" and ds["q"]["questions"] == "family"
    assert ds["gen"]["prompts"] == "/data/papers/geneval/meta.jsonl"
    assert ds["derm"]["labels_csv"] == "/data/papers/derm/labels.csv"
    # without data_root a relative path is left for the working directory
    plain = {"datasets": {"f": {"type": "folder", "path": "photos"}}}
    assert resolve_data_root(plain)["datasets"]["f"]["path"] == "photos"


def test_check_config_names_every_missing_path_in_one_message(tmp_path, capsys):
    """A config whose data root is half there lists all that is missing at once."""
    from roundtrip.cli import main

    root = tmp_path / "data"
    (root / "present").mkdir(parents=True)
    (root / "present" / "a.png").write_bytes(b"")
    config = copy.deepcopy(MINIMAL)
    config["data_root"] = str(root)
    config["datasets"].update(
        here={"type": "folder", "path": "present"},
        imnet={"type": "folder", "path": "imagenet/val"},
        gen={"type": "geneval", "prompts": "geneval/evaluation_metadata.jsonl"},
        derm={"type": "folder", "path": "present", "labels_csv": "derm/labels.csv"})
    (tmp_path / "preset.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["check-config", str(tmp_path / "preset.yaml")]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == f"datasets: 3 paths do not exist (data_root: {root}); put the data there " \
                       f"or fix the keys in {tmp_path / 'preset.yaml'}:"
    assert lines[1:] == [f"  datasets.imnet.path: {root / 'imagenet/val'}",
                         f"  datasets.gen.prompts: {root / 'geneval/evaluation_metadata.jsonl'}",
                         f"  datasets.derm.labels_csv: {root / 'derm/labels.csv'}"]


@pytest.mark.parametrize("preset", ["vtbench", "chd", "medibench", "vista", "telephone"])
def test_check_config_on_a_paper_preset_names_all_that_is_missing(preset, tmp_path, capsys):
    """A paper preset on a machine without its data and weights: one message lists every
    dataset path and every model whose weights are not there (not one per attempt)."""
    from roundtrip.cli import main
    from roundtrip.core.config import dataset_paths, resolve_data_root

    config = yaml.safe_load((REPO / f"configs/papers/{preset}.yaml").read_text())
    config["data_root"] = str(tmp_path / "nowhere")
    config.setdefault("metrics", {})["weights_cache"] = str(tmp_path / "no_weights")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["check-config", str(tmp_path / "p.yaml")]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    paths = dataset_paths(resolve_data_root(copy.deepcopy(config)))
    assert lines[0].startswith(f"datasets: {len(paths)} paths do not exist")
    assert lines[0].endswith(f"or fix the keys in {tmp_path / 'p.yaml'}:")
    block = [line for line in lines[1:] if line.startswith("  ")]
    listed = [line.split(":")[0].strip() for line in block]
    assert listed[:len(paths)] == [key for key, _ in paths]
    # Hub ids and weight files of the preset's models are not on this machine either, nor the
    # metrics' weights: all in the same message, not one kind per attempt.
    if preset == "vtbench":
        assert listed[len(paths):] == ["models.sd35l", "models.flux1_dev", "metrics.lpips",
                                       "metrics.fid"]
        assert "2 models lack their weights and 2 metrics lack their weights" in lines[0]
        assert "alexnet-owt-7be5be79.pth" in block[-2] and "inception" in block[-1]
    assert all(key.startswith(("models.", "metrics.")) for key in listed[len(paths):])
    # then, a line each, the models its readers, judge and pairs run in process (not here
    # either), the API keys not set and the endpoints that do not answer
    after = [line.split(": ")[0] for line in lines[1 + len(block):]]
    assert after == {
        "vtbench": ["ocr.engines.gemma3.model"],
        "vista": [f"vista.readers.{r}.model" for r in ("qwen3vl_8b", "qwen25vl_7b",
                                                        "internvl35_8b", "llava15_7b")],
        "telephone": ["telephone.pairs.janus_pro_7b.model", "telephone.pairs.llava_sdxl.t2i",
                      "telephone.pairs.llava_sdxl.i2t", "api.endpoints.telephone_server",
                      # check-config asks each endpoint in use once: nothing listens here
                      "api.endpoints.telephone_server (http://localhost:8000/v1) is unreachable"],
    }.get(preset, [])


def test_a_model_file_missing_names_the_config_file_being_read(tmp_path, capsys):
    """"fix the path in ..." names the file check-config and snakemake --configfile read, not
    the shipped config.yaml."""
    from roundtrip.cli import main

    config = copy.deepcopy(MINIMAL)
    config["models"]["mine"] = {"type": "torchscript", "path": str(tmp_path / "mine.pt")}
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"models.mine: model mine: TorchScript file not found at {tmp_path / 'mine.pt'}."
                   f" Copy the file there, or fix the path in {tmp_path / 'my.yaml'}.")
    proc = _snakemake_n(tmp_path, yaml.safe_dump(config))  # --configfile c.yaml, run in tmp_path
    assert _message(proc)[0].endswith("Copy the file there, or fix the path in c.yaml.")


def test_a_misspelt_key_gets_a_suggestion(tmp_path, capsys):
    from roundtrip.cli import main

    config = copy.deepcopy(MINIMAL)
    config["datasets"]["n"]["protocl"] = "native"
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "datasets.n: Additional properties are not allowed ('protocl' was unexpected); "
        "did you mean 'protocol'?")
    config = copy.deepcopy(MINIMAL)
    config["metrcs"] = config.pop("metrics")
    config["models"]["identity"]["qualty"] = 3  # two sections: the best match is reported
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 1
    assert "did you mean 'metrics'?" in capsys.readouterr().err
    # nothing close: no suggestion
    config = copy.deepcopy(MINIMAL)
    config["datasets"]["n"].update(zzz=1, sise=2)
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 1
    assert capsys.readouterr().err.splitlines()[0].endswith(
        "('sise', 'zzz' were unexpected); did you mean 'size' for 'sise'?")

