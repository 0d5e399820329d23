# Shared helpers: config lookups and target lists. Checked before any job runs.
import re
import time

from roundtrip.cmms import training_datasets
from roundtrip.config import check_config
from roundtrip.datasets import expected_item_count, folder_fingerprint
from roundtrip.synthesis.build import SYNTHETIC_KEYS
from roundtrip.api.synthesis import GPT_KEYS
from roundtrip.models import TRAINED_TYPES
from roundtrip.medical.sources import is_medical_spec, is_volume_spec, path_fingerprint

RUN_STARTED = time.time()
check_config(config)

MODELS = list(config["models"])
DATASETS = list(config["datasets"])
TEXT_DATASETS = [d for d in DATASETS if config["datasets"][d].get("text_eval")]
# Rendered text sets (roundtrip.synthesis) belong to the text-preservation table (VTBench
# Table 3), not to the reconstruction table (Table 1).
# GPT posters, like the rendered posters, are text sets; GPT high-res and detail sets are
# reconstruction sets (VTBench Tasks 1 and 2).
TEXT_ONLY_TYPES = tuple(SYNTHETIC_KEYS) + ("gpt_posters",)
# The medical branch (rules/medical.smk, MediBench) has its own tables; 2D medical sets reuse
# the reconstruction and image-quality rules, volume sets have their own.
MEDICAL_DATASETS = [d for d in DATASETS if is_medical_spec(config["datasets"][d])]
VOLUME_DATASETS = [d for d in MEDICAL_DATASETS if is_volume_spec(config["datasets"][d])]
MEDICAL_2D = [d for d in MEDICAL_DATASETS if d not in VOLUME_DATASETS]
GENERAL_DATASETS = [d for d in DATASETS if d not in MEDICAL_DATASETS]
RECON_DATASETS = [
    d for d in GENERAL_DATASETS if config["datasets"][d]["type"] not in TEXT_ONLY_TYPES
]
OCR_ENGINES = list(config["ocr"]["engines"])
TABLE_OCR = config["tables"].get("ocr_engine", OCR_ENGINES[0] if OCR_ENGINES else None)


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    ocr=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    shard=r"\d+",
    nshards=r"\d+",


def item_threads(cap):
    """``threads:`` of a rule that spreads a dataset's items over up to ``cap`` workers
    (Tesseract processes): no more than the dataset has items, where the config says how many.
    A one-item set claiming two cores would hold the second one idle (docs/design.md,
    "Threads")."""

    def threads(wildcards):
        n = expected_item_count(config["datasets"][wildcards.dataset])
        return cap if n is None else max(1, min(cap, n))

    return threads


def build_threads(wildcards):
    """Rendered text sets read every render back with ``audit.threads`` Tesseract processes;
    every other set is built by one process."""
    if config["datasets"][wildcards.dataset]["type"] not in SYNTHETIC_KEYS:
        return 1
    return item_threads(config["audit"]["threads"])(wildcards)


def n_shards(dataset):
    return config["datasets"][dataset]["shards"]


def shard_status_files(wildcards):
    n = n_shards(wildcards.dataset)
    return expand(
        "results/recon/{model}/{dataset}/shards/{shard}-of-{n}.csv",
        model=wildcards.model, dataset=wildcards.dataset, shard=range(n), n=n,
    )


def dataset_spec(wildcards):
    """Only the keys that change the built files (protocol etc. must not trigger a rebuild);
    synthetic sets also depend on the render and audit settings and the text normalization."""
    spec = config["datasets"][wildcards.dataset]
    keys = ("type", "images", "path", "lang") + SYNTHETIC_KEYS.get(spec["type"], ())
    keys += MEDICAL_KEYS
    keys += GPT_KEYS if spec["type"].startswith("gpt_") else ()
    out = {k: spec[k] for k in keys if k in spec}
    if spec["type"] in SYNTHETIC_KEYS:
        out |= {"render": config["render"], "audit": config["audit"],
                "normalization": config["ocr"]["normalization"]}
    return out


MEDICAL_KEYS = ("modality", "labels_csv", "splits", "dims", "limit", "bundled", "suffix",
                "label_column", "sequence", "count", "volume_size", "seed", "intensity",
                "volume_index", "nonfinite", "spacing")


def dataset_has_labels(dataset):
    """Whether a medical dataset's items carry class labels (latent utility needs them)."""
    spec = config["datasets"][dataset]
    return (spec["type"] in ("skimage_medical", "medmnist", "synthetic_volumes")
            or bool(spec.get("labels_csv")) or bool(spec.get("label_column")))


def regex_of(names):
    """A wildcard constraint matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def models_on(dataset):
    """Models run on ``dataset`` (``datasets.<name>.models``, default all)."""
    return config["datasets"][dataset].get("models") or MODELS


def pair_files(pattern, datasets, models=None):
    """``pattern`` for every (model, dataset) pair that runs (see ``models_on``)."""
    models = MODELS if models is None else models
    return [pattern.format(model=m, dataset=d) for d in datasets for m in models
            if m in models_on(d)]


def not_run(datasets):
    """``(model, dataset) -> reason`` of the pairs excluded by ``datasets.<name>.models``."""
    return {(m, d): f"not run on this dataset (datasets.{d}.models)" for d in datasets
            for m in MODELS if m not in models_on(d)}


def dataset_fingerprint(wildcards):
    """Changes when a folder dataset's files change, so the dataset is rebuilt."""
    spec = config["datasets"][wildcards.dataset]
    if spec["type"] == "folder":
        return folder_fingerprint(spec["path"]) + path_fingerprint(spec.get("labels_csv"))
    return path_fingerprint(spec.get("path")) if is_medical_spec(spec) else ""


