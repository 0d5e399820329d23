"""File digests shared by every layer: dataset manifests, weight checksums, table provenance."""
from __future__ import annotations

import hashlib
from pathlib import Path

#: Read size: large checkpoints and volumes are hashed without holding them in memory.
BLOCK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks.

    Args:
        path: a regular file.

    Returns:
        The 64-character lowercase hex digest.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        IsADirectoryError: ``path`` is a folder.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            h.update(block)
    return h.hexdigest()
