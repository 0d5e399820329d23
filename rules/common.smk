# Shared helpers: config lookups and target lists. Checked before any job runs.
from roundtrip.config import check_config
from roundtrip.datasets import folder_fingerprint

check_config(config)

MODELS = list(config["models"])
DATASETS = list(config["datasets"])
TEXT_DATASETS = [d for d in DATASETS if config["datasets"][d].get("text_eval")]
OCR_ENGINES = list(config["ocr"]["engines"])
TABLE_OCR = config["tables"].get("ocr_engine", OCR_ENGINES[0] if OCR_ENGINES else None)


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    ocr=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    shard=r"\d+",
    nshards=r"\d+",


def n_shards(dataset):
    return config["datasets"][dataset]["shards"]


def shard_status_files(wildcards):
    n = n_shards(wildcards.dataset)
    return expand(
        "results/recon/{model}/{dataset}/shards/{shard}-of-{n}.csv",
        model=wildcards.model, dataset=wildcards.dataset, shard=range(n), n=n,
    )


def dataset_spec(wildcards):
    return config["datasets"][wildcards.dataset]


def dataset_fingerprint(wildcards):
    """Changes when a folder dataset's files change, so the dataset is rebuilt."""
    spec = config["datasets"][wildcards.dataset]
    return folder_fingerprint(spec["path"]) if spec["type"] == "folder" else ""


def table_files(name):
    return expand("results/tables/{name}.{ext}", name=name, ext=["csv", "md", "tex"])


def ocr_inputs(wildcards):
    """Originals are read from the dataset; reconstructions need the model's status."""
    inputs = {"manifest": f"results/datasets/{wildcards.dataset}/manifest.csv"}
    if wildcards.model != "original":
        inputs["status"] = f"results/recon/{wildcards.model}/{wildcards.dataset}/status.csv"
    return inputs
