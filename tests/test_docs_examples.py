"""The docs' code blocks run as a user runs them, so a page cannot drift from the code.

docs/evaluations/writing-an-evaluation.md: every block is a file of its package or its
registration (a new block that is neither fails here); the files import and register; the
table script, findings and headline figure run on per-item files as the page writes them, and
the page's config passes ``roundtrip check-config``. The whole page with Snakemake, the PDF
report and ``snakemake --report``: tests/test_plugin_evaluation.py, from the same blocks.

README.md, "Bring your own": each YAML block, added to a small config with its paths pointed at
stand-in files made here (a tokenizer class with its state dict and TorchScript export, a
diffusers VAE folder, image folders, WebDataset shards, a saved Hugging Face set), passes
``roundtrip check-config``.

Every YAML block of docs/ that is a whole config (``datasets`` and ``models``) passes
``roundtrip check-config`` as written, its paths pointed at stand-ins and nothing added (no
metric weights, no prompt templates); the presets in configs/ lack nothing but their data and
weights: their check names only those, and their API uses resolve with the default prompts.
"""
import copy
import importlib
import io
import re
import sys
import tarfile
import tomllib
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from doc_examples import evaluation_page, fenced_blocks, section, whole_configs
from PIL import Image

from roundtrip.workflow.checks import check_file

SCHEMA = str(REPO / "config.schema.yaml")

#: What the page's package holds, in the page's order.
PACKAGE = ["brightness_eval/spec.py", "brightness_eval/scorer.py", "brightness_eval/rules.smk",
           "brightness_eval/table.py", "brightness_eval/caption.rst"]

SMALL = {"datasets": {"natural": {"type": "skimage", "images": ["camera", "coins"]}},
         "models": {"identity": {"type": "identity"}},
         "metrics": {"missing_weights": "n/a"}}


@pytest.fixture()
def spec_module(tmp_path):
    """The page's ``brightness_eval.spec``, imported from the files the page shows."""
    evaluation_page().write(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("brightness_eval.spec")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == "brightness_eval"]:
            del sys.modules[name]


def test_every_block_of_the_evaluation_page_is_a_file_or_its_registration():
    page = evaluation_page()  # raises on a block that is neither
    assert list(page.files) == PACKAGE
    # every file rules.smk names is on the page (it once named a caption the page never made)
    rules = page.files["brightness_eval/rules.smk"]
    for named in ("caption.rst", "table.py"):
        assert named in rules and f"brightness_eval/{named}" in page.files


def test_the_pages_entry_point_names_its_evaluation(spec_module):
    from roundtrip.core.evaluation import Evaluation

    entry = tomllib.loads(evaluation_page().pyproject)["project"]["entry-points"]
    target = entry["roundtrip.evaluations"]["brightness"]
    module, _, attribute = target.partition(":")
    assert module == spec_module.__name__
    evaluation = getattr(spec_module, attribute)
    assert isinstance(evaluation, Evaluation) and evaluation.key == "brightness"
    assert evaluation.rules.read_text() == evaluation_page().files["brightness_eval/rules.smk"]


def _run_table_script(page_dir, jobs, tmp_path):
    """The page's table.py with the ``snakemake`` object Snakemake would give it."""
    inputs = []
    for model, dataset, shifts in jobs:
        path = tmp_path / f"{model}_{dataset}.csv"
        pd.DataFrame({"item_id": [f"i{k}" for k in range(len(shifts))], "status": "ok",
                      "reason": "", "brightness_shift": shifts}).to_csv(path, index=False)
        inputs.append(str(path))
    out = tmp_path / "tables"
    out.mkdir()
    smk = types.SimpleNamespace(
        input=inputs, params=types.SimpleNamespace(jobs=[(m, d) for m, d, _ in jobs]),
        output=[str(out / f"brightness.{e}") for e in ("csv", "md", "tex", "provenance.json")],
        rule="brightness_table", config={})
    smk.params.items = lambda: [("jobs", smk.params.jobs)]
    code = (page_dir / "brightness_eval/table.py").read_text()
    exec(compile(code, "table.py", "exec"), {"snakemake": smk, "__name__": "__main__"})
    return out / "brightness.csv"


