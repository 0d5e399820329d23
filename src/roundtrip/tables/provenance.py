"""Provenance of a table: what made ``results/tables/{name}.csv``, written beside it as
``{name}.provenance.json``.

It holds the SHA-256 of every input file of the job, the hash of the job's parameters (the
config keys that shaped the table, resolved by the plan; endpoints carry no key), the versions
of the packages that compute numbers, the seeds found in the parameters, and the command that
regenerates the table, and how the numbers were computed (:mod:`roundtrip.core.compute`): the
``reproducibility`` mode, the CPU kernel level (``cpu_capability``), the ``threads`` and what the
mode promises (``promise``; on CUDA also ``gpu``: model, CUDA and cuDNN versions), and, for a
table whose per-item files a comparison of two checkpoints reads, the definitions of the metrics
it compares there (``definitions``, :func:`roundtrip.core.comparison.recorded_definitions`),
which ``roundtrip compare`` checks between two runs. No timestamp:
two runs of the same inputs write the same file, and no path or time ever goes into a CSV.
"""
from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path

from roundtrip.core.comparison import recorded_definitions
from roundtrip.core.compute import provenance_fields
from roundtrip.core.hashing import sha256_file

#: Distributions whose versions can change a number in a table.
PACKAGES = ("roundtrip", "numpy", "pandas", "scipy", "scikit-image", "scikit-learn", "torch",
            "torchvision", "pillow", "pytesseract", "rapidocr-onnxruntime", "onnxruntime",
            "lpips", "torch-fidelity", "monai", "diffusers", "transformers",
            "sentence-transformers", "wordllama", "vector-quantize-pytorch", "nibabel",
            "rapidfuzz", "snakemake", "matplotlib", "reportlab")


def jsonable(obj):
    """``obj`` with every mapping key a string (params may be keyed by ``(model, dataset)``),
    tuples as lists and sets sorted, so that it serializes as canonical JSON."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(jsonable(v) for v in obj)
    return obj


def canonical_hash(obj) -> str:
    """SHA-256 of ``obj`` as canonical JSON (sorted keys; non-JSON values as strings)."""
    text = json.dumps(jsonable(obj), sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def package_versions(names=PACKAGES) -> dict[str, str]:
    """Installed versions (``not installed`` where absent), read without importing them."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["python"] = platform.python_version()
    return out


def seeds_in(obj, prefix: str = "") -> dict[str, object]:
    """Every value under a key containing ``seed`` in nested params, by dotted path."""
    found = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if "seed" in str(k).lower() and not isinstance(v, (dict, list)):
                found[path] = v
            else:
                found.update(seeds_in(v, path))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found.update(seeds_in(v, f"{prefix}[{i}]"))
    return found


def input_digests(paths) -> dict[str, str]:
    """``path -> sha256`` of every input file (folders are listed, not hashed: their files are
    the inputs of the jobs that made them)."""
    out = {}
    for p in sorted({str(p) for p in paths}):
        out[p] = sha256_file(p) if Path(p).is_file() else "(folder)"
    return out


def provenance(table: str, rule: str, inputs, params: dict, config: dict | None = None) -> dict:
    """The provenance record of one table (see the module docstring); ``config`` is the
    workflow config, read for ``reproducibility`` and ``run.device`` (None: the defaults)."""
    record = {"table": table, "rule": rule,
              "command": f"snakemake --cores 1 results/tables/{table}.csv",
              "params_sha256": canonical_hash(params), "seeds": seeds_in(jsonable(params)),
              "inputs": input_digests(inputs), "packages": package_versions(),
              **provenance_fields(config)}
    if definitions := recorded_definitions(table, config):
        record["definitions"] = definitions
    return record


def write_provenance(smk) -> list[Path]:
    """Write every ``results/tables/{name}.provenance.json`` output of a table job (called last
    by each table script with its ``snakemake`` object)."""
    params = {k: v for k, v in smk.params.items()}
    inputs = [str(p) for p in smk.input]
    written = []
    for out in smk.output:
        if str(out).endswith(".provenance.json"):
            name = Path(out).name.removesuffix(".provenance.json")
            record = provenance(name, smk.rule, inputs, params, dict(smk.config))
            Path(out).write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
            written.append(Path(out))
    return written
