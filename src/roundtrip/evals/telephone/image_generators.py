"""Text-to-image models run in process for the Telephone Game's pairs
(:mod:`roundtrip.evals.telephone.unified`): a diffusers pipeline (:class:`DiffusersT2I`) and a
transformers model with an image generation mode (:class:`TransformersT2I`: Janus, Janus-Pro).

Both keep the contract of the endpoint path (:mod:`roundtrip.api.client`) and of the in-process
chat VLMs (:mod:`roundtrip.readers.transformers_vlm`):

- requests are generated ``batch_size`` at a time, each item from its own seed, so that an
  item's image does not depend on the batch it was generated in;
- every image goes to the response cache (``cache_dir``, default ``api_cache``) as a PNG the
  moment its batch returns, in the layout of an ``images.generate`` answer, so a killed job
  resumes without generating it again. The key holds the model folder's fingerprint
  (:func:`roundtrip.readers.transformers_vlm.folder_fingerprint`), the prompt, the seed and
  the generation settings;
- usage (images generated, cache hits, failures, seconds) goes to the run's usage ledger
  (:func:`roundtrip.api.client.local_usage`).

A generated image is an ``(H, W, 3)`` uint8 array; a request the model could not answer gives
its exception in its place.
"""
from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable

import numpy as np

from roundtrip.api.client import DEFAULT_CACHE_DIR, Reply, ResponseCache, Usage, local_usage
from roundtrip.readers.transformers_vlm import GenerationFailed, folder_fingerprint, pick_device

log = logging.getLogger(__name__)

#: ``type`` of the usage ledger's line of a diffusers pipeline (``diffusers:<model>``).
DIFFUSERS = "diffusers"


class CachedImages:
    """The response cache and the usage record of one in-process image model.

    Args:
        kind: the request kind in every key (``diffusers.t2i``, ``transformers.t2i``).
        fingerprint: the model folder's :func:`folder_fingerprint`.
        usage: where answers and cache hits are counted.
        cache_dir: the response cache (shared with the endpoint path).
    """

    def __init__(self, kind: str, fingerprint: str, usage: Usage,
                 cache_dir: str = DEFAULT_CACHE_DIR):
        self.kind, self.fingerprint, self.usage = kind, fingerprint, usage
        self.cache = ResponseCache(cache_dir)

    def key(self, prompt: str, seed: int, settings: dict) -> tuple[str, dict]:
        """``(cache key, canonical request)`` of one image."""
        canonical = {"kind": self.kind, "folder_fingerprint": self.fingerprint,
                     "prompt": prompt, "seed": int(seed), "params": settings}
        return ResponseCache.key(canonical), canonical

    def get(self, key: str) -> np.ndarray | None:
        """The cached image of ``key`` (counted as a cache hit), or None."""
        from roundtrip.core.imaging import decode_image

        cached = self.cache.get(key)
        if cached is None:
            return None
        self.usage.cache_hits += 1
        return decode_image(Reply(cached, cached=True).image_bytes(), "cached image")

    def put(self, key: str, canonical: dict, image: np.ndarray, seconds: float) -> None:
        """Cache ``image`` as a PNG (an ``images.generate`` answer) and count it."""
        from roundtrip.api.images import png_bytes

        response = {"data": [{"b64_json": base64.b64encode(png_bytes(image)).decode()}],
                    "seconds": round(seconds, 4)}
        self.cache.put(key, canonical, response)
        self.usage.add_response(response, images=1, seconds=seconds)


