"""The plan of a run (roundtrip.workflow.plan) on the shipped config and on small ones."""
import copy

import pytest
import yaml
from conftest import REPO

from roundtrip.evals.chd.plan import training_datasets
from roundtrip.evals.chd.spec import CHD
from roundtrip.evals.medibench.spec import MediBench
from roundtrip.evals.telephone.spec import Telephone
from roundtrip.evals.vista.spec import Vista
from roundtrip.evals.vtbench.spec import VTBench
from roundtrip.workflow.plan import PARALLEL_ITEMS, Plan, regex_of, table_files
from roundtrip.workflow.checks import validate_config


def vista(plan):
    return Vista.view(plan)


def telephone(plan):
    return Telephone.view(plan)


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate_config(config, str(REPO / "config.schema.yaml"))  # fills in the schema's defaults
    return config


@pytest.fixture(scope="module")
def shipped():
    return validated(yaml.safe_load((REPO / "config.yaml").read_text()))


@pytest.fixture(scope="module")
def plan(shipped):
    return Plan(shipped, cores=2)


def small(**datasets) -> dict:
    base = {"datasets": datasets or {"photos": {"type": "skimage", "images": ["astronaut"]}},
            "models": {"identity": {"type": "identity"},
                       "vq": {"type": "small", "family": "VQ", "train": {"steps": 5}}}}
    return validated(base)


def test_roles_of_the_shipped_datasets(plan):
    assert plan.recon_datasets == ["natural", "textures", "natural_256", "highres_1024",
                                   "scanned_text"]
    assert plan.text_datasets == ["scanned_text", "abstracts", "multilingual_zh",
                                  "multilingual_ja", "multilingual_ko", "multilingual_hi",
                                  "posters", "vista_questions"]
    assert MediBench.view(plan).medical_2d == ["medical_2d"]
    assert MediBench.view(plan).volume_datasets == ["mri_nibabel", "synthetic_3d"]
    assert MediBench.view(plan).latent_datasets == ["medical_2d", "synthetic_3d"]  # nibabel's MRI: no labels
    assert "synthetic_3d" not in plan.image_datasets and "abstracts" in plan.image_datasets
    assert plan.general_datasets == plan.recon_datasets + plan.text_datasets[1:]
    assert CHD.view(plan).datasets == ["natural", "natural_256", "textures"]


def test_pairs_follow_datasets_models(plan, shipped):
    text_models = shipped["datasets"]["abstracts"]["models"]
    assert plan.models_on("abstracts") == text_models
    assert plan.model_datasets(["abstracts"]) == [(m, "abstracts") for m in plan.models
                                         if m in text_models]
    reasons = plan.not_run(["abstracts"])
    assert set(reasons) == {(m, "abstracts") for m in plan.models if m not in text_models}
    assert all(r == "not run on this dataset (datasets.abstracts.models)" for r in reasons.values())
    assert plan.model_dataset_files("x/{model}/{dataset}", ["natural"])[0] == "x/identity/natural"
    assert MediBench.view(plan).models == ["identity", "bicubic_x4", "small_kl", "small_vq"]


def test_medibench_jobs_are_given_the_files_they_read(plan):
    """The MediBench tables and panels take every file from their rule: the mappings match the
    pairs that run, and the panel's columns follow the dataset's models."""
    medical = MediBench.view(plan)
    files = medical.table_files
    assert list(files["manifests"]) == medical.datasets
    assert list(files["quality"]) == plan.model_datasets(medical.datasets)
    assert list(files["structure"]) == plan.model_datasets(medical.volume_datasets)
    assert list(files["latent"]) == plan.model_datasets(medical.latent_datasets) + [
        ("original", d) for d in medical.latent_datasets]
    assert files["quality"][("small_vq", "medical_2d")] == \
        "results/metrics/small_vq/medical_2d/image_quality.csv"
    assert files["latent"][("original", "synthetic_3d")] == \
        "results/metrics/original/synthetic_3d/latent_utility.csv"
    status = medical.panel_status("medical_2d")
    assert list(status) == plan.models_on("medical_2d")
    assert status["small_kl"] == "results/recon/small_kl/medical_2d/status.csv"


