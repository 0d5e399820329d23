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


def path_fingerprint(path: str | Path | None) -> str:
    """Digest of the names, sizes and mtimes of a file or of the files under a folder (stat
    only); a Snakemake param, so that changed data rebuilds the dataset. ``""`` for no path,
    ``missing`` for a path that does not exist."""
    if not path:
        return ""
    path = Path(path)
    if not path.exists():
        return "missing"
    return files_fingerprint([path] if path.is_file() else
                             sorted(p for p in path.rglob("*") if p.is_file()))


def files_fingerprint(files: list[Path]) -> str:
    """Digest of the paths, sizes and mtimes of ``files``, in the order given (stat only).

    Raises:
        FileNotFoundError: a file vanished since it was listed.
    """
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
