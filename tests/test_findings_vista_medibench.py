"""The report's findings and headline figures of VISTA-Bench and MediBench: sentences computed
from small tables and per-item files with known numbers, that follow a change of the tables, and
that say what is missing instead of failing."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from roundtrip.evals.medibench.spec import EVALUATION as MEDIBENCH
from roundtrip.evals.vista.plan import VistaPlan
from roundtrip.evals.vista.spec import EVALUATION as VISTA
from roundtrip.metrics.paired import paired_items
from roundtrip.metrics.stats import bootstrap_mean
from roundtrip.report import style
from roundtrip.report.findings import RunResults

BOOT = {"samples": 200, "confidence": 0.95, "seed": 0}
WIDTH_PX = round(style.FIGURE_WIDTH_IN * 200)


def _ci(values):
    """Bootstrap mean and CI with the fixtures' settings (what the tables would hold)."""
    return bootstrap_mean(values, BOOT["samples"], BOOT["confidence"], BOOT["seed"])


def _png_width(path: Path) -> int:
    with Image.open(path) as im:
        return im.size[0]


# -- VISTA-Bench --------------------------------------------------------------------------------
#: Per reader: the VT hit of each question's Table 1 render and its text hit (10 questions).
VT_HITS = {"alpha": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
           "beta": [1, 1, 1, 1, 1, 0, 1, 0, 0, 0],
           "gamma": [1, 0, 0, 1, 0, 0, 0, 0, 0, 0]}
TEXT_HITS = {"alpha": [1] * 10, "beta": [1] * 9 + [0], "gamma": [1, 1, 1, 1, 0, 1, 1, 1, 0, 1]}


def _answers(reader: str, audit_failed: set = frozenset()) -> pd.DataFrame:
    """An answers.csv of one reader on the original renders: a text row and a Table 1 VT render
    per question, plus one VT render outside Table 1 (it must not count)."""
    rows = []
    for k, (v, t) in enumerate(zip(VT_HITS[reader], TEXT_HITS[reader])):
        q = f"q{k:02d}"
        base = {"question_id": q, "category": "arithmetic", "subfield": "addition", "source": "",
                "modality": "unimodal", "extracted_by": "letter", "status": "ok", "reason": ""}
        rows.append(base | {"item_id": q, "mode": "text", "font": "", "size": "", "table1": "1",
                            "audit": "", "hit": float(t)})
        rows.append(base | {"item_id": f"{q}__arial_16pt", "mode": "vt", "font": "arial",
                            "size": "16", "table1": "1",
                            "audit": "failed" if q in audit_failed else "", "hit": float(v)})
        rows.append(base | {"item_id": f"{q}__brush_9pt", "mode": "vt", "font": "brush",
                            "size": "9", "table1": "0", "audit": "", "hit": 0.0})
    return pd.DataFrame(rows)


def _summary_cols(prefix: str, values) -> dict:
    s = _ci(values)
    return {prefix: s.mean, f"{prefix}.ci_low": s.ci_low, f"{prefix}.ci_high": s.ci_high,
            f"{prefix}.n": s.n}


def _accuracy_row(reader: str) -> dict:
    vt = 100.0 * np.array(VT_HITS[reader], float)
    text = 100.0 * np.array(TEXT_HITS[reader], float)
    return ({"reader": reader} | _summary_cols("overall.vt_accuracy", vt)
            | _summary_cols("overall.text_accuracy", text)
            | _summary_cols("overall.modality_gap", text - vt))


