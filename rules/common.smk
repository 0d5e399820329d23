# The plan of the run (roundtrip.workflow.plan, unit-tested): every rule asks it what to do.
# This file holds only the plan, wildcard constraints and thin input functions.
import subprocess
import sys
import time

from roundtrip.workflow.plan import Plan, regex_of, table_files

# The config was checked by the Snakefile (roundtrip.workflow.checks.config_problem).
RUN_STARTED = time.time()


def run_cores():
    """``workflow.cores``, or None where it is unset (a cluster run: Snakemake raises)."""
    try:
        return workflow.cores
    except Exception:  # WorkflowError: no --cores given
        return None


PLAN = Plan(config, cores=run_cores(), cluster=not workflow.local_exec)
MODELS = PLAN.models
RUN = config["run"]


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    ocr=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    shard=r"\d+",
    nshards=r"\d+",
    reference=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


def caption(name):
    """The report caption of a table or figure (report/{name}.rst), relative to rules/*/."""
    return f"../../report/{name}.rst"


def model_spec(wildcards):
    return PLAN.spec_of(wildcards.model)


def model_weights(wildcards):
    return PLAN.weights_of(wildcards.model)


def dataset_param(key):
    """``datasets.<dataset>.<key>`` as a params function."""
    return lambda wildcards: config["datasets"][wildcards.dataset].get(key)


def report_api_usage():
    """API usage of this run (HTTP requests sent, answered and failed requests, retries, cache
    hits, tokens, images sent and received) summed from the ledger the API jobs append to, into
    results/api/usage_summary.csv, one line per endpoint on the console; nothing when no API
    was used."""
    from roundtrip.api.client import USAGE_LEDGER, usage_line, write_usage_summary

    for row in write_usage_summary(USAGE_LEDGER, "results/api/usage_summary.csv", RUN_STARTED):
        print(usage_line(row), file=sys.stderr)


def report_item_failures():
    """The (model, dataset) pairs with failed items, one line each, on the console at the end of
    a run (the tables count them in footnotes; page 1 of the report lists them too)."""
    from roundtrip.tables.failures import read_failures, read_slowness

    found = read_failures(PLAN.status_files())
    if found:
        print(f"Items that failed ({len(found)} of the run's model and dataset pairs; "
              "results/recon/{model}/{dataset}/status.csv):", file=sys.stderr)
        for failures in found:
            print(f"  {failures.line()}", file=sys.stderr)
    slow = read_slowness(PLAN.status_files())
    if slow:
        print("Items far slower at one input size (seconds per item in status.csv):",
              file=sys.stderr)
        for s in slow:
            print(f"  {s.line()}", file=sys.stderr)


# Checks of a run's results, each a function giving why they are not whole (one line each; none:
# whole): an evaluation's rules add theirs (a reader whose errors exceed its share). end_of_run
# reads them.
RUN_CHECKS = []


def end_of_run():
    """At the end of a successful run (every table and the report written): where an endpoint
    went down during the run (the usage ledger) or a check of RUN_CHECKS has lines, print them
    and exit with status 1, the last console line saying why; run.tolerate_reader_errors: true
    prints the same lines and keeps exit status 0."""
    from roundtrip.api.usage import USAGE_LEDGER, endpoints_went_down

    problems = [f"endpoint down: {line}"
                for line in endpoints_went_down(USAGE_LEDGER, RUN_STARTED)]
    for check in RUN_CHECKS:
        problems += check()
    if not problems:
        return
    for line in problems:
        print(f"[roundtrip] {line}", file=sys.stderr)
    what = (f"{len(problems)} problems (above)" if len(problems) > 1 else problems[0])
    if RUN.get("tolerate_reader_errors"):
        print(f"[roundtrip] exit status 0 despite {what}: run.tolerate_reader_errors is true",
              file=sys.stderr, flush=True)
        return
    sys.exit(f"[roundtrip] exit status 1: {what}; every table and the report are written "
             "(run.tolerate_reader_errors: true exits 0)")


def report_table(name, category, subcategory=None, caption_file=None):
    """The CSV, Markdown and LaTeX files of table ``name`` and its provenance record; the CSV
    goes into Snakemake's report with the caption report/{name}.rst (``caption_file``: an
    evaluation's own caption, an absolute path)."""
    csv, md, tex = table_files(name)
    shown = report(csv, caption=caption_file or caption(name), category=category,
                   subcategory=subcategory)
    return [shown, md, tex, f"results/tables/{name}.provenance.json"]


def git_commit():
    """The commit of the workflow's checkout, or why there is none."""
    try:
        out = subprocess.run(["git", "-C", workflow.basedir, "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", workflow.basedir, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "") \
            if out.returncode == 0 else "not a git checkout"
    except (OSError, subprocess.SubprocessError):
        return "git not available"
