"""Reproducible artifacts: checkpoints and the report are the same bytes when remade, and the
``portable`` mode gives the same trained weights whatever kernel level the environment forces and
whatever thread count the job asks for, while ``fast`` does not (so the check can fail)."""
import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
import types

import pytest
import torch
from conftest import REPO

from roundtrip.core import compute
from roundtrip.core.checkpoint import META_KEY, checkpoint_bytes, load_checkpoint, save_checkpoint

#: A job as Snakemake runs it: the script preamble puts ``snakemake`` in ``__main__``, the script
#: imports ``_bootstrap`` first, sets torch up, trains a small tokenizer; prints the compute record
#: and the SHA-256 of the checkpoint file.
JOB = """
import hashlib, json, sys, types
sys.path.insert(0, {scripts!r})
snakemake = types.SimpleNamespace(config={{"reproducibility": {mode!r}}}, threads={threads})
import _bootstrap
from roundtrip.core.compute import configure_torch
record = configure_torch(snakemake.config, snakemake.threads)
import skimage.data
from roundtrip.stages.train import train_small_tokenizer
images = [skimage.data.astronaut(), skimage.data.coffee()]
train_small_tokenizer({{"family": "BSQ", "channels": 16}}, images, {out!r}, steps=15,
                      batch_size=4, crop=48, seed=3)
record["sha256"] = hashlib.sha256(open({out!r}, "rb").read()).hexdigest()
print(json.dumps(record))
"""


def train_job(tmp_path, mode, threads, forced_level=None):
    """Run :data:`JOB` in a fresh interpreter; ``forced_level`` is ``ATEN_CPU_CAPABILITY`` in the
    outer environment (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in compute.PORTABLE_ENV}
    if forced_level:
        env["ATEN_CPU_CAPABILITY"] = forced_level
    out = tmp_path / f"{mode}-{threads}-{forced_level}.pt"
    code = JOB.format(scripts=str(REPO / "scripts"), mode=mode, threads=threads, out=str(out))
    # a bound, not a timing: 15 steps take seconds alone, minutes on a loaded 2-core machine
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def host_level():
    return compute.cpu_capability(environ={})


needs_avx2 = pytest.mark.skipif(host_level() not in ("AVX2", "AVX512"),
                                reason="portable mode pins AVX2 kernels")


@needs_avx2
def test_portable_weights_do_not_depend_on_kernel_level_or_threads(tmp_path):
    runs = [train_job(tmp_path, "portable", threads, level) for level, threads in
            ((None, 1), (None, 2), ("avx2", 1), ("avx512", 2), ("default", 1))]
    assert {r["sha256"] for r in runs} == {runs[0]["sha256"]}, runs
    assert {(r["cpu_capability"], r["threads"]) for r in runs} == {("AVX2", 1)}


@pytest.mark.skipif(host_level() != "AVX512", reason="needs a CPU with AVX-512 to compare")
def test_fast_weights_follow_kernel_level(tmp_path):
    """The control: without the pins, the same training under another kernel level gives other
    bytes. One thread each: a two-thread job has stalled past the subprocess bound on a 2-core
    machine, and the thread count's effect needs no test of its own to show the pins matter."""
    avx512, avx2 = train_job(tmp_path, "fast", 1, "avx512"), train_job(tmp_path, "fast", 1, "avx2")
    assert (avx512["cpu_capability"], avx2["cpu_capability"]) == ("AVX512", "AVX2")
    assert avx512["threads"] == avx2["threads"] == 1
    assert avx512["sha256"] != avx2["sha256"]


#: OpenCV in a job of ``mode``: roundtrip's SSIM of a pair (OpenCV's separable filter) and an
#: 8-bit bicubic resize (Intel IPP's code inside OpenCV); prints OpenCV's CPU line (a feature
#: switched off ends in ``?``), IPP's code and the results.
OPENCV_JOB = """
import hashlib, json
from roundtrip.core import compute
compute.apply_environment({mode!r})
import cv2, numpy as np, skimage.data, torch
from roundtrip.metrics.image_quality import REFLECT_OWN_RANGE, VALID, ssim_conventions
x = skimage.data.astronaut()[:200, :300]
y = np.clip(x + np.random.default_rng(0).normal(0, 8, x.shape), 0, 255).astype(np.uint8)
tx, ty = (torch.from_numpy(a.astype(np.float32) / 255).permute(2, 0, 1)[None] for a in (x, y))
values = ssim_conventions(ty, tx, [VALID, REFLECT_OWN_RANGE], dtype=torch.float32)
resized = cv2.resize(skimage.data.astronaut(), (383, 383), interpolation=cv2.INTER_CUBIC)
print(json.dumps({{"cpu": cv2.getCPUFeaturesLine(), "ipp": cv2.ipp.getIppVersion(),
                  "ssim": [float(v) for v in values],
                  "resize": hashlib.sha256(resized.tobytes()).hexdigest()}}))
"""


