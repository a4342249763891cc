"""Tolerant, honest reading of model answers.

Models write JSON the way people do: inside code fences, after a sentence of prose, with
Python's `True`, single quotes, a trailing comma or a raw line break inside a string. They
write `"Lower Engine"` for the room `lower_engine`, `"station 2"` or `2.0` for station 2,
`"yellow."` for the player `yellow` and `"true"` for true. This module reads all of that,
and every liberty it takes is written down (the `normalised` list of the call record), so
an auditor can see which answers were read literally and which were repaired.

Two rules keep the reading honest:

* **Nothing is reversed.** A boolean is read from its text (`"true"`, `"yes"`, `1`) and a
  value that is neither a clear yes nor a clear no is *unknown*, never "no".
* **Nothing is replaced.** A name, room or station that matches nothing is unknown; the
  caller turns that into an invalid decision with its reason, not into the nearest guess.

In a vote, a ballot for skip and an abstention are different things (a skip counts toward
the skip tally; an abstention casts no ballot, which can turn "skipped" into "tie"). Every
way of saying "no one" (`"skip"`, JSON `null`, `"none"`, `"nobody"`, `"no one"`, any case
and edge punctuation) is a ballot for skip, and the reading is noted; only the word
`"abstain"` (or `"abstention"`) is an explicit abstention. A vote without its key is
neither: see `SKIP_WORDS`, `ABSTAIN_WORDS`, `AnswerReader.is_skip`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_EDGE_PUNCTUATION = " \t\r\n.,;:!?\"'`*()[]{}<>"
_STATION = re.compile(r"^(?:station|stn|task)?\s*(?:no\.?|number|#)?\s*(-?\d+(?:\.\d+)?)\b", re.I)

TRUE_WORDS = frozenset({"true", "yes", "y", "1", "on"})
"""Texts read as a clear yes (case-insensitive, edge punctuation ignored)."""
FALSE_WORDS = frozenset({"false", "no", "n", "0", "off"})
"""Texts read as a clear no."""
SKIP_WORDS = frozenset(
    {
        "skip",
        "skip vote",
        "skipped",
        "skipping",
        "vote skip",
        "skip the vote",
        "",
        "none",
        "null",
        "nil",
        "nobody",
        "no one",
        "noone",
        "n/a",
    }
)
"""A vote for skip: a ballot that counts toward the skip tally. Besides `skip` itself, every
way of naming no one (JSON `null` too, see `AnswerReader.is_skip`), since that is what a
model writes when it wants nobody ejected; read case-insensitively, edge punctuation
ignored and inner spaces, hyphens and underscores counted as one space (`"No-one."`)."""
ABSTAIN_WORDS = frozenset({"abstain", "abstention", "abstaining", "i abstain"})
"""An explicit abstention: the voter casts no ballot at all (neither a player nor skip).
Only these words; `null`, `"none"`, `"nobody"` are skip (see `SKIP_WORDS`)."""


class AnswerError(ValueError):
    """No JSON object could be read from a model's answer."""


@dataclass(frozen=True)
class LenientJson:
    """A JSON object read from a model's answer, and the repairs it needed.

    Attributes:
        value: The object.
        repairs: What had to be tolerated, e.g. `["code fence", "trailing comma"]`
            (empty when the answer was a plain JSON object).
    """

    value: dict[str, Any]
    repairs: list[str] = field(default_factory=list)


def read_json(text: str) -> LenientJson:
    """Read the first JSON object of an answer, tolerating the usual imperfections.

    Tolerated: code fences, prose before or after the object, trailing commas, Python
    `True`/`False`/`None`, raw line breaks and tabs inside strings, single-quoted strings.

    Args:
        text: The model's answer.

    Returns:
        The object and the list of repairs.

    Raises:
        AnswerError: No object could be read (the message quotes the start of the answer
            and says whether it looks cut off).
    """
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return LenientJson(whole)
    chunks: list[tuple[str, list[str]]] = [
        (m.group(1), ["code fence"]) for m in _FENCE.finditer(text)
    ]
    chunks.append((text, []))
    for chunk, base in chunks:
        for start in _starts(chunk):
            span = _balanced(chunk, start)
            if span is None:
                continue
            repairs = list(base)
            if chunk[:start].strip() or chunk[start + len(span) :].strip():
                repairs.append("prose around the object")
            obj = _loads(span, repairs)
            if obj is not None:
                return LenientJson(obj, repairs)
    cut = "{" in text and _balanced(text, text.index("{")) is None
    hint = " (it looks cut off: the object is never closed)" if cut else ""
    raise AnswerError(f"no JSON object in the answer{hint}: {text[:120]!r}")


