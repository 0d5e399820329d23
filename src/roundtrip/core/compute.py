"""How the numerically sensitive jobs compute: the config's ``reproducibility`` mode.

PyTorch, oneDNN, MKL, OpenBLAS and OpenCV each pick their kernels for the CPU they run on
(AVX-512 on a newer CPU, AVX2 on an older one) and sum in an order that follows the thread
count, so the same config trains other weights on another machine or under another
``--cores``. Measured on an AVX-512 machine (``docs/reproducibility.md``): training a small
tokenizer under PyTorch's AVX2 instead of its AVX-512 kernels, under oneDNN's AVX2 instead of
its AVX-512 convolutions, or on 2 threads instead of 1 each gives other weight bytes; OpenCV's
8-bit bicubic resize (Intel IPP's AVX-512 code against its AVX2 code) gives other pixels.

- ``portable``: every job pins the kernel level of each library to :data:`PORTABLE_LEVEL`
  (environment variables read when the library first dispatches, so set before torch is imported:
  :func:`prepare_job`, called by ``scripts/_bootstrap.py``), runs :data:`PORTABLE_THREADS`
  threads whatever ``--cores`` or the rule's ``threads:`` say, and runs PyTorch's deterministic
  algorithms. The same config gives the same bytes on any x86-64 CPU with AVX2, whatever the
  environment forced from outside. On CUDA the same switches (and ``CUBLAS_WORKSPACE_CONFIG``) make
  reruns on the same GPU model and library versions identical, no more.
- ``fast``: the libraries' own choice (the best kernels of the machine, the rule's threads); the
  numbers are bound to the machine, and every provenance record says so.

Nothing here imports torch at module level: :func:`prepare_job` and :func:`provenance_fields` run
in jobs that never load it (the table jobs).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

MODES = ("portable", "fast")

#: The mode of a config that does not name one (config.schema.yaml holds the same default).
DEFAULT_MODE = "portable"

#: The kernel level ``portable`` pins: x86-64-v3 (Intel since Haswell, 2013; AMD since
#: Excavator, 2015), the highest level nearly every x86-64 machine in service has.
PORTABLE_LEVEL = "AVX2"

#: Threads of every numerically sensitive job in ``portable`` (reductions are summed in a
#: thread-dependent order; one thread is the count every machine and core budget can give).
PORTABLE_THREADS = 1

#: What ``portable`` sets in a job's environment before any numerical library loads, overriding
#: the outer environment (a kernel level forced from outside must not change the bytes).
PORTABLE_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",        # PyTorch's own kernels (DispatchStub)
    "DNNL_MAX_CPU_ISA": "AVX2",           # oneDNN (PyTorch's CPU convolutions), v2 and v3 names
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2,STRICT",            # MKL's conditional numerical reproducibility (GEMM)
    "OPENBLAS_CORETYPE": "Haswell",       # numpy's and scipy's OpenBLAS (FID's matrix root, ...)
    # OpenCV (SSIM's Gaussian filter, PNG decoding, the OCR engines' resizing): its own
    # dispatched kernels, whose one level above AVX2 in the pinned build is AVX512_SKX (the
    # variable names features to switch off; OpenCV prints one line where the CPU lacks it),
    # and the Intel IPP it calls (k0, AVX-512, by default on such a CPU; l9 is its AVX2 code)
    "OPENCV_CPU_DISABLE": "AVX512-SKX",
    "OPENCV_IPP": "avx2",
    "OMP_NUM_THREADS": str(PORTABLE_THREADS),
    "MKL_NUM_THREADS": str(PORTABLE_THREADS),
    "OPENBLAS_NUM_THREADS": str(PORTABLE_THREADS),
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8",  # deterministic cuBLAS (read when CUDA initialises)
}

#: What each mode promises, as provenance records and job logs state it.
PROMISE = {
    "portable": "identical bytes for the same config and package versions on any x86-64 CPU "
                "with AVX2 (kernels pinned to AVX2, one thread, deterministic algorithms)",
    "fast": "machine-bound: the numbers follow this machine's kernel level and each job's "
            "thread count; another CPU or --cores can change the last digits and, through "
            "training, whole table cells (reproducibility: portable pins them)",
}
GPU_PROMISE = ("on CUDA, identical bytes only on the same GPU model with the same CUDA, cuDNN "
               "and PyTorch versions")


def mode_of(config: dict | None) -> str:
    """The config's ``reproducibility`` mode (:data:`DEFAULT_MODE` when absent).

    Raises:
        ValueError: a value outside :data:`MODES` (the schema rejects it before any job).
    """
    mode = (config or {}).get("reproducibility", DEFAULT_MODE)
    if mode not in MODES:
        raise ValueError(f"reproducibility: must be one of {list(MODES)}, got {mode!r}")
    return mode


def apply_environment(mode: str, environ=None) -> dict[str, str]:
    """Set the environment of ``mode`` in ``environ`` (default ``os.environ``); returns what was
    set. Call before torch, numpy or scipy is imported: the libraries read these variables once,
    when they first dispatch a kernel or start their thread pool. ``fast`` sets nothing."""
    environ = os.environ if environ is None else environ
    if mode != "portable":
        return {}
    environ.update(PORTABLE_ENV)
    return dict(PORTABLE_ENV)


def prepare_job() -> str | None:
    """Apply the mode of the Snakemake job running this interpreter, if any (read from the
    ``snakemake`` object its script preamble put in ``__main__``); returns the mode, or None
    outside a Snakemake ``script:`` job. Called by ``scripts/_bootstrap.py``, which every script
    imports before any numerical library (``tests/test_reproducibility.py`` checks the order)."""
    smk = getattr(sys.modules.get("__main__"), "snakemake", None)
    config = getattr(smk, "config", None)
    if not isinstance(config, dict):
        return None
    mode = mode_of(config)
    apply_environment(mode)
    tune_allocator()
    return mode


#: glibc's ``mallopt`` settings of a job (``malloc.h``: parameter number, value, and the
#: environment variable through which a user's own value wins). The metrics and networks of a
#: job allocate and free arrays of 10 to 100 MB per image (a 1024² image in float32 is 12 MB,
#: the distance matrix of its VQ tokens 64 MB); past glibc's default threshold (at most 32 MB)
#: each one is mapped and unmapped, and every page is faulted in again. Measured on a batched
#: reconstruction job of the default run (2-core machine): 53.2 s, 16.3 s of it in the kernel,
#: 2.26 GB RSS; with these settings 45.4 s, 8.8 s in the kernel, 2.36 GB. Two arenas keep the
#: job's reader and finisher threads from holding arenas of their own. The numbers computed do
#: not change.
ALLOCATOR = {"M_TRIM_THRESHOLD": (-1, 128 << 20, "MALLOC_TRIM_THRESHOLD_"),
             "M_MMAP_THRESHOLD": (-3, 128 << 20, "MALLOC_MMAP_THRESHOLD_"),
             "M_ARENA_MAX": (-8, 2, "MALLOC_ARENA_MAX")}


def tune_allocator(environ=None) -> dict[str, int]:
    """Apply :data:`ALLOCATOR` to this process's glibc allocator (``mallopt``), except the
    settings the environment already sets; returns what was applied (nothing off glibc)."""
    import ctypes

    environ = os.environ if environ is None else environ
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return {}
    applied = {}
    for name, (param, value, variable) in ALLOCATOR.items():
        if variable not in environ and mallopt(param, value) == 1:
            applied[name] = value
    return applied


def job_threads(mode: str, threads: int) -> int:
    """Threads a job's numerical libraries run: :data:`PORTABLE_THREADS` in ``portable``, else
    the rule's ``threads`` (at least 1)."""
    return PORTABLE_THREADS if mode == "portable" else max(1, int(threads))


