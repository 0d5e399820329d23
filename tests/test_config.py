"""A bad config fails before any work, naming the key."""
import copy
import subprocess
import sys

import pytest
import yaml
from conftest import REPO
from snakemake.utils import validate

from roundtrip.core.config import ConfigError
from roundtrip.workflow.checks import check_config

SCHEMA = str(REPO / "config.schema.yaml")


@pytest.fixture()
def default_config():
    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_default_config_is_valid_and_gets_defaults(default_config):
    cfg = copy.deepcopy(default_config)
    validate(cfg, SCHEMA)
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
        validate(default_config, SCHEMA)


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
    validate(default_config, SCHEMA)
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
    validate(default_config, SCHEMA)
    mutate(default_config)
    with pytest.raises(ConfigError, match=match):
        check_config(default_config)


def test_missing_weights_fail_early_in_an_explicit_config(default_config, tmp_path):
    """A config of one's own (missing_weights defaults to error) names file and command."""
    del default_config["metrics"]["missing_weights"]
    default_config["metrics"]["weights_cache"] = str(tmp_path / "empty")
    validate(default_config, SCHEMA)
    assert default_config["metrics"]["missing_weights"] == "error"
    with pytest.raises(ConfigError) as exc:
        check_config(default_config)
    msg = str(exc.value)
    assert msg.startswith("metrics.lpips:")
    assert str(tmp_path / "empty" / "alexnet-owt-7be5be79.pth") in msg
    assert "roundtrip weights fetch lpips-alex" in msg
    default_config["metrics"]["lpips"]["enabled"] = False
    with pytest.raises(ConfigError, match=r"metrics\.fid:.*inception-fid"):
        check_config(default_config)
    default_config["metrics"]["fid"]["enabled"] = False
    check_config(default_config)  # nothing left that needs weights
