"""Unified models as a pair of backends behind one interface: ``t2i(texts) -> images`` and
``i2t(images) -> texts`` (The Telephone Game, Sec. 3: a unified model, or a decoupled pair such as
LLaVA + SDXL).

One registry, :data:`UNIFIED_TYPES` (config ``telephone.pairs.<name>.type``):

- ``render_ocr`` (:class:`RenderOCR`): offline. T2I renders the text with roundtrip's XeLaTeX
  renderer, optionally through a tokenizer of the model zoo (``tokenizer: small_vq``); I2T reads
  the image back with Tesseract. Each generation inherits the previous one's reading errors, so
  the chain drifts as much as the tokenizer loses.
- ``api`` (:class:`ApiPair`): ``images.generate`` and a captioning chat completion on an
  OpenAI-compatible endpoint (the client of :mod:`roundtrip.api.client`: cache, retries, usage).
- ``diffusers`` (:class:`DiffusersPair`): a diffusers text-to-image pipeline with a
  ``transformers`` captioner (a chat VLM such as LLaVA, or an encoder-decoder captioner), both
  run in process from local folders or the Hugging Face cache.
- ``transformers`` (:class:`TransformersPair`): one model that transformers runs in both
  directions (Janus-Pro: its chat mode and its image generation mode), in process.

The in-process pairs batch their requests, seed each image by its item and generation, and
write every answer to the response cache as its batch returns (shared with the endpoint path,
:mod:`.image_generators`, :mod:`roundtrip.readers.transformers_vlm`): a killed job resumes
without generating what it had. Every model they run counts its answers, cache hits and tokens
in the run's usage ledger (:func:`roundtrip.api.client.local_usage`). Their captioners' chat
models take the decoding-speed settings of the in-process readers (``cache_implementation``,
``compile``, ``attn_implementation``, ``sort_by_length``, ``prefetch``:
:class:`~roundtrip.readers.transformers_vlm.ChatVLM`). A caption with no text in it (the model
ended its answer at once, or wrote only white space) is the item's error
(:class:`EmptyCaption`), never a caption.

Both methods return one result per input, in order: the image (``(H, W, 3)`` uint8) or text, or
the exception that item raised, so that one failed item does not stop the others.
"""
from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from roundtrip.api.client import DEFAULT_CACHE_DIR
from roundtrip.readers.transformers_vlm import GenerationFailed, LocalModel

_WS = re.compile(r"\s+")


class EmptyCaption(GenerationFailed):
    """A captioner answered an image with no text (the item's error: an empty caption is not a
    caption)."""


def one_paragraph(text: str) -> str:
    """Whitespace (line breaks included) collapsed to single spaces: a caption is one line."""
    return _WS.sub(" ", text).strip()


def caption_of(answer, key: str):
    """The caption of a captioner's ``answer``: the text as one line (:func:`one_paragraph`),
    or the item's exception: the answer's own, or :class:`EmptyCaption` naming ``key`` (the
    captioner's config key) where the text is empty once white space is collapsed."""
    if isinstance(answer, Exception):
        return answer
    line = one_paragraph(answer)
    if not line:
        return EmptyCaption(f"{key}: the captioner wrote no text for this image (an empty "
                            "caption is not scored)")
    return line


def item_seed(item_id: str, generation: int, seed: int = 0) -> int:
    """A seed for item ``item_id`` at ``generation``: stable across runs and machines."""
    digest = hashlib.sha256(f"{seed}/{item_id}/{generation}".encode()).hexdigest()
    return int(digest[:8], 16)


class UnifiedPair(ABC):
    """A T2I backend and an I2T backend (see the module docstring).

    Attributes:
        name: the config key (``telephone.pairs.<name>``).
    """

    name: str = ""

    @abstractmethod
    def t2i(self, texts: list[str], seeds: list[int]) -> list:
        """Images for ``texts`` (``(H, W, 3)`` uint8 each, or the item's exception)."""

    @abstractmethod
    def i2t(self, images: list[np.ndarray]) -> list:
        """Captions of ``images`` (one-line strings, or the item's exception)."""

    def describe(self) -> str:
        """One line for tables and logs."""
        return type(self).__name__

    def check(self) -> None:
        """Raise before any work if what the pair needs is missing (default: nothing to check).

        Raises:
            WeightsMissing: a model folder is missing (the message says what to put where).
        """


