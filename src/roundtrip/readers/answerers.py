"""Question answerers for VISTA-Bench (``vista.readers.<name>``): a reader that answers a
multiple-choice question given as pure text (``text`` mode) or as a rendered image (``vt`` mode,
visualized text).

- ``vlm``: a chat model on an OpenAI-compatible endpoint (vLLM, Ollama, OpenAI). Text mode sends
  the item's images, then the hint, question and options as text with the instruction; VT mode
  sends the item's images, then the question image, then the hint as text with the instruction
  (the hint travels as text in both modes: :func:`hint_prefix`). :func:`vlm_parts` lays out
  the request.
- ``transformers``: the same requests (:func:`vlm_parts`, the same prompts) to a chat VLM run in
  the job's process (:class:`roundtrip.readers.transformers_vlm.ChatVLM`: a model folder or a
  hub id in the Hugging Face cache, its chat template, batched generation, answers cached as
  each batch returns).
- ``ocr_llm``: the agentic route (VISTA-Bench Sec. 5): the question image is read by an OCR engine
  (``ocr``, an entry of ``ocr.engines``) and a text model on the endpoint answers from that text.
- ``ocr_solver``: offline. Text mode solves the pure-text question; VT mode solves what Tesseract
  (or another OCR engine) read from the question image. It answers questions of
  :mod:`.question_family` exactly and nothing else: its modality gap is the gap that reading
  alone causes. It is a baseline, not a VLM. A question whose pure text it cannot solve is
  outside its scope (:meth:`OcrSolverAnswerer.out_of_scope`): not asked in either mode.

A reader may have ``out_of_scope(q) -> str | None``: why it cannot answer ``q`` at all (None:
it can). The evaluation leaves such questions out of the reader's accuracies in both modes and
counts them, instead of counting them wrong.

An evaluation may lay out the text of a request itself (:attr:`Question.message`, instruction
included); the endpoint readers then send it in place of their own layout. Every answerer
returns the raw output string; extraction and scoring are the evaluation's
(``roundtrip.evals.vista.extract``). Answers of the API readers are cached by the client: a
rerun sends no request already answered.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from roundtrip.api.endpoint import DEFAULT_CACHE_DIR
from roundtrip.core.registry import build_registered
from roundtrip.readers.question_family import CATEGORIES, Unsolvable, solve
from roundtrip.readers.transformers_vlm import ChatVLM, _InProcessReader

TEXT, VT = "text", "vt"

#: The five prompts of VISTA-Bench's prompt study, verbatim (App. C.1, Fig. 9): protocol, like a
#: dataset, so they are not reworded. ``Original`` (the 20-words prompt) is the one of the main
#: results. The same instruction goes with both modes, so that text and VT differ only in how
#: the question and options arrive (§3.3, "strictly matched").
PAPER_PROMPTS: dict[str, str] = {
    "10-words": "Read the question and options, then answer with only the single letter "
                "(e.g., A, B, C, D).",
    "Original": "Read the question and options shown in the image(s). Answer with only the "
                "single letter of the correct option (e.g., A, B, C, D).",
    "50-words": "Please carefully read the question and options presented in the image(s). "
                "Ensure you understand the meaning of each option. Based on the question, "
                "choose the most appropriate answer and respond with only the letter of the "
                "correct option (e.g., A, B, C, or D). Do not include any additional text or "
                "explanations in your response.",
    "Image-understand": "Please take a moment to carefully read the question and all available "
                        "options shown in the image(s). Ensure you fully understand the context "
                        "and meaning behind each option. After considering the question and "
                        "options, choose the most appropriate answer. Respond only with the "
                        "letter corresponding to the correct option (e.g., A, B, C, or D). Do "
                        "not include any explanations or comments in your response.",
    "CoT": "Analyze the image to identify the question text and the available options. Think "
           "step-by-step to deduce the correct answer based on the visual information provided. "
           "However, discard your reasoning process in the final output. Your final response "
           "must consist of nothing but the single letter of the correct option (e.g., A). Do "
           "not explain why and do not use punctuation.",
}
#: roundtrip's own wordings of the same five lengths/emphases (not the paper's prompts): a very
#: short one, about 20 words, about 50 words, one that stresses the accompanying images, one
#: that asks for silent step-by-step reasoning. ``vt`` is sent after the question image;
#: ``text`` after the question written out.
OWN_PROMPTS: dict[str, dict[str, str]] = {
    "short": {
        VT: "Answer the question in the image with its option letter only.",
        TEXT: "Answer the question above with its option letter only.",
    },
    "words20": {
        VT: "The image shows a question and its answer options. Reply with nothing but the "
            "letter of the correct option, for example B.",
        TEXT: "Above are a question and its answer options. Reply with nothing but the letter "
              "of the correct option, for example B.",
    },
    "words50": {
        VT: "Read the question and every answer option printed in the image with care, and "
            "make sure you understand what each option says. Then decide which option answers "
            "the question best. Your reply must be that option's letter alone (such as A, B, "
            "C or D), with no words, explanation or punctuation around it.",
        TEXT: "Read the question and every answer option above with care, and make sure you "
              "understand what each option says. Then decide which option answers the "
              "question best. Your reply must be that option's letter alone (such as A, B, C "
              "or D), with no words, explanation or punctuation around it.",
    },
    "image_understanding": {
        VT: "Study the picture that prints the question and its options together with any "
            "other picture given with it, and relate what the question asks to what the "
            "pictures show before you decide. Give only the letter of the option you choose; "
            "no explanation.",
        TEXT: "Study the question and options above together with any picture given with "
              "them, and relate what the question asks to what the pictures show before you "
              "decide. Give only the letter of the option you choose; no explanation.",
    },
    "cot": {
        VT: "Find the question and its options in the image, reason through them step by step "
            "in your head, and then write only the final option letter, nothing else.",
        TEXT: "Reason through the question and options above step by step in your head, and "
              "then write only the final option letter, nothing else.",
    },
}
#: Every named prompt: the paper's five (same text in both modes), then roundtrip's own.
PROMPT_PRESETS: dict[str, dict[str, str]] = (
    {name: {VT: text, TEXT: text} for name, text in PAPER_PROMPTS.items()} | OWN_PROMPTS)
DEFAULT_PRESET = "Original"
#: Instruction for open questions (no options), both modes.
OPEN_INSTRUCTION = {VT: "Answer the question shown in the image with a single word or number.",
                    TEXT: "Answer the question above with a single word or number."}


@dataclass
class Question:
    """One question as a reader gets it.

    Attributes:
        item_id: manifest item id (VT mode: one render; text mode: the question id).
        text: the pure-text prompt: question, then one ``X. option`` line per option.
        hint: context text printed before the question (VLMEvalKit's ``hint``), may be empty.
        options: ``[(letter, text)]``; empty for an open question.
        images: the item's own images (``(H, W, 3)`` uint8, or for an endpoint reader
            :class:`roundtrip.api.images.ImageFile` objects, read when the request is built),
            none for unimodal questions.
        question_image: the rendered question (VT mode), ``(H, W, 3)`` uint8 or an
            :class:`~roundtrip.api.images.ImageFile`.
        ocr_text: what the OCR engine read from ``question_image`` (OCR readers, VT mode).
        message: the text part of the request as the evaluation lays it out, instruction
            included; None: the reader's own layout (:func:`hint_prefix`, the text, a blank
            line, the instruction of its prompt). Readers without prompts ignore it.
    """
    item_id: str
    text: str
    hint: str = ""
    options: list[tuple[str, str]] = field(default_factory=list)
    images: list = field(default_factory=list)
    question_image: object = None
    ocr_text: str | None = None
    message: str | None = None


def _instruction(prompts: dict, mode: str, open_question: bool) -> str:
    return OPEN_INSTRUCTION[mode] if open_question else prompts[mode]


def _image_parts(images: list) -> list[dict]:
    """Chat image parts of ``(H, W, 3)`` arrays (PNG-encoded) or image files (sent as they are
    where they are 8-bit RGB PNGs, :class:`roundtrip.api.images.ImageFile`).

    Raises:
        ImageReadError: an image file that cannot be read.
    """
    from roundtrip.api.images import ImageFile, image_data_url, png_bytes

    return [{"type": "image_url", "image_url": {"url": image_data_url(
        im.png() if isinstance(im, ImageFile) else png_bytes(im))}} for im in images]


def hint_prefix(q: Question) -> str:
    """The hint as it precedes the question text, or ``""``.

    One rule for every reader and both modes: the hint is context, not part of the rendered
    question, so it is sent as text in text mode and in VT mode alike; the two modes then
    differ only in how the question and options arrive (VISTA-Bench §3.3, matched conditions).
    """
    return q.hint.strip() + "\n" if q.hint.strip() else ""


def _text_body(q: Question) -> str:
    return hint_prefix(q) + q.text


def resolve_prompts(prompt: str | dict | None) -> dict[str, str]:
    """``{vt: ..., text: ...}`` from a preset name, a dict of both, or None (the default).

    Raises:
        ValueError: an unknown preset name, or a dict without both modes.
    """
    if prompt is None or prompt == "":
        return PROMPT_PRESETS[DEFAULT_PRESET]
    if isinstance(prompt, str):
        if prompt not in PROMPT_PRESETS:
            raise ValueError(f"prompt: unknown preset {prompt!r}; known: {sorted(PROMPT_PRESETS)}"
                             " (or give {vt: ..., text: ...})")
        return PROMPT_PRESETS[prompt]
    missing = {VT, TEXT} - set(prompt)
    if missing:
        raise ValueError(f"prompt: a custom prompt needs both modes; missing {sorted(missing)}")
    return {VT: str(prompt[VT]), TEXT: str(prompt[TEXT])}


class _ChatAnswerer:
    """Shared by the endpoint readers: client, model, decoding settings. They take image files
    (``sends_files``: read and encoded by the worker that builds each request) and are asked on
    their endpoint's :attr:`workers` (``roundtrip.api.client.ApiClient.workers``)."""

    needs_ocr = False
    sends_files = True

    def __init__(self, endpoint: dict, model: str, prompt: str | dict | None = None,
                 max_tokens: int = 256, temperature: float = 0.0, decoding: dict | None = None,
                 ocr: str | None = None):
        if not isinstance(endpoint, dict):
            raise ValueError("endpoint: not resolved; name an entry of api.endpoints")
        if not model:
            raise ValueError("model: empty (the model name at the endpoint)")
        self.endpoint, self.model, self.ocr = endpoint, model, ocr
        self.prompts = resolve_prompts(prompt)
        self.params = {"max_tokens": int(max_tokens), "temperature": float(temperature),
                       **(decoding or {})}

    @property
    def concurrency(self) -> int:
        """``concurrency`` of the reader's endpoint: requests in flight at once."""
        return int(self.endpoint.get("concurrency", 4))

    @property
    def workers(self) -> int:
        """Threads that ask this reader's questions, as its endpoint client's
        (:func:`roundtrip.api.scheduler.item_workers`: twice the concurrency)."""
        from roundtrip.api.scheduler import item_workers

        return item_workers(self.concurrency)

    def stopped(self):
        """The error of a question not asked once the endpoint is found down
        (:meth:`roundtrip.api.client.ApiClient.stopped`), else None."""
        from roundtrip.api.client import stopped

        return stopped(self.endpoint)

    def _chat(self, content: list[dict]) -> str:
        from roundtrip.api.client import client_for

        reply = client_for(self.endpoint).chat(self.model, [{"role": "user", "content": content}],
                                               **self.params)
        return reply.text

    def answer(self, q: Question, mode: str) -> str:
        """The raw output for ``q`` in ``mode`` (:data:`TEXT` or :data:`VT`), the request laid
        out by :meth:`content`.

        Raises:
            ApiError (a ``RuntimeError``): no answer after retries.
            ValueError: a request that cannot be laid out (VT mode without its question image
                or OCR text).
        """
        return self._chat(self.content(q, mode))

    def content(self, q: Question, mode: str) -> list[dict]:
        """The chat content of the request for ``q`` in ``mode`` (images encoded)."""
        raise NotImplementedError

    def asks_itself(self) -> bool:
        """Whether this reader's :meth:`answer` or its request was replaced on the instance (a
        stand-in of a test): it is then asked through them, one question at a time, not through
        :meth:`stream`."""
        return bool({"answer", "_chat", "content"} & set(vars(self)))

    def stream(self, items, question=None):
        """Ask the questions of ``items`` on the endpoint, the requests built (images read and
        encoded) on the client's builder threads, ``concurrency`` in flight
        (:meth:`roundtrip.api.client.ApiClient.stream`); yields ``(index, result)`` as the
        answers arrive.

        Args:
            items: the items.
            question: called with an item on a builder thread; returns its ``(Question, mode)``,
                or any other value: the item's result as it is (default: the items are the
                pairs).

        Yields:
            ``(index in items, raw output | other result | exception)``: ``ImageReadError``,
            an image file that cannot be read; ``ValueError``, a request that cannot be laid
            out; ``ApiError``, no answer.
        """
        from roundtrip.api.client import Reply, client_for

        client = client_for(self.endpoint)

        def build(item):
            pair = question(item) if question is not None else item
            if not isinstance(pair, tuple):
                return pair
            return client.prepare_chat(self.model, [{"role": "user",
                                                     "content": self.content(*pair)}],
                                       **self.params)
        for i, out in client.stream(items, build):
            yield i, out.text if isinstance(out, Reply) else out