def test_the_pages_table_findings_and_figure_agree_on_the_columns(spec_module, tmp_path):
    """The findings and figure read what table.py writes (they once read a column
    ``natural.shift`` that no table had: the report printed "KeyError: 'natural.shift'")."""
    from pathlib import Path

    from roundtrip.report.findings import RunResults

    page_dir = Path(spec_module.__file__).parents[1]
    csv = _run_table_script(page_dir, [("identity", "natural", [0.0, 0.0]),
                                       ("bicubic_x4", "natural", [0.002, -0.006])], tmp_path)
    table = pd.read_csv(csv)
    assert list(table.columns) == ["model", "dataset", "brightness_shift"]
    assert table["brightness_shift"].tolist() == pytest.approx([0.0, -0.002])
    results = RunResults({"brightness": csv}, models=["identity", "bicubic_x4"])
    evaluation = spec_module.EVALUATION
    assert evaluation.findings(results) == ["identity shifts brightness least (+0.0000 on "
                                            "natural)."]
    png = tmp_path / "headline.png"
    assert evaluation.headline_figure(results, png) == \
        "Brightness shift per model, mean over its datasets."
    assert np.asarray(Image.open(png)).shape[-1] in (3, 4)
    empty = RunResults({}, models=[])
    assert evaluation.findings(empty) == ["No brightness table in this run."]
    assert evaluation.headline_figure(empty, tmp_path / "none.png") is None


def test_the_pages_config_passes_the_check(tmp_path):
    page = evaluation_page()
    plugins = page.write(tmp_path / "plugins")
    registration = yaml.safe_load(page.config.replace("/home/me/plugins", str(plugins)))
    (tmp_path / "my.yaml").write_text(yaml.safe_dump({**SMALL, **registration}))
    assert check_file(str(tmp_path / "my.yaml"), SCHEMA) is None
    registration["brightness"]["datasets"] = ["nope"]
    (tmp_path / "my.yaml").write_text(yaml.safe_dump({**SMALL, **registration}))
    assert check_file(str(tmp_path / "my.yaml"), SCHEMA) == \
        "brightness.datasets: unknown datasets ['nope']"


# -- README.md, "Bring your own" -------------------------------------------------------------

#: The absolute folders the README's blocks name, and the stand-ins' folders under tmp_path.
README_ROOTS = ("/weights/", "/models/", "/data/")

TOKENIZER = '''
import torch


class MyTok(torch.nn.Module):
    """A VQ tokenizer of the README's shape: 8x downsampling, a 16-entry codebook."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.enc = torch.nn.Conv2d(3, width, 8, stride=8)
        self.dec = torch.nn.ConvTranspose2d(width, 3, 8, stride=8)
        self.codebook = torch.nn.Parameter(torch.randn(16, width))

    @torch.jit.export
    def encode(self, x):
        return self.enc(x)

    @torch.jit.export
    def decode(self, z):
        return torch.tanh(self.dec(z))

    @torch.jit.export
    def tokens(self, z):
        flat = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        ids = torch.cdist(flat, self.codebook).argmin(1)
        return ids.reshape(z.shape[0], z.shape[2], z.shape[3])
'''


def _readme_blocks() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return [text for language, text in fenced_blocks(section(readme, "## Bring your own"))
            if language == "yaml"]


def _png(path, seed=0):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (32, 32, 3), np.uint8)) \
        .save(path)


def _stand_ins(root, monkeypatch):
    """The files the README's blocks name, under ``root`` (``root/weights/my_tok.pt``, ...)."""
    import torch
    from diffusers import AutoencoderKL

    (root / "code").mkdir(parents=True)
    (root / "code/my_tok.py").write_text(TOKENIZER)
    monkeypatch.syspath_prepend(str(root / "code"))  # "my_tok.py on PYTHONPATH"
    sys.modules.pop("my_tok", None)  # another test's my_tok.py may have been imported first
    from my_tok import MyTok

    torch.manual_seed(0)
    (root / "weights").mkdir()
    model = MyTok(width=64)
    torch.save(model.state_dict(), root / "weights/my_tok.pt")
    torch.jit.script(model).save(str(root / "weights/my_tok_scripted.pt"))
    AutoencoderKL(block_out_channels=(8,), layers_per_block=1, latent_channels=4,
                  norm_num_groups=8, down_block_types=("DownEncoderBlock2D",),
                  up_block_types=("UpDecoderBlock2D",)).save_pretrained(root / "models/sdxl-vae")
    _png(root / "data/my_photos/a.png")
    _png(root / "data/scans/page.png", 1)
    (root / "data/shards").mkdir(parents=True)
    for k in range(100):
        with tarfile.open(root / f"data/shards/shard-{k:06d}.tar", "w") as tar:
            buf = io.BytesIO()
            Image.new("RGB", (8, 8)).save(buf, format="PNG")
            info = tarfile.TarInfo(f"{k:06d}.png")
            info.size = buf.tell()
            buf.seek(0)
            tar.addfile(info, buf)
    saved = root / "data/coco_saved"
    (saved / "validation").mkdir(parents=True)
    (saved / "dataset_dict.json").write_text('{"splits": ["validation"]}')
    sys.modules.pop("my_tok", None)