def _per_item(fn, items: list) -> list:
    out = []
    for item in items:
        try:
            out.append(fn(item))
        except Exception as exc:  # noqa: BLE001 - recorded per item by the chain
            out.append(exc)
    return out


# -- render_ocr ---------------------------------------------------------------------------------
class RenderOCR(UnifiedPair):
    """T2I: XeLaTeX render of the text (black on white, ``width_px`` wide), padded with white to
    a multiple of ``pad_to`` px and passed through ``tokenizer`` (a model of the zoo) when one is
    given; I2T: Tesseract.

    Args:
        tokenizer: ``{"name": ..., "spec": {...}}`` of a ``models`` entry, or None (the render
            itself is the image).
        font_size_pt: text size (= px at the renderer's anchoring).
        width_px: image width.
        style: font style of :data:`roundtrip.render.FONT_STYLES`.
        lang: Tesseract language; psm: Tesseract page segmentation mode.
        pad_to: image sides are padded to a multiple of this (tokenizers downsample by 8-16).
        device: where the tokenizer runs.
    """

    def __init__(self, tokenizer: dict | None = None, font_size_pt: float = 20,
                 width_px: int = 512, style: str = "arial", lang: str = "eng", psm: int = 6,
                 pad_to: int = 32, device: str = "auto"):
        self.tokenizer_spec = tokenizer
        self.font_size_pt, self.width_px, self.style = float(font_size_pt), int(width_px), style
        self.lang, self.psm, self.pad_to, self.device = lang, int(psm), int(pad_to), device
        self._model = None
        self._ocr = None

    def describe(self) -> str:
        through = self.tokenizer_spec["name"] if self.tokenizer_spec else "no tokenizer"
        return f"XeLaTeX render ({through}) + Tesseract ({self.lang})"

    def _tokenizer(self):
        if self._model is None and self.tokenizer_spec:
            from roundtrip.stages.reconstruct import load_model

            self._model = load_model(self.tokenizer_spec["name"], self.tokenizer_spec["spec"],
                                     self.device)
        return self._model

    def t2i(self, texts: list[str], seeds: list[int]) -> list:
        from roundtrip.datasets.telephone import render_caption_images

        images = render_caption_images(texts, self.font_size_pt, self.width_px, self.style,
                                       self.pad_to)
        return self._through_tokenizer(images)

    def _through_tokenizer(self, images: list) -> list:
        model = self._tokenizer()
        if model is None:
            return images
        import torch

        out = list(images)
        for i, img in enumerate(images):
            if isinstance(img, Exception):
                continue
            try:
                x = torch.from_numpy(img).permute(2, 0, 1)[None].float().div(127.5).sub(1.0)
                if not model.supports(x.shape[2], x.shape[3]):
                    raise ValueError(f"{model.name} does not take {x.shape[2]}x{x.shape[3]} inputs")
                y = model.reconstruct(x.to(model.device))[0].cpu()
                out[i] = ((y.permute(1, 2, 0).numpy() + 1.0) * 127.5).round().clip(0, 255
                                                                                    ).astype(np.uint8)
            except Exception as exc:  # noqa: BLE001 - recorded per item
                out[i] = exc
        return out

    def i2t(self, images: list[np.ndarray]) -> list:
        if self._ocr is None:
            from roundtrip.readers.tesseract import TesseractOCR

            self._ocr = TesseractOCR(psm=self.psm)
            self._ocr.check([self.lang])
        from roundtrip.readers import read_many

        try:  # one Tesseract process per batch; a failing image gives its own exception
            texts = read_many(self._ocr, images, self.lang)
        except Exception:  # noqa: BLE001 - anything else: image by image, recorded per item
            return _per_item(lambda im: one_paragraph(self._ocr.read(im, self.lang)), images)
        return [t if isinstance(t, Exception) else one_paragraph(t) for t in texts]


