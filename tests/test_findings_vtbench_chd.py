"""VTBench's and CHD/CMMS's findings and headline figures (evals/vtbench/findings.py,
evals/chd/findings.py) on small tables and per-item files with known numbers."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from roundtrip.evals.chd import findings as cf
from roundtrip.evals.chd.spec import CHD
from roundtrip.evals.vtbench import findings as vf
from roundtrip.evals.vtbench.spec import VTBench
from roundtrip.report import style
from roundtrip.report.findings import RunResults

BOOT = {"samples": 200, "confidence": 0.95, "seed": 0}
MODELS = ["identity", "jpeg", "kl", "vq", "rvq"]
D = "natural_256"
WIDTH_PX = style.FIGURE_WIDTH_IN * 200


def write_tables(root, **frames):
    """``name -> frame`` written as ``root/tables/{name}.csv``; returns ``name -> path``."""
    (root / "tables").mkdir(parents=True, exist_ok=True)
    out = {}
    for name, df in frames.items():
        out[name] = root / "tables" / f"{name}.csv"
        df.to_csv(out[name], index=False)
    return out


def results(root, frames, files=(), models=MODELS):
    return RunResults(write_tables(root, **frames), list(files), list(models), BOOT)


# -- VTBench -----------------------------------------------------------------------------------
#: per-item PSNR (dB) of four items; identity is exact (inf)
ITEMS = {"identity": [math.inf] * 4, "jpeg": [33.0, 35.0, 31.0, 36.0],
         "kl": [30.0, 29.0, 31.5, 30.5], "vq": [20.0, 22.0, 19.0, 21.0],
         "rvq": [24.0, 23.0, 25.0, 22.0]}


def model_size_table(psnr=None):
    psnr = psnr or {"identity": math.inf, "jpeg": 33.5, "kl": 30.1, "vq": 20.4, "rvq": 23.2}
    ssim = {"identity": 1.0, "jpeg": 0.93, "kl": 0.70, "vq": 0.49, "rvq": 0.64}
    return pd.DataFrame({"model": MODELS, f"{D}.image_size": 256.0,
                         f"{D}.psnr_vtbench": [psnr[m] for m in MODELS],
                         f"{D}.ssim_vtbench": [ssim[m] for m in MODELS],
                         f"{D}.ssim_vtbench.ci_low": [ssim[m] - 0.02 for m in MODELS],
                         f"{D}.ssim_vtbench.ci_high": [ssim[m] + 0.01 for m in MODELS],
                         f"{D}.psnr": [np.mean(ITEMS[m]) for m in MODELS]})


#: CER per text set; NaN: the model did not run on the set
CER = {"posters": {"identity": 0.0, "jpeg": 0.01, "kl": 0.5, "vq": 0.7, "rvq": 1.04},
       "abstracts": {"identity": 0.0, "jpeg": 0.02, "kl": 0.79, "vq": 0.99, "rvq": 0.8},
       "scanned": {"identity": 0.0, "jpeg": 0.13, "kl": 0.73, "vq": 1.0, "rvq": math.nan}}


def text_table(cer=CER):
    df = pd.DataFrame({"model": MODELS})
    for s, vals in cer.items():
        df[f"{s}.psnr_vtbench"] = [math.inf if m == "identity" else 20.0 for m in MODELS]
        df[f"{s}.cer"] = [vals[m] for m in MODELS]
        df[f"{s}.cer_norm"] = 0.5  # not the headline CER: must be ignored
    return df


def card():
    return pd.DataFrame({"model": MODELS, "family": ["codec", "codec", "continuous", "VQ", "RVQ"],
                         "ratio_256": [1.0, math.nan, 1 / 6, 1 / 24, 1 / 6]})


def item_files(root, dataset=D, items=ITEMS):
    files = []
    for m, vals in items.items():
        f = root / "metrics" / m / dataset / vf.ITEM_FILE
        f.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"item_id": [f"i{k}" for k in range(len(vals))], "status": "ok",
                      "psnr": vals}).to_csv(f, index=False)
        files.append(f)
    return files


@pytest.fixture
def vt(tmp_path):
    return results(tmp_path, {vf.MODEL_SIZE_TABLE: model_size_table(),
                              vf.TEXT_TABLE: text_table(), vf.CARD_TABLE: card()},
                   item_files(tmp_path))


def test_vtbench_psnr_best_worst_leave_out_the_exact_model(vt):
    s = vf.findings(vt)
    assert len(s) == 4
    assert "jpeg has the highest PSNR (VTBench eval.), 33.50 dB" in s[0]
    assert "vq the lowest, 20.40 dB, of 4 models" in s[0]
    assert "identity is left out (PSNR = inf" in s[0]


def test_vtbench_paired_best_vs_runner_up_over_per_item_psnr(vt):
    diff = np.array(ITEMS["jpeg"]) - np.array(ITEMS["kl"])
    s = vf.findings(vt)[1]
    assert "jpeg beats the runner-up kl" in s
    assert f"+{diff.mean():.2f}" in s and "over 4 shared items" in s


def test_vtbench_paired_says_indistinguishable_when_the_interval_spans_zero(tmp_path):
    items = {**ITEMS, "kl": [34.0, 34.0, 30.0, 34.0]}  # differences +-1 and +-2 around 0
    r = results(tmp_path, {vf.MODEL_SIZE_TABLE: model_size_table()}, item_files(tmp_path,
                                                                                items=items))
    diff = np.array(items["jpeg"]) - np.array(items["kl"])
    s = vf.findings(r)[1]
    assert "indistinguishable" in s and f"{diff.mean():+.2f}" in s


def test_vtbench_sentence_follows_the_table(tmp_path):
    psnr = {"identity": math.inf, "jpeg": 33.5, "kl": 30.1, "vq": 41.25, "rvq": 23.2}
    r = results(tmp_path, {vf.MODEL_SIZE_TABLE: model_size_table(psnr)}, item_files(tmp_path))
    s = vf.findings(r)
    assert "vq has the highest PSNR (VTBench eval.), 41.25 dB" in s[0]
    assert "rvq the lowest, 23.20 dB" in s[0]
    # per item vq is far below jpeg: the sentence says the conventions disagree
    diff = np.array(ITEMS["jpeg"]) - np.array(ITEMS["vq"])
    assert f"the runner-up jpeg is ahead of vq by {diff.mean():.2f}" in s[1]


def test_vtbench_ssim_with_its_confidence_interval(vt):
    s = vf.findings(vt)[2]
    assert "jpeg is highest (0.9300 [0.9100, 0.9400])" in s
    assert "vq lowest (0.4900 [0.4700, 0.5000])" in s and "the same two as PSNR" in s


def test_vtbench_cer_counts_the_lowest_and_highest_per_set(vt):
    s = vf.findings(vt)[3]
    # independently: per set, the non-exact models' lowest and highest CER
    df = pd.DataFrame(CER).drop(index="identity")
    lows, highs = df.idxmin().value_counts(), df.idxmax().value_counts()
    assert lows.idxmax() == "jpeg" and lows.max() == 3
    assert f"jpeg is lowest on 3 (CER {df.min().min():.4f} to {df.min().max():.4f})" in s
    assert highs.max() == 2 and "vq highest on 2 (CER 0.9900 to 1.0000)" in s
    assert "over 3 text sets" in s and "identity left out as exact" in s


def test_vtbench_missing_tables_and_nan_do_not_crash(tmp_path):
    # no reconstruction table at all (a VISTA-only config): one sentence says so
    assert vf.findings(results(tmp_path, {})) == [
        "VTBench reconstructed nothing: the config has no image or text set (the OCR of the "
        "originals it runs serves the other evaluations)."]
    text_only = pd.DataFrame({"model": MODELS})
    s = vf.findings(results(tmp_path, {vf.TEXT_TABLE: text_only}))
    assert "could not be computed" in s[0] and "no text set" in s[-1]
    nan = model_size_table({"identity": math.inf, "jpeg": math.nan, "kl": math.nan,
                            "vq": 20.4, "rvq": math.nan})
    s = vf.findings(results(tmp_path, {vf.MODEL_SIZE_TABLE: nan}))
    assert "vq is the only model with a finite PSNR" in s[0]
    only_inf = model_size_table({m: math.inf for m in MODELS})
    s = vf.findings(results(tmp_path, {vf.MODEL_SIZE_TABLE: only_inf}))
    assert "no model has a finite PSNR" in s[0]


def test_vtbench_paired_without_per_item_files_says_why(tmp_path):
    s = vf.findings(results(tmp_path, {vf.MODEL_SIZE_TABLE: model_size_table()}))
    assert "could not be computed: no per-item PSNR" in s[1] and "jpeg and kl" in s[1]


def test_vtbench_headline_figure_at_print_width(vt, tmp_path):
    png = tmp_path / "vt.png"
    caption = vf.headline_figure(vt, png)
    assert abs(Image.open(png).size[0] - WIDTH_PX) <= 3
    assert "Left out: jpeg (no fixed compression ratio" in caption
    assert "Not in the PSNR panel: identity" in caption


def test_vtbench_headline_figure_none_without_ratios(tmp_path):
    r = results(tmp_path, {vf.MODEL_SIZE_TABLE: model_size_table()})
    assert vf.headline_figure(r, tmp_path / "x.png") is None
    assert not (tmp_path / "x.png").exists()


def test_vtbench_ratio_labels():
    assert [vf.ratio_label(r) for r in (1 / 64, 1 / 6, 1.0, 0.3)] == ["1/64", "1/6", "1", "0.3"]


def test_vtbench_spec_delegates_and_lays_out_the_body(vt, tmp_path):
    spec = VTBench()
    assert spec.findings(vt) == vf.findings(vt)
    assert spec.has_headline_figure()
    order = spec.report_tables
    assert order.index("text_preservation") < order.index("detail_statistics") \
        < order.index("ocr_robustness")
    assert spec.report_columns["text_preservation"] == (
        "PSNR (VTBench eval.)", "CER (VTBench eval.)", "WER (VTBench eval.)")
    assert "PSNR (VTBench eval.)" in spec.report_columns["reconstruction_model_size"]
    plan = SimpleNamespace(config={"datasets": {D: {"protocol": "model_size"},
                                                "other": {"protocol": "model_size"},
                                                "nat": {"protocol": "native"}}},
                           recon_datasets=[D, "other", "nat"],
                           model_dataset_files=lambda p, ds: [p.format(model=m, dataset=d)
                                                              for d in ds for m in MODELS])
    assert spec.findings_inputs(plan) == [f"results/metrics/{m}/{D}/image_quality.csv"
                                          for m in MODELS]


# -- CHD / CMMS --------------------------------------------------------------------------------
def spearman(cmms_blur=-0.988):
    return pd.DataFrame({"degradation": ["noise", "blur", "shuffle"],
                         cf.RHO_CHD: [1.0, 0.95, 1.0], cf.RHO_CMMS: [-0.976, cmms_blur, -0.891],
                         cf.MONOTONE: [True, False, True]})


def curves():
    rows = [{"kind": k, "level": lv, "parameter": lv / 10, "chd": lv * f, "chd_1d": 0.0,
             "chd_2d": 0.0, "cmms": 0.12 - lv * f / 100, "n_images": 40}
            for k, f in (("noise", 0.03), ("blur", 0.02), ("shuffle", 0.04))
            for lv in range(11)]
    return pd.DataFrame(rows)


#: per-item CMMS on the first set
CMMS = {"identity": [0.10, 0.12, 0.20, 0.06], "jpeg": [0.11, 0.12, 0.19, 0.07],
        "kl": [0.08, 0.09, 0.15, 0.05], "vq": [0.14, 0.15, 0.22, 0.09],
        "rvq": [0.13, 0.16, 0.21, 0.08]}
CHD_VALUES = {"identity": 0.0, "jpeg": 0.0987, "kl": 0.3118, "vq": 0.4403, "rvq": 0.34}


def token_metrics(chd=CHD_VALUES):
    df = pd.DataFrame({"model": MODELS})
    for d in ("natural", "textures"):
        df[f"{d}.chd"] = [chd[m] for m in MODELS]
        df[f"{d}.cmms"] = [np.mean(CMMS[m]) for m in MODELS]
        df[f"{d}.cmms.ci_low"] = df[f"{d}.cmms"] - 0.01
        df[f"{d}.cmms.ci_high"] = df[f"{d}.cmms"] + 0.01
        df[f"{d}.cmms_reference"] = np.mean(CMMS["identity"])
        df[f"{d}.cmms_reference.ci_low"] = 0.062
        df[f"{d}.cmms_reference.ci_high"] = 0.163
    return df


def token_files(root):
    files = []
    for m, vals in CMMS.items():
        f = root / "metrics" / m / "natural" / cf.ITEM_FILE
        f.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"item_id": [f"i{k}" for k in range(4)], "status": "ok", "cmms": vals,
                      "cmms_reference": CMMS["identity"]}).to_csv(f, index=False)
        files.append(f)
    return files


@pytest.fixture
def chd(tmp_path):
    return results(tmp_path, {cf.SPEARMAN_TABLE: spearman(), cf.CURVES_TABLE: curves(),
                              cf.METRICS_TABLE: token_metrics()}, token_files(tmp_path))


def test_chd_spearman_sentence(chd):
    s = cf.findings(chd)[0]
    assert "(1-10)" in s
    assert "1.000 (noise), 0.950 (blur) and 1.000 (shuffle)" in s
    assert "strictly increasing for 2 of 3 kinds" in s
    assert "-0.976 (noise), -0.988 (blur) and -0.891 (shuffle)" in s
    assert "CHD rises with every kind" in s and "CMMS falls with every kind" in s


def test_chd_spearman_sentence_follows_the_table(tmp_path):
    r = results(tmp_path, {cf.SPEARMAN_TABLE: spearman(cmms_blur=0.25)})
    s = cf.findings(r)
    assert "0.250 (blur)" in s[0] and "CMMS does not fall with blur" in s[0]
    assert "no token_metrics table" in s[1]


def test_chd_lowest_and_highest_on_the_first_set(chd):
    s = cf.findings(chd)[1]
    others = {m: v for m, v in CHD_VALUES.items() if v > 0}
    best, worst = min(others, key=others.get), max(others, key=others.get)
    assert s.startswith("On natural (the first scored set), identity reproduces")
    assert f"{best} has the lowest CHD ({others[best]:.4f})" in s
    assert f"{worst} the highest ({others[worst]:.4f}) of 4 models" in s
    assert f"originals score CMMS {np.mean(CMMS['identity']):.3f} [0.062, 0.163]" in s


def test_chd_cmms_ranking_and_paired_comparison(chd):
    s = cf.findings(chd)
    means = {m: np.mean(v) for m, v in CMMS.items() if m != "identity"}
    order = sorted(means, key=means.get, reverse=True)
    assert f"{order[0]} is best ({means[order[0]]:.3f}" in s[2]
    assert f"{order[-1]} worst ({means[order[-1]]:.3f}" in s[2] and "of 4 models" in s[2]
    diff = np.mean(np.array(CMMS[order[0]]) - np.array(CMMS[order[1]]))
    assert f"{order[0]}" in s[3] and f"runner-up {order[1]}" in s[3]
    assert f"{diff:+.3f}" in s[3]


def test_chd_without_per_item_files_uses_the_table(tmp_path):
    r = results(tmp_path, {cf.METRICS_TABLE: token_metrics()})
    s = cf.findings(r)
    assert "not computed" in s[0]
    assert "vq is highest (0.150 [0.140, 0.160])" in s[2] and "were not given" in s[2]


def test_chd_sentence_changes_with_the_table(tmp_path):
    chd_values = {**CHD_VALUES, "vq": 0.01}
    s = cf.findings(results(tmp_path, {cf.METRICS_TABLE: token_metrics(chd_values)}))
    assert "vq has the lowest CHD (0.0100)" in s[1] and "rvq the highest (0.3400)" in s[1]


def test_chd_headline_figure(chd, tmp_path):
    png = tmp_path / "chd.png"
    caption = cf.headline_figure(chd, png)
    assert abs(Image.open(png).size[0] - WIDTH_PX) <= 3
    assert "over 40 images" in caption and "(noise, blur and shuffle)" in caption
    assert cf.headline_figure(results(tmp_path, {}), tmp_path / "none.png") is None


def test_chd_spec_delegates(chd):
    spec = CHD()
    assert spec.findings(chd) == cf.findings(chd)
    assert spec.has_headline_figure()
    plan = SimpleNamespace(view=lambda key, factory: SimpleNamespace(datasets=["natural", "t"]),
                           model_dataset_files=lambda p, ds: [p.format(model=m, dataset=d)
                                                              for d in ds for m in MODELS])
    assert spec.findings_inputs(plan) == [f"results/metrics/{m}/natural/tokens.csv"
                                          for m in MODELS]


def test_chd_undefined_rho_is_said(tmp_path):
    t = spearman()
    t.loc[2, cf.RHO_CMMS] = math.nan  # a constant CMMS series: no rank correlation
    s = cf.findings(results(tmp_path, {cf.SPEARMAN_TABLE: t}))[0]
    assert "n/a (shuffle)" in s and "rho undefined for shuffle" in s


def test_vtbench_table1_rows_beside_the_published_ones_on_the_papers_data(tmp_path):
    """The settings run on a set marked paper_data (ImageNet val at the model's size) print
    the run's models in Table 1 above the published rows; other settings are not invented."""
    from roundtrip.evals.vtbench.spec import EVALUATION as VTBENCH
    from roundtrip.report.assemble import published_of

    csv = tmp_path / "vtbench_table1.csv"
    pd.DataFrame({"model": ["my_vae"], "Params": ["1.0M"], "Type": ["continuous"],
                  "Resolution": ["256x256"],
                  "ImageNet (imagenet_val): PSNR (VTBench eval.)": [25.123456],
                  "ImageNet (imagenet_val): SSIM (VTBench eval.)": [0.7],
                  "High Resolution (highres): PSNR (VTBench eval.)": [22.0]}).to_csv(
        csv, index=False)
    config = {"datasets": {"imagenet_val": {"type": "folder", "paper_data": True},
                           "highres": {"type": "folder"}}}
    tables = [t for t in published_of(VTBENCH, RunResults({"vtbench_table1": csv},
                                                         config=config))
              if t.marked]
    assert len(tables) == 1 and "Table 1" in tables[0].title
    t = tables[0]
    first = dict(zip(t.header, t.rows[0]))
    assert first["row"] == "my_vae" and first["ImageNet: PSNR"] == "25.1235"
    assert first["ImageNet: SSIM"] == "0.7000"
    assert first["High Resolution: PSNR"] == "–"  # that set is not the paper's


def test_chd_cmms_above_the_originals_is_called_uncalibrated(tmp_path):
    """A flat-colour model whose reconstructions out-score the originals (beyond their CI) gets
    the hint right after the CMMS ranking; within the CI, none."""
    table = token_metrics()
    flat = table["model"] == "vq"
    table.loc[flat, "natural.cmms"] = 0.250
    s = cf.findings(results(tmp_path, {cf.METRICS_TABLE: table}))
    assert "vq is highest (0.250" in s[2]
    assert s[3].startswith("CMMS is uncalibrated here: on natural, vq scores above the "
                           "originals themselves (0.120, 95 % CI up to 0.163)")
    assert cf.calibration_sentence(results(tmp_path, {cf.METRICS_TABLE: token_metrics()})) is None


def test_token_table_notes_state_the_cmms_training_beside_the_papers():
    from roundtrip.evals.chd.tables import table_notes

    training = {"d_model": 64, "steps": 200, "bypass_steps": 8000, "batch_size": 32,
                "epochs": 1, "crops": 1024}
    notes = table_notes(["cmms_train"], ["natural"], False, training)
    assert len(notes) == 3 and "held out" in notes[1]
    assert notes[2].startswith("CMMS regressor: d_model 64, 200 steps after 8000 with the blocks "
                               "bypassed, batch 32, 1 epoch of 1024 crops; the paper's: d_model "
                               "512, batch 512, 200 epochs")
    assert len(table_notes(["cmms_train"], ["natural"], False)) == 2