def configure_torch(config: dict | None, threads: int) -> dict:
    """Set PyTorch's threads and determinism for the job's mode and return what it runs with.

    Args:
        config: the workflow config (``reproducibility``, ``run.device``).
        threads: the rule's ``threads`` (``snakemake.threads``); ignored in ``portable``.

    Returns:
        The job's compute record (:func:`torch_record`), for its log.

    Raises:
        RuntimeError: ``portable`` and PyTorch does not run :data:`PORTABLE_LEVEL` kernels
            (a CPU without AVX2, or not x86-64): the promise could not be kept.
    """
    import torch

    mode = mode_of(config)
    torch.set_num_threads(job_threads(mode, threads))
    if mode == "portable":
        deterministic_algorithms(torch)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        level = torch.backends.cpu.get_cpu_capability()
        if level != PORTABLE_LEVEL:
            raise RuntimeError(
                f"reproducibility: portable pins PyTorch's {PORTABLE_LEVEL} kernels, but this "
                f"job runs {level} kernels (a CPU without AVX2, or not x86-64); set "
                "reproducibility: fast to run here with machine-bound numbers")
    return torch_record(mode, torch, (config or {}).get("run", {}).get("device", "auto"))


def deterministic_algorithms(torch) -> None:
    """``torch.use_deterministic_algorithms(True)`` without importing Inductor's configuration.

    The public function also sets ``torch._inductor.config.deterministic``, and importing that
    module (sympy, the compiler's settings) costs every job 1.1 s on the 2-core reference
    machine, about a fifth of its start-up. The flag concerns compiled code only, and roundtrip
    never compiles a model, so the eager-mode switch alone is set (falling back to the public
    function where PyTorch lacks it)."""
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:
        torch.use_deterministic_algorithms(True)
    else:
        setter(True, warn_only=False)


