"""An offline family of multiple-choice questions whose answers are computed exactly.

The family lets the VISTA-Bench evaluation (``roundtrip.evals.vista``) run without model
weights: :func:`generate` writes seeded questions, :func:`solve` reads one back from text (the
pure-text prompt, or what an OCR engine read from its render) and computes the answer. What the
solver gets wrong in the visualized-text mode it gets wrong through reading alone: the modality
gap of a reader whose reasoning is perfect.

Five kinds (the ``category``), each with a few templates (the ``subfield``):

| category | subfields | example |
|---|---|---|
| arithmetic | addition, subtraction, multiplication | What is 47 + 38? |
| comparison | largest, smallest | Which of these numbers is the largest? |
| unit conversion | length, mass, time | How many centimeters are in 3.5 meters? |
| sequence | arithmetic progression, geometric progression | What number comes next: 3, 7, 11, 15, ...? |
| calendar | weekday offset, date to weekday | What day of the week is 10 days after Monday? |

A question has 4 to 8 options (letters A to H), one of them the computed answer, the others
distinct distractors near it. The prompt text is the question, then one ``X. option`` line per
option (:func:`roundtrip.datasets.rendered.questions.prompt_text`), which is also what gets
rendered. Only pure Python: no roundtrip import, no I/O.
"""
from __future__ import annotations

import datetime
import random
import re
import string

CATEGORIES = ("arithmetic", "comparison", "unit conversion", "sequence", "calendar")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
#: (subfield, larger unit, smaller unit, factor): how many smaller units are in one larger one.
UNITS = (("length", "meters", "centimeters", 100), ("length", "kilometers", "meters", 1000),
         ("mass", "kilograms", "grams", 1000), ("time", "hours", "minutes", 60),
         ("time", "minutes", "seconds", 60))


class Unsolvable(ValueError):
    """The text is not a question of the family, or no option holds the computed answer."""


def _num(x: float) -> str:
    """A number as the family prints it: integers without a decimal point."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _distractors(answer: float, n: int, rng: random.Random, step: float = 1) -> list[str]:
    """``n`` distinct numbers near ``answer`` (never equal to it), printed like it."""
    out: set[str] = set()
    spread = max(3, n + 2)
    while len(out) < n:
        d = rng.randint(-spread, spread) * step
        if d and (cand := _num(answer + d)) != _num(answer) and not cand.startswith("-"):
            out.add(cand)
    return sorted(out, key=float)


def _question(rng: random.Random, category: str) -> tuple[str, str, str, list[str]]:
    """``(subfield, question, answer text, distractor pool)`` of one question."""
    n_opt = rng.randint(4, 8)
    if category == "arithmetic":
        sub = rng.choice(("addition", "subtraction", "multiplication"))
        if sub == "multiplication":
            a, b = rng.randint(3, 19), rng.randint(3, 19)
            return sub, f"What is {a} × {b}?", _num(a * b), _distractors(a * b, n_opt - 1, rng)
        a, b = rng.randint(20, 99), rng.randint(10, 99)
        if sub == "subtraction":
            a, b = max(a, b) + 10, min(a, b)
            return sub, f"What is {a} − {b}?", _num(a - b), _distractors(a - b, n_opt - 1, rng)
        return sub, f"What is {a} + {b}?", _num(a + b), _distractors(a + b, n_opt - 1, rng)
    if category == "comparison":
        sub = rng.choice(("largest", "smallest"))
        values = rng.sample(range(100, 999), n_opt)
        nums = [_num(v / 10) for v in values]
        best = max(nums, key=float) if sub == "largest" else min(nums, key=float)
        return (sub, f"Which of these numbers is the {sub}?", best,
                [x for x in nums if x != best])
    if category == "unit conversion":
        sub, big, small, factor = rng.choice(UNITS)
        x = rng.randint(2, 19) / 2
        ans = x * factor
        return (sub, f"How many {small} are in {_num(x)} {big}?", _num(ans),
                _distractors(ans, n_opt - 1, rng, step=factor / 10))
    if category == "sequence":
        sub = rng.choice(("arithmetic progression", "geometric progression"))
        if sub == "geometric progression":
            a, r = rng.randint(1, 5), rng.randint(2, 3)
            seq = [a * r ** k for k in range(4)]
            nxt = seq[-1] * r
        else:
            a, d = rng.randint(1, 30), rng.randint(2, 12)
            seq = [a + d * k for k in range(4)]
            nxt = seq[-1] + d
        shown = ", ".join(map(str, seq))
        return (sub, f"What number comes next in the sequence {shown}, ...?", _num(nxt),
                _distractors(nxt, n_opt - 1, rng))
    if category == "calendar":
        sub = rng.choice(("weekday offset", "date to weekday"))
        if sub == "weekday offset":
            start, days = rng.randrange(7), rng.randint(2, 40)
            ans = WEEKDAYS[(start + days) % 7]
            q = f"What day of the week is {days} days after {WEEKDAYS[start]}?"
        else:
            date = datetime.date(2000, 1, 1) + datetime.timedelta(days=rng.randrange(365 * 30))
            ans = WEEKDAYS[date.weekday()]
            q = f"What day of the week was {date.day} {MONTHS[date.month - 1]} {date.year}?"
        pool = [w for w in WEEKDAYS if w != ans]
        rng.shuffle(pool)
        return sub, q, ans, pool[: min(n_opt, 7) - 1]
    raise ValueError(f"unknown category {category!r}; known: {CATEGORIES}")


def generate(count: int, seed: int = 0) -> list[dict]:
    """``count`` questions of the family, cycling through :data:`CATEGORIES`.

    Returns:
        Question dicts in the shape of :func:`roundtrip.datasets.rendered.questions.load_questions`:
        ``id`` (``fam0001``...), ``question``, ``options`` ``[(letter, text)]`` (4 to 8;
        calendar questions at most 7), ``answer`` (a letter), ``category``, ``subfield``.
        The same ``(count, seed)`` gives the same questions.
    """
    rng = random.Random(seed)
    out = []
    for k in range(count):
        category = CATEGORIES[k % len(CATEGORIES)]
        sub, question, answer, pool = _question(rng, category)
        options = [answer] + list(pool)
        rng.shuffle(options)
        if category in ("unit conversion", "arithmetic", "sequence"):
            options.sort(key=float)  # numbers in order, as printed tests do (not for
            # comparisons, where the order would give the answer away)
        lettered = list(zip(string.ascii_uppercase, options))
        out.append({"id": f"fam{k + 1:04d}", "question": question, "options": lettered,
                    "answer": lettered[options.index(answer)][0], "category": category,
                    "subfield": sub, "hint": ""})
    return out


# -- solving -------------------------------------------------------------------------------------
_OPTION = re.compile(r"^\s*([A-H])\s*[.):,]\s*(.+?)\s*$")
_NUMBER = r"(\d+(?:\.\d+)?)"


def _normalize(text: str) -> str:
    """Undo what renders and OCR do to the family's symbols (minus, times, spaces in numbers)."""
    text = text.replace("−", "-").replace("–", "-").replace("×", "*")
    text = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", " * ", text)
    text = re.sub(r"(?<=\d)[.,]\s+(?=\d)", lambda m: m.group(0)[0], text)  # "1. 5" -> "1.5"
    return text