def generate_cached(prompts: list[str], seeds: list[int], settings: dict, images: CachedImages,
                    batch_size: int,
                    generate: Callable[[list[str], list[int]], list[np.ndarray]]) -> list:
    """The image of each ``(prompt, seed)``, in order: from the cache, else generated
    ``batch_size`` at a time by ``generate(prompts, seeds)`` and cached as each batch returns.

    Returns:
        One ``(H, W, 3)`` uint8 image per request, or :class:`GenerationFailed` for each request
        of a batch that failed (out of memory, a pipeline error); failures are not cached.
    """
    out: list = [None] * len(prompts)
    todo = []
    for i, (prompt, seed) in enumerate(zip(prompts, seeds, strict=True)):
        key, canonical = images.key(prompt, seed, settings)
        cached = images.get(key)
        if cached is not None:
            out[i] = cached
        else:
            todo.append((i, key, canonical))
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        started = time.monotonic()
        try:
            made = generate([prompts[i] for i, _, _ in batch], [seeds[i] for i, _, _ in batch])
        except (RuntimeError, ValueError) as exc:  # out of memory, a pipeline refusing input
            images.usage.failures += len(batch)
            log.warning("%s: a batch of %d images failed: %s", images.kind, len(batch), exc)
            for i, _, _ in batch:
                out[i] = GenerationFailed(f"{images.kind}: {exc}")
            continue
        seconds = (time.monotonic() - started) / len(batch)
        for (i, key, canonical), image in zip(batch, made, strict=True):
            images.put(key, canonical, image, seconds)  # at once: a killed job keeps this batch
            out[i] = image
    return out


# -- diffusers ------------------------------------------------------------------------------------
class DiffusersT2I:
    """A diffusers text-to-image pipeline (``AutoPipelineForText2Image``) run in process.

    Each item's initial noise comes from its own ``torch.Generator`` on the CPU seeded with the
    item's seed, so the image is the same on any device's batch (up to the floating-point
    differences of batched kernels) and at any batch size.

    Args:
        model: a pipeline folder (``save_pretrained`` layout), a registered folder's name, or a
            hub id in the Hugging Face cache (:func:`roundtrip.core.weights.local_model`).
        key: the config key of ``model``, for messages (``telephone.pairs.<p>.t2i``).
        steps, guidance: ``num_inference_steps`` and ``guidance_scale``.
        size: image side in px (``height = width = size``).
        batch_size: prompts generated at once.
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name.
        device: ``auto`` (the GPU when the process sees one), ``cpu``, ``cuda``, ``cuda:N``.
        cache_dir: the response cache.

    Raises:
        ValueError: a bad setting.
    """

    def __init__(self, model: str, key: str, steps: int = 30, guidance: float = 7.5,
                 size: int = 1024, batch_size: int = 4, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR):
        from roundtrip.readers.transformers_vlm import DTYPES

        if int(steps) < 1 or int(size) < 8 or int(batch_size) < 1:
            raise ValueError("steps and batch_size must be at least 1, size at least 8")
        if dtype not in DTYPES:
            raise ValueError(f"dtype: {dtype!r} is not one of {list(DTYPES)}")
        self.model, self.key = str(model), key
        self.steps, self.guidance, self.size = int(steps), float(guidance), int(size)
        self.batch_size, self.dtype, self.device = int(batch_size), dtype, device
        self.cache_dir = cache_dir
        self._folder: str | None = None
        self._images: CachedImages | None = None
        self._pipe = None

    @property
    def folder(self) -> str:
        """The pipeline's folder on this machine.

        Raises:
            WeightsMissing: not there (the message names :attr:`key` and the hub id).
        """
        if self._folder is None:
            from roundtrip.core.weights import local_model

            self._folder = str(local_model(self.model, self.key))
        return self._folder

    def runtime(self) -> tuple[str, str]:
        """``(device, dtype)`` the pipeline runs with."""
        from roundtrip.readers.transformers_vlm import pick_dtype

        device = pick_device(self.device)
        return device, pick_dtype(self.dtype, device)

    def settings(self) -> dict:
        """The generation settings in every cache key."""
        return {"steps": self.steps, "guidance": self.guidance, "size": self.size,
                "dtype": self.runtime()[1]}

    @property
    def images(self) -> CachedImages:
        """The cache and usage record of this pipeline."""
        if self._images is None:
            usage = local_usage(f"{DIFFUSERS}:{self.model}", self.folder)
            self._images = CachedImages(f"{DIFFUSERS}.t2i", folder_fingerprint(self.folder),
                                        usage, self.cache_dir)
        return self._images

    def _pipeline(self):
        if self._pipe is None:
            import torch
            from diffusers import AutoPipelineForText2Image

            device, dtype = self.runtime()
            self._pipe = AutoPipelineForText2Image.from_pretrained(
                self.folder, dtype=getattr(torch, dtype), local_files_only=True).to(device)
            self._pipe.set_progress_bar_config(disable=True)
        return self._pipe

    def _generate(self, prompts: list[str], seeds: list[int]) -> list[np.ndarray]:
        import torch

        pipe = self._pipeline()
        generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]
        with torch.no_grad():
            out = pipe(prompt=prompts, num_inference_steps=self.steps,
                       guidance_scale=self.guidance, height=self.size, width=self.size,
                       generator=generators, output_type="np").images
        return [(np.clip(np.asarray(im, dtype=np.float32), 0, 1) * 255).round().astype(np.uint8)
                for im in out]

    def generate(self, prompts: list[str], seeds: list[int]) -> list:
        """The image of each prompt with its seed (module docstring).

        Raises:
            WeightsMissing: the pipeline is not on this machine.
        """
        return generate_cached(prompts, seeds, self.settings(), self.images, self.batch_size,
                               self._generate)