def vlm_parts(q: Question, mode: str, prompts: dict[str, str]) -> list:
    """The request a VLM is sent for ``q`` in ``mode``, as parts in order: images (``(H, W, 3)``
    uint8 arrays) and one text (``str``). One layout for every VLM reader, on an endpoint
    (:class:`VlmAnswerer`) or in process (:class:`TransformersAnswerer`).

    - text mode: the item's images, then the text: :attr:`Question.message` where the
      evaluation laid it out, else :func:`hint_prefix`, the question and options, a blank line
      and the instruction of ``prompts`` for the mode;
    - VT mode: the item's images, the question image, then the text: :attr:`Question.message`,
      else the hint and the instruction.

    Args:
        q: the question.
        mode: :data:`TEXT` or :data:`VT`.
        prompts: ``{vt: ..., text: ...}`` (:func:`resolve_prompts`).

    Raises:
        ValueError: VT mode without a question image; an unknown mode.
    """
    if mode not in (TEXT, VT):
        raise ValueError(f"mode: {mode!r} is not {TEXT!r} or {VT!r}")
    instruction = _instruction(prompts, mode, not q.options)
    if mode == TEXT:
        text = q.message if q.message is not None else _text_body(q) + "\n\n" + instruction
        return [*q.images, text]
    if q.question_image is None:
        raise ValueError("no question image")
    text = q.message if q.message is not None else hint_prefix(q) + instruction
    return [*q.images, q.question_image, text]


