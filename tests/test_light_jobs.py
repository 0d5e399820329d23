"""Jobs that only read CSVs, run Tesseract or write tables import none of torch, MONAI or
diffusers: each pays Python's start-up, not torch's (2-3 s a job on the 2-core showcase machine).

For every such script a fresh interpreter runs Snakemake's script preamble imports and every
import statement of the script (those inside ``if`` blocks too), then lists the heavy modules in
``sys.modules``."""
import ast
import json
import subprocess
import sys

import pytest
from conftest import REPO

HEAVY = ("torch", "monai", "diffusers", "transformers", "lpips", "torch_fidelity",
         "vector_quantize_pytorch", "torchvision")

#: script -> library modules it imports at run time (dataset builders are chosen by type).
LIGHT_SCRIPTS = {
    "build_dataset.py": ["roundtrip.datasets.skimage", "roundtrip.datasets.folder",
                         "roundtrip.datasets.rendered.build", "roundtrip.datasets.generated",
                         "roundtrip.datasets.vista", "roundtrip.datasets.telephone"],
    "ocr.py": [],
    "reconstruction_table.py": [],
    "text_preservation_table.py": [],
    "ocr_robustness_table.py": ["scipy.stats"],
    "detail_table.py": [],
    "token_table.py": [],
    "medical_tables.py": [],
    "medical_panel.py": [],
    "vista_answers.py": ["roundtrip.readers.question_family"],
    "vista_tables.py": ["matplotlib.pyplot"],
    "telephone_tables.py": ["matplotlib.pyplot", "scipy.optimize"],
    "gallery.py": ["matplotlib.pyplot"],
    # the comparison of checkpoints: every evaluation's spec and set-level recomputations
    "compare.py": ["matplotlib.pyplot", "statsmodels.stats.multitest", "scipy.stats",
                   "roundtrip.evals.vtbench.compare", "roundtrip.evals.chd.compare",
                   "roundtrip.evals.telephone.compare"],
    # the report loads every evaluation's spec and findings
    "report_pdf.py": ["reportlab.platypus", "roundtrip.evals.vista.spec",
                      "roundtrip.evals.vista.findings", "roundtrip.evals.vtbench.findings",
                      "roundtrip.evals.chd.spec", "roundtrip.evals.medibench.spec",
                      "roundtrip.evals.telephone.spec"],
}


def import_lines(script: str) -> list[str]:
    """Every import statement of a script, as source lines."""
    tree = ast.parse((REPO / "scripts" / script).read_text())
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def heavy_modules(lines: list[str]) -> list[str]:
    code = "\n".join(
        ["import sys", f"sys.path[:0] = [{str(REPO / 'scripts')!r}, {str(REPO / 'src')!r}]",
         "import pickle", "from snakemake.logging import logger",
         "from snakemake.iocontainers import Snakemake", *lines,
         f"print(__import__('json').dumps(sorted(m for m in sys.modules "
         f"if m.split('.')[0] in {HEAVY!r})))"])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("script", sorted(LIGHT_SCRIPTS))
def test_light_job_imports_no_torch(script):
    extra = [f"import {m}" for m in LIGHT_SCRIPTS[script]]
    assert heavy_modules(import_lines(script) + extra) == []


def test_the_check_sees_torch():
    """The same check on the training script finds torch: it can fail."""
    assert "torch" in heavy_modules(import_lines("train_tokenizer.py"))
