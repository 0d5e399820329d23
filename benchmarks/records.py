"""What every benchmark record states about itself: the code it measured and how it is written.

Imported by the benchmark scripts beside it (each runs with this folder on ``sys.path``).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def commit() -> str:
    """``git describe --always --dirty`` of the repository: the code a record measured (empty
    outside a git checkout)."""
    return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO,
                          capture_output=True, text=True).stdout.strip()


def write_record(out: str | Path, result: dict, indent: int = 2) -> None:
    """Write a benchmark record as JSON indented by ``indent``, with a final newline, creating
    its folder."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=indent) + "\n")
