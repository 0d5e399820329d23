"""VLM readers over an OpenAI-compatible chat endpoint: an OCR backend and a render judge.

Both send one image as a PNG data URL in a chat message with a prompt template from the config
(``api.prompts.ocr`` / ``api.prompts.judge``), at temperature 0. They work against OpenAI and
against vLLM or Ollama serving an open VLM (Gemma 3, Qwen2.5-VL, Nanonets-OCR: the backends of
VTBench Section 4.3 and Appendix G). The same readers with the model run in process, no server:
:mod:`.transformers_vlm` (``type: transformers``), which shares the prompts, the verdict parser
and :func:`language_of` with these.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from roundtrip.api.client import MalformedResponse, client_for, image_data_url
from roundtrip.api.images import png_bytes

#: Tesseract language code -> language name for prompts (``{language}``).
LANGUAGE_NAMES = {"eng": "English", "chi_sim": "Simplified Chinese", "chi_tra": "Traditional Chinese",
                  "jpn": "Japanese", "kor": "Korean", "hin": "Hindi"}


def language_of(lang: str) -> str:
    """The ``{language}`` of an OCR prompt for Tesseract code(s) ``lang``: ``eng+hin`` ->
    ``English and Hindi`` (an unknown code stays as it is)."""
    return " and ".join(LANGUAGE_NAMES.get(p, p) for p in lang.split("+"))


def _image_message(prompt: str, image: np.ndarray) -> list[dict]:
    return [{"role": "user", "content": [
        {"type": "text", "text": prompt},
        {"type": "image_url", "image_url": {"url": image_data_url(png_bytes(image))}}]}]


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's score: 2 flawless, 1 acceptable, 0 misaligned (VISTA-Bench App. B.3)."""
    score: int
    explanation: str = ""

    def __post_init__(self):
        if self.score not in (0, 1, 2):
            raise ValueError(f"judge score must be 0, 1 or 2, got {self.score}")


_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*?)\n?```$", re.S)


def strip_fences(text: str) -> str:
    """Text without a Markdown code fence around it (VLMs often add one)."""
    m = _FENCE.match(text.strip())
    return m.group(1) if m else text


class VlmOCR:
    """OCR by a VLM (``ocr.engines.<name>`` with ``type: vlm``).

    Args:
        endpoint: resolved ``api.endpoints`` entry (see :mod:`roundtrip.api.settings`).
        model: model name at the endpoint (``gpt-4o``, ``google/gemma-3-27b-it``, ``qwen2.5vl:7b``).
        prompt: template; ``{language}`` becomes the item's language name.
        max_tokens: answer length limit.
        temperature: sampling temperature (0: as deterministic as the server allows).
    """

    name = "vlm"

    def __init__(self, endpoint: dict, model: str, prompt: str = "", max_tokens: int = 4096,
                 temperature: float = 0.0):
        if not isinstance(endpoint, dict):
            raise ValueError("endpoint: not resolved; name an entry of api.endpoints")
        if not prompt:
            raise ValueError("prompt: empty (set it, or api.prompts.ocr)")
        self.endpoint, self.model, self.prompt = endpoint, model, prompt
        self.max_tokens, self.temperature = int(max_tokens), float(temperature)

    @property
    def concurrency(self) -> int:
        return int(self.endpoint.get("concurrency", 4))

    def check(self, langs: list[str]) -> str:
        """Builds the client (raises ``MissingApiKey`` when the key is unset); returns a label."""
        client_for(self.endpoint)
        return f"{self.model} at {self.endpoint['base_url']}"

    def read(self, image: np.ndarray, lang: str = "eng") -> str:
        """Text of an ``(H, W, 3)`` image.

        Raises:
            ApiError: the request failed after retries (a ``RuntimeError``).
        """
        reply = client_for(self.endpoint).chat(
            self.model, _image_message(self.prompt.format(language=language_of(lang)), image),
            max_tokens=self.max_tokens, temperature=self.temperature)
        return strip_fences(reply.text)


class VlmJudge:
    """Render judge by a VLM (``audit.judge`` with ``type: vlm``; VISTA-Bench Appendix B.3).

    The prompt template gets ``{reference}`` (the text the render should show) and must ask for a
    JSON object ``{"score": 0|1|2, "explanation": "..."}``: 2 flawless, 1 acceptable,
    0 misaligned.
    """

    name = "vlm"

    def __init__(self, endpoint: dict, model: str, prompt: str = "", max_tokens: int = 512):
        if not isinstance(endpoint, dict):
            raise ValueError("endpoint: not resolved; name an entry of api.endpoints")
        if not prompt:
            raise ValueError("prompt: empty (set it, or api.prompts.judge)")
        self.endpoint, self.model, self.prompt, self.max_tokens = endpoint, model, prompt, max_tokens
        self.name = f"vlm:{model}"

    def judge(self, image: np.ndarray, reference: str):
        """Score one render.

        Returns:
            :class:`JudgeVerdict`.

        Raises:
            ApiError / MalformedResponse (``RuntimeError``): no usable answer.
        """
        reply = client_for(self.endpoint).chat(
            self.model, _image_message(self.prompt.format(reference=reference), image),
            max_tokens=self.max_tokens, temperature=0.0)
        verdict = parse_verdict(reply.text)
        return JudgeVerdict(verdict["score"], verdict["explanation"])


def parse_verdict(text: str) -> dict:
    """``{"score": int, "explanation": str}`` from the first JSON object in ``text``.

    Raises:
        MalformedResponse: no JSON object, or a score outside 0/1/2.
    """
    m = re.search(r"\{.*\}", text, re.S)
    try:
        obj = json.loads(m.group(0)) if m else None
        score = int(obj["score"])
    except (ValueError, TypeError, KeyError) as exc:
        raise MalformedResponse(f"judge answer is not a JSON verdict: {text[:120]!r}") from exc
    if score not in (0, 1, 2):
        raise MalformedResponse(f"judge score {score} is not 0, 1 or 2")
    return {"score": score, "explanation": str(obj.get("explanation", ""))}