def torch_record(mode: str, torch, device: str = "auto") -> dict:
    """The compute record of a job that imported ``torch``: ``reproducibility``,
    ``cpu_capability`` (the kernel level PyTorch dispatches to), ``threads``, ``promise`` and,
    when the job's networks run on CUDA, ``gpu`` (:func:`gpu_record`)."""
    record = {"reproducibility": mode, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "threads": torch.get_num_threads(), "promise": PROMISE[mode]}
    if uses_cuda(device, torch):
        record["gpu"] = gpu_record(torch)
        record["promise"] = f"{PROMISE[mode]}; {GPU_PROMISE}"
    return record


def uses_cuda(device: str, torch) -> bool:
    """Whether ``run.device`` (``auto``, ``cpu``, ``cuda[:k]``, ``mps``) puts networks on CUDA."""
    device = str(device or "auto")
    if device == "cpu" or device == "mps":
        return False
    return bool(torch.cuda.is_available())


def gpu_record(torch) -> dict:
    """GPU model and the library versions its bytes depend on: ``name``, ``cuda`` (the runtime
    PyTorch was built with), ``cudnn`` (e.g. ``91200``), ``torch``."""
    return {"name": torch.cuda.get_device_name(0), "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "torch": torch.__version__}


def nvidia_driver_present() -> bool:
    """An NVIDIA driver is loaded (no CUDA without one); read without importing torch."""
    return Path("/proc/driver/nvidia/version").is_file()


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (``avx2``, ``avx512f``, ...); empty where ``cpuinfo`` cannot be
    read (not Linux) or lists none (not x86)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def cpu_capability(flags: set[str] | None = None, environ=None) -> str:
    """The kernel level PyTorch picks on this x86-64 machine (``AVX512``, ``AVX2``, ``DEFAULT``),
    without importing it: PyTorch's own rule (AVX-512 needs F, BW, VL, DQ and FMA; AVX2 needs
    FMA), lowered by ``ATEN_CPU_CAPABILITY`` when set. ``unknown`` where no x86 flags are found."""
    flags = cpu_flags() if flags is None else flags
    environ = os.environ if environ is None else environ
    if not flags:
        return "unknown"
    levels = ["DEFAULT"]
    if {"avx2", "fma"} <= flags:
        levels.append("AVX2")
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            levels.append("AVX512")
    forced = environ.get("ATEN_CPU_CAPABILITY", "").upper()
    return forced if forced in levels else levels[-1]


def provenance_fields(config: dict | None) -> dict:
    """The compute fields of a table's provenance record, without importing torch unless the run
    uses a GPU: ``reproducibility``, ``cpu_capability``, ``threads``, ``promise`` and ``gpu``
    (GPU model, CUDA, cuDNN) when the networks run on CUDA.

    In ``portable`` the kernel level and threads are the pinned ones (each job that runs torch
    verifies the level and fails otherwise, :func:`configure_torch`); in ``fast`` they are this
    machine's level and ``"rule"`` (each job's ``threads:``, capped by ``--cores``).
    """
    mode = mode_of(config)
    if mode == "portable":
        fields = {"reproducibility": mode, "cpu_capability": PORTABLE_LEVEL,
                  "threads": PORTABLE_THREADS, "promise": PROMISE[mode]}
    else:
        fields = {"reproducibility": mode, "cpu_capability": cpu_capability(), "threads": "rule",
                  "promise": PROMISE[mode]}
    device = (config or {}).get("run", {}).get("device", "auto")
    if device not in ("cpu", "mps") and nvidia_driver_present():
        import torch

        if uses_cuda(device, torch):
            fields["gpu"] = gpu_record(torch)
            fields["promise"] = f"{PROMISE[mode]}; {GPU_PROMISE}"
    return fields
