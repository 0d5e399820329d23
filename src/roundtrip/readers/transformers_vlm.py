"""Chat VLMs run in process with transformers: an OCR engine and a render judge
(``type: transformers``), beside the endpoint readers of :mod:`.vlm`.

One component, :class:`ChatVLM`, loads ``AutoModelForImageTextToText`` and ``AutoProcessor``
from a model folder or a hub id already in the Hugging Face cache (never downloaded during a
run: ``local_files_only``), writes each request with the model's own chat template, and
generates a batch of requests at once (left padding), greedy unless the config says otherwise.
It keeps the contract of the endpoint path (:mod:`roundtrip.api.client`):

- every answer goes to the same response cache (``cache_dir``, default ``api_cache``) the moment
  its batch returns, so a killed job resumes without generating it again. The key holds the
  model folder's fingerprint (:func:`folder_fingerprint`), the request's texts, the bytes of its
  images as the model is given them, and the generation settings;
- usage (answers generated, cache hits, failures, tokens in and out, seconds) goes to the run's
  usage ledger as ``transformers:<model>`` (:func:`roundtrip.api.client.local_usage`).

A request is a list of parts, in order: texts (``str``) and images (``(H, W, 3)`` or ``(H, W)``
uint8/uint16 arrays), sent as one user turn. The callers build it: :class:`TransformersOCR`
(``ocr.engines.<name>``: the image, then the prompt, as VTBench's released OCR sends them) and
:class:`TransformersJudge` (``audit.judge``: the prompt, then the image, as :class:`.vlm.VlmJudge`).
Their prompts default to the same ``api.prompts`` templates as the endpoint readers
(:func:`roundtrip.api.settings.resolve_api`).

VTBench's released OCR (the authors' released code, github.com/xingjianleng/VTBench @ 01368b3,
``evaluations/ocr.py``) is this component with ``model: google/gemma-3-12b-it``,
``image_size: [1024, 1024]``, ``max_new_tokens: 1024`` and ``decoding: model`` (its
``generate`` call passes no decoding settings, so the folder's ``generation_config.json``
decides).

Decoding speed (the paths transformers offers; none of these settings enters the cache key, as
none changes which answer greedy decoding gives, only how fast it comes):

- ``cache_implementation``: the KV cache ``generate`` builds. ``auto`` (default): a static cache
  (preallocated to the prompt plus ``max_new_tokens``) on a GPU for a model transformers can
  compile (``_can_compile_fullgraph``), whose decoding step transformers then compiles with
  ``torch.compile`` (mode ``reduce-overhead``: CUDA graphs); on the CPU the model's own default
  (a dynamic cache unless its ``generation_config.json`` names one), as ``generate`` alone.
- ``compile``: ``auto`` (default: transformers compiles the decoding step of a static cache on
  a GPU), ``false`` (never), ``true`` or a mapping of ``CompileConfig`` fields (compile on any
  device, the CPU included; needs the static cache, which ``auto`` then picks).
- ``attn_implementation``: ``auto`` (transformers' choice: SDPA where the model supports it),
  ``eager``, ``sdpa``, ``flash_attention_2`` (the ``flash-attn`` package), ... as
  ``from_pretrained`` takes it.
- ``sort_by_length``: the requests of one call are batched by prompt length, longest first,
  so padding stays small; answers come back in the caller's order.
- ``prefetch``: a worker thread prepares the next batch's processor inputs (the images as the
  model is given them, the processor's tensors, on the CPU) while the current batch generates.
  ``auto`` (default): when the model runs on a GPU (on the CPU the thread would take the cores
  the model runs on).

With the defaults, a batch the fast path fails (a compilation error, say) is generated again on
the eager path (dynamic cache, nothing compiled), which the reader then keeps; a setting given
explicitly is never replaced: its failures are the items' errors.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from roundtrip.api.client import DEFAULT_CACHE_DIR, Reply, ResponseCache, local_usage
from roundtrip.api.settings import IN_PROCESS
from roundtrip.readers.vlm import JudgeVerdict, language_of, parse_verdict

log = logging.getLogger(__name__)

#: The config ``type`` of every reader that runs a model in process.
TYPE = IN_PROCESS
#: ``decoding`` values: ``greedy`` (``do_sample=False``), ``model`` (the folder's
#: ``generation_config.json`` as it is), or a dict of these ``generate`` arguments.
DECODING_KEYS = ("do_sample", "temperature", "top_p", "top_k", "min_p", "num_beams",
                 "repetition_penalty")
DTYPES = ("auto", "bfloat16", "float16", "float32")
#: ``cache_implementation`` values: ``auto`` (``static`` on a GPU for a model transformers can
#: compile, else the model's default), ``static`` (transformers' ``StaticCache``), ``dynamic``
#: (``DynamicCache``).
CACHE_IMPLEMENTATIONS = ("auto", "static", "dynamic")
#: Keys of a ``compile`` mapping: the fields of transformers' ``CompileConfig`` (the arguments of
#: ``torch.compile``).
COMPILE_KEYS = ("fullgraph", "dynamic", "backend", "mode", "options")
#: Files larger than this are fingerprinted by their hub blob name or checksum-list digest, or
#: by size and modification time, instead of being read (weights of many GB).
HASHED_BYTES = 64 << 20


class GenerationFailed(RuntimeError):
    """The model could not answer a batch (out of memory, a processor error); each item of the
    batch carries it as its result."""


def runs_in_process(spec: dict | None) -> bool:
    """Whether a reader's config entry (an OCR engine, a judge) runs its model in this process
    (``type: transformers``): the jobs that run it ask for a GPU."""
    return bool(spec) and spec.get("type") == TYPE


class NotImageText(ValueError):
    """A model folder that holds no image-text model (the message names the folder and what it
    holds)."""


def image_text_architecture(folder: str | Path) -> str:
    """The architecture of the model saved in ``folder`` when it reads images and writes text,
    decided from its ``config.json`` alone (no weights loaded).

    A model is image-text when its ``model_type`` is one that transformers loads with
    ``AutoModelForImageTextToText`` (transformers' ``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``:
    the chat VLMs, ``gemma3``, ``llava``, ``qwen2_5_vl``, ``janus``, ..., and
    ``vision-encoder-decoder`` captioners), the class :class:`ChatVLM` loads. Neither a
    ``vision_config`` (CLIP and SigLIP have one and write no text) nor an image processor (ViT
    has one) makes a model image-text.

    Args:
        folder: a saved model folder (``config.json``; a hub snapshot folder included).

    Returns:
        The architecture: ``config.json``'s first ``architectures`` entry, else its
        ``model_type`` (``Gemma3ForConditionalGeneration``, ``VisionEncoderDecoderModel``).

    Raises:
        NotImageText: the folder holds another kind of model, a diffusers pipeline, or a
            ``config.json`` that names no model type or one transformers does not know; the
            message starts with the folder and names what it holds (``/models/gpt2 holds
            GPT2LMHeadModel, a text-only model: a reader needs an image-text model (...)``).
    """
    import json

    import transformers
    from transformers.models.auto import configuration_auto, image_processing_auto
    from transformers.models.auto import modeling_auto as auto

    folder = Path(folder)
    need = (f"a reader needs an image-text model (a model_type transformers "
            f"{transformers.__version__} loads with AutoModelForImageTextToText: a chat VLM such "
            "as gemma3, llava or qwen2_5_vl, or a vision-encoder-decoder captioner)")
    path = folder / "config.json"
    if not path.is_file():
        held = ("a diffusers pipeline (model_index.json)" if (folder / "model_index.json").is_file()
                else "a sentence-transformers model (modules.json)"
                if (folder / "modules.json").is_file() else "no config.json")
        raise NotImageText(f"{folder} holds {held}: {need}")
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise NotImageText(f"{path} cannot be read: {exc}") from exc
    kind = config.get("model_type") if isinstance(config, dict) else None
    if not kind:
        raise NotImageText(f"{path} names no model_type: {need}")
    names = config.get("architectures") or [kind]
    arch = str(names[0])
    if kind in auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return arch
    if kind not in configuration_auto.CONFIG_MAPPING_NAMES:
        what = (f"a model_type ({kind}) transformers {transformers.__version__} does not know "
                "(roundtrip runs no model code of its own, trust_remote_code)")
    elif "vision_config" in config or kind in image_processing_auto.IMAGE_PROCESSOR_MAPPING_NAMES \
            or kind in auto.MODEL_FOR_IMAGE_MAPPING_NAMES:
        what = "an image model that writes no text"
    elif any(kind in mapping for mapping in (
            auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
            auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
            auto.MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES)):
        what = "a text-only model"
    else:
        what = "a model that does not read images"
    raise NotImageText(f"{folder} holds {arch}, {what}: {need}")


# -- the model folder ---------------------------------------------------------------------------
def folder_fingerprint(folder: str | Path) -> str:
    """SHA-256 over every file of a model folder: its relative path, size and content digest.

    Files up to :data:`HASHED_BYTES` are hashed. A larger file (weights) counts by the digest
    its name gives for free: the blob it links to in the Hugging Face cache (named by the
    file's SHA-256), or its line in the folder's checksum list
    (:data:`roundtrip.core.weights.CHECKSUMS`); else by its modification time (a copied folder
    then generates its answers again; it never reuses another model's).

    Raises:
        FileNotFoundError: ``folder`` is not a folder.
    """
    from roundtrip.core.weights import CHECKSUMS

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a folder")
    listed = _checksum_list(folder / CHECKSUMS)
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if ".cache" in Path(rel).parts:  # hub download bookkeeping, not the model
            continue
        size = path.stat().st_size
        h.update(f"{rel}\0{size}\0{_file_digest(path, size, listed.get(rel))}\n".encode())
    return h.hexdigest()


def _checksum_list(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    pairs = (line.split("  ", 1) for line in path.read_text().splitlines() if "  " in line)
    return {rel: digest for digest, rel in pairs}


def _file_digest(path: Path, size: int, listed: str | None) -> str:
    if size <= HASHED_BYTES:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if path.is_symlink() and path.resolve().parent.name == "blobs":
        return path.resolve().name  # the hub cache names an LFS blob by its SHA-256
    return listed or f"mtime:{path.stat().st_mtime_ns}"


def pick_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` when this process sees a GPU (a job granted one), else ``cpu``;
    any other value as given (``cpu``, ``cuda``, ``cuda:1``)."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(dtype: str, device: str) -> str:
    """``auto`` -> ``bfloat16`` on a GPU, ``float32`` on the CPU; any other value as given.

    Raises:
        ValueError: not one of :data:`DTYPES`.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype: {dtype!r} is not one of {list(DTYPES)}")
    if dtype != "auto":
        return dtype
    return "float32" if device == "cpu" else "bfloat16"


def prepared_image(image: np.ndarray, size: Sequence[int] | None = None):
    """The PIL image the model is given: 8-bit RGB, resized to ``size`` = ``(width, height)``
    with PIL's default filter when ``size`` is given (VTBench's released OCR:
    ``Image.fromarray(image).convert("RGB").resize((1024, 1024))``).

    Args:
        image: ``(H, W, 3)`` or ``(H, W)`` uint8/uint16 (16-bit rounded to 8 bits).

    Raises:
        ValueError: not a 2D or 3-channel integer image.
    """
    from PIL import Image

    from roundtrip.core.imaging import to_uint8

    if not isinstance(image, np.ndarray) or image.dtype not in (np.uint8, np.uint16) \
            or not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise ValueError("an image is an (H, W, 3) or (H, W) uint8/uint16 array, got "
                         f"{getattr(image, 'shape', type(image).__name__)} "
                         f"{getattr(image, 'dtype', '')}")
    pil = Image.fromarray(to_uint8(image)).convert("RGB")
    return pil.resize((int(size[0]), int(size[1]))) if size else pil


def _decoding(decoding) -> dict | None:
    """``generate`` arguments of a ``decoding`` setting; None for ``model`` (none passed)."""
    if decoding == "greedy":
        return {"do_sample": False}
    if decoding == "model":
        return None
    if not isinstance(decoding, dict):
        raise ValueError(f"decoding: {decoding!r} is not greedy, model or a mapping of "
                         f"{list(DECODING_KEYS)}")
    unknown = sorted(set(decoding) - set(DECODING_KEYS))
    if unknown:
        raise ValueError(f"decoding: unknown {unknown}; known: {list(DECODING_KEYS)}")
    return {"do_sample": False, **decoding}


def check_decoding_path(cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                        attn_implementation: str = "auto") -> None:
    """Validate the decoding-speed settings (module docstring).

    Raises:
        ValueError: a value not listed (the message names the key), or ``compile`` asked for
            with ``cache_implementation: dynamic`` (transformers compiles only the decoding step
            of a static cache).
    """
    if cache_implementation not in CACHE_IMPLEMENTATIONS:
        raise ValueError(f"cache_implementation: {cache_implementation!r} is not one of "
                         f"{list(CACHE_IMPLEMENTATIONS)}")
    if isinstance(compile, dict):
        unknown = sorted(set(compile) - set(COMPILE_KEYS))
        if unknown:
            raise ValueError(f"compile: unknown {unknown}; known: {list(COMPILE_KEYS)}")
    elif compile != "auto" and not isinstance(compile, bool):
        raise ValueError(f"compile: {compile!r} is not auto, true, false or a mapping of "
                         f"{list(COMPILE_KEYS)}")
    if compile not in ("auto", False) and cache_implementation == "dynamic":
        raise ValueError("compile: compiling the decoding step needs a static cache "
                         "(cache_implementation: static or auto), not dynamic")
    if not isinstance(attn_implementation, str) or not attn_implementation:
        raise ValueError(f"attn_implementation: {attn_implementation!r} is not auto or a name "
                         "transformers takes (eager, sdpa, flash_attention_2, ...)")


def decoding_path(cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                  device: str = "cpu", compilable: bool = True) -> dict:
    """The ``generate`` arguments that pick the KV cache and the compilation of the decoding
    step (transformers' ``cache_implementation``, ``disable_compile`` and ``compile_config``;
    its generation docs, "static cache and torch.compile").

    Args:
        cache_implementation: a :data:`CACHE_IMPLEMENTATIONS` value. ``auto``: ``static`` when
            ``compile`` is asked for, or on a CUDA ``device`` for a ``compilable`` model unless
            ``compile`` is false; else none is passed (the model's ``generation_config`` decides:
            a dynamic cache unless it names one).
        compile: ``auto``: none passed (transformers compiles the decoding step of a static
            cache on a GPU by itself); ``False``: ``disable_compile``; ``True`` or a mapping of
            :data:`COMPILE_KEYS`: that ``CompileConfig``, on any device (a ``backend`` other than
            inductor gets no ``mode`` unless the mapping gives one).
        device: where the model runs (``cpu``, ``cuda``, ``cuda:N``).
        compilable: whether the model class says transformers can compile it
            (``_can_compile_fullgraph``).

    Returns:
        ``{}`` for ``generate``'s own defaults, else some of ``cache_implementation`` (str),
        ``disable_compile`` (True), ``compile_config`` (``transformers.CompileConfig``).

    Raises:
        ValueError: as :func:`check_decoding_path`.
    """
    check_decoding_path(cache_implementation, compile)
    asked = compile is True or isinstance(compile, dict)
    cache = cache_implementation
    if cache == "auto":
        gpu = device.startswith("cuda") and compilable and compile is not False
        cache = "static" if asked or gpu else None
    args: dict = {} if cache is None else {"cache_implementation": cache}
    if compile is False:
        args["disable_compile"] = True
    elif asked:
        from transformers import CompileConfig

        fields = {} if compile is True else dict(compile)
        if fields.get("backend", "inductor") != "inductor":
            fields.setdefault("mode", None)  # modes are inductor's
        config = CompileConfig(**fields)
        config._compile_all_devices = True  # transformers' switch for devices other than GPUs
        args["compile_config"] = config
    return args


# -- loaded models, shared within a process ------------------------------------------------------
_LOADED: dict[tuple[str, str, str, str], tuple] = {}
#: One lock per loaded processor: its tokenizer is not safe to call from two threads at once
#: (the prefetch thread and the thread decoding answers).
_PROCESSOR_LOCKS: dict[tuple[str, str, str, str], threading.Lock] = {}
_LOAD_LOCK = threading.Lock()
_USAGE_LOCK = threading.Lock()


def split_by_cache(requests: Sequence, request_key, cache: ResponseCache,
                   usage) -> tuple[list, list]:
    """Answer what the response cache holds and list what is left to generate.

    Args:
        requests: the requests, in the caller's order.
        request_key: ``request -> (key, canonical, inputs)`` (an in-process model's
            ``request_key``); its ``ValueError`` (a part that is not text or an image) becomes
            that request's result.
        cache: the response cache the answers are written to.
        usage: the model's usage record; each cached answer counts one cache hit.

    Returns:
        ``(out, todo)``: ``out[i]`` is the cached text, the ``ValueError``, or None where
        request ``i`` is to be generated; ``todo`` lists those as ``(i, key, canonical, inputs)``
        in request order.
    """
    out: list = [None] * len(requests)
    todo: list = []
    for i, request in enumerate(requests):
        try:
            key, canonical, inputs = request_key(request)
        except ValueError as exc:
            out[i] = exc
            continue
        cached = cache.get(key)
        if cached is None:
            todo.append((i, key, canonical, inputs))
            continue
        with _USAGE_LOCK:
            usage.cache_hits += 1
        out[i] = Reply(cached, cached=True).text
    return out, todo


def _load(folder: str, device: str, dtype: str, attn_implementation: str = "auto") -> tuple:
    """``(model, processor, lock)`` of ``folder``, loaded once per process, device, dtype and
    attention implementation (an OCR engine and a judge naming one model share it); the lock
    serializes generation."""
    key = (folder, device, dtype, attn_implementation)
    with _LOAD_LOCK:
        if key not in _LOADED:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor

            started = time.monotonic()
            attn = {} if attn_implementation == "auto" else {
                "attn_implementation": attn_implementation}
            model = AutoModelForImageTextToText.from_pretrained(
                folder, dtype=getattr(torch, dtype), local_files_only=True, **attn
            ).to(device).eval()
            processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
            tokenizer = getattr(processor, "tokenizer", processor)
            tokenizer.padding_side = "left"  # a batch's answers start where its prompts end
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            log.info("loaded %s on %s (%s, %s attention) in %.1f s", folder, device, dtype,
                     model.config._attn_implementation, time.monotonic() - started)
            _LOADED[key] = (model, processor, threading.Lock())
            _PROCESSOR_LOCKS[key] = threading.Lock()
        return _LOADED[key]


def unload_all() -> None:
    """Forget the process's loaded models (tests; freeing GPU memory between uses)."""
    with _LOAD_LOCK:
        _LOADED.clear()
        _PROCESSOR_LOCKS.clear()


# -- the component -------------------------------------------------------------------------------
#: What a processor raises for an input it cannot take: the item's error, not the run's.
PREPROCESSING_ERRORS = (RuntimeError, ValueError)


@dataclass
class _Pending:
    """A request to generate: its place in the caller's list, its cache key and canonical
    request, its parts, its image count and the pixels of its prepared images."""

    index: int
    key: str
    canonical: dict
    parts: Sequence
    images: int
    pixels: int


@dataclass
class _Prepared:
    """A batch ready for ``generate``: the requests the processor took (``items``) and its
    inputs for them (CPU tensors; None when it took none), the error of each request it could
    not take, and the seconds the generating thread waited for it."""

    items: list[_Pending]
    inputs: object | None
    failed: list[tuple[_Pending, Exception]] = field(default_factory=list)
    waited: float = 0.0


class LocalModel:
    """A transformers model run in process from a folder or a hub id in the Hugging Face cache,
    as every in-process reader and captioner keeps it: where it is on this machine, its
    fingerprint (the response cache's key of the model), the device and dtype it runs with, its
    line of the usage ledger and the response cache its answers go to.

    Args:
        model: a model folder, a registered folder's name, or a hub id in the cache
            (:func:`roundtrip.core.weights.local_model`).
        key: the config key of ``model``, for messages (``ocr.engines.gemma3.model``).
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name
            (:data:`DTYPES`).
        device: ``auto`` (the GPU when the process sees one), ``cpu``, ``cuda``, ``cuda:N``.
        cache_dir: the response cache (shared with the endpoint readers).

    Raises:
        ValueError: ``dtype`` is not one of :data:`DTYPES`.
    """

    def __init__(self, model: str, key: str, dtype: str = "auto", device: str = "auto",
                 cache_dir: str = DEFAULT_CACHE_DIR):
        if dtype not in DTYPES:
            raise ValueError(f"dtype: {dtype!r} is not one of {list(DTYPES)}")
        self.model, self.key = str(model), key
        self.device, self.dtype = device, dtype
        self.cache = ResponseCache(cache_dir)
        self._folder: str | None = None
        self._fingerprint: str | None = None
        self._runtime: tuple[str, str] | None = None

    @property
    def folder(self) -> str:
        """The model's folder on this machine.

        Raises:
            WeightsMissing: not there (the message names :attr:`key` and the hub id).
        """
        if self._folder is None:
            from roundtrip.core.weights import local_model

            self._folder = str(local_model(self.model, self.key))
        return self._folder

    @property
    def fingerprint(self) -> str:
        """:func:`folder_fingerprint` of :attr:`folder` (a hex SHA-256), computed once."""
        if self._fingerprint is None:
            self._fingerprint = folder_fingerprint(self.folder)
        return self._fingerprint

    @property
    def runtime(self) -> tuple[str, str]:
        """``(device, dtype)`` the model runs with (:func:`pick_device`, :func:`pick_dtype`)."""
        if self._runtime is None:
            device = pick_device(self.device)
            self._runtime = (device, pick_dtype(self.dtype, device))
        return self._runtime

    @property
    def usage(self):
        """The process's :class:`roundtrip.api.client.Usage` of this model
        (``transformers:<model>``, shared by every component that runs it)."""
        return local_usage(f"{TYPE}:{self.model}", self.folder)


class ChatVLM(LocalModel):
    """A chat VLM run in process (module docstring).

    Args:
        model: a model folder, a registered folder's name, or a hub id in the Hugging Face
            cache (:func:`roundtrip.core.weights.local_model`).
        key: the config key of ``model``, for messages (``ocr.engines.gemma3.model``).
        max_new_tokens: answer length limit, in tokens.
        decoding: ``greedy`` (default), ``model`` (the folder's ``generation_config.json``), or
            ``{do_sample, temperature, top_p, top_k, min_p, num_beams, repetition_penalty}``.
        seed: seeds ``torch`` before each batch when decoding may sample (a sampled answer then
            depends on the batch it was generated in).
        batch_size: requests generated at once.
        image_size: ``[width, height]`` every image is resized to (PIL's default filter), or
            None for the images as given.
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name.
        device: ``auto`` (the GPU when the process sees one), ``cpu``, ``cuda``, ``cuda:N``.
        cache_dir: the response cache (shared with the endpoint readers).
        cache_implementation: ``auto`` (default), ``static`` or ``dynamic``
            (:func:`decoding_path`).
        compile: ``auto`` (default), ``True``, ``False`` or a mapping of :data:`COMPILE_KEYS`
            (:func:`decoding_path`).
        attn_implementation: ``auto`` (default: transformers' choice, SDPA where the model
            supports it) or a name ``from_pretrained`` takes (``eager``, ``sdpa``,
            ``flash_attention_2``).
        sort_by_length: batch the requests of one call by prompt length, longest first
            (default True).
        prefetch: prepare the next batch's processor inputs in a worker thread while the
            current batch generates: ``auto`` (default: when the model runs on a GPU),
            ``True``, ``False``.

    Raises:
        ValueError: a bad setting (the message names it).
    """

    def __init__(self, model: str, key: str = "model", max_new_tokens: int = 1024,
                 decoding: str | dict = "greedy", seed: int = 0, batch_size: int = 8,
                 image_size: Sequence[int] | None = None, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR, *,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        if not model:
            raise ValueError("model: empty (a model folder or a hub id)")
        if int(max_new_tokens) < 1 or int(batch_size) < 1:
            raise ValueError("max_new_tokens and batch_size must be at least 1")
        if image_size is not None and (len(image_size) != 2 or min(image_size) < 1):
            raise ValueError(f"image_size: [width, height] in pixels, got {image_size!r}")
        super().__init__(model, key, dtype, device, cache_dir)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), int(batch_size)
        self.generate_args = _decoding(decoding)
        self.decoding, self.seed = decoding, int(seed)
        self.image_size = None if image_size is None else (int(image_size[0]), int(image_size[1]))
        check_decoding_path(cache_implementation, compile, attn_implementation)
        self.cache_implementation, self.compile = cache_implementation, compile
        self.attn_implementation = attn_implementation
        if prefetch != "auto" and not isinstance(prefetch, bool):
            raise ValueError(f"prefetch: {prefetch!r} is not auto, true or false")
        self.sort_by_length, self.prefetch = bool(sort_by_length), prefetch
        self._eager_only = False  # the automatic fast path failed once: the eager path from now

    # -- how the model is loaded ---------------------------------------------------------------
    def loaded(self) -> tuple:
        """``(model, processor, lock)`` as :meth:`answer_many` runs them, loaded once per process,
        device, dtype and attention implementation, for a caller that runs the same model
        another way (a unified model's image generation); hold ``lock`` while generating.

        Raises:
            WeightsMissing: the model is not on this machine.
            ValueError: transformers refuses ``attn_implementation`` (unknown, or its package
                missing; the message names the key).
        """
        try:
            return _load(self.folder, *self.runtime, self.attn_implementation)
        except (ImportError, ValueError) as exc:
            if self.attn_implementation == "auto":
                raise
            raise ValueError(f"{self._sibling_key('attn_implementation')}: "
                             f"{self.attn_implementation!r}: {exc}") from exc

    def _sibling_key(self, name: str) -> str:
        """The config key of setting ``name`` beside :attr:`key` (``ocr.engines.x.<name>``)."""
        return f"{self.key[:-len('.model')]}.{name}" if self.key.endswith(".model") else name

    def _processor_lock(self) -> threading.Lock:
        self.loaded()
        return _PROCESSOR_LOCKS[(self.folder, *self.runtime, self.attn_implementation)]

    def settings(self) -> dict:
        """The generation settings in every cache key (the decoding-speed settings are not:
        they change how fast an answer comes, not which one)."""
        out = {"max_new_tokens": self.max_new_tokens, "decoding": self.decoding,
               "dtype": self.runtime[1]}
        return out if self.decoding == "greedy" else out | {"seed": self.seed}

    def decoding_args(self, model) -> tuple[dict, bool]:
        """``(generate arguments, replaceable)``: :func:`decoding_path` of this reader's settings
        for ``model`` on its device, and whether the eager path may replace them when they fail
        (both settings ``auto`` and a fast path chosen); after such a failure, the eager path
        (dynamic cache, nothing compiled)."""
        device = self.runtime[0]
        compilable = bool(getattr(model, "_can_compile_fullgraph", False))
        if self._eager_only:
            return decoding_path("dynamic", False, device, compilable), False
        args = decoding_path(self.cache_implementation, self.compile, device, compilable)
        automatic = self.cache_implementation == "auto" and self.compile == "auto"
        return args, automatic and bool(args)

    def check(self) -> str:
        """Locate the model and fingerprint its folder (no loading); returns a label.

        Raises:
            WeightsMissing: the model is not on this machine.
        """
        device, dtype = self.runtime
        return (f"{self.model} in process ({self.folder}; {device}, {dtype}; "
                f"folder {self.fingerprint[:12]})")

    # -- answering ---------------------------------------------------------------------------
    def request_key(self, parts: Sequence) -> tuple[str, dict, list]:
        """``(cache key, canonical request, [PIL images])`` of one request.

        Raises:
            ValueError: a part that is neither text nor an image array.
        """
        content, images = [], []
        for part in parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
                continue
            pil = prepared_image(part, self.image_size)
            images.append(pil)
            content.append({"type": "image", "size": list(pil.size),
                            "sha256": hashlib.sha256(pil.tobytes()).hexdigest()})
        # the folder's content, not its path: a moved or copied folder keeps its answers
        canonical = {"kind": f"{TYPE}.chat", "folder_fingerprint": self.fingerprint,
                     "content": content, "params": self.settings()}
        return ResponseCache.key(canonical), canonical, images

    def answer_many(self, requests: list[Sequence]) -> list[str | Exception]:
        """The answer to each request, in order: a text, or the exception of that request
        (:class:`GenerationFailed`, or ``ValueError`` for a part that is not text or an image).

        Cached answers are taken from the cache; the others are generated ``batch_size`` at a
        time, requests with as many images together (:meth:`_batches`), each batch's answers
        written to the cache before the next batch starts. With :meth:`prefetching`, a worker
        thread prepares the next batch's inputs while a batch generates; a request the
        processor cannot take is that request's :class:`GenerationFailed`. At most two batches
        of prepared images are held (one generating, one prepared); the images a request's
        cache key is computed from are not kept.

        Raises:
            WeightsMissing: the model is not on this machine.
        """
        out, misses = split_by_cache(requests, self.request_key, self.cache, self.usage)
        todo = [_Pending(i, key, canonical, requests[i], len(images),
                         sum(im.width * im.height for im in images))
                for i, key, canonical, images in misses]
        if not todo:
            return out
        prepared = self._prepared(self._batches(todo))
        try:
            for batch in prepared:
                for item, result in self._generate(batch):
                    out[item.index] = result
        finally:
            prepared.close()  # a job killed mid-batch: the prefetch thread stops
        return out

    def _batches(self, todo: list[_Pending]) -> list[list[_Pending]]:
        """``todo`` cut into batches of at most :attr:`batch_size` requests with as many images
        each, in the order the requests fill them: a batch is cut when it is full, the rest at
        the end (image counts in the order they came). With :attr:`sort_by_length` the batch
        sizes and their order are the same; each image count's requests are dealt to its
        batches longest prompt first (tokens of the chat-templated text, then image pixels;
        ties in the caller's order), unless each image count fills one batch at most."""
        sizes: list[tuple[int, int]] = []  # (image count, batch size), in the order cut
        filling: dict[int, int] = {}
        groups: dict[int, list[_Pending]] = {}
        for item in todo:
            groups.setdefault(item.images, []).append(item)
            filling[item.images] = filling.get(item.images, 0) + 1
            if filling[item.images] == self.batch_size:
                sizes.append((item.images, filling.pop(item.images)))
        sizes += list(filling.items())
        if self.sort_by_length and len(sizes) > len(groups):
            tokens = self._prompt_tokens(todo)
            for members in groups.values():  # stable: equal lengths keep the caller's order
                members.sort(key=lambda it: (tokens[it.index], it.pixels), reverse=True)
        dealt = {count: iter(members) for count, members in groups.items()}
        return [[next(dealt[count]) for _ in range(size)] for count, size in sizes]

    def _prompt_tokens(self, todo: list[_Pending]) -> dict[int, int]:
        """Request index -> tokens of its chat-templated text (each image its placeholder); 0
        for a request the chat template refuses (its batch then gives it its error)."""
        _, processor, _ = self.loaded()
        tokenizer = getattr(processor, "tokenizer", processor)
        out = {it.index: 0 for it in todo}
        with self._processor_lock():
            prompts = {}
            for it in todo:
                try:
                    prompts[it.index] = _prompt(processor, it.parts)
                except PREPROCESSING_ERRORS:
                    continue
            if prompts:
                ids = tokenizer(list(prompts.values()), add_special_tokens=False)["input_ids"]
                out |= {i: len(row) for i, row in zip(prompts, ids, strict=True)}
        return out

    def prefetching(self) -> bool:
        """Whether a worker thread prepares the next batch (:attr:`prefetch`; ``auto``: when the
        model runs on a GPU)."""
        if self.prefetch == "auto":
            return self.runtime[0] != "cpu"
        return self.prefetch

    def _prepared(self, batches: list[list[_Pending]]):
        """The batches prepared (:meth:`_prepare`), in order: each in a worker thread while the
        caller generates the one before it (:meth:`prefetching` and more than one batch), else
        in the caller's thread; each with the seconds the caller waited for it."""
        if not self.prefetching() or len(batches) < 2:
            for batch in batches:
                started = time.monotonic()
                ready = self._prepare(batch)
                ready.waited = time.monotonic() - started
                yield ready
            return
        with ThreadPoolExecutor(1, thread_name_prefix="roundtrip-prefetch") as pool:
            ahead: Future = pool.submit(self._prepare, batches[0])
            try:
                for following in [*batches[1:], None]:
                    started = time.monotonic()
                    ready = ahead.result()
                    ready.waited = time.monotonic() - started
                    if following is not None:
                        ahead = pool.submit(self._prepare, following)
                    yield ready
            finally:
                ahead.cancel()

    def _prepare(self, batch: list[_Pending]) -> _Prepared:
        """The processor's inputs (CPU tensors) of a batch. A request whose images or
        processor inputs fail (:data:`PREPROCESSING_ERRORS`) is set aside with its error; the
        others are prepared together."""
        _, processor, _ = self.loaded()
        ready, failed = [], []
        for item in batch:
            try:
                ready.append((item, [prepared_image(p, self.image_size) for p in item.parts
                                     if not isinstance(p, str)]))
            except ValueError as exc:
                failed.append((item, exc))
        if not ready:
            return _Prepared([], None, failed)
        with self._processor_lock():
            try:
                inputs = _inputs(processor, [(item.parts, images) for item, images in ready])
            except PREPROCESSING_ERRORS as exc:
                if len(ready) == 1:
                    return _Prepared([], None, failed + [(ready[0][0], exc)])
                # which of them: each alone; the batch again without the ones that fail alone
                alone = []
                for item, images in ready:
                    try:
                        _inputs(processor, [(item.parts, images)])
                        alone.append((item, images))
                    except PREPROCESSING_ERRORS as one:
                        failed.append((item, one))
                ready = alone
                try:
                    inputs = _inputs(processor, [(item.parts, images) for item, images in ready]) \
                        if ready else None
                except PREPROCESSING_ERRORS:  # fine alone, not together: all of them fail
                    failed += [(item, exc) for item, _ in ready]
                    ready, inputs = [], None
        return _Prepared([item for item, _ in ready], inputs, failed)

    def _generate(self, prepared: _Prepared) -> list[tuple[_Pending, str | Exception]]:
        """Generate one prepared batch, cache every answer, count usage; one
        ``(request, answer or exception)`` per request, those the processor refused first."""
        import torch

        usage = self.usage
        out: list[tuple[_Pending, str | Exception]] = []
        for item, exc in prepared.failed:
            log.warning("%s: request %d could not be prepared: %s", self.model, item.index, exc)
            with _USAGE_LOCK:
                usage.failures += 1
            out.append((item, GenerationFailed(f"{self.model}: {exc}")))
        if prepared.inputs is None:
            return out
        batch = prepared.items
        model, processor, lock = self.loaded()
        started = time.monotonic()
        try:
            with lock, torch.no_grad():
                inputs = prepared.inputs.to(model.device, dtype=model.dtype)
                args, replaceable = self.decoding_args(model)
                try:
                    ids = self._call_generate(model, inputs, args)
                except Exception as exc:  # any failure of the automatic path
                    if not replaceable:
                        raise
                    log.warning("%s: the fast decoding path (%s) failed: %s: %s; this reader "
                                "generates on the eager path from now on", self.model,
                                sorted(args), type(exc).__name__, exc)
                    self._eager_only = True
                    ids = self._call_generate(model, inputs, self.decoding_args(model)[0])
        except (RuntimeError, ValueError) as exc:  # out of memory, the model refusing its input
            with _USAGE_LOCK:
                usage.failures += len(batch)
            log.warning("%s: a batch of %d failed: %s", self.model, len(batch), exc)
            return out + [(item, GenerationFailed(f"{self.model}: {exc}")) for item in batch]
        new = ids[:, inputs["input_ids"].shape[1]:].cpu()
        with self._processor_lock():
            texts = processor.batch_decode(new, skip_special_tokens=True)
        seconds = (prepared.waited + time.monotonic() - started) / len(batch)
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        eos = _eos_ids(model)
        for item, text, row, n_in in zip(batch, texts, new, lengths, strict=True):
            n_out, stopped = _answer_length(row.tolist(), eos)
            response = {"choices": [{"message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop" if stopped else "length"}],
                        "usage": {"prompt_tokens": int(n_in), "completion_tokens": n_out},
                        "model": self.model, "seconds": round(seconds, 4)}
            self.cache.put(item.key, item.canonical, response)  # at once: a killed job keeps it
            with _USAGE_LOCK:
                usage.add_response(response, seconds=seconds)
            out.append((item, text))
        return out

    def _call_generate(self, model, inputs, path: dict):
        """``model.generate`` with the decoding settings and the decoding path's arguments,
        torch seeded first when decoding may sample."""
        import torch

        args = dict(self.generate_args if self.generate_args is not None else {})
        if self.generate_args is None or args.get("do_sample"):
            torch.manual_seed(self.seed)
        return model.generate(**inputs, max_new_tokens=self.max_new_tokens, **args, **path)


def _prompt(processor, parts: Sequence) -> str:
    """One request written as one user turn by the model's chat template (each image its
    placeholder)."""
    content = [{"type": "text", "text": p} if isinstance(p, str) else {"type": "image"}
               for p in parts]
    return processor.apply_chat_template([{"role": "user", "content": content}],
                                         add_generation_prompt=True)


def _inputs(processor, requests: list[tuple[Sequence, list]]):
    """The processor's batch (left-padded) of ``(parts, PIL images)`` requests, each written as
    one user turn by the model's chat template."""
    prompts = [_prompt(processor, parts) for parts, _ in requests]
    images = [imgs for _, imgs in requests]
    return processor(text=prompts, images=images if any(images) else None, padding=True,
                     return_tensors="pt")


def _eos_ids(model) -> set[int]:
    eos = model.generation_config.eos_token_id
    return set() if eos is None else {eos} if isinstance(eos, int) else set(eos)


def _answer_length(row: list[int], eos: set[int]) -> tuple[int, bool]:
    """Tokens generated up to and including the first end-of-sequence token, and whether the
    answer stopped there (else it ran into ``max_new_tokens``)."""
    for k, token in enumerate(row):
        if token in eos:
            return k + 1, True
    return len(row), False


# -- the readers ---------------------------------------------------------------------------------
class _InProcessReader:
    """What the in-process readers share: the component and the config key in messages."""

    name = TYPE
    #: One batch at a time: the batches share one model (and GPU); the batch is the parallelism.
    concurrency = 1

    def __init__(self, vlm: ChatVLM):
        self.vlm = vlm
        self._config_key = ""

    @property
    def config_key(self) -> str:
        return self._config_key

    @config_key.setter
    def config_key(self, value: str) -> None:  # set by the registry's builder
        self._config_key = value
        self.vlm.key = f"{value}.model"

    @property
    def batch_size(self) -> int:
        return self.vlm.batch_size


class TransformersOCR(_InProcessReader):
    """OCR by a chat VLM run in process (``ocr.engines.<name>`` with ``type: transformers``).

    Sends the image, then the prompt (VTBench's released OCR, ``evaluations/ocr.py``), and
    returns the decoded answer as it is (special tokens skipped, nothing else removed).

    Args:
        model: a model folder or a hub id in the Hugging Face cache.
        prompt: template; ``{language}`` becomes the item's language name. Default
            ``api.prompts.ocr`` (filled in by :func:`roundtrip.api.settings.resolve_api`).
        max_new_tokens: default 1024 (the released OCR's).
        Other arguments (the decoding-speed settings ``cache_implementation``, ``compile``,
        ``attn_implementation``, ``sort_by_length``, ``prefetch`` included): :class:`ChatVLM`.
    """

    def __init__(self, model: str, prompt: str = "", max_new_tokens: int = 1024,
                 batch_size: int = 8, image_size: Sequence[int] | None = None,
                 decoding: str | dict = "greedy", seed: int = 0, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        if not prompt:
            raise ValueError("prompt: empty (set it, or api.prompts.ocr)")
        super().__init__(ChatVLM(model, "model", max_new_tokens, decoding, seed, batch_size,
                                 image_size, dtype, device, cache_dir,
                                 cache_implementation=cache_implementation, compile=compile,
                                 attn_implementation=attn_implementation,
                                 sort_by_length=sort_by_length, prefetch=prefetch))
        self.prompt = prompt

    def check(self, langs: list[str] | None = None) -> str:
        """Locates the model (raises ``WeightsMissing``); returns a label."""
        return self.vlm.check()

    def read(self, image: np.ndarray, lang: str = "eng") -> str:
        """Text of one ``(H, W, 3)`` image.

        Raises:
            GenerationFailed / ValueError: no answer for it.
        """
        (text,) = self.read_many([image], lang)
        if isinstance(text, Exception):
            raise text
        return text

    def read_many(self, images: list[np.ndarray], lang: str = "eng") -> list[str | Exception]:
        """Texts of ``images`` in ``lang``, ``batch_size`` at a time; an image the model could not
        answer gives its exception in its place (:func:`roundtrip.readers.read_many`)."""
        prompt = self.prompt.format(language=language_of(lang))
        return self.vlm.answer_many([[image, prompt] for image in images])


class TransformersJudge(_InProcessReader):
    """Render judge by a chat VLM run in process (``audit.judge`` with ``type: transformers``;
    VISTA-Bench Appendix B.3), with the prompt of :class:`.vlm.VlmJudge` (``{reference}``; asks
    for ``{"score": 0|1|2, "explanation": ...}``), sent before the image as that judge sends it.

    Args:
        model, prompt (default ``api.prompts.judge``), max_new_tokens (default 512) and the
        other arguments of :class:`ChatVLM` (the decoding-speed settings included).
    """

    def __init__(self, model: str, prompt: str = "", max_new_tokens: int = 512,
                 batch_size: int = 8, image_size: Sequence[int] | None = None,
                 decoding: str | dict = "greedy", seed: int = 0, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        if not prompt:
            raise ValueError("prompt: empty (set it, or api.prompts.judge)")
        super().__init__(ChatVLM(model, "audit.judge.model", max_new_tokens, decoding, seed,
                                 batch_size, image_size, dtype, device, cache_dir,
                                 cache_implementation=cache_implementation, compile=compile,
                                 attn_implementation=attn_implementation,
                                 sort_by_length=sort_by_length, prefetch=prefetch))
        self.prompt = prompt
        self.name = f"{TYPE}:{model}"

    def judge(self, image: np.ndarray, reference: str) -> JudgeVerdict:
        """Score one render.

        Raises:
            GenerationFailed / MalformedResponse (``RuntimeError``): no usable answer.
        """
        (verdict,) = self.judge_many([(image, reference)])
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    def judge_many(self, pairs: list[tuple[np.ndarray, str]]) -> list[JudgeVerdict | Exception]:
        """Verdicts of ``(image, reference)`` pairs, ``batch_size`` at a time; a pair without a
        usable answer gives its exception in its place."""
        answers = self.vlm.answer_many([[self.prompt.format(reference=ref), image]
                                        for image, ref in pairs])
        return [a if isinstance(a, Exception) else _verdict(a) for a in answers]


def _verdict(text: str) -> JudgeVerdict | Exception:
    try:
        v = parse_verdict(text)
    except RuntimeError as exc:  # MalformedResponse: recorded for the item
        return exc
    return JudgeVerdict(v["score"], v["explanation"])


__all__ = ["CACHE_IMPLEMENTATIONS", "COMPILE_KEYS", "ChatVLM", "DECODING_KEYS",
           "GenerationFailed", "NotImageText", "PREPROCESSING_ERRORS", "TYPE", "TransformersJudge",
           "TransformersOCR", "check_decoding_path", "decoding_path", "folder_fingerprint",
           "image_text_architecture", "pick_device", "pick_dtype", "prepared_image",
           "runs_in_process", "unload_all"]