# -- transformers (Janus) ------------------------------------------------------------------------
#: transformers architectures (``config.json``'s ``model_type``) whose image generation mode
#: :class:`TransformersT2I` runs: ``generate(..., generation_mode="image")`` then
#: ``decode_image_tokens`` (transformers' Janus, which loads Janus-Pro 1B/7B converted to the
#: transformers layout).
IMAGE_GENERATING = ("janus",)


def image_generating_type(folder: str) -> str:
    """The ``model_type`` of the transformers model in ``folder`` when transformers can generate
    images with it (:data:`IMAGE_GENERATING`).

    Raises:
        ValueError: the folder's model is another architecture (the message names it).
    """
    import json
    from pathlib import Path

    kind = json.loads((Path(folder) / "config.json").read_text()).get("model_type", "")
    if kind not in IMAGE_GENERATING:
        raise ValueError(f"{folder} holds a {kind or 'unknown'} model; transformers generates "
                         f"images with {list(IMAGE_GENERATING)} only (for a chat VLM beside an "
                         "image generator use type: diffusers)")
    return kind


class TransformersT2I:
    """The image generation mode of a transformers model that also answers chats (Janus,
    Janus-Pro), sharing the loaded model, its lock, cache and usage with its chat side.

    The prompt goes in as one user turn of the model's chat template; the processor appends
    the begin-of-image token (``generation_mode="image"``); transformers'
    ``JanusForConditionalGeneration.generate`` runs the image tokens against an unconditional
    copy of the prompt (every token but BOS and begin-of-image replaced by padding);
    ``decode_image_tokens`` and the processor's ``postprocess`` give the pixels (384 x 384 for
    Janus-Pro).

    Each token is drawn here, per item (a logits processor), as Janus' own sampler draws it
    (github.com/deepseek-ai/Janus @ cab2784, ``generation_inference.py``): logits
    ``u + guidance (c - u)``, softmax of logits / ``temperature`` over every image code (no
    top-k: transformers' sampling would add its default top-k 50 where the folder sets none),
    one multinomial draw, here from the item's own CPU generator, so an item's image follows
    its seed at any batch size.

    Args:
        vlm: the model's :class:`~roundtrip.readers.transformers_vlm.ChatVLM` (its folder,
            device, dtype, cache and usage).
        guidance: classifier-free guidance weight; None: the folder's ``generation_config``
            ``guidance_scale`` (Janus-Pro: 5).
        temperature: None: the folder's (Janus-Pro: 1).
        batch_size: prompts generated at once.

    Raises:
        ValueError: guidance below 1 or temperature not above 0.
    """

    def __init__(self, vlm, guidance: float | None = None, temperature: float | None = None,
                 batch_size: int = 4):
        if guidance is not None and float(guidance) < 1:
            raise ValueError(f"guidance: at least 1 (1 = no guidance), got {guidance}")
        if temperature is not None and float(temperature) <= 0:
            raise ValueError(f"temperature: above 0, got {temperature}")
        if int(batch_size) < 1:
            raise ValueError("batch_size must be at least 1")
        self.vlm = vlm
        self.guidance, self.temperature, self.batch_size = guidance, temperature, int(batch_size)
        self._images: CachedImages | None = None

    def sampling(self) -> tuple[float, float]:
        """``(guidance, temperature)`` in use: the settings given, else the folder's
        ``generation_config.json`` (guidance 5 and temperature 1 where it has none, as
        transformers' Janus defaults)."""
        from transformers import GenerationConfig

        try:
            folder = GenerationConfig.from_pretrained(self.vlm.folder, local_files_only=True)
        except OSError:  # no generation_config.json
            folder = GenerationConfig()
        guidance = self.guidance if self.guidance is not None else \
            (getattr(folder, "guidance_scale", None) or 5.0)
        temperature = self.temperature if self.temperature is not None else \
            (getattr(folder, "temperature", None) or 1.0)
        return float(guidance), float(temperature)

    def settings(self) -> dict:
        """The generation settings in every cache key."""
        guidance, temperature = self.sampling()
        return {"guidance": guidance, "temperature": temperature, "dtype": self.vlm.runtime[1]}

    @property
    def images(self) -> CachedImages:
        """The cache and usage record (the chat side's model record)."""
        if self._images is None:
            self._images = CachedImages("transformers.t2i", self.vlm.fingerprint,
                                        self.vlm.usage, self.vlm.cache.root)
        return self._images

    def _generate(self, prompts: list[str], seeds: list[int]) -> list[np.ndarray]:
        import copy

        import torch
        from transformers import LogitsProcessorList

        model, processor, lock = self.vlm.loaded()
        guidance, temperature = self.sampling()
        turns = [processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "text", "text": p}]}],
            add_generation_prompt=True) for p in prompts]
        config = copy.deepcopy(model.generation_config)
        # transformers' Janus reads the begin-of-image id here; a saved generation_config.json
        # may not carry it, the tokenizer always does
        config.generation_kwargs = {"boi_token_id": processor.tokenizer.convert_tokens_to_ids(
            processor.image_start_token)}
        # guidance and sampling are done by the per-item processor below: the model's own
        # guidance processor is off (scale 1) and it takes the processor's one token (argmax)
        config.guidance_scale, config.do_sample, config.temperature = 1.0, False, None
        config.top_k = config.top_p = None
        sample = _seeded_sampling(seeds, guidance, temperature)
        with lock, torch.no_grad():
            inputs = processor(text=turns, generation_mode="image", padding=True,
                               return_tensors="pt").to(model.device)
            tokens = model.generate(**inputs, generation_mode="image", generation_config=config,
                                    logits_processor=LogitsProcessorList([sample]))
            # one image at a time: the decoder's batched kernels would round the pixels of an
            # image differently in different batches
            pixels = [model.decode_image_tokens(row[None]).float().cpu()[0] for row in tokens]
        images = processor.postprocess(pixels, return_tensors="pt")
        return [im.permute(1, 2, 0).numpy().astype(np.uint8) for im in images["pixel_values"]]

    def generate(self, prompts: list[str], seeds: list[int]) -> list:
        """The image of each prompt with its seed (module docstring).

        Raises:
            WeightsMissing: the model is not on this machine.
        """
        return generate_cached(prompts, seeds, self.settings(), self.images, self.batch_size,
                               self._generate)


