"""``roundtrip verify``: re-make the artifacts a results folder's provenance lists, compare bytes.

A reader of a published results folder checks that its tables, their figures and the PDF report
come out of their recorded inputs again: every ``results/tables/*.provenance.json`` names the
rule that wrote the table and the input files it read. The check never writes into the folder:

1. a scratch folder mirrors the working directory: every top-level entry except ``results/``,
   ``logs/`` and ``.snakemake/`` is linked (the config, relative dataset paths and the API cache
   resolve as in the run), and ``results/`` holds copies of the recorded inputs (a dataset's
   manifest with its folder: the jobs read the items it lists), plus what the report reads
   besides the tables: every figure, the dataset manifests, the trained checkpoints and the API
   ledger. Copies, not links: nothing the re-run does can reach the folder's files;
2. Snakemake runs there with only the table rules and ``report_pdf`` allowed (every other file is
   taken as it is), forcing them: each table, its figures and the report are made again;
3. every file the scratch run wrote is compared with the folder's, byte for byte.

The tables' own upstream (reconstructions, metrics) is not recomputed: the check covers the step
from the recorded inputs to the published artifacts. Reproducing the numbers from scratch is a
run from scratch (docs/reproducibility.md).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: Top-level entries of the working directory that are the run's state, never linked.
RUN_STATE = ("results", "logs", ".snakemake")

REPORT = "results/report.pdf"

#: The folder of the tables: an input of the report (rules/stages/report.smk), so that a deleted
#: table makes the report out of date.
TABLES_FOLDER = "results/tables"

#: The record of the config file(s) the run that wrote the report was given (rule run_record):
#: ``{"configfiles": ["my.yaml"]}``, paths as the user gave them, relative to the working
#: directory where inside it; ``[]`` for a plain ``snakemake`` (``config.yaml``).
RUN_RECORD = "results/run.provenance.json"

#: What ``report_pdf`` reads beyond the tables, as globs under the working directory: figures,
#: manifests, checkpoints, the API ledger, and the per-item files the built-in evaluations'
#: findings read (any evaluation's are also taken from Snakemake's record of the report's
#: inputs, :func:`recorded_report_inputs`).
REPORT_READS = (RUN_RECORD, "results/figures/**/*", "results/datasets/*/manifest.csv",
                "results/weights/**/model.pt", "results/api/usage.jsonl",
                "results/metrics/*/*/*.csv", "results/vista/*/*/*/answers.csv",
                "results/telephone/*/*/similarity.csv")


def run_record_text(configfiles: list[str]) -> str:
    """The text of :data:`RUN_RECORD` (one line of JSON), ``configfiles`` as
    :func:`roundtrip.core.config.config_paths` gives them."""
    return json.dumps({"configfiles": list(configfiles)})


def recorded_configfiles(workdir: Path) -> list[str] | None:
    """The config files :data:`RUN_RECORD` names (``[]``: the run read ``config.yaml``), or None
    where the folder has no readable record (results of an older roundtrip)."""
    try:
        record = json.loads((workdir / RUN_RECORD).read_text())
    except (OSError, ValueError):
        return None
    files = record.get("configfiles") if isinstance(record, dict) else None
    return [str(f) for f in files] if isinstance(files, list) else None


@dataclass
class Outcome:
    """The verdict on one artifact: ``identical``, ``different``, ``missing`` (the folder has it,
    the re-run did not make it) or ``new`` (made, but not in the folder); ``note`` says why where
    it can (the job's parameters differ: another config or roundtrip version)."""
    status: str
    path: str
    note: str = ""


def provenance_records(workdir: Path) -> dict[str, dict]:
    """``table name -> record`` of every ``results/tables/*.provenance.json`` under ``workdir``.

    Raises:
        FileNotFoundError: no provenance record (not a roundtrip results folder).
    """
    files = sorted((workdir / "results/tables").glob("*.provenance.json"))
    if not files:
        raise FileNotFoundError(f"{workdir / 'results/tables'}: no *.provenance.json; verify "
                                "needs the results folder of a roundtrip run")
    return {f.name.removesuffix(".provenance.json"): json.loads(f.read_text()) for f in files}


def recorded_report_inputs(workdir: Path) -> list[str]:
    """The inputs Snakemake recorded for the report (``.snakemake/metadata``) that are results
    files of the folder: among them the per-item files the evaluations' findings read
    (``Evaluation.findings_inputs``), which no table's provenance names. Empty where the folder
    has no such record (a copied results folder without ``.snakemake``)."""
    import base64

    record = workdir / ".snakemake/metadata" / base64.urlsafe_b64encode(REPORT.encode()).decode()
    try:
        inputs = json.loads(record.read_text()).get("input", [])
    except (OSError, ValueError):
        return []
    return [p for p in inputs if p.startswith("results/") and (workdir / p).is_file()]


def mirror(workdir: Path, scratch: Path, records: dict[str, dict]) -> dict[str, int]:
    """Make ``scratch`` a stand-in of ``workdir`` for re-making the artifacts (module docstring,
    step 1); returns ``relative path -> mtime_ns`` of every file copied into ``results/``.

    Raises:
        FileNotFoundError: a recorded input is not in the folder (the record and the folder do
            not belong together).
    """
    for entry in sorted(workdir.iterdir()):
        if entry.name not in RUN_STATE:
            (scratch / entry.name).symlink_to(entry.resolve())
    wanted = {p for r in records.values() for p in r.get("inputs", {})}
    missing = sorted(p for p in wanted if not (workdir / p).exists())
    if missing:
        raise FileNotFoundError(f"{len(missing)} recorded inputs are not in {workdir}, e.g. "
                                f"{missing[0]}")
    # a manifest stands for its dataset folder: table jobs read the items it lists
    wanted |= {str(Path(p).parent) for p in wanted if Path(p).name == "manifest.csv"
               and Path(p).parts[:2] == ("results", "datasets")}
    for pattern in REPORT_READS:
        wanted |= {str(p.relative_to(workdir)) for p in workdir.glob(pattern) if p.is_file()}
    wanted |= set(recorded_report_inputs(workdir))
    copied: dict[str, int] = {}
    for rel in sorted(wanted):
        src, dest = workdir / rel, scratch / rel
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, copy_function=shutil.copy2)
        else:
            shutil.copy2(src, dest)
    for f in (scratch / "results").rglob("*"):
        if f.is_file():
            copied[str(f.relative_to(scratch))] = f.stat().st_mtime_ns
    return copied