@pytest.fixture
def vista_run(tmp_path):
    """Tables and answer files of three readers; returns a function building RunResults."""
    tables = tmp_path / "tables"
    tables.mkdir()
    acc = pd.DataFrame([_accuracy_row(r) for r in VT_HITS])
    acc.to_csv(tables / "vista_accuracy.csv", index=False)
    tok = pd.DataFrame([
        {"reader / model": "alpha / small_kl", "recon.vt_accuracy": 40.0,
         "recon.vt_accuracy.ci_low": 30.0, "recon.vt_accuracy.ci_high": 50.0,
         "recon.delta_vt": -40.0, "recon.delta_vt.ci_low": -50.0, "recon.delta_vt.ci_high": -30.0,
         "original.vt_accuracy": 80.0, "original.vt_accuracy.ci_low": 60.0,
         "original.vt_accuracy.ci_high": 100.0},
        {"reader / model": "alpha / small_vq", "recon.vt_accuracy": 10.0,
         "recon.vt_accuracy.ci_low": 0.0, "recon.vt_accuracy.ci_high": 20.0,
         "recon.delta_vt": -70.0, "recon.delta_vt.ci_low": -80.0, "recon.delta_vt.ci_high": -60.0,
         "original.vt_accuracy": 80.0, "original.vt_accuracy.ci_low": 60.0,
         "original.vt_accuracy.ci_high": 100.0}])
    tok.to_csv(tables / "vista_tokenizers.csv", index=False)
    files = []
    for reader in VT_HITS:
        f = tmp_path / "results/vista" / reader / "original/qs/answers.csv"
        f.parent.mkdir(parents=True)
        # alpha's render of q03 failed the render audit: left out of its answers, as the tables
        _answers(reader, {"q03"} if reader == "alpha" else set()).to_csv(f, index=False)
        files.append(f)

    def build(names=None, with_files=True):
        csv = {p.stem: p for p in tables.glob("*.csv") if names is None or p.stem in names}
        return RunResults(csv, files=files if with_files else [],
                          models=["small_kl", "small_vq"], bootstrap=BOOT)
    return build, tables


def test_vista_gap_and_ranking_come_from_the_table_and_the_answers(vista_run):
    build, _ = vista_run
    out = VISTA.findings(build())
    assert 2 <= len(out) <= 4
    gaps = {r: _ci(100.0 * (np.array(TEXT_HITS[r], float) - np.array(VT_HITS[r], float)))
            for r in VT_HITS}
    # the gap: largest for gamma (80 - 20 = 60 points), smallest for alpha (100 - 80 = 20)
    assert gaps["gamma"].mean == pytest.approx(60.0) and gaps["alpha"].mean == pytest.approx(20.0)
    g, a = gaps["gamma"], gaps["alpha"]
    assert f"largest for gamma (+60.0 [{g.ci_low:.1f}, {g.ci_high:.1f}] points: VT 20.0 % vs " \
           "Text 80.0 %)" in out[0]
    assert f"smallest for alpha (+20.0 [{a.ci_low:.1f}, {a.ci_high:.1f}]: VT 80.0 % vs Text " \
           "100.0 %)" in out[0]
    above = sum(s.ci_low > 0 for s in gaps.values())
    assert f"above 0 with 95 % confidence for {above} of 3 readers" in out[0]
    # best and worst reader on VT accuracy with the table's CIs
    best = _ci(100.0 * np.array(VT_HITS["alpha"], float))
    worst = _ci(100.0 * np.array(VT_HITS["gamma"], float))
    assert (f"alpha is best ({best.mean:.1f} [{best.ci_low:.1f}, {best.ci_high:.1f}]) and gamma "
            f"worst ({worst.mean:.1f} [{worst.ci_low:.1f}, {worst.ci_high:.1f}]), of 3 readers."
            in out[1])
    # alpha vs beta over the questions both kept (alpha's q03 render failed the audit)
    keep = [k for k in range(10) if k != 3]
    a = 100.0 * np.array(VT_HITS["alpha"], float)[keep]
    b = 100.0 * np.array(VT_HITS["beta"], float)[keep]
    d = paired_items(b, a)  # the comparison of checkpoints' defaults (compare:)
    assert d.n == 9 and d.difference == pytest.approx(np.mean(a - b))
    spread = f"+{d.difference:.1f} [{d.ci_low:.1f}, {d.ci_high:.1f}]"
    assert "alpha" in out[2] and "beta" in out[2] and spread in out[2] and "9 shared" in out[2]
    verdict = "indistinguishable" if d.ci_low <= 0 <= d.ci_high or d.p > 0.05 else "beats"
    assert verdict in out[2]
    # the tokenizer axis
    assert "best for alpha / small_kl (-40.0 [-50.0, -30.0]" in out[3]
    assert "worst for alpha / small_vq (-70.0 [-80.0, -60.0]" in out[3]