def table_files(name):
    return expand("results/tables/{name}.{ext}", name=name, ext=["csv", "md", "tex"])


def ocr_inputs(wildcards):
    """Originals are read from the dataset; reconstructions need the model's status."""
    inputs = {"manifest": f"results/datasets/{wildcards.dataset}/manifest.csv"}
    if wildcards.model != "original":
        inputs["status"] = f"results/recon/{wildcards.model}/{wildcards.dataset}/status.csv"
    return inputs


TRAINED_MODELS = [m for m in MODELS if config["models"][m]["type"] in TRAINED_TYPES]

TRAIN_DEFAULTS = {"steps": 400, "batch_size": 16, "crop": 64, "lr": 2e-3, "kl_weight": 1e-4,
                  "seed": 0}


def spec_of(model):
    """The model's config entry; trained models get the checkpoint the workflow produces."""
    spec = dict(config["models"][model])
    if spec["type"] in TRAINED_TYPES:
        spec["checkpoint"] = f"results/weights/{model}/model.pt"
    return spec


def model_spec(wildcards):
    return spec_of(wildcards.model)


def weights_of(model):
    """The checkpoint the workflow trains for ``model`` (type: small), else nothing."""
    if config["models"][model]["type"] in TRAINED_TYPES:
        return [f"results/weights/{model}/model.pt"]
    return []


def model_weights(wildcards):
    return weights_of(wildcards.model)


def train_settings(wildcards):
    spec = config["models"][wildcards.model]
    settings = TRAIN_DEFAULTS | dict(spec.get("train", {}))
    settings.setdefault("datasets", [DATASETS[0]])
    return settings


def train_manifests(wildcards):
    return [f"results/datasets/{d}/manifest.csv" for d in train_settings(wildcards)["datasets"]]


CODEC_TYPES = ("identity", "jpeg", "webp", "resample")


def gpu_for_device():
    """1 when networks will run on CUDA (the profile limits concurrent GPU jobs)."""
    if config["run"]["device"] == "cpu":
        return 0
    import torch

    return int(torch.cuda.is_available())


def gpu_for(wildcards):
    """1 when this job will run a learned model on CUDA; codecs never do."""
    if config["models"][wildcards.model]["type"] in CODEC_TYPES:
        return 0
    return gpu_for_device()


# -- metrics with pretrained weights and token-space metrics ---------------------------------
from roundtrip import weights as roundtrip_weights
from roundtrip.config import metric_weight_files

METRICS = config["metrics"]
TOKENS = METRICS["tokens"]
TOKEN_REFERENCE = TOKENS["reference"]
SENSITIVITY = TOKENS["sensitivity"]
TOKEN_DATASETS = TOKENS["datasets"] or RECON_DATASETS
LPIPS_ON = METRICS["lpips"]["enabled"]
FID_ON = METRICS["fid"]["enabled"]


wildcard_constraints:
    reference=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


def metric_weights(key):
    """The weight file of config key ``key`` when it is in the cache, else nothing.

    As an input, a file fetched later changes the job's input set, so Snakemake reruns the
    job that wrote "n/a" cells (rerun trigger "input").
    """
    name = metric_weight_files(METRICS).get(key)
    if name is None:
        return []
    path = roundtrip_weights.path_of(name, METRICS["weights_cache"])
    return [str(path)] if path.is_file() else []


def weights_present(key):
    return bool(metric_weights(key))


TABLE_FILE_OF = {"metrics.lpips": "lpips", "metrics.fid": "distribution"}


def unavailable_metrics():
    """Table file kinds whose metric cannot run here, with the footnote saying why."""
    return {
        TABLE_FILE_OF[key]: roundtrip_weights.missing_note(name, METRICS["weights_cache"])
        for key, name in metric_weight_files(METRICS).items()
        if not weights_present(key)
    }


# Perceptual metrics run only when their weights are in the cache; otherwise the tables say
# n/a (missing_weights: n/a) and no job is spent writing empty files. Fetching the weights
# adds the jobs, and the tables' changed input set reruns them.
LPIPS_RUN = LPIPS_ON and weights_present("metrics.lpips")
FID_RUN = FID_ON and weights_present("metrics.fid")


def reference_weights(wildcards):
    name = getattr(wildcards, "reference", TOKEN_REFERENCE)
    if config["models"][name]["type"] in TRAINED_TYPES:
        return [f"results/weights/{name}/model.pt"]
    return []


def cmms_settings():
    return {**TOKENS["cmms"], "datasets": training_datasets(config)}


def cmms_manifests(wildcards):
    return [f"results/datasets/{d}/manifest.csv" for d in cmms_settings()["datasets"]]


def report_api_usage():
    """API usage of this run (requests sent, cache hits, tokens, images) summed from the ledger
    the API jobs append to, into results/api/usage_summary.csv; nothing when no API was used."""
    from roundtrip.api.client import USAGE_LEDGER, write_usage_summary

    for row in write_usage_summary(USAGE_LEDGER, "results/api/usage_summary.csv", RUN_STARTED):
        print(f"API usage ({row['endpoint']}): {row}", file=sys.stderr)