def _seeded_sampling(seeds: list[int], guidance: float, temperature: float):
    """A logits processor for a doubled (conditional, then unconditional) batch of image-token
    scores ``(2B, V)``: guided logits ``u + guidance (c - u)`` / ``temperature``, softmax, one
    draw per row from a CPU generator seeded with the row's seed; returns ``(B, V)`` scores that
    are 0 at the drawn token and -inf elsewhere (greedy decoding then takes the draw)."""
    import torch
    from transformers import LogitsProcessor

    generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]

    class SeededSampling(LogitsProcessor):
        def __call__(self, input_ids, scores):
            n = scores.shape[0] // 2
            cond, uncond = scores[:n].float(), scores[n:].float()
            probs = torch.softmax((uncond + guidance * (cond - uncond)) / temperature, dim=-1)
            probs = probs.cpu()
            drawn = [int(torch.multinomial(p, 1, generator=g)) for p, g in zip(probs, generators)]
            out = torch.full((n, scores.shape[1]), float("-inf"), device=scores.device)
            rows = torch.arange(n, device=scores.device)
            out[rows, torch.tensor(drawn, device=scores.device)] = 0
            return out

    return SeededSampling()


__all__ = ["CachedImages", "DIFFUSERS", "DiffusersT2I", "IMAGE_GENERATING", "TransformersT2I",
           "generate_cached", "image_generating_type"]