def remake_command(snakefile: Path, scratch: Path, records: dict[str, dict],
                   configfiles: list[str], cores: str) -> list[str]:
    """The Snakemake command of step 2: the tables and the report as targets, their rules the
    only ones allowed (every other file is a given) and forced; ``--configfile`` (last: it
    takes every word after it) with ``configfiles`` (:func:`configs_of_run`), none for
    ``config.yaml``."""
    rules = sorted({r["rule"] for r in records.values()} | {"report_pdf"})
    targets = [f"results/tables/{name}.csv" for name in sorted(records)] + [REPORT]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(scratch),
           *targets, "--cores", str(cores), "--allowed-rules", *rules, "--forcerun", *rules]
    if configfiles:
        cmd += ["--configfile", *configfiles]
    return cmd


def configs_of_run(workdir: Path, given: str | Path | None = None) -> tuple[list[str], str]:
    """The config files the re-run reads and where that comes from, for the log line.

    ``given`` (``--configfile``) wins; else the files :data:`RUN_RECORD` names (the run that
    wrote the report); else ``config.yaml``, as a plain ``snakemake`` reads it. Paths inside
    ``workdir`` are relative to it, so that they name the scratch copy's links (and the report's
    page 1 names the file as the run did); others are absolute.

    Raises:
        FileNotFoundError: a recorded config file is not in ``workdir``.
    """
    from roundtrip.core.config import DEFAULT_CONFIG, config_paths

    if given is not None:
        return config_paths([Path(given).resolve()], str(workdir)), "given with --configfile"
    recorded = recorded_configfiles(workdir)
    if recorded is None:
        return [], (f"the folder has no {RUN_RECORD}: {DEFAULT_CONFIG}, as a plain snakemake "
                    "reads it; give --configfile if the run used another")
    missing = [f for f in recorded if not (workdir / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{RUN_RECORD} says the run read {missing[0]}, which is not in "
                                f"{workdir}; give --configfile FILE")
    return recorded, f"recorded in {RUN_RECORD}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compare(workdir: Path, scratch: Path, copied: dict[str, int],
            records: dict[str, dict]) -> list[Outcome]:
    """Step 3: every file under the scratch ``results/`` that the re-run wrote (not a copied input
    left as it was; logs and benchmark records aside) against the folder's, and every recorded
    table that the re-run did not make."""
    outcomes = []
    made = set()
    for f in sorted((scratch / "results").rglob("*")):
        rel = str(f.relative_to(scratch))
        if not f.is_file() or rel.startswith("results/benchmarks/") or \
                copied.get(rel) == f.stat().st_mtime_ns:
            continue
        made.add(rel)
        original = workdir / rel
        if not original.is_file():
            outcomes.append(Outcome("new", rel))
        elif _sha256(original) == _sha256(f):
            outcomes.append(Outcome("identical", rel))
        else:
            outcomes.append(Outcome("different", rel, _why(original, f)))
    for name in sorted(records):
        for rel in (f"results/tables/{name}.csv", f"results/tables/{name}.provenance.json"):
            if rel not in made:
                outcomes.append(Outcome("missing", rel, "the re-run did not make it"))
    return outcomes


