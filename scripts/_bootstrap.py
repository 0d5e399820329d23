"""Imported first by every script: makes ``src/roundtrip`` importable from a bare checkout, and
applies the config's ``reproducibility`` mode to the job's environment.

Snakemake puts this folder on ``sys.path`` when it runs a ``script:``; we add ``../src`` so the
workflow also runs where the package was not pip-installed (e.g. inside a conda env). The mode
pins the kernel level and threads of PyTorch, oneDNN, MKL and OpenBLAS through environment
variables those libraries read once, when they load, so this runs before any of them is imported
(roundtrip.core.compute.prepare_job).
"""
import sys
from pathlib import Path

_SRC = str(Path(__file__).resolve().parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

from roundtrip.core.compute import prepare_job  # noqa: E402 - needs the path above

prepare_job()