# -- api ------------------------------------------------------------------------------------------
class ApiPair(UnifiedPair):
    """T2I by ``images.generate`` and I2T by a chat completion with the image, on one
    OpenAI-compatible endpoint (resolved settings from ``api.endpoints``).

    Args:
        endpoint: resolved endpoint settings (never a key).
        t2i_model, i2t_model: model names at the endpoint.
        t2i_prompt: template with ``{caption}`` (``api.prompts.telephone_t2i`` by default).
        i2t_prompt: captioning instruction (``api.prompts.telephone_i2t``).
        size: image size asked for (``1024x1024``).
        max_tokens: caption length limit.
    """

    def __init__(self, endpoint: dict, t2i_model: str, i2t_model: str, t2i_prompt: str = "",
                 i2t_prompt: str = "", size: str = "1024x1024", max_tokens: int = 300):
        if not isinstance(endpoint, dict):
            raise ValueError("endpoint: not resolved; name an entry of api.endpoints")
        if "{caption}" not in t2i_prompt:
            raise ValueError("t2i_prompt: must contain {caption}")
        if not i2t_prompt:
            raise ValueError("i2t_prompt: empty (set it, or api.prompts.telephone_i2t)")
        self.endpoint, self.t2i_model, self.i2t_model = endpoint, t2i_model, i2t_model
        self.t2i_prompt, self.i2t_prompt = t2i_prompt, i2t_prompt
        self.size, self.max_tokens = size, int(max_tokens)

    def describe(self) -> str:
        return f"{self.t2i_model} + {self.i2t_model} at {self.endpoint['base_url']}"

    def _client(self):
        from roundtrip.api.client import client_for

        return client_for(self.endpoint)

    def t2i(self, texts: list[str], seeds: list[int]) -> list:
        from roundtrip.core.imaging import decode_image, to_uint8

        client = self._client()

        def one(text):
            reply = client.generate_image(self.t2i_model, self.t2i_prompt.format(caption=text),
                                          size=self.size)
            return to_uint8(decode_image(reply.image_bytes(), "generated image"))
        return client.map(one, texts)

    def i2t(self, images: list[np.ndarray]) -> list:
        from roundtrip.api.client import image_data_url
        from roundtrip.api.images import png_bytes

        client = self._client()

        def one(image):
            messages = [{"role": "user", "content": [
                {"type": "text", "text": self.i2t_prompt},
                {"type": "image_url", "image_url": {"url": image_data_url(png_bytes(image))}}]}]
            reply = client.chat(self.i2t_model, messages, max_tokens=self.max_tokens,
                                temperature=0.0)
            return one_paragraph(reply.text)
        return client.map(one, images)


