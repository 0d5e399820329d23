"""Dataset types ``gpt_highres``, ``gpt_detail``, ``gpt_posters``: made through an
OpenAI-compatible image API (VTBench Appendix C); and GPT translation of the abstracts.

``gpt_highres`` and ``gpt_detail``: a chat model is asked ``rounds`` times for ``per_round``
scene descriptions as JSONL (10 x 10 by default, as the paper), then one image is generated per
description (1024x1024). ``gpt_posters``: fictional movie titles with slogans as JSONL, then one
poster per title showing both; title and slogan are the ground truth (``text``).

Image generation is retried until the first success (``max_attempts`` outer attempts, each
with the client's own retries) and the first successful image is kept, as the paper does; the
cache makes a rerun return that same image. Every item records the request (``prompt``), the
model, and when the image was made (``generated_at``, from the response). A description that
never came, or an image that never succeeded, is an error item with its reason.

:func:`translate_blocks` translates English abstract blocks (title + sentences) line by line for
the multilingual sets (VTBench Section 3.3), as an alternative to the hand-written corpora.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from roundtrip.api.client import ApiError, client_for
from roundtrip.api.images import decode_at_size
from roundtrip.readers.vlm import strip_fences

log = logging.getLogger(__name__)

#: dataset type -> fields of one JSONL record (first match wins for each role).
_FIELDS = {"description": ("description", "prompt", "scene"), "title": ("title", "movie_title"),
           "slogan": ("slogan", "subtitle", "tagline")}


#: Dataset config keys of the ``gpt_*`` types (all change the images).
GPT_KEYS = ("endpoint", "scenes_prompt", "image_prompt", "chat_model", "image_model", "rounds",
            "per_round", "image_size", "max_attempts", "image_params")


@dataclass(frozen=True)
class GptSetSpec:
    """Config of a ``gpt_*`` dataset (``datasets.<name>``).

    Attributes:
        kind: ``highres``, ``detail`` or ``posters``.
        endpoint: resolved ``api.endpoints`` entry.
        scenes_prompt: template with ``{n}``, ``{round}``, ``{rounds}`` (the round number makes
            each round a distinct request, so the cache does not return round 1 ten times).
        image_prompt: template with ``{description}`` (or ``{title}``, ``{slogan}``) and ``{size}``.
        chat_model, image_model: model names at the endpoint.
        rounds, per_round: number of description requests and records asked per request.
        size: image size ``WxH`` (config key ``image_size``); answers at another size are resized (Lanczos) and noted.
        max_attempts: outer attempts per image.
        image_params: extra ``images.generate`` parameters (e.g. ``{"quality": "high"}``).
    """
    kind: str
    endpoint: dict
    scenes_prompt: str
    image_prompt: str
    chat_model: str = "gpt-4o"
    image_model: str = "gpt-image-1"
    rounds: int = 10
    per_round: int = 10
    size: str = "1024x1024"
    max_attempts: int = 5
    image_params: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, spec: dict) -> "GptSetSpec":
        """From ``datasets.<name>`` (keys :data:`GPT_KEYS`; ``image_size`` -> ``size``)."""
        fields = {k: spec[k] for k in GPT_KEYS if k in spec}
        if "image_size" in fields:
            fields["size"] = fields.pop("image_size")
        return cls(kind=spec["type"].removeprefix("gpt_"), **fields)


def parse_jsonl(text: str) -> list[dict]:
    """JSON objects of a JSONL answer (fences, blank and unparsable lines skipped; a JSON array
    of objects is accepted too)."""
    text = strip_fences(text).strip()
    if text.startswith("["):
        try:
            return [o for o in json.loads(text) if isinstance(o, dict)]
        except ValueError:
            pass
    out = []
    for line in text.splitlines():
        line = line.strip().rstrip(",")
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def _field(obj: dict, role: str) -> str:
    for key in _FIELDS[role]:
        if isinstance(obj.get(key), str) and obj[key].strip():
            return obj[key].strip()
    return ""


def request_records(spec: GptSetSpec) -> list[tuple[str, dict | None, str]]:
    """Ask for the descriptions (or titles and slogans): ``(item_id, record | None, reason)`` for
    ``rounds x per_round`` slots; a missing record carries the reason."""
    client = client_for(spec.endpoint)
    roles = ("title", "slogan") if spec.kind == "posters" else ("description",)

    def one_round(r: int):
        prompt = spec.scenes_prompt.format(n=spec.per_round, round=r + 1, rounds=spec.rounds)
        reply = client.chat(spec.chat_model, [{"role": "user", "content": prompt}])
        recs = [{role: _field(o, role) for role in roles} for o in parse_jsonl(reply.text)]
        return [rec for rec in recs if all(rec.values())]

    out = []
    for r, result in enumerate(client.map(one_round, list(range(spec.rounds)))):
        for j in range(spec.per_round):
            item_id = f"{spec.kind}_{r:02d}_{j:02d}"
            if isinstance(result, Exception):
                out.append((item_id, None, f"description request failed: {result}"))
            elif j >= len(result):
                out.append((item_id, None, f"round {r + 1} answered {len(result)} usable records "
                                           f"of {spec.per_round}"))
            else:
                out.append((item_id, result[j], ""))
    return out


def generate_image(spec: GptSetSpec, prompt: str) -> tuple[np.ndarray, dict]:
    """The first successful image for ``prompt`` and its record (``generated_at``, ``attempts``,
    ``note``).

    Raises:
        ApiError: ``max_attempts`` attempts failed (message of the last).
    """
    client = client_for(spec.endpoint)
    w, h = (int(v) for v in spec.size.split("x"))
    last: Exception | None = None
    for attempt in range(1, spec.max_attempts + 1):
        try:
            reply = client.generate_image(spec.image_model, prompt, size=spec.size,
                                          **spec.image_params)
            image, note = decode_at_size(reply.image_bytes(), w, h)
        except (ApiError, OSError) as exc:
            last = exc
            log.warning("image attempt %d/%d failed: %s", attempt, spec.max_attempts, exc)
            continue
        created = reply.response.get("created") or time.time()
        return image, {
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created)),
            "attempts": attempt, "note": note}
    raise ApiError(f"no image after {spec.max_attempts} attempts: {last}")


def build_gpt_set(spec: GptSetSpec) -> list:
    """Build a ``gpt_*`` dataset.

    Returns:
        ``roundtrip.core.manifest.Item`` list: ``(H, W, 3)`` uint8 images; ``extra`` holds
        ``description`` (or ``title``, ``slogan``, ``text``, ``lang``), ``prompt``,
        ``api_model``, ``api_endpoint``, ``generated_at``, ``attempts`` and ``note``.
    """
    from roundtrip.core.manifest import Item

    records = request_records(spec)
    source = f"{spec.endpoint['name']}:{spec.image_model}"

    def one(entry):
        item_id, rec, reason = entry
        if rec is None:
            return Item(item_id, source, reason=reason)
        try:
            prompt = spec.image_prompt.format(size=spec.size.replace("x", "×"), **rec)
        except (KeyError, IndexError) as exc:
            return Item(item_id, source, reason=f"image_prompt: unknown placeholder {exc}")
        extra = dict(rec) | {"prompt": prompt, "api_model": spec.image_model,
                             "api_endpoint": spec.endpoint["name"]}
        if spec.kind == "posters":
            extra |= {"text": f"{rec['title']}\n{rec['slogan']}", "lang": "eng"}
        try:
            image, made = generate_image(spec, prompt)
        except ApiError as exc:
            return Item(item_id, source, reason=str(exc), extra=extra)
        return Item(item_id, source, image=image, extra=extra | made)

    results = client_for(spec.endpoint).map(one, records)
    items = [r if not isinstance(r, Exception) else Item(rec[0], source, reason=f"failed: {r}")
             for r, rec in zip(results, records)]
    log.info("%s: %d images, %d errors", spec.kind, sum(it.image is not None for it in items),
             sum(it.image is None for it in items))
    return items


def build(name: str, spec: dict, out_dir) -> list:
    """Builder of the dataset registry: a ``gpt_*`` set from its ``datasets.<name>`` entry
    (endpoint already resolved by the config check)."""
    return build_gpt_set(GptSetSpec.from_config(spec))


def translate_blocks(blocks: list[list[str]], language: str, translate: dict) -> list[list[str]]:
    """Translate abstract blocks ``[title, sentence, ...]`` line by line.

    Args:
        blocks: English blocks.
        language: target language name (``Chinese``, ``Japanese``, ``Korean``, ``Hindi``).
        translate: resolved ``datasets.<name>.translate`` (``endpoint``, ``model``, ``prompt``
            with ``{language}``, ``{n}`` and ``{text}``, the lines joined by newlines).

    Returns:
        Translated blocks with the same number of lines each (a block whose answer has another
        number of lines is translated sentence by sentence instead).

    Raises:
        ApiError: a request failed after retries.
    """
    client = client_for(translate["endpoint"])
    model = translate.get("model", "gpt-4o")

    def ask(lines: list[str]) -> list[str]:
        prompt = translate["prompt"].format(language=language, n=len(lines), text="\n".join(lines))
        answer = strip_fences(client.chat(model, [{"role": "user", "content": prompt}],
                                          temperature=0.0).text)
        return [ln.strip() for ln in answer.strip().splitlines() if ln.strip()]

    def one(block: list[str]) -> list[str]:
        out = ask(block)
        if len(out) == len(block):
            return out
        log.info("translation of a %d-line block came back with %d lines; per line instead",
                 len(block), len(out))
        return [" ".join(ask([line])) for line in block]

    results = client.map(one, blocks)
    for r in results:
        if isinstance(r, Exception):
            raise r if isinstance(r, ApiError) else ApiError(str(r))
    return results