def _content(parts: list) -> list[dict]:
    """:func:`vlm_parts` as the content of an OpenAI chat message."""
    return [{"type": "text", "text": p} if isinstance(p, str) else _image_parts([p])[0]
            for p in parts]


class VlmAnswerer(_ChatAnswerer):
    """``type: vlm``: a VLM answers from the text (text mode) or the question image (VT mode).

    Args:
        endpoint: resolved ``api.endpoints`` entry.
        model: the model name at the endpoint (``Qwen/Qwen2.5-VL-7B-Instruct``, ``gpt-4o``).
        prompt: a :data:`PROMPT_PRESETS` name (default ``Original``, VISTA-Bench App. C.1) or
            ``{vt: ..., text: ...}``.
        max_tokens, temperature: decoding; ``decoding``: any other request parameters
            (``top_p``, ``seed``, ``extra_body``...).
    """

    name = "vlm"

    def content(self, q: Question, mode: str) -> list[dict]:
        """The request for ``q`` in ``mode`` (:data:`TEXT` or :data:`VT`), laid out by
        :func:`vlm_parts`.

        Raises:
            ValueError: VT mode without a question image.
            ImageReadError: an image file that cannot be read.
        """
        return _content(vlm_parts(q, mode, self.prompts))


class TransformersAnswerer(_InProcessReader):
    """``type: transformers``: a chat VLM run in the job's process answers as :class:`VlmAnswerer`
    does, from the same requests (:func:`vlm_parts`, the same prompts), a batch at a time
    (:class:`roundtrip.readers.transformers_vlm.ChatVLM`: ``AutoModelForImageTextToText`` from a
    model folder or a hub id in the Hugging Face cache, never downloaded; the model's chat
    template; left-padded batches; every answer cached as its batch returns, keyed by the
    folder's fingerprint, the request and the generation settings; usage to the run's ledger).

    Args:
        model: a model folder or a hub id in the Hugging Face cache
            (``Qwen/Qwen2.5-VL-7B-Instruct``).
        prompt: as :class:`VlmAnswerer` (default ``Original``, VISTA-Bench App. C.1).
        max_new_tokens: answer length limit in tokens (default 256).
        batch_size: requests generated at once (default 8).
        image_size: ``[width, height]`` every image is resized to, or None (default): the
            images as they are, the model's processor deciding.
        decoding: ``greedy`` (default), ``model`` (the folder's ``generation_config.json``) or a
            mapping of :data:`roundtrip.readers.transformers_vlm.DECODING_KEYS`.
        seed, dtype, device, cache_dir: as :class:`~roundtrip.readers.transformers_vlm.ChatVLM`.
        cache_implementation, compile, attn_implementation, sort_by_length, prefetch: the
            decoding-speed settings of :class:`~roundtrip.readers.transformers_vlm.ChatVLM`
            (how fast answers come, never which).

    Raises:
        ValueError: a bad setting (the message names it).
    """

    needs_ocr = False

    def __init__(self, model: str, prompt: str | dict | None = None, max_new_tokens: int = 256,
                 batch_size: int = 8, image_size: list[int] | None = None,
                 decoding: str | dict = "greedy", seed: int = 0, dtype: str = "auto",
                 device: str = "auto", cache_dir: str = DEFAULT_CACHE_DIR, *,
                 cache_implementation: str = "auto", compile: bool | str | dict = "auto",
                 attn_implementation: str = "auto", sort_by_length: bool = True,
                 prefetch: bool | str = "auto"):
        super().__init__(ChatVLM(model, "model", max_new_tokens, decoding, seed, batch_size,
                                 image_size, dtype, device, cache_dir,
                                 cache_implementation=cache_implementation, compile=compile,
                                 attn_implementation=attn_implementation,
                                 sort_by_length=sort_by_length, prefetch=prefetch))
        self.prompts = resolve_prompts(prompt)

    def check(self) -> str:
        """Locates the model and fingerprints its folder (no loading); returns a label.

        Raises:
            WeightsMissing: the model is not on this machine (the message names the key).
        """
        return self.vlm.check()

    def answer_many(self, asked: list[tuple[Question, str]]) -> list[str | Exception]:
        """The raw output of each ``(question, mode)``, in order, ``batch_size`` requests
        generated at a time; a request that could not be answered gives its exception in its
        place (``GenerationFailed``; ``ValueError``: VT mode without a question image).

        Raises:
            WeightsMissing: the model is not on this machine.
        """
        out: list[str | Exception | None] = [None] * len(asked)
        requests, where = [], []
        for i, (q, mode) in enumerate(asked):
            try:
                requests.append(vlm_parts(q, mode, self.prompts))
                where.append(i)
            except ValueError as exc:
                out[i] = exc
        for i, answer in zip(where, self.vlm.answer_many(requests), strict=True):
            out[i] = answer
        return out

    def answer(self, q: Question, mode: str) -> str:
        """The raw output for ``q`` in ``mode`` (:meth:`answer_many` of one).

        Raises:
            GenerationFailed (a ``RuntimeError``): the model could not answer.
            ValueError: VT mode without a question image.
        """
        (out,) = self.answer_many([(q, mode)])
        if isinstance(out, Exception):
            raise out
        return out


