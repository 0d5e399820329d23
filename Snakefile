# roundtrip: one DAG from datasets through reconstruction and metrics to tables.
# Layout and file contracts: docs/design.md. Run: snakemake --cores all (see README.md).
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("8.0")

# The library lives in src/; importable from a checkout even before `pip install -e .`.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))


from roundtrip.core.config import config_names, config_paths, yaml_file_error

# Snakemake's loader reports a YAML error without its line (docs/reproducibility.md) and keeps
# the last of two equal keys: each config file is read again here, duplicate keys refused.
for _file in config_paths(workflow.overwrite_configfiles) or ["config.yaml"]:
    if _problem := yaml_file_error(_file):
        sys.exit(_problem)

# --configfile my.yaml replaces the showcase instead of being merged into it (Snakemake's
# default); --config key=value overrides still apply to whichever file is used.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# The config file(s) this run reads, as its messages ("fix the keys in my.yaml"), its report and
# its record (results/run.provenance.json, which `roundtrip verify` reads) name them.
CONFIG_NAMES = config_names(workflow.overwrite_configfiles)

from roundtrip.workflow.checks import config_problem

# A bad config stops here, before any job, with the message `roundtrip check-config` gives:
# every problem, the first line naming its key (Snakemake's own validation error prints the
# schema). A good one gets its defaults filled in (Snakemake's validate; plugin evaluations'
# sections by their own schemas) and its relative dataset paths read under data_root (presets
# name their data once), then the cross-key checks and the model probe run.
_SCHEMA = str(Path(workflow.basedir) / "config.schema.yaml")
if _problem := config_problem(config, _SCHEMA, CONFIG_NAMES):
    sys.exit(_problem)


# The front page of `snakemake --report report.html`: the run's findings (results/summary.rst,
# written with the PDF report).
report: "report/workflow.rst"


# The plan (roundtrip.workflow.plan) and the helpers every rule file uses.
include: "rules/common.smk"
# Pipeline stages shared by the evaluations.
include: "rules/stages/datasets.smk"
include: "rules/stages/train.smk"
include: "rules/stages/reconstruct.smk"


# The rules of every registered evaluation the config asks for (roundtrip.core.evaluation:
# entry points "roundtrip.evaluations" and config evaluations.plugins); each writes its tables.
for _evaluation in PLAN.active:

    include: str(_evaluation.rules)


# Checkpoint B against checkpoint A (config compare:), after the tables, before the report.
include: "rules/stages/compare.smk"
include: "rules/stages/report.smk"


rule all:
    default_target: True
    input:
        PLAN.targets(),


# API usage of this run, summed, and the items that failed (rules/common.smk); then exit status 1
# where an endpoint went down or a reader's errors exceed its share (end_of_run).
onsuccess:
    report_api_usage()
    report_item_failures()
    end_of_run()


onerror:
    report_api_usage()
    report_item_failures()
