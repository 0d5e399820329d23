"""VTBench's and CHD/CMMS's findings and headline figures (evals/vtbench/findings.py,
evals/chd/findings.py) on small tables and per-item files with known numbers."""
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from roundtrip.evals.chd import findings as cf
from roundtrip.evals.chd.spec import CHD
from roundtrip.evals.vtbench import findings as vf
from roundtrip.evals.vtbench import readability as rd
from roundtrip.evals.vtbench.spec import VTBench
from roundtrip.evals.vtbench.tables import reconstruction_columns, text_columns
from roundtrip.metrics.stats import bootstrap_mean
from roundtrip.metrics.text import Normalization
from roundtrip.report import style
from roundtrip.report.findings import RunResults, with_ci
from roundtrip.tables import build_table, write_frame, write_table

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
    # four items: the interval excludes 0, but Wilcoxon's test cannot reject (p >= 2/16)
    assert "jpeg and the runner-up kl are indistinguishable" in s and "beats" not in s
    assert f"+{diff.mean():.2f}" in s and "their 4 shared items" in s and "p = 0.25" in s


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
    assert order.index("text_preservation") < order.index("ocr_rank_agreement")
    # Tables 4 and 5, the references' readability and the model card are whole in the appendix
    assert not {"detail_statistics", "ocr_robustness", "ocr_readability", "model_card"} \
        & set(order)
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


# -- page 1 on tables built by the table engine: whichever protocol ran, what the tables hold,
# -- and the text sets whose OCR reference is unreadable -----------------------------------------
NATIVE = "my_photos"
UNSUPPORTED = "fixed-size model (256 x 256) cannot take native sizes"
#: per-item PSNR and SSIM of a user's native-protocol set; vq_256 cannot take native sizes
NATIVE_ITEMS = {"identity": ([math.inf] * 3, [1.0] * 3, math.inf),
                "jpeg": ([33.0, 34.0, 35.0], [0.95, 0.96, 0.94], 31.2),
                "my_vae": ([30.0, 31.0, 32.0], [0.80, 0.85, 0.82], 27.31),
                "vq_256": ([math.nan] * 3, [math.nan] * 3, math.nan)}


def quality_files(root, model, dataset, psnr, ssim, psnr_vtbench, kinds=("item", "set")):
    """A reconstruction job's image_quality.csv and set.csv; returns build_table's entries."""
    d = root / "metrics" / model / dataset
    d.mkdir(parents=True, exist_ok=True)
    ok = not math.isnan(psnr_vtbench)
    pd.DataFrame({"item_id": [f"i{k}" for k in range(len(psnr))],
                  "status": "ok" if ok else "unsupported", "reason": "" if ok else UNSUPPORTED,
                  "psnr": psnr, "ssim": ssim, "ssim_vtbench": ssim,
                  "ssim_pair_range": ssim}).to_csv(d / vf.ITEM_FILE, index=False)
    pd.DataFrame([{"metric": m, "value": psnr_vtbench, "n": len(psnr) if ok else 0, "note": ""}
                  for m in ("psnr_vtbench", "psnr_pooled", "psnr_range")]).to_csv(
        d / "set.csv", index=False)
    return {(model, dataset, kinds[0]): str(d / vf.ITEM_FILE),
            (model, dataset, kinds[1]): str(d / "set.csv")}


def native_run(root, models):
    """A run whose only image set uses the default native protocol: reconstruction_native
    built and written by the table engine, the per-item files declared to the findings."""
    files = {}
    for m in models:
        files |= quality_files(root, m, NATIVE, *NATIVE_ITEMS[m])
    table = build_table("reconstruction_native", "t", models,
                        reconstruction_columns([NATIVE], {NATIVE: "native"}), files, BOOT)
    write_table(table, root / "tables")
    return RunResults({"reconstruction_native": root / "tables/reconstruction_native.csv"},
                      [Path(f) for (_, _, k), f in files.items() if k == "item"], models, BOOT)


def test_vtbench_page1_gives_the_users_model_under_the_native_protocol(tmp_path):
    """A user's run with the default native protocol: page 1 gives the model's PSNR there."""
    s = vf.findings(native_run(tmp_path, ["identity", "my_vae"]))
    assert s == [
        "At native size (my_photos, VTBench Table 1's varying-resolution setting) my_vae is the "
        "only model with a finite PSNR (VTBench eval.): 27.31 dB; identity is left out (PSNR = "
        "inf: every item reconstructed exactly); there is no runner-up to compare with.",
        "CER was not computed: the run has no text set (table text_preservation)."]


