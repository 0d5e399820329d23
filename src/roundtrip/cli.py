"""``roundtrip`` command line: helpers that run outside the Snakemake DAG.

    roundtrip weights list  [--cache DIR]          what the metrics need and what is present
    roundtrip weights fetch [NAME ...] [--cache DIR]  download (all metric files by default) and
                                                    verify; model folders by name (mpnet, ...)
    roundtrip check-config FILE [--schema PATH]    YAML (with the line), schema and cross-key
                                                    checks of a config, before any run
    roundtrip verify [WORKDIR] [--configfile FILE]  re-make the tables and report a results
                                                    folder's provenance lists, in a scratch copy;
                                                    identical or different per artifact
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
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
