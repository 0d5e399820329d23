"""The papers' published numbers shipped in ``src/roundtrip/evals/*/published/`` (schema:
:mod:`roundtrip.tables.published`), checked against the papers' text in ``../shared/papers``:
hand-picked cells are found on their row's line within the table, every shipped row reads as
its line's numbers in order, the row counts are the paper's, and the tables' own arithmetic
(VISTA's gap and overall, MediBench's averages, VTBench's Table 5 against Table 3) holds."""
import math
import os
import re
import tomllib
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from roundtrip.tables.published import (
    COLUMNS,
    KEY,
    PublishedError,
    parse_published,
    published_files,
    read_published,
    read_published_file,
)

#: The papers' text: ``shared/papers`` beside the checkout (CI has it there too).
PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"

PACKAGES = {p: f"roundtrip.evals.{p}" for p in ("medibench", "telephone", "vista", "vtbench")}
FILES = {"telephone": "003_cdb6ca00445dde7d.txt", "vista": "002_dfdda5a25fef0893.txt",
         "vtbench": "000_4b4a2a5dba809946.txt", "medibench": "004_753f0a69300696bd.txt"}
NUM = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
IQ = [("PSNR", "PSNR"), ("SSIM", "SSIM"), ("LPIPS", "LPIPS"), ("FID", "FID")]


def _vista_layout():
    cats = ["Multimodal Perception", "Multimodal Reasoning", "Multimodal Knowledge",
            "Unimodal Knowledge", "Overall"]
    return [(c, i, "accuracy") for c in cats for i in ("VT", "Text")] + [("Overall", "Gap", "gap")]


def _medi_layout(models, families, metrics):
    return ([(families[m], m, x) for m in models for x in metrics]
            + [("", "Avg", x) for x in metrics])


M2 = ["SDXL", "MedVAE", "VQ-GAN", "MediTok", "PUMIT", "TokenFlow", "UniTok", "Emu3"]
FAM2 = {m: "Continuous VAEs" if m in ("SDXL", "MedVAE") else "VQ VAEs" for m in M2}
M3 = ["SDXL", "MedVAE", "VideoVAE", "CVVAE", "MediTok", "CogVideoX"]
FAM3 = {m: "VQ VAEs" if m in ("MediTok", "CogVideoX") else "Continuous VAEs" for m in M3}