def test_vtbench_page1_names_every_model_and_why_one_has_no_value(tmp_path):
    r = native_run(tmp_path, ["identity", "jpeg", "my_vae", "vq_256"])
    s = vf.findings(r)
    assert s[0] == (
        "At native size (my_photos, VTBench Table 1's varying-resolution setting), jpeg has the "
        "highest PSNR (VTBench eval.), 31.20 dB, and my_vae the lowest, 27.31 dB, of 2 models; "
        "identity is left out (PSNR = inf: every item reconstructed exactly); vq_256 (0 of 3 "
        f"items scored; not scored: unsupported: {UNSUPPORTED} (3x)) has no value there.")
    assert s[1] == ("On per-item PSNR (dB), jpeg and the runner-up my_vae are indistinguishable: "
                    "the paired difference over their 3 shared items is +3.00 [3.00, 3.00], but "
                    "Wilcoxon's test gives p = 0.25.")
    ci = {m: with_ci(bootstrap_mean(NATIVE_ITEMS[m][1], 200, 0.95, 0), 4)
          for m in ("jpeg", "my_vae")}
    assert s[2] == (f"On SSIM (VTBench eval.) on my_photos, jpeg is highest ({ci['jpeg']}) and "
                    f"my_vae lowest ({ci['my_vae']}), the same two as PSNR.")
    # the paired comparison reads the per-item files the spec declares for that setting
    plan = SimpleNamespace(config={"datasets": {NATIVE: {"protocol": "native"},
                                                "other": {"protocol": "native"}}},
                           recon_datasets=[NATIVE, "other"],
                           model_dataset_files=lambda p, ds: [p.format(model=m, dataset=d)
                                                              for d in ds for m in MODELS])
    assert VTBench().findings_inputs(plan) == [f"results/metrics/{m}/{NATIVE}/image_quality.csv"
                                               for m in MODELS]


def test_vtbench_page1_prefers_the_model_size_setting_where_it_ran(tmp_path):
    r = native_run(tmp_path, ["identity", "jpeg", "my_vae"])
    frames = {vf.MODEL_SIZE_TABLE: model_size_table()}
    r.tables |= write_tables(tmp_path, **frames)
    assert vf.headline_table(r)[0] == vf.MODEL_SIZE_TABLE
    assert vf.findings(r)[0].startswith("At the model's input size (natural_256, VTBench "
                                        "Table 1's ImageNet setting), jpeg has the highest")


#: the text sets of a user's run: CER (VTBench eval.) per model; abstracts' originals are
#: unreadable at 256 -> 1024 px
TEXT_CER = {"posters": {"identity": 0.0, "jpeg_q75": 0.0552, "kl": 0.41},
            "abstracts": {"identity": 0.0, "jpeg_q75": 0.7514, "kl": 0.98}}
#: ground truth, and the originals' readings at full size and in the released view
TEXT_READINGS = {"posters": ("NIGHT TRAIN", "NIGHT TRAIN", "NIGHT TRAlN"),
                 "abstracts": ("Tokenizers lose dense text", "Tokenizers lose dense text",
                               "Tkn")}


def text_run(root, models):
    """text_preservation and ocr_readability as their jobs build and write them, from the
    reconstruction jobs' files and the OCR files of the originals."""
    files, refs, manifests = {}, [], {}
    for d, cers in TEXT_CER.items():
        for m in models:
            exact = m == "identity"
            files |= quality_files(root, m, d, [math.inf if exact else 30.0] * 2, [1.0] * 2,
                                   math.inf if exact else 30.0, ("quality", "quality_set"))
            folder = root / "metrics" / m / d
            pd.DataFrame({"item_id": ["i0", "i1"], "status": "ok", "reason": "",
                          **dict.fromkeys(("cer", "wer", "cer_norm", "wer_norm"),
                                          cers[m])}).to_csv(folder / "text.csv", index=False)
            pd.DataFrame([{"metric": k, "value": cers[m], "n": 2, "note": ""}
                          for k in ("cer_vtbench", "wer_vtbench", "wer_words_vtbench")]).to_csv(
                folder / "text_set.csv", index=False)
            files[(m, d, "item")] = str(folder / "text.csv")
            files[(m, d, "text_set")] = str(folder / "text_set.csv")
        truth, full, view = TEXT_READINGS[d]
        (root / d).mkdir()
        manifests[d] = root / d / "manifest.csv"
        pd.DataFrame({"item_id": ["i0"], "path": ["i0.png"], "status": "ok", "text": [truth],
                      "lang": "eng"}).to_csv(manifests[d], index=False)
        for v, text in (("full", full), ("vtbench", view)):
            path = root / f"{d}.{v}.csv"
            pd.DataFrame({"item_id": ["i0"], "text": [text], "status": "ok",
                          "reason": ""}).to_csv(path, index=False)
            refs.append({"dataset": d, "engine": "tesseract", "view": v, "path": str(path)})
    table = build_table(vf.TEXT_TABLE, "t", models,
                        text_columns({"Posters": ["posters"], "ArXiv": ["abstracts"]},
                                     {"posters": False, "abstracts": False}), files, BOOT)
    write_table(table, root / "tables")
    readability = rd.readability_table(refs, manifests, {}, Normalization(), rd.Thresholds(),
                                       "tesseract")
    write_frame(rd.display_frame(readability), rd.READABILITY_TABLE, "t", [], root / "tables",
                csv_frame=readability)
    return {name: root / "tables" / f"{name}.csv" for name in (vf.TEXT_TABLE,
                                                              rd.READABILITY_TABLE)}


