"""Answer extraction and scoring of VISTA-Bench, in our own code.

Two rules turn a reader's raw output into an option letter or ``None`` (invalid, counted
wrong); both first cut a reasoning trace off at the last ``</think>`` and keep it apart
(:func:`split_reasoning`).

``release`` (the default; :func:`extract_release`) is what produced the published numbers: the
authors evaluated with VLMEvalKit (App. C.3: "we follow VLMEvalKit's pipeline"; github.com/
2223884741/VISTA-Bench @ ffd7e6e, ``VLMEvalKit/vlmeval/utils/matching_util.py``, ``can_infer``
on exact matching, ``VLMEvalKit/vlmeval/dataset/utils/multiple_choice.py``):

1. an output that pandas reads back as missing (exactly ``None``, ``NA``, ``nan``, ``''``,
   ...; the predictions pass through a spreadsheet) is the string ``nan``;
2. *option letter* (:func:`infer_option`): an output holding ``Failed to obtain answer via
   API`` has none; one holding a reject phrase (:data:`REJECT_PHRASES`, case-sensitive) is
   ``Z`` (no answer); otherwise the characters of :data:`PUNCTUATION` become spaces, the output
   is split on whitespace (case kept: ``b`` is no letter), and when exactly one option letter
   occurs as a token and its first occurrence is among the last four tokens, that letter is the
   answer; no option letter but a token ``Z``: ``Z``;
3. *option text* (:func:`infer_text`), when step 2 found nothing: the output, lower-cased, is
   at most twice as long as all option texts together, and exactly one option's text (lower
   case, as written, surrounding spaces included) is a substring of it;
4. nothing found: ``Z``. ``Z`` (and a letter that is no option) never equals an answer.

Open questions (no options) get no letter, so they always count wrong (:func:`score_open`
gives roundtrip's exact-match credit beside, named).

``prose`` (:func:`extract_prose`) is App. C.3's prose and roundtrip's earlier rule: refusals
(:data:`REFUSALS`) invalid; upper-case, :data:`_PUNCT` dropped, split; exactly one option
letter whose last occurrence is among the last :data:`NEAR_END` tokens; only when no option
letter occurs at all, exactly one option text as whole words (output at most
:data:`MAX_LENGTH_RATIO` times the options' total length); open questions by exact match.

Either rule may hand an output it could not read to a judge model (``judge``; off by default).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: How many final tokens a lone option letter may be among (the prose rule; App. C.3: five).
NEAR_END = 5
#: An output longer than this many times the options' total text is not matched by text.
MAX_LENGTH_RATIO = 2.0
#: Substrings (lower case) that mark a refusal or a failed request (the prose rule).
REFUSALS = ("cannot determine", "can't determine", "unable to determine", "cannot answer",
            "can't answer", "unable to answer", "i'm sorry", "i am sorry", "as an ai",
            "api error", "request failed", "failed to obtain answer")
_PUNCT = re.compile(r"[()\[\]{}<>.,:;!?\"'`*_|/\\]")
LETTER, OPTION_TEXT, JUDGE, INVALID, OPEN = "letter", "option_text", "judge", "invalid", "open"
#: The extraction rules (``vista.extraction``): the release's VLMEvalKit rule (the headline) and
#: App. C.3's prose.
RELEASE, PROSE = "release", "prose"
RULES = (RELEASE, PROSE)

#: The release's reject phrases: an output holding one (case-sensitive) answers ``Z``
#: (VLMEvalKit's ``can_infer_option``, as run at ffd7e6e).
REJECT_PHRASES = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
                  "I'm sorry, but without the image provided", "Cannot determine the answer")
#: An output holding this has no option letter (VLMEvalKit's API failure message).
API_FAILURE = "Failed to obtain answer via API"
#: The characters the release's letter rule turns into spaces before splitting.
PUNCTUATION = ".()[],:;!*#{}"
#: The tokens a lone option letter's first occurrence must be among: the last four (the
#: release requires its index to exceed ``len(tokens) - 5``).
RELEASE_NEAR_END = 4
#: The letter the release gives an output it cannot read (never an answer).
NO_ANSWER = "Z"
#: What ``pandas.read_csv`` and ``read_excel`` read as missing by default (pandas 2.x
#: ``na_values``): an option cell holding exactly one of these is no option in the release,
#: and an output that is exactly one of these reads back as ``nan``.
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                       "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                       "nan", "null"})


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
    """Whether the output refuses or reports a failure (:data:`REFUSALS`, the prose rule)."""
    low = output.lower()
    return any(r in low for r in REFUSALS)


def _tokens(output: str) -> list[str]:
    return _PUNCT.sub(" ", output.upper()).split()


# -- the release's rule -------------------------------------------------------------------------
def read_back(output: str) -> str:
    """The prediction as the release scores it: an output that is exactly a pandas missing
    value (:data:`PANDAS_NA`) comes back from the prediction file as ``nan``."""
    return "nan" if output in PANDAS_NA else output


def infer_option(output: str, options: dict[str, str]) -> str | None:
    """The release's option-letter step (module docstring, step 2): an option letter,
    :data:`NO_ANSWER` or None (nothing found).

    Source: VLMEvalKit ``can_infer_option`` as committed in the authors' released code
    (github.com/2223884741/VISTA-Bench @ ffd7e6e, ``VLMEvalKit/vlmeval/utils/matching_util.py``;
    its ``VERBOSE``-only quantifier check is off, as in a default run).
    """
    if API_FAILURE in output:
        return None
    if any(p in output for p in REJECT_PHRASES):
        return NO_ANSWER
    tokens = output.translate(str.maketrans(PUNCTUATION, " " * len(PUNCTUATION))).split()
    present = [k for k in options if k in tokens]
    if len(present) == 1:
        letter = present[0]
        # the first occurrence among the last four tokens
        return letter if tokens.index(letter) >= len(tokens) - RELEASE_NEAR_END else None
    if not present and NO_ANSWER in tokens:
        return NO_ANSWER
    return None


def infer_text(output: str, options: dict[str, str]) -> str | None:
    """The release's option-text step (module docstring, step 3): the letter of the only option
    whose text (lower case, as written) is a substring of the lower-cased output, when the
    output is at most twice the options' total length; else None.

    Source: VLMEvalKit ``can_infer_text`` in the authors' released code (as :func:`infer_option`).
    """
    low = output.lower()
    if len(low) > 2 * sum(len(str(v)) for v in options.values()):
        return None
    hits = [k for k, v in options.items() if str(v).lower() in low]
    return hits[0] if len(hits) == 1 else None


def extract_release(output: str, options: list[tuple[str, str]] | dict[str, str]) -> Extraction:
    """The option an output chooses under the release's rule (module docstring, ``release``).

    Args:
        output: the reader's final answer (after :func:`split_reasoning`).
        options: ``[(letter, text)]`` or ``{letter: text}`` as the release reads them (texts as
            written in the TSV; an empty dict for an open question).

    Returns:
        :class:`Extraction`: ``letter`` (how ``letter`` or ``option_text``), or None with
        ``how`` ``invalid`` and ``why`` (``no answer (Z)``: a reject phrase, a token ``Z`` or
        nothing readable; ``no option``: an open question).
    """
    options = {k: str(v) for k, v in dict(options).items()}
    output = read_back(str(output))
    letter = infer_option(output, options)
    if letter and letter != NO_ANSWER:
        return Extraction(letter, LETTER)
    if not letter:
        letter = infer_text(output, options)
        if letter:
            return Extraction(letter, OPTION_TEXT)
    if not options:
        return Extraction(None, INVALID, "no option")
    return Extraction(None, INVALID, "no answer (Z)")


# -- App. C.3's prose ---------------------------------------------------------------------------
def extract_prose(output: str, options: list[tuple[str, str]] | dict[str, str]) -> Extraction:
    """The option an output chooses under App. C.3's prose (module docstring, ``prose``; no
    judge).

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


def extract_answer(output: str, options: list[tuple[str, str]] | dict[str, str],
                   rule: str = RELEASE) -> Extraction:
    """The option an output chooses under ``rule`` (:data:`RULES`; module docstring).

    Raises:
        ValueError: an unknown rule.
    """
    if rule == RELEASE:
        return extract_release(output, options)
    if rule == PROSE:
        return extract_prose(output, options)
    raise ValueError(f"vista.extraction: unknown rule {rule!r}; known: {list(RULES)}")


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
