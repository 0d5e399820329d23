# roundtrip: one DAG from datasets through reconstruction and metrics to tables.
# Layout and file contracts: docs/design.md. Run: snakemake --cores all (see README.md).
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("8.0")

# The library lives in src/; importable from a checkout even before `pip install -e .`.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))


configfile: "config.yaml"


validate(config, "config.schema.yaml")


include: "rules/common.smk"
include: "rules/datasets.smk"
include: "rules/train.smk"
include: "rules/reconstruct.smk"
include: "rules/metrics.smk"
include: "rules/ocr.smk"
include: "rules/medical.smk"


if TOKEN_REFERENCE:

    include: "rules/tokens.smk"


include: "rules/tables.smk"


rule all:
    default_target: True
    input:
        table_files("reconstruction"),
        table_files("detail_statistics"),
        table_files("model_card"),
        table_files("text_preservation") if TEXT_DATASETS else [],
        table_files("ocr_robustness") if TEXT_DATASETS else [],
        table_files("token_metrics") if TOKEN_REFERENCE else [],
        table_files("token_sensitivity") if SENSITIVITY["dataset"] else [],
        [table_files(name) for name in MEDIBENCH_TABLES] if MEDICAL_DATASETS else [],
        expand("results/figures/medical/{dataset}.png", dataset=MEDICAL_DATASETS),


# API usage of this run, summed (report_api_usage in rules/common.smk).
onsuccess:
    report_api_usage()


onerror:
    report_api_usage()
