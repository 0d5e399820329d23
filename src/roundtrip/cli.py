"""``roundtrip`` command line: helpers that run outside the Snakemake DAG.

    roundtrip weights list  [--cache DIR]          what the metrics need and what is present
    roundtrip weights fetch [NAME ...] [--cache DIR]  download (all metric files by default) and
                                                    verify; model folders by name (mpnet, ...)
    roundtrip check-config FILE [--schema PATH]    YAML (with the line), schema and cross-key
                                                    checks of a config, before any run
    roundtrip verify [WORKDIR] [--configfile FILE]  re-make the tables and report a results
                                                    folder's provenance lists, in a scratch copy;
                                                    identical or different per artifact
    roundtrip compare RESULTS_A RESULTS_B --out DIR  checkpoint B against checkpoint A in every
        [--baseline NAME] [--candidate NAME]        evaluation, from two finished results folders
        [--fail-on-regression]                      (exit 1 naming the rows that got worse)
    roundtrip --version                            the installed roundtrip's version
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roundtrip.core import weights


def _list(args) -> int:
    for name, entry in weights.REGISTRY.items():
        path = weights.path_of(name, args.cache)
        state = "present" if path.is_file() else "missing"
        print(f"{name:15s} {state:8s} {path}  ({entry.used_by})")
    for name, folder in weights.registered_folders().items():
        path = weights.resolve_folder(name, args.cache)
        state = "present" if path.is_dir() else "missing"
        print(f"{name:15s} {state:8s} {path}/  ({folder.used_by}; {folder.repo})")
    return 0


def _fetch(args) -> int:
    failed = 0
    folders = weights.registered_folders()
    for name in args.names or list(weights.REGISTRY):
        try:
            path = weights.fetch_folder(name, args.cache, folders=folders) if name in folders \
                else weights.fetch(name, args.cache)
            print(f"{name}: {path} (checksum ok)")
        except Exception as exc:  # noqa: BLE001 - report every file, then fail
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


#: The schema beside the Snakefile (a checkout or an editable install).
SCHEMA = Path(__file__).resolve().parents[2] / "config.schema.yaml"


def _check_config(args) -> int:
    from roundtrip.workflow.checks import check_file

    problem = check_file(args.file, args.schema, probe_endpoints=True)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    print(f"{args.file}: ok")
    return 0


def _verify(args) -> int:
    from roundtrip.workflow.verify import all_identical, summary, verify

    try:
        outcomes = verify(args.workdir, args.snakefile, args.configfile, args.cores, args.keep,
                          log=lambda line: print(line, file=sys.stderr))
    except (FileNotFoundError, FileExistsError, RuntimeError) as exc:
        print(f"verify: {exc}", file=sys.stderr)
        return 2
    print(summary(outcomes))
    return 0 if all_identical(outcomes) else 1


def _compare(args) -> int:
    import shlex

    from roundtrip.core.evaluation import load_evaluations
    from roundtrip.workflow.compare import (CompareError, PairedSettings, Run, pairs_between,
                                            regression_lines, run_comparison)

    out = Path(args.out)
    try:
        margins = {}
        for m in args.margin:
            key, _, value = m.partition("=")
            margins[key] = float(value)
        run_a, run_b = Run(args.results_a), Run(args.results_b)
        evaluations = load_evaluations(args.plugin, args.plugin_path)
        pairs = pairs_between(run_a, run_b, evaluations, args.baseline, args.candidate, margins)
        settings = PairedSettings(args.resamples, args.confidence, 0.8, args.seed)
        params = {"results_a": str(run_a.folder), "results_b": str(run_b.folder),
                  "pairs": [p.__dict__ for p in pairs], "settings": settings.__dict__}
        command = "roundtrip compare " + " ".join(shlex.quote(a) for a in (args.argv or []))
        result, lines = run_comparison(run_a, run_b, pairs, evaluations, settings, out, out,
                                       "roundtrip compare", command, params)
    except (CompareError, ValueError, OSError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    (out / "what_changed.md").write_text("# What changed\n\n" + "".join(
        f"- {line}\n" for line in lines))
    for line in lines:
        print(line)
    print(f"tables, figures and what_changed.md in {out} ({len(result.rows)} rows)")
    worse = regression_lines(result)
    if args.fail_on_regression and worse:
        print(f"regression: {len(worse)} row(s) worse after correction:", file=sys.stderr)
        for line in worse:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``roundtrip`` console script; returns the exit status."""
    from importlib import metadata

    parser = argparse.ArgumentParser(prog="roundtrip")
    parser.add_argument("--version", action="version",
                        version=f"roundtrip {metadata.version('roundtrip')}")
    sub = parser.add_subparsers(dest="group", required=True)
    w = sub.add_parser("weights", help="metric weights (LPIPS, Inception) in the offline cache")
    wsub = w.add_subparsers(dest="action", required=True)
    for action, func in (("list", _list), ("fetch", _fetch)):
        p = wsub.add_parser(action)
        p.add_argument("--cache", default=None,
                       help=f"cache directory (default $ROUNDTRIP_WEIGHTS or {weights.DEFAULT_CACHE})")
        if action == "fetch":
            p.add_argument("names", nargs="*", help=f"any of {sorted(weights.REGISTRY)} (default: "
                           f"all of them), or a model folder: {sorted(weights.registered_folders())}")
        p.set_defaults(func=func)
    c = sub.add_parser("check-config", help="check a config file as the workflow would, "
                                            "with the line of a YAML error")
    c.add_argument("file")
    c.add_argument("--schema", default=str(SCHEMA))
    c.set_defaults(func=_check_config)
    v = sub.add_parser("verify", help="re-make the tables and the report of a results folder "
                                      "from its recorded inputs and compare the bytes "
                                      "(exit 1 on any difference)")
    v.add_argument("workdir", nargs="?", default=".",
                   help="the folder the workflow ran in, holding results/ (default: .)")
    v.add_argument("--configfile", default=None,
                   help="the config the results were made with (default: WORKDIR/config.yaml)")
    v.add_argument("--snakefile", default=None,
                   help="the workflow (default: WORKDIR/Snakefile, else this checkout's)")
    v.add_argument("--cores", default="all")
    v.add_argument("--keep", default=None, metavar="DIR",
                   help="re-make in this new folder and keep it (default: a temporary one)")
    v.set_defaults(func=_verify)
    k = sub.add_parser("compare", help="checkpoint B against checkpoint A in every evaluation, "
                                       "from two finished results folders (docs/comparing.md)")
    k.add_argument("results_a", help="the baseline's results folder (or the folder it ran in)")
    k.add_argument("results_b", help="the candidate's results folder (or the folder it ran in)")
    k.add_argument("--baseline", default=None,
                   help="the name compared in RESULTS_A (default: every name both runs have)")
    k.add_argument("--candidate", default=None,
                   help="the name compared in RESULTS_B (default: the baseline's name)")
    k.add_argument("--out", required=True, metavar="DIR",
                   help="where the tables, figures and what_changed.md go")
    k.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1, naming the rows, when any row is worse after correction")
    k.add_argument("--margin", action="append", default=[], metavar="METRIC=VALUE",
                   help="an equivalence margin (compare.margins), e.g. psnr=0.1; repeatable")
    k.add_argument("--resamples", type=int, default=10_000)
    k.add_argument("--confidence", type=float, default=0.95)
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="a plugin evaluation's module (evaluations.plugins); repeatable")
    k.add_argument("--plugin-path", action="append", default=[], metavar="DIR",
                   help="a folder to import plugins from (evaluations.paths); repeatable")
    k.set_defaults(func=_compare)
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
