"""Answer parsers chosen per set: choice (letter or option text), letter, option_text, exact, regex, number, json.

Every answer gets a kind: `choice` / `answer` (parsed: its choice, or its value), `hedge` (insufficient
information, both / neither, when no option says so), `refusal`, or `unparsed`; refusals are never wrong
answers. PARSER_VERSION is stored with every label: a new version re-labels every answer once at scoring.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ..mrni import parse as mrni
from .choice_parse import parse_choice

PARSER_VERSION = "promptset-parse-1"
CHOICE_MODES = frozenset({"choice", "letter", "option_text"})
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
_FINAL = re.compile(r"(?:final\s+answer|answer|result)\s*(?:is|:|=)\s*", re.I)


@dataclass(frozen=True)
class Parsed:
    kind: str                 # choice | answer | hedge | refusal | unparsed
    label: str                # the choice's text, the normalised answer, 'hedge', 'refusal' or 'unparsed'
    choice: int | None = None
    value: float | None = None
    correct: bool | None = None  # None: the item has no gold (or the answer is unparsed / a refusal: False)
    span: str | None = None


def normalise(text: str) -> str:
    """Casefolded, whitespace collapsed, surrounding quotes / markdown / final punctuation off."""
    text = re.sub(r"\s+", " ", str(text)).strip().strip("*_`\"'").strip()
    return text.rstrip(".!;:").strip().casefold()


def parse(text: str | None, spec: dict[str, Any]) -> Parsed:
    """One answer under the item's spec (its metadata: parser, choices, answer, target, pattern, field)."""
    parser = spec["parser"]
    if parser in CHOICE_MODES:
        return _choice(text or "", spec)
    value = {"exact": _exact, "regex": _regex, "number": _number, "json": _json}[parser](text or "", spec)
    if value is None:
        return _unparsed(text or "", spec.get("target") is not None)
    return _scored(value, spec, text or "")


def _choice(text: str, spec: dict) -> Parsed:
    choices = tuple(spec["choices"])
    label, span = parse_choice(text, choices, spec["parser"])
    if label.startswith("c"):
        index = int(label[1:])
        gold = spec.get("answer")
        return Parsed("choice", choices[index], index, None, None if gold is None else index == gold, span)
    kind = {"R": "refusal", "U": "hedge", "O": "hedge"}.get(label, "unparsed")
    return Parsed(kind, kind, None, None, None if spec.get("answer") is None else False, span)


def _unparsed(text: str, has_gold: bool) -> Parsed:
    refused = any(rx.search(mrni._normalise(text)) for rx in mrni._R_RE)
    kind = "refusal" if refused else "unparsed"
    return Parsed(kind, kind, None, None, False if has_gold else None, None)


def _scored(found: str | float, spec: dict, text: str) -> Parsed:
    target = spec.get("target")
    value = found if isinstance(found, float) else _as_number(found)
    label = _show(found)
    correct = None
    if target is not None:
        tolerance = spec.get("tolerance") or 0.0
        target_number = target if isinstance(target, (int, float)) else _as_number(str(target))
        if value is not None and target_number is not None:
            correct = abs(value - float(target_number)) <= tolerance + 1e-9 * max(1.0, abs(float(target_number)))
        else:
            correct = normalise(label) == normalise(str(target))
    return Parsed("answer", label, None, value, correct, label if isinstance(found, str) else None)


def _show(found: str | float) -> str:
    if isinstance(found, float):
        return str(int(found)) if found.is_integer() else repr(found)
    return normalise(found)


def _exact(text: str, spec: dict) -> str | None:
    answer = mrni._strip_think(text).strip()
    return answer.splitlines()[0] if answer else None


def _regex(text: str, spec: dict) -> str | None:
    m = re.search(spec["pattern"], text)
    if m is None:
        return None
    return m.group(1) if m.re.groups and m.group(1) is not None else m.group(0)


def _as_number(text: str) -> float | None:
    m = _NUMBER.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        return None
    value = float(m.group(0).replace(",", ""))
    return value if math.isfinite(value) else None


def _number(text: str, spec: dict) -> float | None:
    """The number after a final-answer marker, else the last number in the text."""
    text = mrni._strip_think(text)
    marker = None
    for marker in _FINAL.finditer(text):
        pass
    pool = text[marker.end():] if marker else text
    found = _NUMBER.findall(pool) if marker else _NUMBER.findall(text)
    if not found:
        return None
    value = float((found[0] if marker else found[-1]).replace(",", ""))
    return value if math.isfinite(value) else None


def _json(text: str, spec: dict) -> str | float | None:
    """The (dotted) field of the first JSON object in the text (fenced or not)."""
    decoder, start = json.JSONDecoder(), text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        for key in spec["field"].split("."):
            if not isinstance(obj, dict) or key not in obj:
                return None
            obj = obj[key]
        if isinstance(obj, bool) or obj is None or isinstance(obj, (dict, list)):
            return json.dumps(obj) if obj is not None else None
        return float(obj) if isinstance(obj, (int, float)) else str(obj)
    return None