#: Per shipped table: where it lies in the paper's text (first line starting with the start
#: marker, up to the next starting with the end marker; one region per row group), how a row's
#: label is read (``tab``: the first tab-separated field; ``citation``: the words before the
#: citation), the header layout of a full row, the counts, and hand-picked cells
#: (row_group, row, column_group, column, metric, printed) read off the paper.
TABLES = {
    ("telephone", "Table 3"): dict(
        file="table3.csv", label="tab",
        regions={"": ("Model\tText-First", "Table 3. Fitted")},
        layout=[(c, s, m) for c in ("Text-First", "Image-First")
                for s, m in (("α", "alpha"), ("β", "beta"), ("γ", "gamma"))],
        csv_rows=42, rows=7, printed_rows=7, left_out=[],
        sample=[("", "Bagel", "Text-First", "α", "alpha", "0.6092"),
                ("", "Blip-3o", "Image-First", "γ", "gamma", "0.1818"),
                ("", "Janus Pro 7B", "Text-First", "β", "beta", "0.1143"),
                ("", "Show-o", "Image-First", "β", "beta", "0.2224"),
                ("", "VILA-U", "Image-First", "γ", "gamma", "0.0873"),
                ("", "LLaVA+SDXL", "Text-First", "γ", "gamma", "0.0000"),
                ("", "LLaVA+SDXL", "Image-First", "α", "alpha", "0.4586")]),
    ("vista", "Table 1"): dict(
        file="table1.csv", label="citation",
        regions={"Vision-Language Models (2B)": ("\\blacktriangledown Vision-Language Models (2B)",
                                                 "\\blacktriangledown"),
                 "Vision-Language Models (8B)": ("\\blacktriangledown Vision-Language Models (8B)",
                                                 "\\blacktriangledown"),
                 "Vision-Language Models (30B-A3B)": (
                     "\\blacktriangledown Vision-Language Models (30B-A3B)",
                     "\\bullet Multimodal Knowledge")},
        layout=_vista_layout(), csv_rows=275, rows=25, printed_rows=25, left_out=[],
        sample=[("Vision-Language Models (2B)", "DeepSeek-VL2-Tiny", "Multimodal Perception",
                 "VT", "accuracy", "44.3"),
                ("Vision-Language Models (2B)", "Ovis2.5-2B", "Unimodal Knowledge", "Text",
                 "accuracy", "60.0"),
                ("Vision-Language Models (8B)", "Qwen3-VL-8B-Instruct", "Overall", "VT",
                 "accuracy", "52.1"),
                ("Vision-Language Models (8B)", "MiMo-VL-7B-RL", "Overall", "Gap", "gap", "+0.3"),
                ("Vision-Language Models (8B)", "NEO-9B-SFT", "Overall", "Gap", "gap", "-30.8"),
                ("Vision-Language Models (8B)", "GLM-4.1V-9B-Thinking", "Multimodal Knowledge",
                 "VT", "accuracy", "50.0"),
                ("Vision-Language Models (30B-A3B)", "InternVL3.5-30B-A3B", "Overall", "Text",
                 "accuracy", "64.9")]),
    ("vtbench", "Table 1"): dict(
        file="table1.csv", label="tab",
        regions={"": ("Table 1: Evaluation of VTs", "3.4 EVALUATION METRICS")},
        layout=[(g, c, m) for g in ("ImageNet", "High Resolution", "Varying Resolution")
                for c, m in IQ],
        csv_rows=204, rows=24, printed_rows=24, left_out=[],
        sample=[("", "FlowMo Lo", "ImageNet", "PSNR", "PSNR", "20.2232"),
                ("", "MaskBiT 18bit", "High Resolution", "FID", "FID", "23.3024"),
                ("", "Titok-sl256", "ImageNet", "FID", "FID", "0.8112"),
                ("", "LlamaGen ds8", "Varying Resolution", "FID", "FID", "330.8865"),
                ("", "Infinity-d64", "High Resolution", "SSIM", "SSIM", "0.9823"),
                ("", "FLUX.1-dev", "Varying Resolution", "PSNR", "PSNR", "30.9502"),
                ("", "GPT-40", "High Resolution", "LPIPS", "LPIPS", "0.2077")]),
    ("vtbench", "Table 2"): dict(
        file="table2.csv", label="tab",
        regions={"": ("Table 2:", "Figure 4 presents")},
        layout=[("", c, m) for c, m in IQ],
        csv_rows=96, rows=24, printed_rows=24, left_out=[],
        sample=[("", "FlowMo Lo", "", "PSNR", "PSNR", "17.0642"),
                ("", "Titok-132", "", "FID", "FID", "169.2162"),
                ("", "OpenMagViT", "", "SSIM", "SSIM", "0.3278"),
                ("", "Janus Pro 1B/7B", "", "LPIPS", "LPIPS", "0.1174"),
                ("", "SD3.5L", "", "PSNR", "PSNR", "37.4365"),
                ("", "GPT-4o", "", "FID", "FID", "75.8916")]),
    ("vtbench", "Table 3"): dict(
        file="table3.csv", label="tab",
        regions={"": ("Table 3: Evaluation of task 3", "scenarios: (1) Movie Posters")},
        layout=([(g, c, m) for g in ("Movie Posters (Easy)", "ArXiv Abstracts (Hard)")
                 for c, m in IQ + [("CER", "CER"), ("WER", "WER")]]
                + [("Multilingual (Non-Latin)", c, m) for c, m in IQ]
                + [("Multilingual (Non-Latin)", f"CER ({lang})", "CER")
                   for lang in ("Chinese", "Hindi", "Japanese", "Korean")]),
        csv_rows=420, rows=21, printed_rows=24,
        left_out=["LlamaGen ds8", "BSQ-VIT", "VAR-256"],
        sample=[("", "FlowMo Lo", "Movie Posters (Easy)", "PSNR", "PSNR", "24.1178"),
                ("", "MaskBiT 16bit", "ArXiv Abstracts (Hard)", "WER", "WER", "9.2146"),
                ("", "Titok-bl64", "Multilingual (Non-Latin)", "CER (Hindi)", "CER", "1.2105"),
                ("", "Chameleon", "ArXiv Abstracts (Hard)", "FID", "FID", "8.1713"),
                ("", "VAR-512", "Movie Posters (Easy)", "CER", "CER", "0.1949"),
                ("", "Infinity-d32", "Multilingual (Non-Latin)", "CER (Korean)", "CER",
                 "0.0924"),
                ("", "GPT-40", "Multilingual (Non-Latin)", "CER (Chinese)", "CER", "0.8096")]),
    ("vtbench", "Table 5"): dict(
        file="table5.csv", label="tab",
        regions={"": ("Table 5: Comparison of OCR", "Despite differences")},
        layout=[(g, c, c) for g in ("Gemma 3", "Qwen2.5-VL-7B-Instruct", "Nanonets-OCR-s")
                for c in ("CER", "WER")],
        csv_rows=144, rows=24, printed_rows=24, left_out=[],
        sample=[("", "FlowMo Lo", "Gemma 3", "CER", "CER", "0.6458"),
                ("", "Titok-bl128", "Nanonets-OCR-s", "WER", "WER", "15.3209"),
                ("", "BSQ-VIT", "Qwen2.5-VL-7B-Instruct", "CER", "CER", "0.1059"),
                ("", "LlamaGen ds16 T2I", "Qwen2.5-VL-7B-Instruct", "WER", "WER", "2.7983"),
                ("", "Infinity-d64", "Nanonets-OCR-s", "WER", "WER", "0.0000"),
                ("", "GPT-4o", "Gemma 3", "WER", "WER", "0.0836")]),
    ("medibench", "Table 1"): dict(
        file="table1.csv", label="tab",
        regions={"": ("Table 1: **2D Panel A", "Table 2: **2D Panel B")},
        layout=_medi_layout(M2, FAM2, ["PSNR", "SSIM"]),
        csv_rows=88, rows=5, printed_rows=5, left_out=[],
        sample=[("", "Histopathology", "Continuous VAEs", "SDXL", "PSNR", "26.0"),
                ("", "Histopathology", "", "Avg", "SSIM", "0.675"),
                ("", "Dermatoscopy", "Continuous VAEs", "MedVAE", "SSIM", "0.905"),
                ("", "Fundus", "VQ VAEs", "TokenFlow", "PSNR", "33.0"),
                ("", "Chest X-ray", "VQ VAEs", "UniTok", "PSNR", "17.2"),
                ("", "Average", "VQ VAEs", "VQ-GAN", "PSNR", "25.5"),
                ("", "Average", "VQ VAEs", "Emu3", "SSIM", "0.829")]),
    ("medibench", "Table 2"): dict(
        file="table2.csv", label="tab",
        regions={"": ("Table 2: **2D Panel B", "Table 3: **3D Panel A")},
        layout=_medi_layout(M2, FAM2, ["AUC"]),
        csv_rows=44, rows=5, printed_rows=5, left_out=[],
        sample=[("", "Histopathology", "Continuous VAEs", "SDXL", "AUC", "0.842"),
                ("", "Histopathology", "VQ VAEs", "PUMIT", "AUC", "0.962"),
                ("", "Dermatoscopy", "VQ VAEs", "MediTok", "AUC", "0.961"),
                ("", "Fundus", "", "Avg", "AUC", "0.723"),
                ("", "Chest X-ray", "VQ VAEs", "TokenFlow", "AUC", "0.677"),
                ("", "Average", "Continuous VAEs", "MedVAE", "AUC", "0.615")]),
    ("medibench", "Table 3"): dict(
        file="table3.csv", label="tab",
        regions={"": ("Table 3: **3D Panel A", "Table 4: **3D Panel B")},
        layout=_medi_layout(M3, FAM3, ["PSNR", "SSIM"]),
        csv_rows=82, rows=6, printed_rows=6, left_out=[],
        sample=[("", "fMRI (Parkinson)", "Continuous VAEs", "SDXL", "PSNR", "29.0"),
                ("", "fMRI (NeuroEmo)", "VQ VAEs", "CogVideoX", "SSIM", "0.557"),
                ("", "MRI (Parkinson)", "Continuous VAEs", "MedVAE", "SSIM", "0.359"),
                ("", "MRI (BraTS 2023)", "VQ VAEs", "MediTok", "SSIM", "0.968"),
                ("", "CT (Coltea)", "", "Avg", "PSNR", "36.4"),
                ("", "Average", "VQ VAEs", "MediTok", "PSNR", "39.4")]),
    ("medibench", "Table 5"): dict(
        file="table5.csv", label="tab",
        regions={"Latent Embedding": ("Latent Embedding\t", "Reconstruction Image Embedding"),
                 "Reconstruction Image Embedding": ("Reconstruction Image Embedding",
                                                    "Figure 4: **Correlation")},
        layout=_medi_layout(M3, FAM3, ["AUC"]),
        csv_rows=61, rows=9, printed_rows=9, left_out=[],
        sample=[("Latent Embedding", "fMRI (Parkinson)", "Continuous VAEs", "SDXL", "AUC",
                 "0.985"),
                ("Latent Embedding", "fMRI (Parkinson)", "Continuous VAEs", "MedVAE", "AUC",
                 "0.625"),
                ("Latent Embedding", "CT (Coltea)", "VQ VAEs", "MediTok", "AUC", "0.983"),
                ("Latent Embedding", "Average", "VQ VAEs", "CogVideoX", "AUC", "0.583"),
                ("Reconstruction Image Embedding", "fMRI (Parkinson)", "Continuous VAEs",
                 "SDXL", "AUC", "0.580"),
                ("Reconstruction Image Embedding", "CT (Coltea)", "Continuous VAEs", "CVVAE",
                 "AUC", "0.767"),
                ("Reconstruction Image Embedding", "Average", "Continuous VAEs", "SDXL", "AUC",
                 "0.572")]),
}
IDS = [f"{p}-{t.replace(' ', '')}" for p, t in TABLES]