@functools.cache
def opencv_job(mode: str, outer: tuple = ()) -> dict:
    """Run :data:`OPENCV_JOB` in a fresh interpreter (OpenCV reads its variables once, when it
    loads); ``outer``: ``(name, value)`` pairs of the outer environment."""
    env = {k: v for k, v in os.environ.items() if k not in compute.PORTABLE_ENV}
    env.update(outer)
    proc = subprocess.run([sys.executable, "-c", OPENCV_JOB.format(mode=mode)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: What OpenCV needs of a CPU to run its AVX512_SKX kernels.
OPENCV_AVX512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}


@pytest.mark.skipif(not OPENCV_AVX512 <= compute.cpu_flags(),
                    reason="needs a CPU with AVX-512 to compare")
def test_portable_opencv_does_not_follow_avx512():
    """portable switches OpenCV's AVX512_SKX kernels and IPP's AVX-512 code off, whatever the
    outer environment asks: the same SSIM and resize bytes with the outer variables unset and
    set to AVX-512. SSIM's filter has no AVX-512 kernel in the pinned OpenCV (the same bytes
    with AVX-512 on, in fast); the control, the bicubic resize, differs under IPP's AVX-512
    code (k0) and its AVX2 code (l9), so the check can fail."""
    plain = opencv_job("portable")
    forced = opencv_job("portable", (("OPENCV_CPU_DISABLE", ""), ("OPENCV_IPP", "avx512")))
    fast = opencv_job("fast")
    for run in (plain, forced):
        assert run["cpu"].endswith("*AVX2 *AVX512-SKX?") and "(l9)" in run["ipp"], run
    assert forced["ssim"] == plain["ssim"] and forced["resize"] == plain["resize"]
    assert "AVX512-SKX?" not in fast["cpu"] and "(k0)" in fast["ipp"]
    assert fast["ssim"] == plain["ssim"]
    assert fast["resize"] != plain["resize"]


@needs_avx2
def test_opencv_ssim_follows_its_kernel_level():
    """SSIM's bits follow OpenCV's kernel level, which is why portable pins it: OpenCV's AVX2
    filter sums with fused multiply-adds, its kernels below AVX2 without (here forced in fast:
    ``OPENCV_CPU_DISABLE=AVX512-SKX,AVX2``), within 1e-6."""
    portable = opencv_job("portable")
    below = opencv_job("fast", (("OPENCV_CPU_DISABLE", "AVX512-SKX,AVX2"),))
    assert "*AVX2?" in below["cpu"]
    assert below["ssim"] != portable["ssim"]
    assert below["ssim"] == pytest.approx(portable["ssim"], abs=1e-6)


def test_the_pinned_opencv_has_no_other_avx512_kernels():
    """OPENCV_CPU_DISABLE switches off the one AVX-512 target of the pinned OpenCV build; a
    build that dispatches to another (AVX512_ICL, ...) needs it named too."""
    import cv2

    info = cv2.getBuildInformation()
    line = next(row for row in info.splitlines() if "Dispatched code generation" in row)
    targets = line.split(":", 1)[1].split()
    assert [t for t in targets if t.startswith("AVX512")] == ["AVX512_SKX"], targets
    assert compute.PORTABLE_ENV["OPENCV_CPU_DISABLE"] == "AVX512-SKX"


def test_cpu_capability_without_torch_agrees_with_torch():
    for forced in (None, "avx2", "default"):
        env = {k: v for k, v in os.environ.items() if k not in compute.PORTABLE_ENV}
        if forced:
            env["ATEN_CPU_CAPABILITY"] = forced
        code = ("import torch; from roundtrip.core.compute import cpu_capability; "
                "print(torch.backends.cpu.get_cpu_capability(), cpu_capability())")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        assert out[0] == out[1], (forced, out)
    flags = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"}
    assert compute.cpu_capability(flags, {}) == "AVX512"
    assert compute.cpu_capability(flags - {"avx512dq"}, {}) == "AVX2"
    assert compute.cpu_capability(flags, {"ATEN_CPU_CAPABILITY": "avx2"}) == "AVX2"
    assert compute.cpu_capability({"sse2"}, {"ATEN_CPU_CAPABILITY": "avx512"}) == "DEFAULT"
    assert compute.cpu_capability(set(), {}) == "unknown"


def test_portable_environment_overrides_the_outer_one_and_fast_keeps_it():
    env = {"ATEN_CPU_CAPABILITY": "avx512", "OMP_NUM_THREADS": "16"}
    assert compute.apply_environment("fast", env) == {} and env["OMP_NUM_THREADS"] == "16"
    compute.apply_environment("portable", env)
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["OMP_NUM_THREADS"] == "1"
    assert env["DNNL_MAX_CPU_ISA"] == "AVX2" and env["MKL_CBWR"].startswith("AVX2")
    assert compute.job_threads("portable", 8) == 1 and compute.job_threads("fast", 8) == 8
    with pytest.raises(ValueError, match="reproducibility"):
        compute.mode_of({"reproducibility": "exact"})


def test_every_script_imports_bootstrap_before_any_numerical_library():
    """The pins are read once, when a library loads: _bootstrap must come first."""
    for script in sorted((REPO / "scripts").glob("*.py")):
        if script.name.startswith("_"):
            continue
        tree = ast.parse(script.read_text())
        names = [a.name.split(".")[0] if isinstance(n, ast.Import) else (n.module or "").split(".")[0]
                 for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                 for a in (n.names if isinstance(n, ast.Import) else [n])]
        assert "_bootstrap" in names, script.name
        before = names[:names.index("_bootstrap")]
        assert not set(before) & {"torch", "numpy", "pandas", "scipy", "roundtrip", "skimage",
                                  "PIL"}, (script.name, before)


class FakeCuda:
    """``torch.cuda`` of a machine with one GPU."""

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(index=0):
        return "NVIDIA H100 80GB HBM3"


def test_cuda_runs_record_the_gpu_and_promise_less(monkeypatch):
    monkeypatch.setattr(torch, "cuda", FakeCuda)
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 90100)
    calls = []
    monkeypatch.setattr(compute, "deterministic_algorithms", lambda torch: calls.append(True))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)  # restored after the test
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    threads = torch.get_num_threads()
    try:
        record = compute.configure_torch({"reproducibility": "portable",
                                          "run": {"device": "auto"}}, 4)
    finally:
        torch.set_num_threads(threads)
    assert calls == [True] and torch.backends.cudnn.deterministic is True
    assert torch.backends.cudnn.benchmark is False
    assert record["gpu"] == {"name": "NVIDIA H100 80GB HBM3", "cuda": "12.4", "cudnn": 90100,
                             "torch": torch.__version__}
    assert "same GPU model" in record["promise"] and record["threads"] == 1
    assert compute.PORTABLE_ENV["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    # a table job: torch is imported only when a driver is there and the device is not the CPU
    monkeypatch.setattr(compute, "nvidia_driver_present", lambda: True)
    fields = compute.provenance_fields({"reproducibility": "fast", "run": {"device": "cuda"}})
    assert fields["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and "same GPU" in fields["promise"]
    assert "machine-bound" in fields["promise"]
    assert "gpu" not in compute.provenance_fields({"run": {"device": "cpu"}})


def test_portable_refuses_other_kernels(monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda on: None)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    threads = torch.get_num_threads()
    try:
        with pytest.raises(RuntimeError, match="reproducibility: fast"):
            compute.configure_torch({"reproducibility": "portable"}, 1)
    finally:
        torch.set_num_threads(threads)


def test_checkpoint_bytes_are_stable_and_read_back(tmp_path):
    torch.manual_seed(0)
    tensors = {"w": torch.randn(3, 4).t(), "b": torch.zeros(2, dtype=torch.float64),
               "idx": torch.arange(5)}
    meta = {"arch": {"family": "VQ", "sizes": (1, 2)}, "history": [{"step": 0, "mse": 0.5}],
            "summary": {"seed": 7}, "b": 1, "c": "x"}
    # several metadata entries would come out in a per-process order; one JSON entry does not
    codes = ("import torch; from roundtrip.core.checkpoint import checkpoint_bytes; "
             "import hashlib; torch.manual_seed(0); "
             "t = {'w': torch.randn(3, 4).t(), 'b': torch.zeros(2, dtype=torch.float64), "
             "'idx': torch.arange(5)}; "
             f"print(hashlib.sha256(checkpoint_bytes(t, {meta!r})).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", codes], capture_output=True, text=True,
                              check=True).stdout.strip() for _ in range(3)}
    assert digests == {hashlib.sha256(checkpoint_bytes(tensors, meta)).hexdigest()}
    save_checkpoint(tmp_path / "m.pt", tensors, meta)
    back, meta_back = load_checkpoint(tmp_path / "m.pt")
    assert all(torch.equal(back[k], tensors[k]) for k in tensors)
    assert meta_back == json.loads(json.dumps(meta))
    assert not (tmp_path / "m.pt.part").exists()
    from safetensors import safe_open

    with safe_open(str(tmp_path / "m.pt"), framework="pt") as f:
        assert list(f.metadata()) == [META_KEY]
    # a checkpoint torch.save wrote before this format still loads
    torch.save({"arch": {"family": "VQ"}, "state_dict": tensors}, tmp_path / "old.pt")
    old, old_meta = load_checkpoint(tmp_path / "old.pt")
    assert torch.equal(old["idx"], tensors["idx"]) and old_meta == {"arch": {"family": "VQ"}}
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(ValueError, match="not a roundtrip checkpoint"):
        load_checkpoint(tmp_path / "bad.pt")