def test_small_volume_sets_share_one_job_per_model(plan, shipped):
    """Volume sets with no path (bundled, synthetic) are reconstructed in one job per model,
    each with the files and settings its own job would have; a user's volumes (a path) and
    ``run.batch_packaged_sets: false`` keep one job per (model, dataset)."""
    medical = MediBench.view(plan)
    volume_models = [m for m in plan.models if m in plan.models_on("synthetic_3d")]
    assert medical.volume_batches() == [
        ("reconstruct_volume_sets", volume_models, ["mri_nibabel", "synthetic_3d"])]
    jobs = medical.volume_jobs(["mri_nibabel", "synthetic_3d"], "small_vq")
    assert [j["dataset"] for j in jobs] == ["mri_nibabel", "synthetic_3d"]
    assert jobs[1]["outputs"] == {
        "status": "results/recon/small_vq/synthetic_3d/status.csv",
        "image_quality": "results/metrics/small_vq/synthetic_3d/image_quality.csv",
        "structure": "results/metrics/small_vq/synthetic_3d/structure.csv",
        "latent_utility": "results/metrics/small_vq/synthetic_3d/latent_utility.csv"}
    assert "latent_utility" not in jobs[0]["outputs"]  # nibabel's MRI has no labels
    assert jobs[1]["seg_status"] == "results/segment/gmm/original/synthetic_3d/status.csv"
    assert jobs[1]["seg_dir"] == "results/segment/gmm/small_vq/synthetic_3d"
    assert jobs[1]["settings"]["latent"] == medical.latent_settings("synthetic_3d")
    assert jobs[1]["settings"]["axis"] == shipped["medical"]["axis"]
    assert medical.segment_jobs(["synthetic_3d"]) == [
        {"dataset": "synthetic_3d", "manifest": "results/datasets/synthetic_3d/manifest.csv",
         "status": "results/segment/gmm/original/synthetic_3d/status.csv"}]

    config = copy.deepcopy(shipped)
    config["datasets"]["mri_nibabel"]["models"] = ["identity"]
    assert MediBench.view(Plan(config, cores=2)).volume_batches() == [
        ("reconstruct_volume_sets", ["identity"], ["mri_nibabel", "synthetic_3d"]),
        ("reconstruct_volume_sets_2", ["small_kl", "small_vq"], ["synthetic_3d"])]
    config["datasets"]["mri_nibabel"] = {"type": "nifti", "path": "/data/mri",
                                         "models": ["identity"]}
    medical = MediBench.view(Plan(config, cores=2))
    assert not medical.volume_batched("mri_nibabel") and medical.volume_batched("synthetic_3d")
    assert [b[2] for b in medical.volume_batches()] == [["synthetic_3d"]]
    config["run"]["batch_packaged_sets"] = False
    assert MediBench.view(Plan(config, cores=2)).volume_batches() == []


def test_small_packaged_sets_are_built_in_one_job_per_kind(plan, shipped):
    """Packaged image sets, rendered text sets and volume sets with no path are built in one
    job per kind, each set into the files its own job would write; a user's set, a set of
    another type and ``run.batch_packaged_sets: false`` keep a build job of their own."""
    assert plan.builds.batches() == [
        ("build_image_sets", ["natural", "textures", "cmms_train", "cmms_photos",
                              "natural_256", "highres_1024", "scanned_text", "medical_2d"]),
        ("build_rendered_sets", ["abstracts", "multilingual_zh", "multilingual_ja",
                                 "multilingual_ko", "multilingual_hi", "posters",
                                 "vista_questions"]),
        ("build_volume_sets", ["mri_nibabel", "synthetic_3d"])]
    assert plan.builds.group("telephone_captions") is None  # chain inputs: a job of its own
    job = plan.builds.jobs(["multilingual_zh"])[0]
    assert job["manifest"] == "results/datasets/multilingual_zh/manifest.csv"
    assert job["spec"] == plan.builds.spec("multilingual_zh")  # render and audit included
    assert "render" in job["spec"]
    mixed = small(photos={"type": "skimage", "images": ["astronaut"]},
                  mine={"type": "folder", "path": str(REPO)},
                  scans={"type": "nifti", "path": "/data/ct"},
                  phantoms={"type": "synthetic_volumes", "count": 2})
    p = Plan(mixed, cores=2)
    assert p.builds.batches() == [("build_image_sets", ["photos"]),
                                 ("build_volume_sets", ["phantoms"])]
    assert p.builds.group("mine") is None and p.builds.group("scans") is None
    off = copy.deepcopy(shipped)
    off["run"]["batch_packaged_sets"] = False
    assert Plan(off, cores=2).builds.batches() == []