class OcrLlmAnswerer(_ChatAnswerer):
    """``type: ocr_llm``: OCR of the question image (engine ``ocr``), then a model on the
    endpoint answers from that text (with the item's images, if any).

    Args: as :class:`VlmAnswerer`, plus ``ocr``: the ``ocr.engines`` entry that reads the image.
    """

    name = "ocr_llm"
    needs_ocr = True

    def content(self, q: Question, mode: str) -> list[dict]:
        """The request for ``q`` in ``mode``: the item's images, then the text (VT mode: the
        OCR text of the question image).

        Raises:
            ValueError: VT mode without the OCR text.
        """
        instruction = _instruction(self.prompts, TEXT, not q.options)
        if mode == TEXT and q.message is not None:
            return _image_parts(q.images) + [{"type": "text", "text": q.message}]
        if mode == TEXT:
            body = _text_body(q)
        elif q.ocr_text is None:
            raise ValueError("no OCR text of the question image")
        else:
            body = hint_prefix(q) + q.ocr_text
        return _image_parts(q.images) + [{"type": "text", "text": body + "\n\n" + instruction}]


class OcrSolverAnswerer:
    """``type: ocr_solver``: the offline baseline (module docstring).

    Args:
        ocr: the ``ocr.engines`` entry whose reading of the question image is solved.
    """

    name = "ocr_solver"
    needs_ocr = True
    concurrency = 1
    sees_item_images = False  # the family has none; pictures would only cost decoding
    #: What the solver answers at all, for messages and table notes.
    SCOPE = ("the questions of roundtrip's offline family (" + ", ".join(CATEGORIES)
             + "; questions: family)")

    def __init__(self, ocr: str = "tesseract"):
        self.ocr = ocr

    def out_of_scope(self, q: Question) -> str | None:
        """Why the solver cannot answer ``q`` at all, or None: its pure text is not a question of
        the family (:func:`~roundtrip.readers.question_family.solve` raises ``Unsolvable`` on
        it). Decided on the pure text, so that both modes of a question are in or out together:
        a reading of the render it cannot solve stays an invalid answer (the gap it measures).
        """
        try:
            solve(q.text)
        except Unsolvable as exc:
            return f"{self.name} answers only {self.SCOPE}; this one: {exc}"
        return None

    def answer(self, q: Question, mode: str) -> str:
        """The option letter, or ``cannot determine: <why>`` (an invalid answer).

        Raises:
            ValueError: VT mode without the OCR text.
        """
        if mode == VT and q.ocr_text is None:
            raise ValueError("no OCR text of the question image")
        text = q.text if mode == TEXT else q.ocr_text
        try:
            return solve(text)
        except Unsolvable as exc:
            return f"cannot determine: {exc}"


#: ``vista.readers.<name>.type`` -> answerer class.
ANSWERER_TYPES = {"vlm": VlmAnswerer, "ocr_llm": OcrLlmAnswerer, "ocr_solver": OcrSolverAnswerer,
                  "transformers": TransformersAnswerer}


def build_answerer(name: str, spec: dict):
    """Answerer from its ``vista.readers.<name>`` entry.

    Raises:
        ValueError: unknown type or bad settings (the message names the config key).
    """
    reader = build_registered(ANSWERER_TYPES, spec, f"vista.readers.{name}", "reader")
    if isinstance(reader, _InProcessReader):
        reader.config_key = f"vista.readers.{name}"  # a missing model names vista.readers.<name>.model
    return reader