def test_cmms_checkpoint_is_byte_stable(tmp_path):
    from roundtrip.evals.chd import cmms as C

    cfg = C.CMMSConfig(vocab_size=16, d_model=16, layers=1, heads=2)
    torch.manual_seed(1)
    model = C.CMMSRegressor(cfg)
    for name in ("a", "b"):
        C.save_cmms(model, tmp_path / f"{name}.pt", {"reference": "x", "loss_last": [0.25]})
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert C.CMMS(tmp_path / "a.pt").meta == {"reference": "x", "loss_last": [0.25]}


#: Builds a small report (a wide table, a CJK note, an image) and prints its SHA-256.
REPORT = """
import hashlib, os, sys
from pathlib import Path
import numpy as np
from PIL import Image
from roundtrip.report.document import ReportInputs, build_report, source_date
work = Path({work!r})
(work / "t.md").write_text("### A table\\n\\n| model | psnr |\\n|---|---|\\n| a | 30.5 |\\n")
Image.fromarray(np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)).save(work / "f.png")
epoch, date = source_date("ab" * 32)
inputs = ReportInputs(tables={{"t": work / "t.md"}}, figures=[work / "f.png"], galleries={{}},
                      cover={{"title": "r", "date": date, "ran": [], "not_ran": []}},
                      appendix={{"packages": {{"numpy": "2"}}, "config": "a: 1"}},
                      notes=["视觉分词器 हिन्दी"])
out = work / sys.argv[1]
build_report(out, inputs, None if sys.argv[2] == "now" else epoch)
print(hashlib.sha256(out.read_bytes()).hexdigest())
"""


