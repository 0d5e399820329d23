"""The text a reader is sent with each question: as the authors' release lays it out
(``release``, the default) or in the reader's own layout (``matched``; ``vista.prompt_layout``).

The release (github.com/2223884741/VISTA-Bench @ ffd7e6e) evaluates with VLMEvalKit:

- **text mode** (``VLMEvalKit/vlmeval/dataset/image_mcq.py``, ``ImageMCQDataset.build_prompt``,
  the dataset class a converted release TSV is read with): the item's pictures, then
  ``Hint: {hint}\\n`` (where the TSV has a hint), ``Question: {question}\\n``, ``Options:\\n``,
  one ``{letter}. {text}\\n`` per option and :data:`TEXT_INSTRUCTION` followed by ``\\n``; an
  open question (no options) ends after its question line, with no instruction. The text
  instruction is the same whatever prompt the VT mode uses (the prompt study varies only the
  VT prompt).
- **VT mode** (``VLMEvalKit/vlmeval/dataset/image_mm_mcq.py``,
  ``MMImageMCQDataset.build_prompt``): the item's pictures, the question image, then
  ``Hint: {hint}`` (hint stripped) and the reader's VT instruction on the next line (App. C.1's
  ``Original`` prompt by default), for open questions too.

``matched`` is roundtrip's own layout (:func:`roundtrip.readers.answerers.hint_prefix`): the
hint as plain text, the question and its options, a blank line and the reader's instruction for
the mode, the same instruction in both modes for the paper's prompts (§3.3, "strictly
matched").
"""
from __future__ import annotations

from roundtrip.readers.answerers import TEXT, VT, Question

RELEASE_LAYOUT, MATCHED_LAYOUT = "release", "matched"
PROMPT_LAYOUTS = (RELEASE_LAYOUT, MATCHED_LAYOUT)
#: The release's text-mode instruction, verbatim with its trailing space (VLMEvalKit's
#: multiple-choice prompt, ``ImageMCQDataset.build_prompt``).
TEXT_INSTRUCTION = "Answer with only the single letter of the correct option (e.g., A, B, C, D). "
#: Hints the release's VT prompt treats as absent (lower case, after stripping).
_NO_HINT = {"", "nan", "none", "null"}


def release_text_message(question: str, hint: str, options: list[tuple[str, str]]) -> str:
    """The text part of a text-mode request as the release sends it (module docstring).

    Args:
        question: the question as written in the TSV.
        hint: the hint as written, ``""`` where the TSV has none.
        options: ``[(letter, text)]`` as the release reads them; empty for an open question.

    Returns:
        The message text, ending in a newline.
    """
    out = f"Hint: {hint}\n" if hint else ""
    out += f"Question: {question}\n"
    if options:
        out += "Options:\n" + "".join(f"{k}. {v}\n" for k, v in options)
        out += TEXT_INSTRUCTION + "\n"
    return out


def release_vt_message(hint: str, instruction: str) -> str:
    """The text part of a VT-mode request as the release sends it: ``Hint: {hint}`` and the
    instruction on the next line, or the instruction alone (module docstring)."""
    lines = [f"Hint: {hint.strip()}"] if hint.strip().lower() not in _NO_HINT else []
    return "\n".join(lines + [instruction]).strip()


def message(reader, mode: str, row: dict, q: Question, layout: str) -> str | None:
    """The text part of the request for ``q`` in ``mode``, or None where the reader lays it
    out itself: the ``matched`` layout, a reader without prompts (the offline solver) and the
    VT mode of a reader that answers from OCR text.

    Args:
        reader: an answerer (:mod:`roundtrip.readers.answerers`).
        mode: ``text`` or ``vt``.
        row: the question's manifest row (``question``: the question as written; older
            manifests without it fall back to the pure-text prompt).
        q: the question as the reader gets it (hint, options).
        layout: :data:`PROMPT_LAYOUTS`.

    Raises:
        ValueError: an unknown layout.
    """
    if layout not in PROMPT_LAYOUTS:
        raise ValueError(f"vista.prompt_layout: unknown layout {layout!r}; known: "
                         f"{list(PROMPT_LAYOUTS)}")
    prompts = getattr(reader, "prompts", None)
    if layout == MATCHED_LAYOUT or prompts is None:
        return None
    if mode == TEXT:
        question = row.get("question") or q.text
        return release_text_message(question, q.hint, q.options)
    if getattr(reader, "needs_ocr", False):
        return None
    return release_vt_message(q.hint, prompts[VT])