def papers_dir(path: Path = PAPERS) -> Path:
    """The papers' folder. Where it is missing (a clone of the repository alone: the papers'
    text is a development input, not part of the package) the checks that read it are skipped,
    saying why; with ``ROUNDTRIP_REQUIRE_PAPERS=1`` (set by CI, which has the folder) a missing
    folder fails them instead."""
    if not (path / "README.md").is_file():
        message = (f"the papers' text is not at {path}: these tests check the shipped numbers "
                   "against it; check out shared/ beside the repository")
        if os.environ.get("ROUNDTRIP_REQUIRE_PAPERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@cache
def paper_lines(fname: str) -> tuple[str, ...]:
    return tuple((papers_dir() / fname).read_text(encoding="utf-8").splitlines())


def region(fname: str, start: str, end: str) -> list[str]:
    """The lines after the one line starting with ``start`` up to the next starting with
    ``end``."""
    lines = paper_lines(fname)
    first = [i for i, line in enumerate(lines) if line.startswith(start)]
    assert len(first) == 1, f"{fname}: {len(first)} lines start with {start!r}"
    stop = next((i for i in range(first[0] + 1, len(lines)) if lines[i].startswith(end)), None)
    assert stop is not None, f"{fname}: nothing starts with {end!r} after {start!r}"
    return list(lines[first[0] + 1:stop])


CITED = re.compile(r"^(\S+)\s\([^()]*\d{4}[a-z]?\)\s")


def label_of(line: str, mode: str) -> str | None:
    if mode == "tab":
        return line.split("\t")[0].strip() or None
    m = CITED.match(line)
    return m.group(1) if m else None


def row_line(spec: dict, paper: str, row_group: str, row: str) -> str:
    """The one line of the table's region (of ``row_group``) whose label is ``row``."""
    lines = region(FILES[paper], *spec["regions"][row_group])
    found = [line for line in lines if label_of(line, spec["label"]) == row]
    assert len(found) == 1, f"{paper}: {len(found)} lines labelled {row!r} in {row_group!r}"
    return found[0]


def numbers_on(line: str, spec: dict) -> list[str]:
    """The numbers of a row's line after its label (and citation), in order, as printed."""
    rest = line[len(label_of(line, spec["label"])):]
    rest = re.sub(r"^\s\([^()]*\d{4}[a-z]?\)", "", rest)
    return [t for t in re.split(r"[\s/]+", rest) if NUM.match(t)]


def check_cell(paper: str, table: str, row_group: str, row: str, printed: str) -> None:
    spec = TABLES[(paper, table)]
    line = row_line(spec, paper, row_group, row)
    assert printed in numbers_on(line, spec), f"{printed} is not on the line of {row!r}: {line}"


def check_rows(frame: pd.DataFrame, paper: str, table: str) -> None:
    """Every shipped row's printed numbers, in file order, are its line's numbers."""
    spec = TABLES[(paper, table)]
    for (group, row), cells in frame.groupby(["row_group", "row"], sort=False):
        line = row_line(spec, paper, group, row)
        assert list(cells["printed"]) == numbers_on(line, spec), f"{table} {row!r}: {line}"


@cache
def shipped(paper: str) -> pd.DataFrame:
    return read_published(PACKAGES[paper])


def table_frame(paper: str, table: str) -> pd.DataFrame:
    frame = shipped(paper)
    return frame[frame["table"] == table]


# ---------------------------------------------------------------- files and schema

def test_the_papers_are_beside_the_checkout():
    assert papers_dir().is_dir()
    for fname in FILES.values():
        assert (PAPERS / fname).is_file(), fname


def test_a_missing_papers_folder_skips(tmp_path, monkeypatch):
    monkeypatch.delenv("ROUNDTRIP_REQUIRE_PAPERS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="papers' text is not at"):
        papers_dir(tmp_path / "shared" / "papers")


def test_a_missing_papers_folder_fails_where_required(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUNDTRIP_REQUIRE_PAPERS", "1")
    with pytest.raises(pytest.fail.Exception, match="papers' text is not at"):
        papers_dir(tmp_path / "shared" / "papers")


def test_every_shipped_file_is_a_checked_table():
    on_disk = {(p.parent.parent.name, p.name)
               for p in (REPO / "src/roundtrip/evals").glob("*/published/*.csv")}
    assert on_disk == {(p, s["file"]) for (p, _), s in TABLES.items()}


@pytest.mark.parametrize("paper", sorted(PACKAGES))
def test_files_have_the_schema(paper):
    files = published_files(PACKAGES[paper])
    for f in files:
        frame = read_published_file(f)
        assert tuple(frame.columns) == COLUMNS
        assert set(frame["paper"]) == {paper}
        (table,) = set(frame["table"])
        assert f.name == table.lower().replace(" ", "") + ".csv"
        assert set(frame["source"]) == {f"{FILES[paper]} {table}"}
        assert frame["value"].map(math.isfinite).all()
        assert not frame.duplicated(list(KEY)).any()
        assert (frame["printed"].map(float) == frame["value"]).all()
        assert frame["in_zoo"].isin(["yes", "no", ""]).all()


@pytest.mark.parametrize(("paper", "table"), list(TABLES), ids=IDS)
def test_row_counts(paper, table):
    spec = TABLES[(paper, table)]
    frame = table_frame(paper, table)
    rows = frame[["row_group", "row"]].drop_duplicates()
    assert len(frame) == spec["csv_rows"]
    assert len(rows) == spec["rows"]
    assert len(rows) + len(spec["left_out"]) == spec["printed_rows"]
    assert not set(spec["left_out"]) & set(frame["row"])
    readme = REPO / f"src/roundtrip/evals/{paper}/published/README.md"
    readme = readme.read_text(encoding="utf-8")
    assert f"`{spec['file']}`" in readme
    for row in spec["left_out"]:
        assert row in readme, f"{row} is left out of {table} but not named in README.md"


@pytest.mark.parametrize(("paper", "table"), list(TABLES), ids=IDS)
def test_full_rows_follow_the_header(paper, table):
    """Each row's cells are the header's columns in order, the full rows all of them."""
    spec = TABLES[(paper, table)]
    layout = spec["layout"]
    for _, cells in table_frame(paper, table).groupby(["row_group", "row"], sort=False):
        cols = list(cells[["column_group", "column", "metric"]].itertuples(index=False,
                                                                           name=None))
        positions = [layout.index(c) for c in cols]
        assert positions == sorted(positions)
    full = table_frame(paper, table).groupby(["row_group", "row"]).size().max()
    assert full == len(layout)


# ---------------------------------------------------------------- against the paper text

SAMPLES = [(p, t, *cell) for (p, t), s in TABLES.items() for cell in s["sample"]]


@pytest.mark.parametrize(("paper", "table", "row_group", "row", "column_group", "column",
                          "metric", "printed"), SAMPLES,
                         ids=[f"{p}-{t.replace(' ', '')}-{r}-{c}-{m}"
                              for p, t, _, r, _, c, m, _ in SAMPLES])
def test_sampled_cells_are_on_their_rows_line(paper, table, row_group, row, column_group,
                                              column, metric, printed):
    frame = table_frame(paper, table)
    hit = frame[(frame["row_group"] == row_group) & (frame["row"] == row)
                & (frame["column_group"] == column_group) & (frame["column"] == column)
                & (frame["metric"] == metric)]
    assert list(hit["printed"]) == [printed]
    assert hit["value"].iat[0] == float(printed)
    check_cell(paper, table, row_group, row, printed)


def test_samples_cover_first_and_last_rows_and_five_cells():
    for (paper, table), spec in TABLES.items():
        frame = table_frame(paper, table)
        rows = list(dict.fromkeys(zip(frame["row_group"], frame["row"])))
        sampled = {(g, r) for g, r, *_ in spec["sample"]}
        assert len(spec["sample"]) >= 5
        assert {rows[0], rows[-1]} <= sampled, (paper, table)


@pytest.mark.parametrize(("paper", "table"), list(TABLES), ids=IDS)
def test_every_row_reads_as_its_line(paper, table):
    check_rows(table_frame(paper, table), paper, table)


def test_wrong_cells_are_not_found():
    """The checks fail on a changed digit, a number of another row, a row of another table
    and two swapped cells."""
    with pytest.raises(AssertionError, match="is not on the line"):
        check_cell("telephone", "Table 3", "", "Bagel", "0.6093")
    with pytest.raises(AssertionError, match="is not on the line"):
        check_cell("vista", "Table 1", "Vision-Language Models (2B)", "Qwen3-VL-2B-Instruct",
                   "44.3")
    with pytest.raises(AssertionError, match="0 lines labelled"):
        check_cell("vista", "Table 1", "Vision-Language Models (2B)", "Bagel", "44.3")
    with pytest.raises(AssertionError, match="is not on the line"):
        check_cell("medibench", "Table 1", "", "Histopathology", "26.1")
    frame = table_frame("vtbench", "Table 2").copy()
    first = frame.index[frame["row"] == "FlowMo Lo"]
    frame.loc[first[1], "printed"], frame.loc[first[2], "printed"] = (
        frame.loc[first[2], "printed"], frame.loc[first[1], "printed"])
    with pytest.raises(AssertionError, match="FlowMo Lo"):
        check_rows(frame, "vtbench", "Table 2")
    frame = table_frame("vista", "Table 1").copy()
    frame.loc[frame.index[-1], "printed"] = "-10.6"
    with pytest.raises(AssertionError, match="InternVL3.5-30B-A3B"):
        check_rows(frame, "vista", "Table 1")


# ---------------------------------------------------------------- the tables' own arithmetic

def test_vista_gap_and_overall():
    """Gap = Overall VT - Overall Text exactly; Overall is the mean over the 1,500 questions
    (300 perception, 300 reasoning, 400 knowledge, 500 unimodal; Sec. 3.3) within rounding."""
    wide = table_frame("vista", "Table 1").pivot_table(
        index="row", columns=["column_group", "column"], values="value")
    gap = wide[("Overall", "VT")] - wide[("Overall", "Text")] - wide[("Overall", "Gap")]
    assert gap.abs().max() < 1e-9
    sizes = {"Multimodal Perception": 300, "Multimodal Reasoning": 300,
             "Multimodal Knowledge": 400, "Unimodal Knowledge": 500}
    for kind in ("VT", "Text"):
        mean = sum(wide[(c, kind)] * n for c, n in sizes.items()) / 1500
        assert (mean - wide[("Overall", kind)]).abs().max() <= 0.1


#: The paper's averages that are not the mean of its printed cells (kept as printed).
MEDIBENCH_OFF = {("Table 2", "", "AUC", "row", "Dermatoscopy"),
                 ("Table 3", "", "PSNR", "column", "MediTok"),
                 ("Table 5", "Latent Embedding", "AUC", "column", "MediTok")}


def test_medibench_averages():
    """Row averages (Avg) and the Average row are the means of the printed cells within
    rounding, except the three averages the paper itself prints off."""
    off = set()
    frame = shipped("medibench")
    for (table, group, metric), sub in frame.groupby(["table", "row_group", "metric"]):
        wide = sub.pivot_table(index="row", columns="column", values="value")
        models = [c for c in wide.columns if c != "Avg"]
        body = wide.drop(index="Average")
        tol = 0.1 if metric == "PSNR" else 0.001
        for row in body.index:
            if abs(body.loc[row, models].mean() - body.loc[row, "Avg"]) > tol + 1e-9:
                off.add((table, group, metric, "row", row))
        for model in models:
            if abs(body[model].mean() - wide.loc["Average", model]) > tol + 1e-9:
                off.add((table, group, metric, "column", model))
    assert off == MEDIBENCH_OFF


def test_vtbench_table5_gemma_is_table3_posters():
    t3 = table_frame("vtbench", "Table 3")
    t5 = table_frame("vtbench", "Table 5")
    posters = t3[(t3["column_group"] == "Movie Posters (Easy)") & t3["metric"].isin(["CER", "WER"])]
    gemma = t5[t5["column_group"] == "Gemma 3"]
    a = posters.set_index(["model", "metric"])["printed"]
    b = gemma.set_index(["model", "metric"])["printed"].loc[a.index]
    assert len(a) == 42 and (a == b).all()


def test_model_names_are_shared_across_a_papers_tables():
    frame = shipped("vtbench")
    models = {t: set(sub["model"]) for t, sub in frame.groupby("table")}
    assert models["Table 1"] == models["Table 2"] == models["Table 5"]
    assert models["Table 3"] == models["Table 1"] - {"LlamaGen ds8", "BSQ-VIT", "VAR-256"}
    assert {"GPT-4o", "OpenMagViT2"} <= models["Table 1"]
    renamed = frame[frame["row"] != frame["model"]]
    assert set(zip(renamed["row"], renamed["model"])) == {("GPT-40", "GPT-4o"),
                                                         ("OpenMagViT", "OpenMagViT2")}


#: Models marked in_zoo, and what of them the paper's preset names.
ZOO = {"vtbench": {"SD3.5L": "stabilityai/stable-diffusion-3.5-large",
                   "FLUX.1-dev": "black-forest-labs/FLUX.1-dev", "GPT-4o": "type: api_image"},
       "medibench": {"SDXL": "stabilityai/sdxl-vae", "VQ-GAN": "type: diffusers_vq"}}


@pytest.mark.parametrize("paper", sorted(PACKAGES))
def test_in_zoo_names_the_presets_models(paper):
    frame = shipped(paper)
    expected = ZOO.get(paper, {})
    assert set(frame.loc[frame["in_zoo"] == "yes", "model"]) == set(expected)
    if expected:
        assert set(frame.loc[frame["model"] != "", "in_zoo"]) == {"yes", "no"}
        assert (frame.loc[frame["model"] == "", "in_zoo"] == "").all()
    else:
        assert (frame["in_zoo"] == "").all()
    preset = (REPO / f"configs/papers/{paper}.yaml").read_text(encoding="utf-8")
    for needle in expected.values():
        assert needle in preset


# ---------------------------------------------------------------- packaging and docs

def test_package_data_installs_the_folders():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    data = tomllib.loads(pyproject)["tool"]["setuptools"]
    for paper, package in PACKAGES.items():
        assert "published/*.csv" in data["package-data"][package], package


def test_doc_lists_every_file_with_its_count():
    doc = (REPO / "docs/published-results.md").read_text(encoding="utf-8")
    for (paper, table), spec in TABLES.items():
        path = f"src/roundtrip/evals/{paper}/published/{spec['file']}"
        lines = [line for line in doc.splitlines() if f"`{path}`" in line]
        assert lines, path
        assert f"| {spec['csv_rows']} |" in lines[0] and f"| {spec['rows']} |" in lines[0]


# ---------------------------------------------------------------- the loader

GOOD = ("paper,table,row_group,row,column_group,column,metric,model,value,printed,in_zoo,source\n"
        "p,Table 1,,A,,x,x,A,0.5,0.50,,f.txt Table 1\n"
        "p,Table 1,,B,,x,x,B,-1.0,-1.0,no,f.txt Table 1\n")


def test_the_loader_reads_a_good_file():
    frame = parse_published(GOOD, "good.csv")
    assert list(frame["printed"]) == ["0.50", "-1.0"]
    assert list(frame["value"]) == [0.5, -1.0]
    assert frame["value"].dtype == float


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty file"),
    (GOOD.replace("printed,in_zoo", "in_zoo,printed"), "order matters"),
    (GOOD.replace(",source\n", "\n", 1), r"missing \['source'\]"),
    (GOOD.replace("0.5,0.50", "abc,0.50"), "line 2: value 'abc' is not a finite number"),
    (GOOD.replace("0.5,0.50", "inf,inf"), "not a finite number"),
    (GOOD.replace("0.5,0.50", "0.5,0.51"), "printed '0.51' does not read as the value"),
    (GOOD.replace(",no,", ",maybe,"), "in_zoo 'maybe'"),
    (GOOD.replace(",B,,x,x,B", ",A,,x,x,A"), "line 3: the cell .* is already on line 2"),
    (GOOD.replace("p,Table 1,,B", "p,Table 2,,B"), "one paper table per file"),
    (GOOD.replace(",,A,,x,x,", ",,,,x,x,"), r"empty \['row'\]"),
    (GOOD.replace("0.50,,f.txt", "0.50,f.txt"), "11 fields"),
    (GOOD.split("\n")[0] + "\n", "no rows"),
])
def test_the_loader_refuses_a_malformed_file(text, message):
    with pytest.raises(PublishedError, match=message):
        parse_published(text, "bad.csv")


def _package(root: Path, name: str, files: dict[str, str]) -> None:
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    if files:
        (pkg / "published").mkdir()
        for fname, text in files.items():
            (pkg / "published" / fname).write_text(text)


def test_read_published_names_the_package_and_file(tmp_path, monkeypatch):
    _package(tmp_path, "pub_none", {})
    _package(tmp_path, "pub_bad", {"table1.csv": GOOD.replace("0.5,0.50", "0.5,x")})
    _package(tmp_path, "pub_twice", {"table1.csv": GOOD, "table1b.csv": GOOD})
    _package(tmp_path, "pub_ok", {"table1.csv": GOOD, "notes.md": "not read"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PublishedError, match="pub_none: no folder published/"):
        read_published("pub_none")
    with pytest.raises(PublishedError, match=r"pub_bad/published/table1.csv, line 2"):
        read_published("pub_bad")
    with pytest.raises(PublishedError, match="in both table1.csv and table1b.csv"):
        read_published("pub_twice")
    assert len(read_published("pub_ok")) == 2
    assert len(read_published("pub_ok", table="Table 1")) == 2
    with pytest.raises(PublishedError, match=r"no published 'Table 9'; shipped: \['Table 1'\]"):
        read_published("pub_ok", table="Table 9")
