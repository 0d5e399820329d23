"""End to end: snakemake on a small config of real images, rerun, add a model, lint."""
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import skimage.data
import torch
import torchvision
import yaml
from conftest import REPO, requires_tesseract
from PIL import Image
from result_tables import reconstruction, reconstruction_files, reconstruction_text

pytestmark = [pytest.mark.workflow, requires_tesseract]


def smk(workdir, *args):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                           "--configfile", "config.yaml", "--cores", "2", *args],
                          cwd=workdir, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("wf")
    photos = work / "photos"
    photos.mkdir()
    Image.fromarray(skimage.data.coffee()).save(photos / "coffee.jpg", quality=92)
    Image.fromarray(skimage.data.camera()).save(photos / "camera.png")
    (photos / "broken.jpg").write_bytes(b"\xff\xd8\xff truncated")
    # LPIPS weights present (a random AlexNet under torchvision's file name), Inception absent:
    # LPIPS runs, FID/KID cells say n/a with the fetch command.
    cache = work / "weights"
    cache.mkdir()
    torch.manual_seed(0)
    torch.save(torchvision.models.alexnet().state_dict(), cache / "alexnet-owt-7be5be79.pth")
    config = {
        "datasets": {
            "tex": {"type": "skimage", "images": ["brick", "gravel"], "shards": 2},
            "scan": {"type": "skimage", "images": ["page"], "text_eval": True, "lang": "eng"},
            "mine": {"type": "folder", "path": str(photos)},
            "crops": {"type": "skimage", "images": ["chelsea"], "protocol": "model_size",
                      "size": 128},
            "qs": {"type": "vista_questions", "limit": 1, "styles": ["arial", "times"],
                   "sizes": [16], "table1": "grid", "text_eval": True, "models": ["identity", "bicubic_x4"]},
        },
        "models": {"identity": {"type": "identity"},
                   "bicubic_x4": {"type": "resample", "factor": 4},
                   "small_vq": {"type": "small", "family": "VQ", "channels": 16,
                                "codebook_size": 64,
                                "train": {"datasets": ["tex"], "steps": 10, "batch_size": 4,
                                          "crop": 32}}},
        "metrics": {
            "missing_weights": "n/a", "weights_cache": str(cache),
            "tokens": {"reference": "small_vq", "size": 64,
                       # trained on the scored set tex: in-sample, allowed for this tiny run
                       "cmms": {"d_model": 16, "heads": 2, "layers": 1, "steps": 20,
                                "batch_size": 8, "crops": 8, "pixel_variants": 1, "lr": 0.003,
                                "allow_overlap": True},
                       "sensitivity": {"dataset": "tex", "levels": 3, "crops_per_image": 1}},
        },
        # a second, offline OCR engine on one text set (the other keeps Tesseract alone)
        "ocr": {"engines": {"tesseract": {"type": "tesseract"},
                            "rapid": {"type": "rapidocr", "datasets": ["scan"]}}},
        "tables": {"bootstrap": {"samples": 200}},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    smk(work)
    return work, config


def test_tables_have_numbers_for_every_cell(run):
    work, _ = run
    rec = reconstruction(work)
    assert list(rec.index) == ["identity", "bicubic_x4", "small_vq"]
    for ds in ("tex", "scan", "mine"):
        assert rec.loc["identity", f"{ds}.psnr"] == math.inf
        assert rec.loc["identity", f"{ds}.ssim"] == pytest.approx(1.0, abs=1e-9)
        assert 10 < rec.loc["bicubic_x4", f"{ds}.psnr"] < 40
        assert 0 < rec.loc["bicubic_x4", f"{ds}.ssim"] < 1
    assert rec.loc["bicubic_x4", "mine.psnr.n"] == 2  # the broken file is not scored...
    md = reconstruction_text(work)
    assert "mine: 2 of 3 items scored" in md and "broken.jpg" in md  # ...and says why
    text = pd.read_csv(work / "results/tables/text_preservation.csv").set_index("model")
    assert text.loc["identity", "scan.cer"] == 0.0 and text.loc["identity", "scan.wer"] == 0.0
    assert text.loc["bicubic_x4", "scan.cer"] > 0.2


def test_rendered_text_set_feeds_the_text_table_only(run):
    work, _ = run
    m = pd.read_csv(work / "results/datasets/qs/manifest.csv")
    assert list(m["item_id"]) == ["q001__arial_16pt", "q001__times_16pt"]
    assert (m["width"] == 800).all() and m["text"].str.startswith("Which organ").all()
    audit = pd.read_csv(work / "results/datasets/qs/audit.csv")
    assert (audit["cer"] <= 0.1).all() and not audit["flagged"].any()
    text = pd.read_csv(work / "results/tables/text_preservation.csv").set_index("model")
    assert text.loc["identity", "qs.cer"] == 0.0
    assert text.loc["identity", "qs.cer_gt"] <= 0.1
    assert text.loc["bicubic_x4", "qs.cer"] > text.loc["identity", "qs.cer"]
    assert math.isnan(text.loc["small_vq", "qs.cer"])  # excluded by datasets.qs.models
    md = (work / "results/tables/text_preservation.md").read_text()
    assert "not run on this dataset (datasets.qs.models)" in md
    rec = reconstruction(work)
    assert not any(c.startswith("qs.") for c in rec.columns)
    assert not (work / "results/recon/small_vq/qs").exists()


def test_perceptual_metrics_and_missing_weights(run):
    work, _ = run
    rec = reconstruction(work)
    assert rec.loc["identity", "tex.lpips"] == pytest.approx(0.0, abs=1e-6)
    assert rec.loc["bicubic_x4", "tex.lpips"] > 0.01
    assert rec.loc["bicubic_x4", "mine.lpips.n"] == 2
    # FID/KID cannot run: no column of n/a per dataset, one note under the table
    assert not any(c.endswith((".fid", ".kid")) for c in rec.columns)
    assert "table: FID, KID not shown, n/a:" in rec.loc["bicubic_x4", "notes"]
    for path in reconstruction_files(work, "md"):  # one note per table
        md = path.read_text()
        assert "Note: FID, KID not shown, n/a:" in md and "roundtrip weights fetch inception-fid" in md
        assert md.count("weights-inception-2015-12-05-6726825d.pth") == 1, path
    assert "Note: FID, KID not shown" in reconstruction_text(work, "tex")
    # Text sets show Table 3's image-quality columns beside CER/WER (LPIPS: weights present)
    text = pd.read_csv(work / "results/tables/text_preservation.csv").set_index("model")
    assert text.loc["identity", "qs.psnr"] == math.inf and text.loc["identity", "scan.ssim"] == 1.0
    assert 0 < text.loc["bicubic_x4", "qs.ssim"] < 1 and text.loc["bicubic_x4", "qs.lpips"] > 0.01
    assert text.loc["bicubic_x4", "qs.psnr"] == pytest.approx(
        pd.read_csv(work / "results/metrics/bicubic_x4/qs/image_quality.csv")["psnr"].mean())
    assert not any(c.endswith(".fid") for c in text.columns)


def test_second_ocr_engine_on_the_sets_it_reads(run):
    """RapidOCR reads "scan" only: Table 5 has its columns there, Kendall's tau compares it with
    Tesseract on "scan", and "qs" keeps one engine (its tau row says so)."""
    work, _ = run
    rob = pd.read_csv(work / "results/tables/ocr_robustness.csv").set_index("model")
    assert rob.loc["identity", "scan/rapid.cer"] == 0.0
    assert rob.loc["bicubic_x4", "scan/rapid.cer"] > 0
    assert not any(c.startswith("qs/rapid") for c in rob.columns)
    assert not (work / "results/ocr/rapid/original/qs.csv").exists()
    ocr = pd.read_csv(work / "results/ocr/rapid/original/scan.csv")
    assert ocr.loc[0, "status"] == "ok" and "segmentation" in ocr.loc[0, "text"]
    tau = pd.read_csv(work / "results/tables/ocr_rank_agreement.csv")
    scan = tau[(tau["dataset"] == "scan") & (tau["metric"] == "CER")].iloc[0]
    assert (scan["engine_a"], scan["engine_b"], scan["n_models"]) == ("rapid", "tesseract", 3)
    assert "reading the dataset" in tau[tau["dataset"] == "qs"]["note"].iloc[0]


def test_one_reconstruction_table_per_vtbench_setting(run):
    work, _ = run
    tables = work / "results/tables"
    assert [p.name for p in reconstruction_files(work, "csv")] == [
        "reconstruction_model_size.csv", "reconstruction_native.csv"]  # no 1024 set
    size = pd.read_csv(tables / "reconstruction_model_size.csv")
    native = pd.read_csv(tables / "reconstruction_native.csv")
    assert {c.split(".")[0] for c in size.columns if "." in c} == {"crops"}
    assert {c.split(".")[0] for c in native.columns if "." in c} == {"tex", "scan", "mine"}
    assert "ImageNet setting" in (tables / "reconstruction_model_size.md").read_text()


def test_token_metrics_and_sensitivity(run):
    work, _ = run
    tok = pd.read_csv(work / "results/tables/token_metrics.csv").set_index("model")
    for ds in ("tex", "mine", "crops"):
        assert tok.loc["identity", f"{ds}.chd"] == 0.0  # same pixels, same tokens
        assert tok.loc["bicubic_x4", f"{ds}.chd"] > 0
    assert 0 < tok.loc["bicubic_x4", "tex.chd_2d"] <= 1
    assert tok.loc["identity", "tex.cmms"] == pytest.approx(tok.loc["identity", "tex.cmms_reference"])
    assert 0 <= tok.loc["bicubic_x4", "tex.cmms"] <= 1
    assert tok.loc["bicubic_x4", "mine.chd.n"] == 2
    sens = pd.read_csv(work / "results/tables/token_sensitivity.csv")
    assert len(sens) == 3 * 4 and set(sens["kind"]) == {"noise", "blur", "shuffle"}
    assert (sens[sens["level"] == 0]["chd"] == 0).all()
    assert (sens[sens["level"] == 3]["chd"] > 0).all()
    assert (work / "results/figures/token_sensitivity.png").stat().st_size > 10_000
    assert "Spearman(level, CMMS)" in (work / "results/tables/token_sensitivity.md").read_text()


def test_detail_table_covers_every_dataset(run):
    work, _ = run
    det = pd.read_csv(work / "results/tables/detail_statistics.csv").set_index("dataset")
    assert list(det.index) == ["tex", "scan", "mine", "crops", "qs"]
    assert det.loc["mine", "originals.edge_density_pct.n"] == 2  # broken file not scored
    assert det.loc["tex", "originals.edge_density_pct"] > det.loc["mine", "originals.edge_density_pct"]
    # power share above the cutoff (App. D): a few percent for photographs, most of it for
    # textures and rendered text
    assert 2 < det.loc["mine", "originals.hf_energy_pct"] < 20
    assert det.loc["tex", "originals.hf_energy_pct"] > 3 * det.loc["mine", "originals.hf_energy_pct"]
    assert "Dataset" in (work / "results/tables/detail_statistics.md").read_text()


def test_trained_tokenizer_protocols_and_model_card(run):
    work, _ = run
    assert (work / "results/weights/small_vq/model.pt").exists()
    rec = reconstruction(work)
    assert 5 < rec.loc["small_vq", "tex.psnr"] < rec.loc["identity", "tex.psnr"]
    assert rec.loc["identity", "crops.psnr"] == math.inf  # scored against the protocol reference
    crop = np.asarray(Image.open(work / "results/recon/small_vq/crops/chelsea.png"))
    assert crop.shape == (128, 128, 3)
    status = pd.read_csv(work / "results/recon/small_vq/crops/status.csv")
    assert status.loc[0, "reference"] == "ref/chelsea.png"
    card = pd.read_csv(work / "results/tables/model_card.csv").set_index("model")
    assert card.loc["small_vq", "family"] == "VQ" and card.loc["small_vq", "codebook_size"] == "64"
    assert card.loc["small_vq", "latent_256"] == "8x64x64"
    assert card.loc["small_vq", "ratio_256"] == pytest.approx(8 * 64 * 64 / (3 * 256 * 256))
    assert card.loc["bicubic_x4", "latent_512"] == "3x128x128"
    assert "0.0208" in (work / "results/tables/model_card.md").read_text()


def test_tokens_and_latents_on_request(run):
    work, _ = run
    smk(work, "results/recon/small_vq/tex/tokens.npz", "results/recon/identity/tex/tokens.npz")
    tokens = np.load(work / "results/recon/small_vq/tex/tokens.npz")
    latents = np.load(work / "results/recon/small_vq/tex/latents.npz")
    assert sorted(tokens.files) == ["brick", "gravel"]
    assert tokens["brick"].shape == (128, 128) and tokens["brick"].dtype == np.int32
    assert 0 <= tokens["brick"].min() and tokens["brick"].max() < 64
    assert latents["brick"].shape == (8, 128, 128) and latents["brick"].dtype == np.float16
    codes = pd.read_csv(work / "results/recon/identity/tex/codes.csv", keep_default_na=False)
    assert (codes["status"] == "ok").all() and "no discrete tokens" in codes.loc[0, "reason"]
    assert np.load(work / "results/recon/identity/tex/tokens.npz").files == []


def test_per_item_files_follow_the_contracts(run):
    work, _ = run
    status = pd.read_csv(work / "results/recon/bicubic_x4/mine/status.csv").set_index("item_id")
    assert status.loc["broken", "status"] == "error"
    assert set(status["status"]) == {"ok", "error"}
    iq = pd.read_csv(work / "results/metrics/bicubic_x4/tex/image_quality.csv")
    assert iq.columns[0] == "item_id" and set(iq["item_id"]) == {"brick", "gravel"}
    recon = np.asarray(Image.open(work / "results/recon/bicubic_x4/tex/brick.png"))
    assert recon.shape == (512, 512, 3)
    ocr = pd.read_csv(work / "results/ocr/tesseract/original/scan.csv", keep_default_na=False)
    assert "markers" in ocr.loc[0, "text"]


def test_lean_jobs(run):
    """One job per (model, dataset) of a user's set or a sharded set, one per model for the
    packaged sets, no merge or metric-only jobs: a plan from scratch counts exactly the jobs
    the config needs."""
    work, config = run
    plan = smk(work, "-n", "--forceall", "--quiet", "rules")
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", plan, re.M)}
    others = ("reconstruct_shard", "reconstruction_table")
    jobs = {k: v for k, v in counts.items() if k.startswith("reconstruct") and k not in others}
    # 3 models x 4 sets and 2 on qs (datasets.qs.models) in 9 jobs instead of 14
    assert jobs == {"reconstruct_perceptual_tokens": 3 * 2,  # tex (2 shards), mine (a folder)
                    # crops, scan and qs: packaged, one job per model on 2 cores (crops and
                    # scan are scored by the reference tokenizer and CMMS)
                    "reconstruct_sets_tokens": 2,  # the two models run on qs
                    "reconstruct_sets_tokens_2": 1}
    assert counts["reconstruct_shard"] == 3 * 2  # tex: 2 shards
    # originals read once per (engine, set), the packaged sets in one job per engine: scan
    # and qs by Tesseract, scan by RapidOCR; the four packaged sets built in two jobs
    assert counts["ocr_original_sets"] == 1 and counts["ocr_original_sets_2"] == 1
    assert "ocr_original" not in counts and counts["train_reference_tokenizer"] == 1
    assert counts["build_image_sets"] == counts["build_rendered_sets"] == 1
    assert counts["build_dataset"] == 1  # "mine": a user's folder
    for gone in ("merge_status", "image_quality", "perceptual", "token_metrics", "text_metrics",
                 "ocr", "volume_metrics"):
        assert gone not in counts


def test_snakemake_report_holds_every_table(run, tmp_path):
    import zipfile

    work, _ = run
    smk(work, "--report", str(tmp_path / "report.zip"))
    names = zipfile.ZipFile(tmp_path / "report.zip").namelist()
    tables = {n.rsplit("/", 1)[-1] for n in names if n.endswith(".csv")}
    expected = {p.name for p in (work / "results/tables").glob("*.csv")}
    # token_sensitivity_spearman too; Table 1 as one table per setting (native, model size)
    # and as the paper prints it (vtbench_table1); the OCR's readability of the references
    assert len(expected) == 12 and "ocr_readability.csv" in expected and tables == expected
    assert any(n.endswith("token_sensitivity.png") for n in names)
    html = next(n for n in names if n.endswith("report.html"))
    text = zipfile.ZipFile(tmp_path / "report.zip").read(html).decode()
    assert "VTBench" in text
    # the front page is the run's findings (results/summary.rst, written with the PDF), and
    # the headline figures are in the report
    assert "What this run found" in text
    summary = (work / "results/summary.rst").read_text()
    findings = [line[2:] for line in summary.splitlines()
                if line.startswith("- ") and not line.startswith("- **")]
    numbers = re.findall(r"\d+\.\d+ \[\d+\.\d+, \d+\.\d+\]", " ".join(findings))
    assert numbers and all(n in text for n in numbers[:5])  # a value with its CI
    assert any(n.endswith("/vtbench.png") for n in names)  # results/figures/headline/


def test_second_run_does_nothing(run):
    work, _ = run
    assert "Nothing to be done" in smk(work, "-n")


def test_adding_a_model_runs_only_its_jobs_and_the_tables(run):
    work, config = run
    config["models"]["jpeg_q10"] = {"type": "jpeg", "quality": 10}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plan = smk(work, "-n")
    models = set(re.findall(r"model=([^,\s]+)", plan))
    assert models == {"jpeg_q10"}, models
    # (a dry run prints a cluster group's jobs indented under it)
    rules = set(re.findall(r"^\s*(?:local)?rule (\w+):", plan, re.M))
    assert not {"build_dataset", "build_image_sets", "build_rendered_sets", "train_tokenizer",
                "train_reference_tokenizer"} & rules
    assert "train_cmms" not in rules and "token_sensitivity" not in rules
    # one job per (model, dataset) of the user's and sharded sets, one for the packaged sets,
    # reconstructs and scores (LPIPS too: its weights are present; CHD/CMMS on the token
    # datasets, OCR and CER/WER on the text set); "tex" is cut into shards
    assert {"reconstruct_perceptual_tokens", "reconstruct_shard",
            "reconstruction_table", "token_table", "text_preservation_table"} <= rules
    assert any(r.startswith("reconstruct_sets") for r in rules)  # its one batched job
    assert not {"ocr_original", "ocr_original_sets", "detail_table"} & rules
    # OCR of the originals is reused, not recomputed
    assert "results/ocr/tesseract/original/scan.csv" not in re.findall(r"output: (\S+)", plan)
    smk(work)
    rec = reconstruction(work)
    assert rec.loc["jpeg_q10", "tex.psnr"] < rec.loc["identity", "tex.psnr"]


def test_jobs_claim_no_more_threads_than_they_can_use(run):
    """A job's threads hold cores the scheduler could give to others: one for a small set of
    Tesseract work or a set built by a single process, the cap where the item count is not
    known, half the cores for CMMS."""
    work, _ = run
    plan = smk(work, "-n", "--forceall")
    claims = {}
    for block in re.split(r"\n(?=\s*(?:local)?rule )", plan):
        rule = re.match(r"\s*(?:local)?rule (\w+):", block)
        if rule:
            wildcards = re.search(r"wildcards: (.*)", block)
            threads = re.search(r"threads: (\d+)", block)
            claims[(rule.group(1), wildcards.group(1) if wildcards else "")] = \
                int(threads.group(1)) if threads else 1
    # bundled photographs ("tex" among them): no workers
    assert claims[("build_image_sets", "")] == 1
    assert claims[("build_rendered_sets", "")] == 1  # rendered, a few items: one core
    # one page and a few questions, read in one job
    assert claims[("ocr_original_sets", "ocr=tesseract")] == 1
    assert claims[("train_cmms", "reference=small_vq")] == 1  # --cores 2 // 2


def test_lint_is_clean():
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "Lints for" not in proc.stdout + proc.stderr