# -- diffusers + transformers ----------------------------------------------------------------------
class DiffusersPair(UnifiedPair):
    """T2I: a diffusers pipeline (:class:`.image_generators.DiffusersT2I`: batched, seeded per
    item and generation, cached); I2T: a ``transformers`` captioner: a chat VLM such as LLaVA run
    in process by :class:`~roundtrip.readers.transformers_vlm.ChatVLM` (the model's chat template,
    ``i2t_prompt`` then the image as one user turn, as :class:`ApiPair` sends them; batched,
    greedy, cached), or a ``VisionEncoderDecoderModel`` (:class:`EncoderDecoderCaptioner`: no
    prompt; batched, greedy, cached). Both captioners count their answers in the usage ledger
    (``transformers:<i2t>``) and give an empty caption as the item's :class:`EmptyCaption`. The
    paper's decoupled "LLaVA 1.5 + SDXL" row is this pair.

    Args:
        t2i: the pipeline: a folder (``save_pretrained`` layout) or a hub id in the Hugging Face
            cache (:func:`roundtrip.core.weights.local_model`).
        i2t: the captioner: a folder or a hub id in the cache of an image-text model
            (:func:`roundtrip.readers.transformers_vlm.image_text_architecture`).
        steps, guidance, size: sampling settings (size: output side in px).
        i2t_prompt: instruction for chat captioners (``api.prompts.telephone_i2t`` by default;
            ignored by encoder-decoder captioners).
        max_new_tokens: caption length limit, in tokens.
        batch_size: prompts (T2I) and images (I2T) generated at once.
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name.
        device: ``auto``, ``cpu``, ``cuda``.
        cache_dir: the response cache (shared with the endpoint path).
        cache_implementation, compile, attn_implementation, sort_by_length, prefetch: the chat
            captioner's decoding-speed settings (:class:`~roundtrip.readers.transformers_vlm
            .ChatVLM`; ``attn_implementation`` also loads an encoder-decoder captioner).

    Raises:
        ValueError: a bad setting (the message names it).
        WeightsMissing: (on first use, and from :meth:`check`) a model is not on this machine;
            the message names the key and says what to fetch.
    """

    def __init__(self, t2i: str, i2t: str, steps: int = 30, guidance: float = 7.5,
                 size: int = 1024, i2t_prompt: str = "", max_new_tokens: int = 77,
                 batch_size: int = 4, dtype: str = "auto", device: str = "auto",
                 cache_dir: str = DEFAULT_CACHE_DIR, name: str = "", *,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        from roundtrip.evals.telephone.image_generators import DiffusersT2I
        from roundtrip.readers.transformers_vlm import check_decoding_path

        self.name = name
        self.t2i_path, self.i2t_path = t2i, i2t
        self.i2t_prompt, self.max_new_tokens, self.device = i2t_prompt, int(max_new_tokens), device
        self.batch_size, self.dtype, self.cache_dir = int(batch_size), dtype, cache_dir
        check_decoding_path(cache_implementation, compile, attn_implementation)
        self.speed = {"cache_implementation": cache_implementation, "compile": compile,
                      "attn_implementation": attn_implementation,
                      "sort_by_length": sort_by_length, "prefetch": prefetch}
        self.generator = DiffusersT2I(t2i, self._key("t2i"), steps, guidance, size, batch_size,
                                      dtype, device, cache_dir)
        self._captioner = self._vlm = self._is_encoder_decoder = None

    def _key(self, side: str) -> str:
        return f"telephone.pairs.{self.name}.{side}"

    def describe(self) -> str:
        return f"diffusers {Path(self.t2i_path).name} + transformers {Path(self.i2t_path).name}"

    def check(self) -> None:
        """Both models are on this machine and the captioner reads images (from its
        ``config.json``, nothing loaded).

        Raises:
            WeightsMissing: a model is not here. ValueError: the captioner is no image-text
                model (the message starts with ``telephone.pairs.<name>.i2t``).
        """
        from roundtrip.core.weights import local_model
        from roundtrip.readers.transformers_vlm import NotImageText, image_text_architecture

        local_model(self.t2i_path, self._key("t2i"))
        try:
            image_text_architecture(local_model(self.i2t_path, self._key("i2t")))
        except NotImageText as exc:
            raise ValueError(f"{self._key('i2t')}: {exc}") from exc

    def t2i(self, texts: list[str], seeds: list[int]) -> list:
        return self.generator.generate(texts, seeds)

    def _encoder_decoder(self) -> bool:
        """Whether the captioner is a ``VisionEncoderDecoderModel`` (else a chat VLM)."""
        if self._is_encoder_decoder is None:
            import json

            from roundtrip.core.weights import local_model

            folder = local_model(self.i2t_path, self._key("i2t"))
            config = json.loads((folder / "config.json").read_text())
            self._is_encoder_decoder = config.get("model_type") == "vision-encoder-decoder"
        return self._is_encoder_decoder

    def chat(self):
        """The chat captioner (:class:`~roundtrip.readers.transformers_vlm.ChatVLM`)."""
        if self._vlm is None:
            from roundtrip.readers.transformers_vlm import ChatVLM

            self._vlm = ChatVLM(self.i2t_path, self._key("i2t"), self.max_new_tokens,
                                batch_size=self.batch_size, dtype=self.dtype, device=self.device,
                                cache_dir=self.cache_dir, **self.speed)
        return self._vlm

    def captioner(self) -> EncoderDecoderCaptioner:
        """The encoder-decoder captioner (:class:`EncoderDecoderCaptioner`)."""
        if self._captioner is None:
            self._captioner = EncoderDecoderCaptioner(
                self.i2t_path, self._key("i2t"), self.max_new_tokens, self.batch_size,
                self.dtype, self.device, self.cache_dir, self.speed["attn_implementation"])
        return self._captioner

    def i2t(self, images: list[np.ndarray]) -> list:
        if self._encoder_decoder():
            answers = self.captioner().caption_many(images)
        elif not self.i2t_prompt:
            error = ValueError(f"{self._key('i2t_prompt')}: empty (set it, or "
                               "api.prompts.telephone_i2t)")
            return [error] * len(images)
        else:
            answers = self.chat().answer_many([[self.i2t_prompt, im] for im in images])
        return [caption_of(a, self._key("i2t")) for a in answers]


class EncoderDecoderCaptioner(LocalModel):
    """A ``VisionEncoderDecoderModel`` captioner run in process (no prompt: the folder's image
    processor, then greedy decoding of at most ``max_new_tokens`` tokens), batched; where it is,
    its device and its usage line as every in-process model keeps them
    (:class:`~roundtrip.readers.transformers_vlm.LocalModel`), with the contract of
    :class:`~roundtrip.readers.transformers_vlm.ChatVLM`:

    - every caption goes to the response cache (``cache_dir``) the moment its batch returns,
      keyed by the model folder's fingerprint
      (:func:`~roundtrip.readers.transformers_vlm.folder_fingerprint`), the bytes of the image
      as the model is given it (8-bit RGB) and the generation settings; a cached caption is not
      generated again;
    - usage (captions generated, cache hits, failures, tokens out, seconds) goes to the run's
      usage ledger as ``transformers:<model>``, the line a chat captioner of the same folder
      writes (:func:`roundtrip.api.client.local_usage`).

    Args:
        model: a folder or a hub id in the Hugging Face cache
            (:func:`roundtrip.core.weights.local_model`).
        key: its config key, for messages (``telephone.pairs.<p>.i2t``).
        max_new_tokens: caption length limit, in tokens (>= 1).
        batch_size: images captioned at once (>= 1).
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
        cache_dir: the response cache.
        attn_implementation: ``auto`` or a name ``from_pretrained`` takes.

    Raises:
        ValueError: a bad setting.
    """

    #: The request kind in every cache key.
    KIND = "transformers.caption"

    def __init__(self, model: str, key: str, max_new_tokens: int = 77, batch_size: int = 4,
                 dtype: str = "auto", device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR,
                 attn_implementation: str = "auto"):
        if int(max_new_tokens) < 1 or int(batch_size) < 1:
            raise ValueError("max_new_tokens and batch_size must be at least 1")
        super().__init__(model, key, dtype, device, cache_dir)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), int(batch_size)
        self.attn_implementation = attn_implementation
        self._loaded = None

    def settings(self) -> dict:
        """The generation settings in every cache key."""
        return {"max_new_tokens": self.max_new_tokens, "decoding": "greedy",
                "dtype": self.runtime[1]}

    def request_key(self, image: np.ndarray) -> tuple[str, dict, object]:
        """``(cache key, canonical request, PIL image)`` of one image (``(H, W, 3)`` or
        ``(H, W)`` uint8/uint16).

        Raises:
            ValueError: not such an image.
        """
        from roundtrip.api.client import ResponseCache
        from roundtrip.readers.transformers_vlm import prepared_image

        pil = prepared_image(image)
        canonical = {"kind": self.KIND, "folder_fingerprint": self.fingerprint,
                     "content": [{"type": "image", "size": list(pil.size),
                                  "sha256": hashlib.sha256(pil.tobytes()).hexdigest()}],
                     "params": self.settings()}
        return ResponseCache.key(canonical), canonical, pil

    def _load(self):
        if self._loaded is None:
            import torch
            import transformers

            device, dtype = self.runtime
            attn = {} if self.attn_implementation == "auto" else {
                "attn_implementation": self.attn_implementation}
            model = transformers.VisionEncoderDecoderModel.from_pretrained(
                self.folder, dtype=getattr(torch, dtype), local_files_only=True, **attn)
            processor = transformers.AutoImageProcessor.from_pretrained(
                self.folder, local_files_only=True)
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.folder,
                                                                   local_files_only=True)
            self._loaded = (model.to(device).eval(), processor, tokenizer)
        return self._loaded

    def caption_many(self, images: list[np.ndarray]) -> list:
        """The caption of each image, in order: the decoded text (special tokens skipped; it
        may be empty, which :func:`caption_of` makes the item's error), or the item's exception
        (``ValueError`` for what is not an image, :class:`GenerationFailed` for a batch that
        failed). Cached captions come from the cache; the others are generated ``batch_size``
        at a time and cached as each batch returns.

        Raises:
            WeightsMissing: the model is not on this machine.
        """
        from roundtrip.readers.transformers_vlm import split_by_cache

        out, todo = split_by_cache(images, self.request_key, self.cache, self.usage)
        for start in range(0, len(todo), self.batch_size):
            for i, text in self._generate(todo[start:start + self.batch_size]):
                out[i] = text
        return out

    def _generate(self, batch: list) -> list[tuple[int, str | Exception]]:
        """Caption one batch, cache and count every caption; ``(index, caption or error)``."""
        import time

        import torch

        model, processor, tokenizer = self._load()
        started = time.monotonic()
        try:
            with torch.no_grad():
                pixels = processor(images=[pil for *_, pil in batch], return_tensors="pt")
                ids = model.generate(pixels.pixel_values.to(model.device, dtype=model.dtype),
                                     max_new_tokens=self.max_new_tokens, do_sample=False)
        except (RuntimeError, ValueError) as exc:  # out of memory, the model refusing the input
            self.usage.failures += len(batch)
            return [(i, GenerationFailed(f"{self.key}: {exc}")) for i, *_ in batch]
        seconds = (time.monotonic() - started) / len(batch)
        eos = model.generation_config.eos_token_id
        eos = set() if eos is None else {eos} if isinstance(eos, int) else set(eos)
        out = []
        for (i, key, canonical, _), row in zip(batch, ids.cpu().tolist(), strict=True):
            tokens = row[1:]  # the decoder's start token is not generated
            stop = next((k for k, t in enumerate(tokens) if t in eos), None)
            n_out = len(tokens) if stop is None else stop + 1  # the padding after it is not
            text = tokenizer.decode(tokens[:n_out], skip_special_tokens=True)
            response = {"choices": [{"message": {"role": "assistant", "content": text},
                                     "finish_reason": "length" if stop is None else "stop"}],
                        "usage": {"prompt_tokens": 0, "completion_tokens": n_out},
                        "model": self.model, "seconds": round(seconds, 4)}
            self.cache.put(key, canonical, response)  # at once: a killed job keeps it
            self.usage.add_response(response, seconds=seconds)
            out.append((i, text))
        return out