def _why(original: Path, remade: Path) -> str:
    """What a differing provenance record tells: other parameters, packages or compute."""
    if not original.name.endswith(".provenance.json"):
        return ""
    try:
        a, b = json.loads(original.read_text()), json.loads(remade.read_text())
    except ValueError:
        return ""
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "differs in " + ", ".join(keys) if keys else ""


def verify(workdir: str | Path = ".", snakefile: str | Path | None = None,
           configfile: str | Path | None = None, cores: str = "all",
           keep: str | Path | None = None, log=print) -> list[Outcome]:
    """Re-make the artifacts of ``workdir``'s results and compare them (module docstring).

    Args:
        workdir: the folder Snakemake ran in (holding ``results/``).
        snakefile: the workflow (default: ``workdir/Snakefile``, else the Snakefile of this
            roundtrip checkout).
        configfile: the config the results were made with (default: the one
            :data:`RUN_RECORD` names, else ``workdir/config.yaml``: :func:`configs_of_run`).
        cores: ``--cores`` of the re-run.
        keep: keep the scratch folder there (default: a temporary folder, removed).
        log: where progress lines go.

    Returns:
        One :class:`Outcome` per artifact made again or missing.

    Raises:
        FileNotFoundError: no provenance record, or a recorded input or config is missing.
        RuntimeError: the re-run failed (the end of Snakemake's output in the message).
    """
    from roundtrip.core.config import DEFAULT_CONFIG

    workdir = Path(workdir).resolve()
    snakefile = Path(snakefile).resolve() if snakefile else default_snakefile(workdir)
    records = provenance_records(workdir)
    configfiles, why = configs_of_run(workdir, configfile)
    log(f"verify: config {', '.join(configfiles) or DEFAULT_CONFIG} ({why})")
    tmp = None if keep else tempfile.TemporaryDirectory(prefix="roundtrip-verify-")
    scratch = Path(keep or tmp.name).resolve()
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        if any(scratch.iterdir()):
            raise FileExistsError(f"{scratch} is not empty")
        copied = mirror(workdir, scratch, records)
        log(f"verify: re-making {len(records)} tables and the report in {scratch}")
        cmd = remake_command(snakefile, scratch, records, configfiles, cores)
        proc = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("the re-run failed:\n" + (proc.stderr or proc.stdout)[-3000:])
        return compare(workdir, scratch, copied, records)
    finally:
        if tmp is not None:
            tmp.cleanup()


def default_snakefile(workdir: Path) -> Path:
    """``workdir/Snakefile`` where the run was made in a checkout, else this checkout's."""
    local = workdir / "Snakefile"
    return local if local.is_file() else Path(__file__).resolve().parents[3] / "Snakefile"


def summary(outcomes: list[Outcome]) -> str:
    """One line per artifact (``identical  results/tables/x.csv``), then the counts."""
    lines = [f"{o.status:9s}  {o.path}" + (f"  ({o.note})" if o.note else "") for o in outcomes]
    counts = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    lines.append("verify: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return "\n".join(lines)


def all_identical(outcomes: list[Outcome]) -> bool:
    """True when every artifact was made again with the same bytes (and there was one)."""
    return bool(outcomes) and all(o.status == "identical" for o in outcomes)

