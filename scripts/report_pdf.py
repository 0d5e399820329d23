"""Rule report_pdf: every table, figure and gallery of the run in one PDF, with the run's
provenance (roundtrip.report)."""
import json
from importlib import metadata
from pathlib import Path

import _bootstrap  # noqa: F401
import pandas as pd
import yaml

from roundtrip.api.client import USAGE_LEDGER, summarize_usage
from roundtrip.core import weights
from roundtrip.core.evaluation import load_evaluations
from roundtrip.core.compute import provenance_fields
from roundtrip.core.hashing import sha256_file
from roundtrip.core.logs import setup_logging
from roundtrip.core.manifest import read_manifest
from roundtrip.report.assemble import (findings_of, headline_of, published_of, summary_rst,
                                       what_changed_inputs)
from roundtrip.report.document import ReportInputs, build_report, source_date
from roundtrip.report.findings import RunResults
from roundtrip.report.fonts import register
from roundtrip.tables.failures import read_failures, read_slowness
from roundtrip.report.sections import Section
from roundtrip.tables.provenance import canonical_hash

smk = snakemake  # noqa: F821 - injected by Snakemake
p = smk.params
log = setup_logging(smk.log[0])

records = {Path(f).name.removesuffix(".provenance.json"): json.loads(Path(f).read_text())
           for f in smk.input.provenance}
lines = pd.read_csv(smk.input.lines, dtype=str, keep_default_na=False)
galleries = {}
for dataset, paths in p.galleries.items():
    manifest = read_manifest(paths["manifest"])
    truth = dict(zip(manifest["item_id"], manifest["text"])) if "text" in manifest else {}
    rows = lines[lines["dataset"] == dataset].to_dict("records")
    galleries[dataset] = (Path(paths["figure"]), rows, truth)

seeds = {f"{name}: {k}": v for name, r in records.items() for k, v in r["seeds"].items()}
checksums = [(name, len(r["inputs"]), canonical_hash(r["inputs"])[:16]) for name, r in
             records.items()]
present = [(w.filename, sha256_file(path)[:16]) for name, w in weights.REGISTRY.items()
           if (path := weights.path_of(name, p.weights_cache)).is_file()]
present += [(str(f), sha256_file(f)[:16])  # checkpoints trained by this workflow
            for f in smk.input.checkpoints]
config = dict(p.config)
plugins = config.get("evaluations") or {}
registry = load_evaluations(plugins.get("plugins") or (), plugins.get("paths") or ())
csv = {n: Path(f) for n, f in zip(p.tables, smk.input.csv)}
findings, headlines, published = {}, [], {}
for key, files in p.findings_files.items():
    results = RunResults(csv, files=[Path(f) for f in files], models=list(config["models"]),
                         bootstrap=config["tables"]["bootstrap"],
                         published=config["report"]["published"], config=config)
    findings[key] = findings_of(registry[key], results)
    if key in p.headlines:
        figure = Path(p.headlines[key])
        headlines.append((key, figure, headline_of(registry[key], results, figure)))
    published[key] = published_of(registry[key], results)

changes = what_changed_inputs(list(smk.input.compare))

ran, not_ran = p.ran
config_sha256 = canonical_hash(dict(p.config))
epoch, date = source_date(config_sha256)
inputs = ReportInputs(
    tables={n: Path(f) for n, f in zip(p.tables, smk.input.tables)},
    figures=[Path(f) for f in smk.input.figures],
    galleries=galleries,
    cover={"title": "roundtrip: what survives a round trip", "date": date,
           "version": metadata.version("roundtrip"), "commit": p.commit,
           "config_sha256": config_sha256, "ran": ran, "not_ran": not_ran,
           "config_name": p.config_name, "models": list(config["models"]),
           "datasets": list(config["datasets"]),
           "failures": [f.line() for f in read_failures(p.status_files)],
           "slow": [s.line() for s in read_slowness(p.status_files)],
           "compute": provenance_fields(dict(p.config))},
    appendix={"packages": next(iter(records.values()))["packages"] if records else {},
              "seeds": seeds, "checksums": checksums, "weights": present,
              # which endpoints answered, not how often: the ledger's counts follow the run's
              # history (cache hits on a rerun), and the report must not
              "api": sorted({(r["endpoint"], r["base_url"]) for r in summarize_usage(USAGE_LEDGER)}),
              "config": yaml.safe_dump(dict(p.config), sort_keys=False, allow_unicode=True)},
    notes=register()[1],
    sections=[Section(**s) for s in p.sections],
    findings=findings, headlines=headlines, published=published, changes=changes)
Path(smk.output.summary).write_text(summary_rst(inputs), encoding="utf-8")
pages = build_report(smk.output.pdf, inputs, epoch)
log.info("report: %d pages (body %d, appendix %d), %d tables, %d figures", pages, pages.body,
         pages.appendix, len(inputs.tables), len(inputs.figures))
