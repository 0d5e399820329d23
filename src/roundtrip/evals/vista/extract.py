"""Answer extraction and scoring of VISTA-Bench (App. C.3), in our own code.

A reader's raw output becomes an option letter or ``None`` (invalid, counted wrong):

1. a reasoning trace is cut off at the last ``</think>`` and kept apart (:func:`split_reasoning`);
2. refusals and API failures are invalid (:data:`REFUSALS`);
3. the output is upper-cased, common punctuation dropped, split on whitespace; when exactly one
   option letter occurs and its last occurrence is among the last :data:`NEAR_END` tokens, that
   letter is the answer (``letter``);
4. otherwise, only when no option letter occurs at all (App. C.3: "if no option letter is
   detected"), when exactly one option's text occurs in the output (case-insensitive, as whole
   words) and the output is at most :data:`MAX_LENGTH_RATIO` times as long as all option texts
   together, that option is the answer (``option_text``); an output naming several letters or
   a letter far from the end is invalid even if it holds an option's text;
5. else invalid, unless a judge model maps the output to an option (``judge``; off by default,
   as VLMEvalKit's LLM matching).

Open questions (no options) are scored by exact match after :func:`normalize_open`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: How many final tokens a lone option letter may be among (VISTA-Bench App. C.3: five).
NEAR_END = 5
#: An output longer than this many times the options' total text is not matched by text.
MAX_LENGTH_RATIO = 2.0
#: Substrings (lower case) that mark a refusal or a failed request.
REFUSALS = ("cannot determine", "can't determine", "unable to determine", "cannot answer",
            "can't answer", "unable to answer", "i'm sorry", "i am sorry", "as an ai",
            "api error", "request failed", "failed to obtain answer")
_PUNCT = re.compile(r"[()\[\]{}<>.,:;!?\"'`*_|/\\]")
LETTER, OPTION_TEXT, JUDGE, INVALID, OPEN = "letter", "option_text", "judge", "invalid", "open"


@dataclass(frozen=True)
class Extraction:
    """What an output was taken to answer.

    Attributes:
        letter: the option letter, or ``None`` (invalid: counted wrong).
        how: :data:`LETTER`, :data:`OPTION_TEXT`, :data:`JUDGE` or :data:`INVALID`.
        why: for an invalid answer, the reason (e.g. ``refusal``, ``two letters``).
    """
    letter: str | None
    how: str
    why: str = ""


def split_reasoning(output: str) -> tuple[str, str]:
    """``(reasoning trace, final answer)``: the text before and after the last ``</think>``
    (VISTA-Bench App. C.3, "Result aggregation"); no tag: ``("", output)``."""
    head, tag, tail = output.rpartition("</think>")
    if not tag:
        return "", output
    return head.replace("<think>", "", 1).strip(), tail.strip()


def is_refusal(output: str) -> bool:
    """Whether the output refuses or reports a failure (:data:`REFUSALS`)."""
    low = output.lower()
    return any(r in low for r in REFUSALS)


def _tokens(output: str) -> list[str]:
    return _PUNCT.sub(" ", output.upper()).split()


def extract_answer(output: str, options: list[tuple[str, str]] | dict[str, str]) -> Extraction:
    """The option an output chooses (module docstring, steps 2–4; no judge).

    Args:
        output: the reader's final answer (after :func:`split_reasoning`).
        options: ``[(letter, text)]`` or ``{letter: text}``; letters A–H.

    Returns:
        :class:`Extraction`; ``letter`` is None when the output is invalid.
    """
    options = dict(options)
    if not output or not output.strip():
        return Extraction(None, INVALID, "empty output")
    if is_refusal(output):
        return Extraction(None, INVALID, "refusal or failure")
    tokens = _tokens(output)
    found = [t for t in tokens if t in options]
    distinct = set(found)
    if len(distinct) == 1:
        letter = distinct.pop()
        last = len(tokens) - 1 - tokens[::-1].index(letter)
        if last >= len(tokens) - NEAR_END:
            return Extraction(letter, LETTER)
    if not found:  # App. C.3: the option-text fallback only when no option letter is detected
        hit = _by_option_text(output, options)
        if hit:
            return Extraction(hit, OPTION_TEXT)
        return Extraction(None, INVALID, "no option letter or option text")
    if len(set(found)) > 1:
        return Extraction(None, INVALID, f"{len(set(found))} option letters")
    return Extraction(None, INVALID, "the option letter is not near the end")


def _by_option_text(output: str, options: dict[str, str]) -> str | None:
    total = sum(len(str(v)) for v in options.values())
    if len(output.strip()) > MAX_LENGTH_RATIO * max(total, 1):
        return None
    low = output.lower()
    hits = [k for k, v in options.items() if str(v).strip() and re.search(
        r"(?<!\w)" + re.escape(str(v).strip().lower()) + r"(?!\w)", low)]
    return hits[0] if len(hits) == 1 else None


def normalize_open(text: str) -> str:
    """An open answer for exact matching: NFKC, case-folded, punctuation dropped, whitespace
    collapsed, a trailing period removed."""
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    text = _PUNCT.sub(" ", text)
    return " ".join(text.split())


def score_open(output: str, answer: str) -> bool:
    """Whether an open answer matches the reference exactly after :func:`normalize_open`."""
    return bool(normalize_open(answer)) and normalize_open(output) == normalize_open(answer)


JUDGE_PROMPT_DEFAULT = (
    "A model answered a multiple-choice question. Question:\n{question}\n\nOptions:\n{options}"
    "\n\nThe model's answer:\n{output}\n\nWhich option did the model choose? Reply with the "
    "option letter only, or Z if it chose none of them or several.")


def judge_letter(reply: str, options: dict[str, str]) -> str | None:
    """The letter a judge model replied, or None (``Z``, or anything not one letter)."""
    tokens = _tokens(reply)
    found = {t for t in tokens if t in options}
    return found.pop() if len(found) == 1 else None