def test_vista_sentences_follow_the_table(vista_run):
    build, tables = vista_run
    before = VISTA.findings(build())
    acc = pd.read_csv(tables / "vista_accuracy.csv")
    acc.loc[acc["reader"] == "gamma", "overall.vt_accuracy"] = 95.0
    acc.loc[acc["reader"] == "gamma", ["overall.modality_gap", "overall.modality_gap.ci_low",
                                       "overall.modality_gap.ci_high"]] = [-5.0, -20.0, 10.0]
    acc.to_csv(tables / "vista_accuracy.csv", index=False)
    after = VISTA.findings(build())
    assert after != before
    assert after[1].startswith("On VT accuracy (%) (one render per question), gamma is best (95.0")
    assert "smallest for gamma (-5.0 [-20.0, 10.0]: VT 95.0 % vs Text 80.0 %)" in after[0]
    assert "largest for beta (+30.0" in after[0]


def test_vista_one_reader_missing_files_and_missing_table(vista_run):
    build, tables = vista_run
    acc = pd.read_csv(tables / "vista_accuracy.csv")
    acc[acc["reader"] == "beta"].to_csv(tables / "vista_accuracy.csv", index=False)
    one = VISTA.findings(build())
    assert one[0].startswith("beta answers 60.0 [") and "% of 10 questions" in one[0]
    assert "90.0 [" in one[0] and "gap (Text - VT) of +30.0 [" in one[0]
    assert "only reader" in one[0]
    acc.to_csv(tables / "vista_accuracy.csv", index=False)
    no_files = VISTA.findings(build(with_files=False))
    assert "not compared question by question" in no_files[2]
    missing = VISTA.findings(build(names={"vista_tokenizers"}))
    assert missing == ["VISTA-Bench's accuracies could not be reported: the run wrote no "
                       "vista_accuracy table."]


def test_vista_nan_gap_does_not_crash(vista_run):
    build, tables = vista_run
    acc = pd.read_csv(tables / "vista_accuracy.csv")
    acc["overall.modality_gap"] = np.nan
    acc.to_csv(tables / "vista_accuracy.csv", index=False)
    out = VISTA.findings(build())
    assert out[0].startswith("No modality gap could be computed for the 3 readers")


