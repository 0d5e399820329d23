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
"""
import copy
import importlib
import io
import sys
import tarfile
import tomllib
import types

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, requires_tesseract
from doc_examples import evaluation_page, fenced_blocks, section
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