def test_originals_of_packaged_text_sets_are_read_in_one_job_per_engine(plan, shipped):
    """The OCR of the originals of the packaged text sets runs in one job per engine (engines
    reading the same sets share a rule), each set into the file its own job would write; a
    user's text set keeps an ocr_original job of its own."""
    assert VTBench.ocr_batches(plan) == [
        ("ocr_original_sets", ["tesseract"], plan.text_datasets),
        ("ocr_original_sets_2", ["rapidocr"], ["posters"])]
    job = VTBench.ocr_jobs(plan, ["multilingual_ko"], "tesseract")[0]
    assert job == {"dataset": "multilingual_ko",
                   "manifest": "results/datasets/multilingual_ko/manifest.csv", "lang": "kor",
                   "ocr": "results/ocr/tesseract/original/multilingual_ko.csv",
                   # the same originals read again as the released evaluator sees them
                   "view": "results/ocr/tesseract/original/multilingual_ko.vtbench.csv",
                   "read_view": True}
    config = copy.deepcopy(shipped)
    config["datasets"]["scanned_text"] = {"type": "folder", "path": str(REPO),
                                          "text_eval": True, "lang": "eng"}
    p = Plan(config, cores=2)
    assert not VTBench.ocr_batched(p, "scanned_text")
    assert "scanned_text" not in VTBench.ocr_batches(p)[0][2]


def test_model_specs_and_training(plan):
    spec = plan.spec_of("small_vq")
    assert spec["checkpoint"] == "results/weights/small_vq/model.pt"
    assert "checkpoint" not in plan.spec_of("jpeg_q75")
    assert plan.weights_of("jpeg_q75") == [] and plan.trained_models[0] == "small_kl"
    settings = plan.train_settings("small_kl")
    assert settings["steps"] == 400 and settings["datasets"] == ["natural", "textures"]
    p = Plan(small())
    assert p.train_settings("vq")["steps"] == 5
    assert p.train_settings("vq")["datasets"] == ["photos"]  # default: the first dataset


def test_the_build_the_reference_tokenizer_trains_on_goes_first(plan):
    """CHD's reference tokenizer (small_vq) trains on natural and textures, and CMMS waits for
    it: their batched build gets the training's priority, the other builds the usual one."""
    assert set(plan.train_settings("small_vq")["datasets"]) == {"natural", "textures"}
    priorities = {rule: plan.builds.priority(sets) for rule, sets in plan.builds.batches()}
    assert priorities == {"build_image_sets": 50, "build_rendered_sets": 20,
                          "build_volume_sets": 20}


def test_dataset_spec_holds_only_keys_that_change_the_files(plan, shipped):
    natural = plan.builds.spec("natural_256")
    assert natural["images"] == shipped["datasets"]["natural_256"]["images"]
    assert natural["type"] == "skimage" and natural["lang"] == "eng"
    assert not {"protocol", "size", "models", "text_eval", "shards"} & set(natural)
    rendered = plan.builds.spec("abstracts")
    assert rendered["render"] == shipped["render"] and "models" not in rendered
    assert rendered["normalization"] == shipped["ocr"]["normalization"]
    # how many renders the judge may leave without a verdict changes page 1, not the renders
    strict = copy.deepcopy(plan.config)
    strict["audit"]["max_no_verdict"] = 0.1
    assert Plan(strict).builds.spec("abstracts") == rendered


def test_threads_claim_no_idle_core(plan):
    assert plan.item_threads("multilingual_zh", 2) == 1  # one page
    assert plan.item_threads("natural", 2) == 1  # 8 images: seconds on one core
    big = Plan({**plan.config, "datasets": {**plan.config["datasets"], "big": {
        "type": "skimage", "images": ["camera"] * PARALLEL_ITEMS}}})
    assert big.item_threads("big", 2) == 2
    folder = Plan({**plan.config, "datasets": {**plan.config["datasets"], "mine": {
        "type": "folder", "path": "photos"}}})
    assert folder.item_threads("mine", 2) == 2  # size unknown until built: the cap
    assert plan.builds.threads("natural") == 1 and plan.builds.threads("abstracts") == 1
    assert plan.half_cores() == 1 and Plan(plan.config, cores=8).half_cores() == 4
    assert Plan(plan.config, cores=None).half_cores() == 1  # a cluster run


def test_gpu_claims_come_from_the_device_setting():
    config = small()
    config["run"]["device"] = "cuda"
    p = Plan(config)
    assert p.gpu_for("vq") == 1 and p.gpu_for("identity") == 0 and p.gpu_for("original") == 0
    config["run"]["device"] = "cpu"
    assert Plan(config).gpu_for("vq") == 0


