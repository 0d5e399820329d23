"""The ``roundtrip`` command line: its version."""
import subprocess
import sys
from importlib import metadata


def test_version_prints_the_installed_version():
    proc = subprocess.run([sys.executable, "-m", "roundtrip.cli", "--version"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"roundtrip {metadata.version('roundtrip')}"