#: abstracts' released reading "Tkn" keeps 3 of the 26 characters in order: 23 deletions
ABSTRACTS_CER = 23 / 26
CER_WHAT = ("OCR of each reconstruction against the OCR of its original, the released "
            "evaluator's where a set has it, lower is better; VTBench Table 3")
LEFT_OUT = (f"The CER of abstracts is left out of this comparison, as the OCR cannot read its "
            f"reference: tesseract reads their originals at 256 -> 1024 px (VTBench "
            f"eval.) with a CER of {ABSTRACTS_CER:.4f} against the ground truth (above "
            f"ocr.readability.max_cer 0.5), so those cells compare one unreadable text with "
            f"another (table ocr_readability).")


def test_vtbench_cer_counts_the_models_the_table_holds(tmp_path):
    """identity and jpeg_q75 both have a CER: the sentence says what the table holds, not
    that no set has two models."""
    tables = text_run(tmp_path, ["identity", "jpeg_q75"])
    no_readability = RunResults({vf.TEXT_TABLE: tables[vf.TEXT_TABLE]}, [],
                                ["identity", "jpeg_q75"], BOOT)
    assert vf.cer_sentence(no_readability) == (
        f"On CER ({CER_WHAT}), jpeg_q75 is the only model compared: CER 0.0552 to 0.7514 on 2 "
        "text sets; identity, exact (PSNR = inf), is left out (CER 0.0000 on 2 text sets).")
    assert vf.cer_sentence(RunResults(tables, [], ["identity", "jpeg_q75"], BOOT)) == (
        f"On CER ({CER_WHAT}), jpeg_q75 is the only model compared: CER 0.0552 on 1 text set; "
        f"identity, exact (PSNR = inf), is left out (CER 0.0000 on 1 text set). {LEFT_OUT}")


def test_vtbench_cer_ranking_leaves_out_unreadable_references(tmp_path):
    from roundtrip.metrics.text import text_errors

    assert text_errors(*TEXT_READINGS["abstracts"][::2])[0] == ABSTRACTS_CER
    models = ["identity", "jpeg_q75", "kl"]
    r = RunResults(text_run(tmp_path, models), [], models, BOOT)
    # ranked on the posters alone: abstracts' 0.7514 and 0.98 are noise against noise
    assert vf.cer_sentence(r) == (
        f"On CER over 1 text set ({CER_WHAT}), jpeg_q75 is lowest on 1 (CER 0.0552) and kl "
        f"highest on 1 (CER 0.4100); identity left out as exact. {LEFT_OUT}")
    assert vf.findings(r)[-1] == vf.cer_sentence(r) and len(vf.findings(r)) == 2
    assert vf.cer_points(r, {"identity": 1.0, "kl": 1 / 6}) == {
        "posters": {"identity": 0.0, "kl": 0.41}}
    r.tables |= write_tables(tmp_path, **{vf.CARD_TABLE: pd.DataFrame(
        {"model": models, "family": ["codec", "codec", "continuous"],
         "ratio_256": [1.0, math.nan, 1 / 6]})})
    caption = vf.headline_figure(r, tmp_path / "vt.png")
    assert caption.endswith("Not in the CER panel: abstracts (the OCR engine cannot read their "
                            "originals in the view the CER scores against: table "
                            "ocr_readability).")


def test_vtbench_cer_when_every_reference_is_unreadable(tmp_path):
    models = ["identity", "jpeg_q75"]
    r = RunResults(text_run(tmp_path, models), [], models, BOOT)
    frame = pd.read_csv(r.tables[rd.READABILITY_TABLE])
    posters = (frame["dataset"] == "posters") & (frame["view"] == "vtbench")
    frame.loc[posters, ["readable", "over", "empty_share"]] = ["no", "empty", 1.0]
    frame.to_csv(r.tables[rd.READABILITY_TABLE], index=False)
    assert vf.cer_sentence(r) == (
        "CER was not compared: the reference of every one of the 2 text sets is unreadable. "
        "The CER of posters and abstracts is left out of this comparison, as the OCR cannot "
        "read their reference: tesseract reads no text in a share of 1.00 of the originals of "
        "posters at 256 -> 1024 px (VTBench eval.) (above ocr.readability.max_empty 0.5); "
        "tesseract reads the originals of abstracts at 256 -> 1024 px (VTBench eval.) with a CER "
        f"of {ABSTRACTS_CER:.4f} against the ground truth (above ocr.readability.max_cer 0.5), "
        "so those cells compare one unreadable text with another (table ocr_readability).")