def split_options(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The question part and the ``(letter, text)`` option lines of a prompt or an OCR reading.

    Option lines start with a letter A–H and a ``.``, ``)`` or ``:``; everything before the first
    of them is the question (joined into one line).
    """
    question, options = [], []
    for line in text.splitlines():
        m = _OPTION.match(line)
        if m and (options or question):
            options.append((m.group(1), m.group(2)))
        elif not options:
            question.append(line.strip())
    return " ".join(q for q in question if q), options


def _value(question: str) -> str:
    """The answer the question asks for, as text (a number or a weekday).

    Raises:
        Unsolvable: no template of the family matches.
    """
    q = _normalize(question)
    if m := re.search(rf"What is {_NUMBER}\s*([-+*])\s*{_NUMBER}", q):
        a, op, b = float(m.group(1)), m.group(2), float(m.group(3))
        return _num({"+": a + b, "-": a - b, "*": a * b}[op])
    if m := re.search(r"How many (\w+) are in " + _NUMBER + r" (\w+)", q):
        small, x, big = m.group(1).lower(), float(m.group(2)), m.group(3).lower()
        for _, b, s, factor in UNITS:
            if (b, s) == (big, small):
                return _num(x * factor)
        raise Unsolvable(f"unknown units {big!r} -> {small!r}")
    if m := re.search(r"sequence ((?:\d+\s*,\s*){3,}\d+)", q):
        seq = [int(v) for v in re.findall(r"\d+", m.group(1))]
        diffs = {b - a for a, b in zip(seq, seq[1:])}
        if len(diffs) == 1:
            return _num(seq[-1] + diffs.pop())
        if seq[0] and all(b % a == 0 for a, b in zip(seq, seq[1:])):
            ratios = {b // a for a, b in zip(seq, seq[1:])}
            if len(ratios) == 1:
                return _num(seq[-1] * ratios.pop())
        raise Unsolvable(f"no progression in {seq}")
    if m := re.search(r"(\d+) days after (\w+)", q):
        day = m.group(2).capitalize()
        if day not in WEEKDAYS:
            raise Unsolvable(f"unknown weekday {m.group(2)!r}")
        return WEEKDAYS[(WEEKDAYS.index(day) + int(m.group(1))) % 7]
    if m := re.search(r"week was (\d{1,2}) (\w+) (\d{4})", q):
        month = m.group(2).capitalize()
        if month not in MONTHS:
            raise Unsolvable(f"unknown month {m.group(2)!r}")
        try:
            date = datetime.date(int(m.group(3)), MONTHS.index(month) + 1, int(m.group(1)))
        except ValueError as exc:
            raise Unsolvable(f"no such date: {exc}") from exc
        return WEEKDAYS[date.weekday()]
    raise Unsolvable("not a question of the family")


def solve(text: str) -> str:
    """The letter of the right option of a family question given as text.

    ``text`` is the question followed by its option lines (:func:`split_options`); comparison
    questions ("the largest", "the smallest") are answered from the option values.

    Returns:
        One letter A–H.

    Raises:
        Unsolvable: the question is not recognised, or no option (one, for comparisons) holds
            the computed answer; the message says which.
    """
    question, options = split_options(text)
    if not options:
        raise Unsolvable("no option lines found")
    q = _normalize(question)
    if m := re.search(r"is the (largest|smallest)", q):
        values = []
        for letter, opt in options:
            try:
                values.append((float(_normalize(opt).replace(" ", "")), letter))
            except ValueError:
                continue
        if len(values) < 2:
            raise Unsolvable("fewer than two numeric options")
        return (max(values) if m.group(1) == "largest" else min(values))[1]
    value = _value(question)
    for letter, opt in options:
        if _normalize(opt).replace(" ", "").rstrip(".") == value:
            return letter
    raise Unsolvable(f"no option equals the computed answer {value}")
