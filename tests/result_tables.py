"""Reading the reconstruction tables of a finished run: one per VTBench Table 1 setting
(``reconstruction_model_size``, ``reconstruction_1024``, ``reconstruction_native``)."""
from pathlib import Path

import pandas as pd


def reconstruction_files(work: Path, ext: str) -> list[Path]:
    files = sorted((Path(work) / "results/tables").glob(f"reconstruction_*.{ext}"))
    assert files, f"no reconstruction_*.{ext} under {work}/results/tables"
    return files


def reconstruction(work: Path) -> pd.DataFrame:
    """The per-setting CSVs side by side, indexed by model (``notes`` of the first table)."""
    frames = [pd.read_csv(p).set_index("model") for p in reconstruction_files(work, "csv")]
    return pd.concat([frames[0]] + [f.drop(columns="notes", errors="ignore") for f in frames[1:]],
                     axis=1)


def reconstruction_text(work: Path, ext: str = "md") -> str:
    """The Markdown (or LaTeX) of every per-setting table, concatenated."""
    return "\n".join(p.read_text() for p in reconstruction_files(work, ext))