def test_shards():
    p = Plan(small(photos={"type": "skimage", "images": ["astronaut", "coffee"], "shards": 2}))
    assert p.shard_files("identity", "photos") == [
        "results/recon/identity/photos/shards/0-of-2.csv",
        "results/recon/identity/photos/shards/1-of-2.csv"]
    assert Plan(small()).shard_files("identity", "photos") == []


def test_targets(plan, tmp_path):
    targets = plan.targets()
    # VTBench Table 1, one table per setting: the showcase has all three, and Table 2
    assert list(VTBench.reconstruction_tables(plan)) == [
        "reconstruction_model_size", "reconstruction_1024", "reconstruction_native",
        "reconstruction_detail"]
    assert VTBench.reconstruction_tables(plan)["reconstruction_detail"] == ["textures"]
    assert VTBench.reconstruction_tables(plan)["reconstruction_1024"] == ["highres_1024"]
    assert table_files("reconstruction_native")[0] in targets
    assert "results/tables/medibench_latent_shapes.tex" in targets
    assert "results/figures/medical/synthetic_3d.png" in targets
    assert "results/figures/token_sensitivity.png" in targets
    # the default config compares small_rvq with small_vq: two tables and three figures more
    assert "results/tables/compare.csv" in targets and len(plan.compare_files) == 9
    assert "results/figures/compare/flipped.png" in plan.compare_files
    assert len(targets) == 3 * len(plan.tables) + len(plan.figures) + 9 + 1
    assert targets[-1] == "results/report.pdf"
    assert "results/figures/gallery/posters.png" in plan.figures
    assert "results/figures/gallery/medical_2d.png" not in plan.figures  # galleries: VTBench sets
    p = Plan(small())  # no text, token or medical sets
    assert p.tables == ["vtbench_table1", "reconstruction_native", "detail_statistics",
                        "model_card"]
    assert p.figures == ["results/figures/gallery/photos.png"]
    assert p.compare_files == []  # no compare: entry, no rule compare
    ran, not_ran = p.evaluations_run()
    assert [r[0] for r in ran] == ["VTBench"]
    assert ("MediBench", "no medical dataset configured") in not_ran


def test_galleries_read_what_their_rule_declares(plan):
    g = plan.galleries
    assert g.figures == [f"results/figures/gallery/{d}.png" for d in g.datasets]
    inputs = {f for files in g.inputs().values() for f in files}
    for d in g.datasets:
        paths = g.paths(d)
        assert paths["manifest"] in inputs
        assert set(paths["recon"]) == set(plan.models_on(d))
        assert set(paths["ocr"].values()) <= inputs  # every OCR file it reads is an input
        assert bool(paths["ocr"]) == (d in plan.text_datasets) == (g.ocr(d) is not None)
    assert g.ocr("posters") == plan.table_ocr and g.ocr("natural") is None


def test_checkpoints_are_every_trained_model_and_cmms(plan):
    trained = [f"results/weights/{m}/model.pt" for m in plan.trained_models]
    assert plan.checkpoints == sorted(trained + ["results/weights/cmms/small_vq/model.pt"])
    p = Plan(small())  # one trained model, run on the only dataset
    assert p.checkpoints == ["results/weights/vq/model.pt"]
    config = copy.deepcopy(p.config)
    config["datasets"]["photos"]["models"] = ["identity"]  # the model card still needs vq
    assert Plan(config).checkpoints == ["results/weights/vq/model.pt"]


def test_weighted_metrics_without_weights(plan, tmp_path):
    config = copy.deepcopy(plan.config)
    config["metrics"]["weights_cache"] = str(tmp_path)
    p = Plan(config)
    assert not p.weighted.perceptual_run and p.weighted.files("metrics.lpips") == []
    notes = p.weighted.unavailable()
    assert set(notes) == {"lpips", "distribution"}
    assert "roundtrip weights fetch lpips-alex" in notes["lpips"]
    (tmp_path / "alexnet-owt-7be5be79.pth").write_bytes(b"x")
    p = Plan(config)
    assert p.weighted.lpips_run and not p.weighted.fid_run and set(p.weighted.unavailable()) == {"distribution"}


def test_cmms_training_sets(shipped):
    # held out from every scored set (CHD paper Sec. 4.2, 5.1); built, not reconstructed
    assert training_datasets(shipped) == ["cmms_train", "cmms_photos"]
    assert not {"cmms_train", "cmms_photos"} & set(Plan(shipped).recon_datasets)
    config = copy.deepcopy(shipped)
    config["metrics"]["tokens"]["cmms"]["datasets"] = ["textures"]
    assert CHD.view(Plan(config)).cmms_settings()["datasets"] == ["textures"]


