"""Weights registry and fetcher: downloads from a loopback HTTP server, checksums, errors."""
import hashlib
import http.server
import threading
from functools import partial
from pathlib import Path

import pytest

from roundtrip.cli import main as cli_main
from roundtrip.core import weights
from roundtrip.core.weights import WeightsMissing


@pytest.fixture()
def server(tmp_path):
    """Serve tmp_path/www on 127.0.0.1; yields (base_url, request_counter)."""
    www = tmp_path / "www"
    www.mkdir()
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", www, hits
    httpd.shutdown()


def _entry(base, payload, name="test-net", digest=None):
    return {name: weights.WeightFile(name, f"{base}/net.pth", "net-cafe.pth",
                                     digest or hashlib.sha256(payload).hexdigest()[:8], "a test")}


def test_fetch_downloads_verifies_and_caches(server, tmp_path):
    base, www, hits = server
    payload = b"weights" * 1000
    (www / "net.pth").write_bytes(payload)
    cache = tmp_path / "cache"
    reg = _entry(base, payload)
    path = weights.fetch("test-net", cache, registry=reg)
    assert path == cache / "net-cafe.pth" and path.read_bytes() == payload
    assert len(hits) == 1
    weights.fetch("test-net", cache, registry=reg)  # present and valid: no second download
    assert len(hits) == 1
    assert [p.name for p in cache.iterdir()] == ["net-cafe.pth"]  # no temp files left


def test_fetch_rejects_wrong_checksum_and_keeps_nothing(server, tmp_path):
    base, www, _ = server
    (www / "net.pth").write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(weights.ChecksumMismatch, match="does not match"):
        weights.fetch("test-net", cache, registry=_entry(base, b"x", digest="00000000"))
    assert list(cache.iterdir()) == []


def test_fetch_replaces_a_corrupt_leftover(server, tmp_path):
    base, www, hits = server
    payload = b"good weights"
    (www / "net.pth").write_bytes(payload)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "net-cafe.pth").write_bytes(b"truncated")
    assert weights.fetch("test-net", cache, registry=_entry(base, payload)).read_bytes() == payload
    assert len(hits) == 1


def test_require_names_file_and_command(tmp_path):
    with pytest.raises(WeightsMissing) as exc:
        weights.require("inception-fid", tmp_path)
    msg = str(exc.value)
    assert str(tmp_path / "weights-inception-2015-12-05-6726825d.pth") in msg
    assert f"roundtrip weights fetch inception-fid --cache {tmp_path}" in msg


def test_registry_digests_follow_torch_hub_names():
    for entry in weights.REGISTRY.values():
        assert entry.filename.rsplit("-", 1)[1].removesuffix(".pth") == entry.sha256
        assert entry.url.endswith(entry.filename)


def test_cli_list_and_unknown_name(tmp_path, capsys):
    assert cli_main(["weights", "list", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "lpips-alex" in out and "missing" in out
    assert "owlv2-base" in out and "google/owlv2-base-patch16-ensemble" in out  # model folders
    assert cli_main(["weights", "fetch", "no-such-net", "--cache", str(tmp_path)]) == 1
    assert "unknown weight file" in capsys.readouterr().err


def test_model_folders_come_from_the_evaluations(tmp_path):
    """Model folders are declared by the evaluations that load them: the registry gathers the
    Telephone Game's, a name declared twice differently is refused, and a folder list passed in
    (a plan's evaluations) is what names resolve against."""
    from roundtrip.core.evaluation import Evaluation
    from roundtrip.evals.telephone.spec import EVALUATION

    assert set(weights.registered_folders()) >= {f.name for f in EVALUATION.weight_folders}
    assert weights.registered_folders()["owlv2-base"].repo == "google/owlv2-base-patch16-ensemble"

    class One(Evaluation):
        key = "one"
        weight_folders = (weights.HubFolder("tiny", "org/tiny", "a test"),)

    class Other(Evaluation):
        key = "other"
        weight_folders = (weights.HubFolder("tiny", "org/other", "a test"),)

    folders = weights.folders_of([One(), One()])
    assert list(folders) == ["tiny"]
    assert weights.resolve_folder("tiny", tmp_path, folders) == tmp_path / "tiny"
    assert weights.resolve_folder("tiny", tmp_path, {}) == Path("tiny")
    with pytest.raises(ValueError, match="'tiny' is declared twice"):
        weights.folders_of([One(), Other()])
