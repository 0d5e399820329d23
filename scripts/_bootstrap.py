"""Imported first by every script: makes ``src/roundtrip`` importable from a bare checkout.

Snakemake puts this folder on ``sys.path`` when it runs a ``script:``; we add ``../src`` so the
workflow also runs where the package was not pip-installed (e.g. inside a conda env).
"""
import sys
from pathlib import Path

_SRC = str(Path(__file__).resolve().parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