def test_scorers_run_where_an_evaluation_reads_them(plan):
    assert list(plan.recon_jobs.scorers("natural")) == ["image_quality", "tokens"]
    assert list(plan.recon_jobs.scorers("highres_1024")) == ["image_quality"]
    assert list(plan.recon_jobs.scorers("scanned_text")) == ["image_quality", "text"]
    # rendered text sets: Table 3's image-quality columns and CER/WER, not Table 1
    assert list(plan.recon_jobs.scorers("abstracts")) == ["image_quality", "text"]
    assert "abstracts" not in plan.recon_datasets
    assert list(plan.recon_jobs.scorers("medical_2d")) == ["image_quality", "latent_utility"]
    text = plan.recon_jobs.scorers("multilingual_zh")["text"]
    assert text["lang"] == "chi_sim" and set(text["engines"]) == {"tesseract"}
    assert text["ocr_original"] == {
        "tesseract": "results/ocr/tesseract/original/multilingual_zh.csv"}
    # RapidOCR reads the posters only (ocr.engines.rapidocr.datasets)
    assert plan.engines_for("posters") == ["tesseract", "rapidocr"]
    assert plan.engines_for("abstracts") == ["tesseract"]
    assert set(plan.recon_jobs.scorers("posters")["text"]["ocr_original"]) == {"tesseract", "rapidocr"}
    tokens = plan.recon_jobs.scorers("natural")["tokens"]
    assert tokens["cmms"] == "results/weights/cmms/small_vq/model.pt" and tokens["size"] == 128


def test_packaged_sets_share_one_job_per_model(plan, shipped):
    # on 2 cores, one job per model for all its packaged sets
    jobs = plan.recon_jobs
    batches = {name: (models, datasets) for name, models, datasets in jobs.batches()}
    assert sorted(m for models, _ in batches.values() for m in models) == sorted(plan.models)
    assert batches["reconstruct_sets_tokens_3"][1] == ["natural", "textures", "natural_256",
                                                       "highres_1024", "scanned_text"]
    # with more cores, the token sets, which wait on the reference tokenizer and CMMS, get
    # jobs of their own: the others wait on nothing the run trains, so they start at once
    assert jobs.waits_on("natural") == ("results/weights/cmms/small_vq/model.pt",
                                        "results/weights/small_vq/model.pt")
    assert jobs.waits_on("abstracts") == ()
    many = {name: (models, datasets)
            for name, models, datasets in Plan(shipped, cores=8).recon_jobs.batches()}
    assert many["reconstruct_sets_tokens"] == (plan.models, ["natural", "textures",
                                                             "natural_256"])
    # models that cover different sets (datasets.<name>.models) get rules of their own
    assert "highres_1024" in many["reconstruct_sets"][1]
    batches = many
    # every (model, dataset) of an image set runs in exactly one job, and all in batches
    covered = [(m, d) for models, datasets in batches.values() for m in models for d in datasets]
    assert sorted(covered) == sorted(plan.model_datasets(plan.image_datasets))
    assert all(jobs.unbatched(d) == [] for _, d, _ in jobs.variants())
    # a batched job writes exactly the files the set's own job would write
    own = jobs.outputs(("image_quality", "tokens"), ["natural"])
    assert jobs.batch_outputs(["natural"]) == [f.format(model="{model}", dataset="natural")
                                               for f in own.values()]
    job = jobs.batch_jobs(["posters"], "jpeg_q75")[0]
    assert job["outputs"]["text_rapidocr"] == "results/metrics/jpeg_q75/posters/text_rapidocr.csv"
    assert job["targets"]["text"] == "roundtrip.evals.vtbench.text:TextScorer"
    assert "results/ocr/rapidocr/original/posters.csv" in jobs.batch_inputs(["posters"])
    # switched off, or a user's folder, or a set cut into shards: one job per (model, dataset)
    off = copy.deepcopy(shipped)
    off["run"]["batch_packaged_sets"] = False
    assert Plan(off, cores=2).recon_jobs.batches() == []
    mixed = small(photos={"type": "skimage", "images": ["astronaut"]},
                  cut={"type": "skimage", "images": ["astronaut", "camera"], "shards": 2},
                  mine={"type": "folder", "path": str(REPO)})
    p = Plan(mixed, cores=2)
    assert [d for d in p.image_datasets if p.recon_jobs.batched(d)] == ["photos"]
    assert p.recon_jobs.unbatched(p.image_datasets) == ["cut", "mine"]