@requires_tesseract  # my_scans is read by Tesseract (lang eng)
def test_readme_bring_your_own_blocks_pass_the_check(tmp_path, monkeypatch):
    blocks = _readme_blocks()
    assert len(blocks) == 3  # tokenizer, data, endpoint
    _stand_ins(tmp_path, monkeypatch)
    for text in blocks:
        for root in README_ROOTS:
            text = text.replace(root, f"{tmp_path}{root}")
        block = yaml.safe_load(text)
        config = copy.deepcopy(SMALL)
        for key, value in block.items():  # a block adds entries to the config's sections
            config[key] = {**config.get(key, {}), **value}
        (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
        assert check_file(str(tmp_path / "my.yaml"), SCHEMA) is None, text


# -- Whole configs of the docs and the presets ------------------------------------------------

#: The absolute folders the docs' whole configs name; the stand-ins go under tmp_path.
DOC_ROOTS = ("/data/", "/models/", "/weights/", "/code/")


def _vista_release(path):
    """A two-row VISTA-Bench release TSV (question images inline, base64)."""
    import base64

    def png(size):
        buf = io.BytesIO()
        Image.new("RGB", size, "white").save(buf, format="PNG")
        return base64.b64encode(buf.getvalue()).decode()

    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"index": 0, "question": "2 + 2?", "A": "3", "B": "4", "answer": "B", "image": "",
             "question_image": png((40, 12)), "category": "Unimodal Knowledge",
             "source": "MMLU", "font": "Arial", "size": 9},
            {"index": 1, "question": "Colour?", "A": "red", "B": "blue", "answer": "A",
             "image": png((8, 8)), "question_image": png((40, 12)),
             "category": "Multimodal Perception", "source": "MMBench", "font": "Brush",
             "size": 16}]
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)