def test_the_report_is_remade_byte_for_byte(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}

    def build(name, when, **extra):
        code = REPORT.format(work=str(tmp_path))
        return subprocess.run([sys.executable, "-c", code, name, when], capture_output=True,
                              text=True, check=True, env={**env, **extra}).stdout.strip()

    assert build("a.pdf", "fixed") == build("b.pdf", "fixed")
    # the control: reportlab's own timestamp and ids change from build to build
    assert build("c.pdf", "now") != build("d.pdf", "now")
    assert build("e.pdf", "fixed", SOURCE_DATE_EPOCH="1700000000") != build("a.pdf", "fixed")


def test_source_date():
    from roundtrip.report.document import source_date

    epoch, line = source_date("0" * 64, {"SOURCE_DATE_EPOCH": "1700000000"})
    assert (epoch, line) == (1700000000, "2023-11-14 (SOURCE_DATE_EPOCH)")
    a, line = source_date("ab" * 32, {})
    assert 946684800 <= a < 946684800 + 366 * 86400 and "not recorded" in line
    assert source_date("ab" * 32, {})[0] == a != source_date("cd" * 32, {})[0]
    with pytest.raises(ValueError):
        source_date("0" * 64, {"SOURCE_DATE_EPOCH": "yesterday"})


def test_prepare_job_reads_the_mode_of_the_snakemake_object(monkeypatch):
    main = types.SimpleNamespace(snakemake=types.SimpleNamespace(
        config={"reproducibility": "portable"}))
    monkeypatch.setitem(sys.modules, "__main__", main)
    for key in compute.PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert compute.prepare_job() == "portable"
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2"
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace())
    assert compute.prepare_job() is None


def test_the_allocator_is_tuned_unless_the_environment_says_otherwise():
    applied = compute.tune_allocator(environ={})
    assert applied == {name: value for name, (_, value, _) in compute.ALLOCATOR.items()}
    assert "M_ARENA_MAX" not in compute.tune_allocator(environ={"MALLOC_ARENA_MAX": "4"})


def test_deterministic_algorithms_without_the_compilers_configuration():
    """portable's switch is on after configure_torch, and a job does not pay for importing
    Inductor's configuration (a fresh interpreter, as a job is)."""
    code = ("import sys; from roundtrip.core import compute; compute.apply_environment("
            "'portable'); import torch; "
            "compute.configure_torch({'reproducibility': 'portable'}, 1); "
            "print(torch.are_deterministic_algorithms_enabled(), "
            "'torch._inductor.config' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}, check=True)
    assert out.stdout.split() == ["True", "False"]