def test_one_reconstruction_rule_per_set_of_scorers(plan):
    variants = {name: (datasets, scorers) for name, datasets, scorers in plan.recon_jobs.variants()}
    assert set(variants) == {"reconstruct", "reconstruct_tokens", "reconstruct_text",
                             "reconstruct_text_tesseract", "reconstruct_latent_utility"}
    assert variants["reconstruct"][0] == ["highres_1024"]
    assert variants["reconstruct_tokens"][0] == ["natural", "textures", "natural_256"]
    # the sets Tesseract reads alone have a rule of their own; posters are read by both engines
    assert variants["reconstruct_text"][0] == ["posters"]
    assert len(variants["reconstruct_text_tesseract"][0]) == 7
    covered = [d for datasets, _ in variants.values() for d in datasets]
    assert sorted(covered) == sorted(plan.image_datasets)  # each set in exactly one rule
    outputs = plan.recon_jobs.outputs(variants["reconstruct_text"][1], variants["reconstruct_text"][0])
    assert outputs["text_tesseract"] == "results/metrics/{model}/{dataset}/text_tesseract.csv"
    assert outputs["ocr_rapidocr"] == "results/ocr/rapidocr/{model}/{dataset}.csv"
    alone = variants["reconstruct_text_tesseract"]
    assert "text_rapidocr" not in plan.recon_jobs.outputs(alone[1], alone[0])
    assert set(plan.recon_jobs.inputs(("image_quality", "tokens"), ["natural"])) == {"tokenizer", "cmms"}
    assert plan.recon_jobs.inputs(("text",), alone[0]) == {
        "ocr_original_tesseract": "results/ocr/tesseract/original/{dataset}.csv",
        "ocr_original_vtbench_tesseract": "results/ocr/tesseract/original/{dataset}.vtbench.csv"}
    # every scorer is imported by the job from the evaluation that registers it
    assert plan.recon_jobs.targets(("image_quality", "tokens", "latent_utility")) == {
        "image_quality": "roundtrip.evals.vtbench.image_quality:ImageQualityScorer",
        "tokens": "roundtrip.evals.chd.scoring:TokenScorer",
        "latent_utility": "roundtrip.evals.medibench.latent_utility:LatentUtilityScorer"}
    with pytest.raises(KeyError, match="no reconstruction scorer"):
        plan.recon_jobs.targets(("psnr",))


def test_cmms_training_datasets_default_chain():
    """metrics.tokens.cmms.datasets, else the reference tokenizer's train.datasets, else the
    first dataset."""
    config = {"datasets": {"a": {}, "b": {}, "c": {}},
              "models": {"vq": {"type": "small", "train": {"datasets": ["b", "c"]}},
                         "ext": {"type": "diffusers_vq"}},
              "metrics": {"tokens": {"reference": "vq", "cmms": {"datasets": ["c"]}}}}
    assert training_datasets(config) == ["c"]
    del config["metrics"]["tokens"]["cmms"]["datasets"]
    assert training_datasets(config) == ["b", "c"]
    config["metrics"]["tokens"]["reference"] = "ext"
    assert training_datasets(config) == ["a"]


def test_regex_of():
    assert regex_of(["a.b", "c"]) == r"a\.b|c"
    assert regex_of([]) == "(?!)"


def test_vista_plan_of_the_shipped_config(plan):
    assert vista(plan).datasets == ["vista_questions"]
    assert vista(plan).models("vista_questions") == ["original", "identity", "small_kl",
                                                    "small_vq"]
    assert vista(plan).keys[0] == ("ocr_solver", "original", "vista_questions")
    assert vista(plan).inputs("ocr_solver", "small_kl", "vista_questions") == {
        "manifest": "results/datasets/vista_questions/manifest.csv",
        "status": "results/recon/small_kl/vista_questions/status.csv",
        "ocr": "results/ocr/tesseract/small_kl/vista_questions.csv"}
    assert "status" not in vista(plan).inputs("ocr_solver", "original", "vista_questions")
    assert vista(plan).sweeps() == {"vista_questions": {"size_style": "arial", "style_size": 16}}
    assert {"vista_accuracy", "vista_tokenizers"} <= set(plan.tables)
    assert "results/figures/vista_gap.png" in plan.figures