def _hub_snapshots(config: dict, hub, monkeypatch) -> list[str]:
    """A snapshot folder in a Hugging Face cache at ``hub`` for every hub id that a use run in
    process names (enough to be located before any job); returns the ids."""
    import huggingface_hub.constants

    from roundtrip.api.settings import IN_PROCESS_MODELS, api_uses
    from roundtrip.workflow.plan import registered

    uses = [*api_uses(config),
            *[u for ev in registered(config).values() for u in ev.api_uses(config)]]
    ids = sorted({spec[key] for _, spec, _ in uses
                  for key in IN_PROCESS_MODELS.get(spec.get("type"), ())
                  if "/" in str(spec.get(key, "")) and not str(spec[key]).startswith("/")})
    for hub_id in ids:
        repo = hub / ("models--" + hub_id.replace("/", "--"))
        (repo / "refs").mkdir(parents=True)
        (repo / "refs/main").write_text("0" * 40)
        (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
        (repo / "snapshots" / ("0" * 40) / "config.json").write_text('{"model_type": "llava"}')
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    return ids


def _doc_stand_ins(root, monkeypatch):
    """The files the docs' whole configs name, under ``root``: the tokenizer class of
    docs/configuration.md ("Bring your own tokenizer") and its state dict, a folder of photos,
    the VISTA-Bench release TSV, a diffusers VAE folder."""
    import torch
    from diffusers import AutoencoderKL

    page = (REPO / "docs/configuration.md").read_text(encoding="utf-8")
    [code] = [text for language, text in
              fenced_blocks(section(page, "### Bring your own tokenizer")) if language == "python"]
    (root / "code").mkdir(parents=True)
    (root / "code/my_tok.py").write_text(code)
    sys.modules.pop("my_tok", None)
    monkeypatch.syspath_prepend(str(root / "code"))
    from my_tok import MyTok

    torch.manual_seed(0)
    (root / "weights").mkdir()
    torch.save(MyTok(width=64).state_dict(), root / "weights/my_tok.pt")
    sys.modules.pop("my_tok", None)  # the config's pythonpath imports it again
    _png(root / "data/my_photos/a.png")
    _png(root / "data/my_photos/b.png", 1)
    _vista_release(root / "data/VISTA-Bench/VISTA-Bench.tsv")
    AutoencoderKL(block_out_channels=(8,), layers_per_block=1, latent_channels=4,
                  norm_num_groups=8, down_block_types=("DownEncoderBlock2D",),
                  up_block_types=("UpDecoderBlock2D",)).save_pretrained(root / "models/sdxl-vae")


def test_every_whole_config_of_the_docs_passes_the_check_as_written(tmp_path, monkeypatch):
    """A user copies one of these into my.yaml: only the folders are the user's."""
    configs = whole_configs()
    assert [c.where.split(":")[0] for c in configs] == [
        "docs/configuration.md", "docs/evaluations/vista.md", "docs/evaluations/vista.md"]
    monkeypatch.setenv("ROUNDTRIP_WEIGHTS", str(tmp_path / "no_metric_weights"))
    _doc_stand_ins(tmp_path, monkeypatch)
    for i, doc in enumerate(configs):
        text = doc.text
        for root in DOC_ROOTS:
            text = text.replace(root, f"{tmp_path}{root}")
        _hub_snapshots(yaml.safe_load(text), tmp_path / f"hub{i}", monkeypatch)
        (tmp_path / "my.yaml").write_text(text)
        assert check_file(str(tmp_path / "my.yaml"), SCHEMA) is None, doc.where


@pytest.mark.parametrize("preset", ["chd", "medibench", "telephone", "vista", "vtbench"])
def test_a_preset_lacks_nothing_but_its_data_and_weights(preset, tmp_path, monkeypatch):
    """As written, on a machine without the preset's data: the check names missing dataset
    paths, model weights and (vtbench, which stops without them) metric weights, nothing else;
    its API uses resolve with the default prompts, where the keys are in the environment."""
    from roundtrip.api.settings import api_uses, check_api_keys, resolve_api
    from roundtrip.core.config import config_names
    from roundtrip.workflow.checks import schema_problem, validate_config
    from roundtrip.workflow.plan import registered

    path = REPO / f"configs/papers/{preset}.yaml"
    monkeypatch.setenv("ROUNDTRIP_WEIGHTS", str(tmp_path / "no_metric_weights"))
    lines = check_file(str(path), SCHEMA).splitlines()
    assert re.match(r"(datasets|models|metrics): .*(do not exist|lack(s)? (their|its) "
                    r"weights).*; put .* there or fix the keys in "
                    rf"{re.escape(config_names([path]))}:$", lines[0]), lines[0]
    block = [line for line in lines[1:] if line.startswith("  ")]
    assert block and all(re.match(r"  (datasets|models|metrics)\.", line) for line in block), lines
    # then, a line each, the models run in process that are not here either and the API keys
    # not set
    assert all(re.match(r"(ocr\.engines|vista\.readers|telephone\.pairs)\.[\w.-]+\."
                        r"(model|t2i|i2t): \S+ is not a saved model folder here", line)
               or re.match(r"api\.endpoints\.\w+: the environment variable \w+ is not set", line)
               for line in lines[1 + len(block):]), lines
    assert any(line.startswith("  metrics.") for line in lines) == (preset == "vtbench")
    config = yaml.safe_load(path.read_text())
    assert schema_problem(config, SCHEMA) is None
    validate_config(config, SCHEMA)
    _hub_snapshots(config, tmp_path / "hub", monkeypatch)
    uses = [*api_uses(config),
            *[u for ev in registered(config).values() for u in ev.api_uses(config)]]
    given = {(where, field): spec.get(field) for where, spec, fields in uses for field in fields}
    for name in resolve_api(config, uses):
        key = config["api"]["endpoints"][name].get("key_env", "OPENAI_API_KEY")
        if key:
            monkeypatch.setenv(key, "sk-stand-in")
    check_api_keys(config, resolve_api(config, uses))
    defaults = {k: v["default"] for k, v in yaml.safe_load(Path(SCHEMA).read_text())[
        "properties"]["api"]["properties"]["prompts"]["properties"].items()}
    filled = 0
    for where, spec, fields in uses:
        for field, template in fields.items():
            assert spec[field] == (given[where, field] or defaults[template]), (where, field)
            filled += not given[where, field]
    # the telephone preset's pairs send the default templates (it copied them before): five
    # endpoint pairs and Janus-Pro both ways, LLaVA 1.5 + SDXL the captioning one
    assert filled == {"telephone": 13}.get(preset, 0)