def _starts(text: str) -> Iterable[int]:
    i = text.find("{")
    while i != -1:
        yield i
        i = text.find("{", i + 1)


def _balanced(text: str, start: int) -> str | None:
    """The `{...}` starting at `start` with braces balanced outside strings, or None."""
    depth = 0
    quote = ""
    escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
            continue
        if c in "\"'":
            # An apostrophe inside a word (`don't`) starts no string.
            if c == "'" and i > 0 and text[i - 1].isalnum():
                continue
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _loads(span: str, repairs: list[str]) -> dict[str, Any] | None:
    try:
        obj = json.loads(span)
    except json.JSONDecodeError:
        fixed, found = _repair(span)
        try:
            obj = json.loads(fixed)
        except json.JSONDecodeError:
            return None
        repairs.extend(found)
    return obj if isinstance(obj, dict) else None


def _repair(span: str) -> tuple[str, list[str]]:
    """Rewrite the JSON-like text into JSON; returns the text and the repairs made."""
    out: list[str] = []
    found: list[str] = []

    def note(what: str) -> None:
        if what not in found:
            found.append(what)

    quote = ""
    i = 0
    n = len(span)
    while i < n:
        c = span[i]
        if quote:
            if c == "\\" and i + 1 < n:
                nxt = span[i + 1]
                if quote == "'" and nxt == "'":
                    out.append("'")
                else:
                    out.append(c + nxt)
                i += 2
                continue
            if c == quote:
                out.append('"')
                quote = ""
            elif c == '"':
                out.append('\\"')
            elif c == "\n":
                out.append("\\n")
                note("raw line break in a string")
            elif c == "\r":
                out.append("\\r")
                note("raw line break in a string")
            elif c == "\t":
                out.append("\\t")
                note("raw line break in a string")
            else:
                out.append(c)
            i += 1
            continue
        if c == '"':
            quote = '"'
            out.append('"')
        elif c == "'":
            quote = "'"
            out.append('"')
            note("single quotes")
        elif c == ",":
            j = i + 1
            while j < n and span[j] in " \t\r\n":
                j += 1
            if j < n and span[j] in "}]":
                note("trailing comma")
            else:
                out.append(c)
        elif c.isalpha():
            j = i
            while j < n and (span[j].isalnum() or span[j] == "_"):
                j += 1
            word = span[i:j]
            if word in _PY_LITERALS:
                out.append(_PY_LITERALS[word])
                note("Python literal")
            else:
                out.append(word)
            i = j
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out), found


# ------------------------------------------------------------------------------ values


def _clean(value: str) -> str:
    return value.strip().strip(_EDGE_PUNCTUATION).strip()


def _phrase(value: str) -> str:
    """A word or phrase for comparing with a word list: lower case, edge punctuation
    dropped, inner runs of spaces, hyphens and underscores made one space."""
    return re.sub(r"[\s_\-]+", " ", _clean(value).lower()).strip()


def _key(value: str) -> str:
    """A comparison key: lower case, letters and digits only (`Lower Engine` -> `lowerengine`)."""
    return re.sub(r"[^a-z0-9]", "", value.lower())


Flag = Literal["yes", "no", "unknown"]