# -- one transformers model, both directions -------------------------------------------------------
class TransformersPair(UnifiedPair):
    """A unified model that transformers runs in both directions (Janus, Janus-Pro; the
    architectures of :data:`.image_generators.IMAGE_GENERATING`), loaded once: I2T is its chat
    mode (:class:`~roundtrip.readers.transformers_vlm.ChatVLM`, ``i2t_prompt`` then the image, as
    :class:`ApiPair` sends them), T2I its image generation mode
    (:class:`.image_generators.TransformersT2I`, ``t2i_prompt`` with the caption). Both are
    batched and cached.

    Args:
        model: a model folder in the transformers layout, or a hub id in the Hugging Face cache
            (``deepseek-community/Janus-Pro-7B``).
        t2i_prompt: template with ``{caption}`` (``api.prompts.telephone_t2i`` by default).
        i2t_prompt: captioning instruction (``api.prompts.telephone_i2t``).
        max_new_tokens: caption length limit, in tokens (default 300, :class:`ApiPair`'s).
        guidance, temperature: image sampling (None: the folder's ``generation_config``;
            Janus-Pro: 5 and 1).
        batch_size: prompts (T2I) and images (I2T) generated at once.
        dtype: ``auto`` (``bfloat16`` on a GPU, ``float32`` on the CPU) or a torch dtype name.
        device: ``auto``, ``cpu``, ``cuda``.
        cache_dir: the response cache (shared with the endpoint path).
        cache_implementation, compile, sort_by_length, prefetch: the chat mode's decoding-speed
            settings (:class:`~roundtrip.readers.transformers_vlm.ChatVLM`);
            ``attn_implementation`` loads the model for both modes.

    Raises:
        ValueError: a bad setting; from :meth:`check`, a model transformers cannot generate
            images with.
        WeightsMissing: (on first use, and from :meth:`check`) the model is not on this machine.
    """

    def __init__(self, model: str, t2i_prompt: str = "", i2t_prompt: str = "",
                 max_new_tokens: int = 300, guidance: float | None = None,
                 temperature: float | None = None, batch_size: int = 4, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR, name: str = "", *,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        from roundtrip.evals.telephone.image_generators import TransformersT2I
        from roundtrip.readers.transformers_vlm import ChatVLM

        if "{caption}" not in t2i_prompt:
            raise ValueError("t2i_prompt: must contain {caption} (or set "
                             "api.prompts.telephone_t2i)")
        if not i2t_prompt:
            raise ValueError("i2t_prompt: empty (set it, or api.prompts.telephone_i2t)")
        self.name, self.model = name, str(model)
        self.t2i_prompt, self.i2t_prompt = t2i_prompt, i2t_prompt
        self.vlm = ChatVLM(model, f"telephone.pairs.{name}.model", max_new_tokens,
                           batch_size=batch_size, dtype=dtype, device=device, cache_dir=cache_dir,
                           cache_implementation=cache_implementation, compile=compile,
                           attn_implementation=attn_implementation,
                           sort_by_length=sort_by_length, prefetch=prefetch)
        self.generator = TransformersT2I(self.vlm, guidance, temperature, batch_size)

    def describe(self) -> str:
        return f"{self.model} in process (transformers)"

    def check(self) -> None:
        from roundtrip.evals.telephone.image_generators import image_generating_type

        try:
            image_generating_type(self.vlm.folder)
        except ValueError as exc:
            raise ValueError(f"telephone.pairs.{self.name}.model: {exc}") from exc

    def t2i(self, texts: list[str], seeds: list[int]) -> list:
        return self.generator.generate([self.t2i_prompt.format(caption=t) for t in texts], seeds)

    def i2t(self, images: list[np.ndarray]) -> list:
        answers = self.vlm.answer_many([[self.i2t_prompt, im] for im in images])
        return [caption_of(a, f"telephone.pairs.{self.name}.model") for a in answers]


#: Pair types whose neural models run in the chain job's process (the job asks for the run's
#: GPU); ``render_ocr`` runs there too, on the GPU only through a learned tokenizer.
IN_PROCESS_TYPES = ("diffusers", "transformers")
#: config ``telephone.pairs.<name>.type`` -> class.
UNIFIED_TYPES: dict[str, type[UnifiedPair]] = {
    "render_ocr": RenderOCR,
    "api": ApiPair,
    "diffusers": DiffusersPair,
    "transformers": TransformersPair,
}


def build_pair(name: str, spec: dict, device: str = "auto") -> UnifiedPair:
    """The pair of config entry ``telephone.pairs.<name>`` (the workflow resolves a
    ``render_ocr`` tokenizer name into ``{"name", "spec"}`` and an ``api`` endpoint into its
    settings before the job runs).

    Raises:
        ValueError: unknown type or bad arguments; the message starts with the config key.
    """
    args = {k: v for k, v in spec.items() if k not in ("type", "chains")}
    kind = spec.get("type")
    if kind not in UNIFIED_TYPES:
        raise ValueError(f"telephone.pairs.{name}.type: unknown {kind!r}; known: "
                         f"{sorted(UNIFIED_TYPES)}")
    if kind == "render_ocr" or kind in IN_PROCESS_TYPES:
        args["device"] = device
    if kind in IN_PROCESS_TYPES:
        args["name"] = name
    try:
        pair = UNIFIED_TYPES[kind](**args)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"telephone.pairs.{name}: {exc}") from exc
    pair.name = name
    return pair