def test_vista_question_sets_become_text_sets_for_ocr_readers():
    q = {"type": "vista_questions", "questions": "family"}
    cfg = small(q=q)
    assert vista(Plan(cfg)).keys == [] and Plan(cfg).text_datasets == []  # no readers: no VISTA
    cfg["vista"]["readers"] = {"s": {"type": "ocr_solver"}}
    p = Plan(cfg)
    assert p.text_datasets == ["q"] and vista(p).ocr_engines == ["tesseract"]
    assert [k[1] for k in vista(p).keys] == ["original", "identity", "vq"]
    cfg["vista"]["models"] = ["vq"]
    cfg["vista"]["readers"] = {"v": {"type": "vlm", "endpoint": "x", "model": "m"}}
    p = Plan(cfg)
    assert vista(p).keys == [("v", "original", "q"), ("v", "vq", "q")]
    assert p.text_datasets == []  # a VLM reads the images itself
    assert "ocr" not in vista(p).inputs("v", "vq", "q")


def test_limits_change_a_dataset_only_when_not_the_default(plan):
    """A default limit changes no dataset (results built before the key existed stay valid);
    another limit is part of what every set is built from."""
    config = copy.deepcopy(plan.config)
    config["limits"] = {"max_pixels": 100_000_000, "max_voxels": 512 ** 3}
    assert "limits" not in Plan(config).builds.spec("natural")
    config["limits"]["max_pixels"] = 4_000_000
    assert Plan(config).builds.spec("natural")["limits"] == {"max_pixels": 4_000_000}
    assert Plan(config).builds.spec("mri_nibabel")["limits"] == {"max_pixels": 4_000_000}


def test_gpu_request_follows_the_config_on_a_cluster(plan):
    """On a cluster the login node's hardware does not decide: auto requests no GPU, cuda one."""
    config = copy.deepcopy(plan.config)
    config["run"]["device"] = "auto"
    assert Plan(config, cluster=True).gpu_for("small_vq") == 0
    config["run"]["device"] = "cuda"
    assert Plan(config, cluster=True).gpu_for("small_vq") == 1
    assert Plan(config, cluster=True).gpu_for("jpeg_q75") == 0  # codecs never
    assert Plan(config).half_cores() == 1  # cores unknown (a cluster run)


def test_telephone_plan(plan, tmp_path):
    assert telephone(plan).datasets == ["telephone_captions"]
    assert "telephone_captions" not in plan.general_datasets + plan.image_datasets
    assert telephone(plan).keys == [(p, "telephone_captions") for p in
                                   ("render_identity", "render_jpeg_q75", "render_small_kl",
                                    "render_small_vq")]
    spec = telephone(plan).pair_spec("render_small_vq", "telephone_captions")
    assert spec["tokenizer"]["name"] == "small_vq"
    assert spec["tokenizer"]["spec"]["checkpoint"] == "results/weights/small_vq/model.pt"
    assert telephone(plan).inputs("render_small_vq", "telephone_captions")["weights"] == [
        "results/weights/small_vq/model.pt"]
    assert telephone(plan).inputs("render_identity", "telephone_captions")["weights"] == []
    # the offline pairs on the built-in captions: one job for the set
    assert telephone(plan).batched_datasets == ["telephone_captions"]
    assert telephone(plan).batched_pairs == list(telephone(plan).pairs)
    job = telephone(plan).jobs(["render_small_vq"], "telephone_captions")[0]
    assert job["similarity"] == "results/telephone/render_small_vq/telephone_captions/similarity.csv"
    assert job["chain_root"] == "results/telephone/render_small_vq/telephone_captions/chains"
    assert job["spec"]["tokenizer"]["name"] == "small_vq"
    assert "results/tables/telephone_sdr.csv" in plan.targets()
    assert "results/figures/telephone_strip.png" in plan.figures
    # a chains set made elsewhere is scored under its own model name, in its own folder
    (tmp_path / "c/text-first").mkdir(parents=True)
    config = small(chains={"type": "chains", "path": str(tmp_path / "c"), "model": "BAGEL"},
                   caps={"type": "captions", "count": 2})
    config["telephone"] = {"pairs": {"r": {"type": "render_ocr"}}}
    p = Plan(validated(config))
    assert telephone(p).keys == [("BAGEL", "chains"), ("r", "caps")]
    assert telephone(p).chain_root("BAGEL", "chains") == str(tmp_path / "c")
    assert telephone(p).pair_spec("BAGEL", "chains") is None
    assert telephone(p).chain_root("r", "caps") == "results/telephone/r/caps/chains"
    assert telephone(p).batched_datasets == ["caps"]  # the built-in captions (the default)
    config["datasets"]["caps"]["captions"] = str(tmp_path / "caps.jsonl")
    assert telephone(Plan(validated(config))).batched_datasets == []  # a user's: a job per pair
    assert telephone(Plan(small())).keys == [] and "telephone_mcd" not in Plan(small()).tables