def test_vista_headline_figure(vista_run, tmp_path):
    build, _ = vista_run
    png = tmp_path / "vista.png"
    caption = VISTA.headline_figure(build(), png)
    assert "Text - VT" in caption and "vista_tokenizers" in caption
    assert abs(_png_width(png) - WIDTH_PX) <= 3
    only_acc = tmp_path / "only.png"
    caption = VISTA.headline_figure(build(names={"vista_accuracy"}), only_acc)
    assert "vista_tokenizers" not in caption and abs(_png_width(only_acc) - WIDTH_PX) <= 3
    assert VISTA.headline_figure(build(names=set()), tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


@pytest.mark.parametrize("written", ["header", "one byte"])
def test_vista_empty_tokenizer_table_is_skipped_with_a_sentence(vista_run, tmp_path, written):
    """vista.models: [] (the preset): vista_tokenizers has no rows. It is written with its
    header and a note (write_table); a file without even a header (1 byte, as runs wrote it
    before) reads as empty too. Before: page 1 and the headline figure read "EmptyDataError: No
    columns to parse from file"; now the findings say the axis is off and the figure draws its
    one panel."""
    from roundtrip.evals.vista import tables as vista_tables
    from roundtrip.tables import write_table

    build, tables = vista_run
    empty = vista_tables.tokenizer_table({}, vista_tables.Scorer({"samples": 10}))
    write_table(empty, tables)
    if written == "one byte":
        (tables / "vista_tokenizers.csv").write_text("\n")
    else:
        frame = pd.read_csv(tables / "vista_tokenizers.csv")
        assert frame.empty and "recon.delta_vt" in frame.columns and "notes" in frame.columns
        assert "Note: no model's reconstructions of the question images were read" in \
            (tables / "vista_tokenizers.md").read_text()
    out = VISTA.findings(build())
    assert out[-1] == ("The tokenizer axis is not reported: no model's reconstructions of the "
                       "question images were read (vista.models is [], or no model runs on the "
                       "question sets): the tokenizer axis is off.")
    assert not any("EmptyDataError" in s for s in out)
    caption = VISTA.headline_figure(build(), tmp_path / "h.png")
    assert "vista_tokenizers" not in caption and (tmp_path / "h.png").is_file()


def test_vista_findings_inputs_are_the_original_answer_files():
    keys = [("r1", "original", "qs"), ("r1", "small_kl", "qs"), ("r2", "original", "qs")]
    view = SimpleNamespace(keys=keys, answer_file=VistaPlan.answer_file)
    plan = SimpleNamespace(view=lambda key, cls: view)
    assert VISTA.findings_inputs(plan) == ["results/vista/r1/original/qs/answers.csv",
                                           "results/vista/r2/original/qs/answers.csv"]


def test_vista_report_layout():
    assert VISTA.report_tables[0] == "vista_accuracy"
    assert "vista_subfield" not in VISTA.report_tables
    assert set(VISTA.report_columns) <= set(VISTA.report_tables)


# -- MediBench ----------------------------------------------------------------------------------
#: PSNR (dB) per image of the 2D set, per model; identity is exact.
PSNR = {"identity": [np.inf] * 6,
        "kl": [30.0, 31.0, 29.5, 33.0, 28.0, 32.0],
        "vq": [25.0, 24.0, 26.5, 23.0, 24.5, 25.5],
        "bic": [29.0, 30.5, 30.0, 31.0, 27.0, 31.5]}


def _grouped(rows: dict[str, dict[str, tuple]], metrics: tuple[str, ...]) -> pd.DataFrame:
    """A MediBench table: dataset rows then Average, ``{model}.{metric}`` columns and Avg."""
    models = list(next(iter(rows.values())))
    out = []
    for label, cells in rows.items():
        rec = {"Dataset": label}
        for m in models:
            rec |= {f"{m}.{k}": v for k, v in zip(metrics, cells[m])}
        out.append(rec)
    df = pd.DataFrame(out)
    for k in metrics:
        df[f"Avg.{k}"] = df[[f"{m}.{k}" for m in models if m != "identity"]].mean(axis=1)
    avg = {"Dataset": "Average"} | {c: df[c].mean() for c in df.columns[1:]}
    return pd.concat([df, pd.DataFrame([avg])], ignore_index=True)


@pytest.fixture
def medi_run(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    mean = {m: float(np.mean(v)) for m, v in PSNR.items()}
    _grouped({"med2d (histology)": {m: (mean[m], 0.8) for m in PSNR}}, ("psnr", "ssim")
             ).to_csv(tables / "medibench_2d_fidelity.csv", index=False)
    _grouped({"med2d (histology)": {"identity": (0.90,), "kl": (0.80,), "vq": (0.95,),
                                    "bic": (0.85,), "pixels": (0.7,)}}, ("auc",)
             ).to_csv(tables / "medibench_2d_latent.csv", index=False)
    vol = {"identity": (np.inf, 1.0), "kl": (24.0, 0.60), "vq": (20.0, 0.40), "bic": (22.0, 0.5)}
    _grouped({"vol_a": vol, "vol_b": {m: (p - 2, s) for m, (p, s) in vol.items()}},
             ("psnr", "ssim")).to_csv(tables / "medibench_3d_fidelity.csv", index=False)
    seg = {"identity": (0.8, 1.0, 1.0), "kl": (0.8, 0.90, 0.5), "vq": (0.8, 0.80, 0.4),
           "bic": (0.8, 0.70, 0.3)}
    _grouped({"vol_a": seg, "vol_b": seg}, ("gmm_conf", "segsim", "dice")
             ).to_csv(tables / "medibench_3d_structure.csv", index=False)
    _grouped({"vol_a": {"kl": (0.6,), "vq": (0.9,)}}, ("auc",)
             ).to_csv(tables / "medibench_3d_latent.csv", index=False)
    files = []
    for m, values in PSNR.items():
        f = tmp_path / "results/metrics" / m / "med2d/image_quality.csv"
        f.parent.mkdir(parents=True)
        pd.DataFrame({"item_id": [f"img{k}" for k in range(6)], "status": "ok", "reason": "",
                      "psnr": values}).to_csv(f, index=False)
        files.append(f)

    def build(names=None, with_files=True):
        csv = {p.stem: p for p in tables.glob("*.csv") if names is None or p.stem in names}
        return RunResults(csv, files=files if with_files else [],
                          models=["identity", "kl", "vq", "bic"], bootstrap=BOOT)
    return build, tables


def test_medibench_psnr_ranking_from_the_per_image_files(medi_run):
    build, _ = medi_run
    out = MEDIBENCH.findings(build())
    assert 2 <= len(out) <= 4
    kl, vq = _ci(PSNR["kl"]), _ci(PSNR["vq"])
    assert (f"over 6 medical 2D images, kl is best ({kl.mean:.2f} [{kl.ci_low:.2f}, "
            f"{kl.ci_high:.2f}]) and vq worst ({vq.mean:.2f} [{vq.ci_low:.2f}, {vq.ci_high:.2f}])"
            ", of 3 models" in out[0])
    assert "identity reconstructs every image exactly (PSNR = inf) and is left out" in out[0]
    d = paired_items(PSNR["bic"], PSNR["kl"])  # the comparison of checkpoints' defaults
    assert d.difference == pytest.approx(np.mean(np.subtract(PSNR["kl"], PSNR["bic"])))
    assert (f"+{d.difference:.2f} [{d.ci_low:.2f}, {d.ci_high:.2f}]" in out[1]
            and "bic" in out[1])
    # fidelity and structure on the volumes: kl leads both; three models give a Spearman rho
    psnr3 = {"kl": 23.0, "vq": 19.0, "bic": 21.0}
    seg3 = {"kl": 90.0, "vq": 80.0, "bic": 70.0}
    rho = pd.Series(psnr3).corr(pd.Series(seg3), method="spearman")
    assert ("agree on the best model: kl has both the highest PSNR (23.0 dB) and the highest "
            f"SegSim (90.0); over the 3 models the two rankings have Spearman rho = {rho:.2f}"
            in out[2])
    # every part ran: the last sentence sets latent utility against fidelity (vq: AUC 0.950)
    assert "vq has the best latent AUC (0.950" in out[3] and "kl the best PSNR" in out[3]


def test_medibench_sentences_follow_the_tables(medi_run):
    build, tables = medi_run
    seg = pd.read_csv(tables / "medibench_3d_structure.csv")
    seg.loc[seg["Dataset"] == "Average", "vq.segsim"] = 0.95
    seg.to_csv(tables / "medibench_3d_structure.csv", index=False)
    out = MEDIBENCH.findings(build())
    assert ("fidelity and structure disagree: kl has the highest PSNR (23.0 dB, SegSim 90.0) but "
            "vq the highest SegSim (95.0, PSNR 19.0 dB)" in out[2])


def test_medibench_missing_parts_and_no_files(medi_run, tmp_path):
    build, _ = medi_run
    only_2d = build(names={"medibench_2d_fidelity", "medibench_2d_latent"}, with_files=False)
    out = MEDIBENCH.findings(only_2d)
    # without per-image files: the table's Average row, no CIs
    means = {m: np.mean(v) for m, v in PSNR.items() if m != "identity"}
    assert (f"kl is best ({means['kl']:.2f} dB) and vq worst ({means['vq']:.2f} dB), of 3 models"
            in out[0] and "no CIs" in out[0])
    assert out[-1] == ("Not in this run (table missing or empty): 3D fidelity "
                       "(medibench_3d_fidelity), 3D structure (medibench_3d_structure), 3D "
                       "latent utility (medibench_3d_latent).")
    assert MEDIBENCH.headline_figure(only_2d, tmp_path / "none.png") is None
    nothing = MEDIBENCH.findings(build(names=set(), with_files=False))
    assert nothing[0].startswith("No model has a 2D PSNR") and "Not in this run" in nothing[1]


def test_medibench_nan_cells_do_not_crash(medi_run):
    build, tables = medi_run
    for name in ("medibench_3d_fidelity", "medibench_3d_structure"):
        df = pd.read_csv(tables / f"{name}.csv")
        df.iloc[:, 1:] = np.nan
        df.to_csv(tables / f"{name}.csv", index=False)
    out = MEDIBENCH.findings(build())
    assert not any("volumes" in s for s in out)
    assert "3D fidelity (medibench_3d_fidelity), 3D structure" in out[-1]


def test_medibench_headline_figure(medi_run, tmp_path):
    build, _ = medi_run
    png = tmp_path / "medi.png"
    caption = MEDIBENCH.headline_figure(build(), png)
    assert "SegSim" in caption and "PSNR" in caption
    assert abs(_png_width(png) - WIDTH_PX) <= 3


def test_medibench_findings_inputs_are_the_2d_quality_files():
    view = SimpleNamespace(medical_2d=["med2d"], table_files={"quality": {
        ("kl", "med2d"): "results/metrics/kl/med2d/image_quality.csv",
        ("kl", "vol"): "results/metrics/kl/vol/image_quality.csv"}})
    plan = SimpleNamespace(view=lambda key, cls: view)
    assert MEDIBENCH.findings_inputs(plan) == ["results/metrics/kl/med2d/image_quality.csv"]
    assert "medibench_classifiers" not in MEDIBENCH.report_tables


def test_vista_rows_join_the_published_table1_on_the_release(tmp_path):
    """On the release TSV the run's readers are printed in Table 1 above the published rows;
    on other questions Table 1 is a reference on other data."""
    from roundtrip.report.assemble import published_of

    csv = tmp_path / "vista_accuracy.csv"
    pd.DataFrame({"reader": ["my_vlm"],
                  "Multimodal Perception.vt_accuracy": [51.24],
                  "Multimodal Perception.text_accuracy": [70.0],
                  "overall.vt_accuracy": [48.04], "overall.text_accuracy": [66.0],
                  "overall.modality_gap": [17.96], "notes": [""]}).to_csv(csv, index=False)
    release = {"datasets": {"vb": {"type": "vista_release", "path": "x.tsv"}}, "vista": {}}
    results = RunResults({"vista_accuracy": csv}, config=release)
    (table,) = published_of(VISTA, results)
    assert "this run's rows beside the published ones" in table.title
    first = dict(zip(table.header, table.rows[0]))
    assert first["row"] == "my_vlm" and first["block"] == "This run"
    assert first["Multimodal Perception: VT"] == "51.2"  # one decimal, as the paper prints
    # Table 1's sign (VT - Text) beside the published gaps, under Overall only: the run's
    # Text - VT of 17.96 prints -18.0 above DeepSeek-VL2-Tiny's -11.4
    assert first["Overall: Text"] == "66.0" and first["Overall: Gap"] == "-18.0"
    assert "Gap" not in table.header
    published = dict(zip(table.header, table.rows[1]))
    assert published["row"] == "DeepSeek-VL2-Tiny (published)"
    assert published["Overall: Gap"] == "-11.4"
    assert table.marked == set(range(1, len(table.rows)))
    assert table.rows[1][1].endswith("(published)")
    # on other questions: the published rows of the run's readers, as a reference
    other = tmp_path / "other" / "vista_accuracy.csv"
    other.parent.mkdir()
    pd.read_csv(csv).assign(reader="qwen3vl_8b").to_csv(other, index=False)
    own = RunResults({"vista_accuracy": other},
                     config={"datasets": {"q": {"type": "vista_questions"}}, "vista": {}})
    (reference,) = published_of(VISTA, own)
    assert reference.title.startswith("Published results, other data") and not reference.marked
    assert [r[1] for r in reference.rows] == ["Qwen3-VL-8B-Instruct"]


def _release_answers(path: Path, n: int, errors: int = 0) -> None:
    """An answers.csv of ``n`` release questions (one Table 1 render each), every answer right;
    the VT answers of the first ``errors`` questions are errors (no answer)."""
    rows = []
    for k in range(n):
        q = f"r{k:04d}"
        base = {"question_id": q, "category": "Multimodal Perception", "subfield": "s",
                "source": "MMBench", "modality": "multimodal", "table1": "1", "audit": "",
                "status": "ok", "reason": "", "extracted_by": "letter", "hit": 1.0}
        rows.append(base | {"item_id": q, "mode": "text"})
        rows.append(base | {"item_id": f"{q}_vt", "mode": "vt"} | (
            {"status": "error", "reason": "connection error: refused", "hit": np.nan,
             "extracted_by": ""} if k < errors else {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def test_vista_run_rows_beside_table1_show_their_n_and_leave_out_readers_with_errors(tmp_path):
    """A run on 300 of the release's 1,500 questions: its row says so in its n column (the
    published rows are over all 1,500), and how many answers of each mode were scored where a
    few errors left some out; a reader 60 % of whose VT answers are errors (30 % of its
    answers, over vista.max_error_share) is not set beside the published rows, and page 1 says
    why instead of a gap."""
    from roundtrip.report.assemble import published_of

    files = []
    for reader, errors in (("my_vlm", 0), ("few_errors", 3), ("down_vlm", 180)):
        files.append(tmp_path / f"results/vista/{reader}/original/vb/answers.csv")
        _release_answers(files[-1], 300, errors)
    csv = tmp_path / "vista_accuracy.csv"
    rows = []
    for reader, vt_n in (("my_vlm", 300), ("few_errors", 297), ("down_vlm", 120)):
        rows.append({"reader": reader, "Multimodal Perception.vt_accuracy": 100.0,
                     "Multimodal Perception.text_accuracy": 100.0,
                     "overall.vt_accuracy": 100.0, "overall.vt_accuracy.n": vt_n,
                     "overall.text_accuracy": 100.0, "overall.text_accuracy.n": 300,
                     "overall.modality_gap": 0.0, "overall.modality_gap.n": vt_n, "notes": ""})
    pd.DataFrame(rows).to_csv(csv, index=False)
    release = {"datasets": {"vb": {"type": "vista_release", "path": "x.tsv", "limit": 300}},
               "vista": {"max_error_share": 0.1}}
    results = RunResults({"vista_accuracy": csv}, files=files, config=release, bootstrap=BOOT)
    (table,) = published_of(VISTA, results)
    run = {r[1]: dict(zip(table.header, r)) for r in table.rows if r[0] == "This run"}
    assert set(run) == {"my_vlm", "few_errors"}
    assert run["my_vlm"]["n"] == "300 of 1,500 questions (a subset of the benchmark)"
    assert run["few_errors"]["n"] == ("300 of 1,500 questions (a subset of the benchmark); "
                                      "scored 297 VT, 300 Text")
    published = dict(zip(table.header, table.rows[2]))
    assert published["row"].endswith("(published)") and published["n"] == "–"
    page = VISTA.findings(results)
    assert "down_vlm" not in page[0] and "largest for" in page[0]
    assert page[1].startswith("down_vlm: 180 of 600 answers (30.0 %) are errors (connection "
                              "error (180x))") and "so no finding is reported for it" in page[1]
    from roundtrip.tables.published import run_coverage

    assert run_coverage(1500, 1500) == "1,500 questions (the whole benchmark)"
    assert run_coverage(42) == "42 questions"
