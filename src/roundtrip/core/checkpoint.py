"""Checkpoints the workflow trains (small tokenizers, CMMS regressors), written byte for byte the
same for the same weights.

The file is a safetensors file (whatever its name: the workflow keeps ``model.pt`` so that every
rule and results folder keeps its paths): the tensors, sorted by the format, then one metadata
entry, ``roundtrip``, holding the rest (architecture, settings, loss history) as canonical JSON.
One entry, because safetensors writes its metadata map in the order of a per-process hash map:
two entries can come out in either order (measured: three writes of the same five entries, three
different files). No time, host or path goes in; training time belongs in the job's log and
``benchmark:`` file.

Files written by ``torch.save`` (checkpoints from before this format) are still read.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

#: The metadata key holding the non-tensor part of a checkpoint.
META_KEY = "roundtrip"

_ZIP_MAGIC = b"PK\x03\x04"  # torch.save's zip container


def checkpoint_bytes(tensors: dict, meta: dict) -> bytes:
    """The file content of a checkpoint: safetensors with ``meta`` as canonical JSON.

    Args:
        tensors: name -> tensor (any device, any layout; copied to contiguous CPU memory).
        meta: JSON-serializable data (tuples become lists; keys sorted).

    Raises:
        TypeError: ``meta`` is not JSON-serializable.
    """
    from safetensors.torch import save

    # contiguous copies: safetensors refuses views and tensors sharing storage
    flat = {name: t.detach().to("cpu").contiguous().clone() for name, t in tensors.items()}
    text = json.dumps(meta, sort_keys=True, separators=(",", ":"))
    return save(flat, metadata={META_KEY: text})


def save_checkpoint(path: str | Path, tensors: dict, meta: dict) -> Path:
    """Write :func:`checkpoint_bytes` to ``path`` (parent folders created; written to a
    temporary name, then renamed, so an interrupted job leaves no half file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(checkpoint_bytes(tensors, meta))
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path) -> tuple[dict, dict]:
    """``(tensors, meta)`` of a checkpoint written by :func:`save_checkpoint`, tensors on CPU.

    A file written by ``torch.save`` (``{"state_dict": ..., **meta}``, the format before this
    one) gives its state dict and its other entries as ``meta``.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is neither format.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head == _ZIP_MAGIC:
        import torch

        # the workflow's own older checkpoints (their metadata holds tuples and dicts)
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
        return dict(ckpt.pop("state_dict")), ckpt
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = json.loads((f.metadata() or {}).get(META_KEY, "{}"))
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except SafetensorError as exc:
        raise ValueError(f"{path}: not a roundtrip checkpoint ({exc})") from exc
    return tensors, meta