def test_batch_size_and_kept_reconstructions(plan, shipped):
    jobs = plan.recon_jobs
    assert jobs.batch_size("small_vq") == 8 and jobs.batch_size("jpeg_q75") == 8  # auto, CPU
    config = copy.deepcopy(plan.config)
    config["run"]["batch_size"] = 5
    config["models"]["small_vq"]["batch_size"] = 3
    assert Plan(config).recon_jobs.batch_size("jpeg_q75") == 5
    assert Plan(config).recon_jobs.batch_size("small_vq") == 3
    # 16 by default; a set with a gallery keeps at least its items; "all" keeps every one
    assert jobs.keep("natural") == 16
    config["run"]["keep_reconstructions"] = "none"
    config["report"]["gallery_items"] = 2
    config["datasets"]["medical_2d"]["keep_reconstructions"] = "all"
    other = Plan(config).recon_jobs
    assert other.keep("natural") == 2 and other.keep("medical_2d") is None
    # a reader that is sent the question images reads every reconstruction later
    config["vista"]["readers"]["vlm"] = {"type": "vlm", "endpoint": "openai", "model": "m"}
    assert Plan(config).recon_jobs.keep("vista_questions") is None
    assert Plan(config).recon_jobs.keep("natural") == 2


@pytest.mark.parametrize("device, run_device, gpu", [
    ("cuda", "cpu", 1),      # the reader's own device asks for the GPU, whatever run.device
    ("cuda:1", "cpu", 1),
    ("cpu", "cuda", 0),      # a reader kept on the CPU asks for none
    ("mps", "cuda", 0),
    ("auto", "cuda", 1),     # auto: the run's request
    ("auto", "cpu", 0),
])
def test_a_readers_own_device_decides_its_jobs_gpu(shipped, device, run_device, gpu):
    config = copy.deepcopy(shipped)
    config["run"]["device"] = run_device
    engine = {"type": "transformers", "model": "/models/gemma3", "device": device}
    config["ocr"]["engines"] = {"gemma3": engine}
    config["audit"]["judge"] = dict(engine)
    plan = Plan(config, cores=2)
    assert plan.ocr_gpu(["abstracts"]) == gpu
    assert plan.judge_gpu(["abstracts"]) == gpu
    assert plan.reader_gpu({"type": "tesseract"}) == 0  # not in process: no GPU


def test_scored_size_ssim_option_reaches_the_scorer_and_tables(plan, shipped):
    """``metrics.ssim.scored_size`` (default true; false as docs/configuration.md's example
    writes it) is the VTBench scorer's option and drops the ``SSIM (per-item mean)`` column
    where false; MediBench's 2D sets keep their SSIM (its
    fidelity tables read it), and the scorer's records key on the option."""
    from roundtrip.core.scoring import scorer_key
    from roundtrip.evals.vtbench.image_quality import ImageQualityScorer
    from roundtrip.evals.vtbench.tables import reconstruction_columns, text_columns

    from doc_examples import yaml_after

    assert plan.metrics["ssim"] == {"scored_size": True}
    assert plan.recon_jobs.scorers("natural")["image_quality"] == {"ssim_scored_size": True}
    # docs/configuration.md's example, through the schema
    block = yaml_after(REPO / "docs/configuration.md", "`metrics.ssim.scored_size` (default true)")
    config = copy.deepcopy(yaml.safe_load((REPO / "config.yaml").read_text()))
    config["metrics"].update(block["metrics"])
    off = Plan(validated(config))
    assert off.metrics["ssim"] == {"scored_size": False}
    assert off.recon_jobs.scorers("natural")["image_quality"] == {"ssim_scored_size": False}
    assert off.recon_jobs.scorers("medical_2d")["image_quality"] == {}
    scorer = ImageQualityScorer(None, {})
    keys = {scorer_key("image_quality", "t", scorer.record_options(o))
            for o in ({}, {"ssim_scored_size": True})}
    assert len(keys) == 1
    assert keys != {scorer_key("image_quality", "t",
                               scorer.record_options({"ssim_scored_size": False}))}
    on = [c.metric for c in reconstruction_columns(["natural"])]
    lean = [c.metric for c in reconstruction_columns(["natural"], ssim=False)]
    assert "ssim" in on and [m for m in on if m != "ssim"] == lean
    layout = {"Posters": ["posters"]}
    assert "ssim" not in [c.metric for c in text_columns(layout, {}, ssim=False)]
    assert "ssim" in [c.metric for c in text_columns(layout, {})]