@dataclass
class AnswerReader:
    """Reads the fields of one answer and records every normalisation.

    Args:
        answer: The parsed JSON object.
        normalised: Where notes go (the call record's `normalised` list); each note says
            which field was read how, e.g. `room: 'Lower Engine' -> 'lower_engine'`.
    """

    answer: dict[str, Any]
    normalised: list[str] = field(default_factory=list)

    def _note(self, key: str, raw: Any, read: Any) -> None:
        self.normalised.append(f"{key}: {raw!r} -> {read!r}")

    def note(self, key: str, raw: Any, read: Any) -> None:
        """Record that `raw` of `key` was read as `read` (`key: raw -> read`)."""
        self._note(key, raw, read)

    def dropped(self, key: str, raw: Any, why: str) -> None:
        """Record that `raw` of `key` could not be read and was left out, and why."""
        self.normalised.append(f"{key}: {raw!r} dropped: {why}")

    def has(self, key: str) -> bool:
        """Whether the answer has the field at all."""
        return key in self.answer

    def text(self, key: str) -> str:
        """A free-text field ('' if missing or null); numbers are turned into text."""
        value = self.answer.get(key)
        if value is None or isinstance(value, bool):
            return ""
        if isinstance(value, int | float):
            self._note(key, value, str(value))
            return str(value)
        if isinstance(value, str):
            return value.strip()
        return ""

    def flag(self, key: str) -> Flag:
        """A yes/no field: `yes`, `no` or `unknown` (missing, null or anything unclear).

        `"true"`, `"yes"`, `1` read as yes; `"false"`, `"no"`, `0` as no. Nothing unclear
        is ever read as no.
        """
        raw = self.answer.get(key)
        if isinstance(raw, bool):
            return "yes" if raw else "no"
        read: Flag = "unknown"
        if isinstance(raw, int | float) and raw in (0, 1):
            read = "yes" if raw == 1 else "no"
        elif isinstance(raw, str):
            word = _clean(raw).lower()
            read = "yes" if word in TRUE_WORDS else "no" if word in FALSE_WORDS else "unknown"
        if raw is not None or key in self.answer:
            self._note(key, raw, read)
        return read

    def choice(self, key: str, allowed: Sequence[str]) -> str | None:
        """A name from `allowed` (players or rooms), matched leniently, or None.

        Case, edge punctuation (`"yellow."`), spaces vs underscores (`"Lower Engine"`) and a
        leading `the` are ignored. No partial or nearest match: an unknown name is None.
        """
        raw = self.answer.get(key)
        if not isinstance(raw, str):
            return None
        cleaned = _clean(raw)
        if cleaned.lower().startswith("the "):
            cleaned = cleaned[4:]
        by_key = {_key(a): a for a in allowed}
        found = by_key.get(_key(cleaned)) if _key(cleaned) else None
        if found is not None and found != raw:
            self._note(key, raw, found)
        return found

    def is_abstain(self, key: str) -> bool:
        """Whether the field is an explicit abstention (`"abstain"`, `"Abstention."`).

        A missing field is not an abstention (the caller refuses it), and neither is
        `null` or `"none"` (they are skip, see `is_skip`).
        """
        raw = self.answer.get(key)
        if isinstance(raw, str) and _phrase(raw) in ABSTAIN_WORDS:
            if raw != "abstain":
                self._note(key, raw, "abstain")
            return True
        return False

    def is_skip(self, key: str) -> bool:
        """Whether the field is a vote for skip: `"skip"`, or any way of naming no one
        (JSON `null`, `"none"`, `"Nobody."`, `"no one"`, `"No-one"`), noted unless it is
        the literal `"skip"`. A missing field is not skip."""
        if key not in self.answer:
            return False
        raw = self.answer[key]
        if raw is None or (isinstance(raw, str) and _phrase(raw) in SKIP_WORDS):
            if raw != "skip":
                self._note(key, raw, "skip")
            return True
        return False

    def station(self, key: str, allowed: Sequence[int]) -> int | None:
        """A station id: `2`, `2.0`, `"2"`, `"station 2"`, `"#2"`, `"Station 2 (medbay)"`.

        A fractional number or an id not in `allowed` is None.
        """
        raw = self.answer.get(key)
        number: float | None = None
        if isinstance(raw, bool):
            number = None
        elif isinstance(raw, int | float):
            number = float(raw)
        elif isinstance(raw, str):
            m = _STATION.match(_clean(raw))
            number = float(m.group(1)) if m else None
        if number is None or not number.is_integer() or int(number) not in allowed:
            return None
        read = int(number)
        if not (isinstance(raw, int) and not isinstance(raw, bool)):
            self._note(key, raw, read)
        return read

    def names(self, key: str, allowed: Sequence[str]) -> list[str]:
        """A list of names (or one comma-separated string), each matched like `choice`."""
        raw = self.answer.get(key)
        items: list[Any]
        if isinstance(raw, list):
            items = raw
        elif isinstance(raw, str):
            items = [p for p in re.split(r"[,;]| and ", raw) if p.strip()]
            if items:
                self._note(key, raw, items)
        else:
            return []
        by_key = {_key(a): a for a in allowed}
        out: list[str] = []
        for item in items:
            if isinstance(item, str):
                hit = by_key.get(_key(_clean(item)))
                if hit and hit not in out:
                    out.append(hit)
        return out


def finite_number(raw: Any) -> float | None:
    """A finite number, from a number or its text (`"0.2"`, `"+0.2"`); None otherwise."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            return None
    else:
        return None
    return value if math.isfinite(value) else None
