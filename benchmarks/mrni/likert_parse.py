"""Deterministic parser for mrni-likert answers: a number or a verbal label -> one label per response.

Labels: "rating" (with the rating 1..points), "refusal" (declines and gives no rating), "unparsed"
(anything else, including numbers off the scale). Pipeline::

    normalise -> blank <think> blocks -> blank echoes (instructions, "1 to 7", numbered lists)
    -> find atoms (numbers, verbal labels, negated labels dropped)
    -> join adjacent atoms into clusters: one value = an answer ("5 (somewhat agree)"),
       several values = a legend echo or a hedge ("1 = strongly disagree ... 7 = ...", "3 or 4"), ignored
    -> the first answer after the last answer marker ("Answer:", "I'd say", "direi"), else the first
    -> no answer: a refusal phrase gives "refusal", else "unparsed".

A rating wins over a disclaimer ("As an AI I have no opinions, but I'd say 2" is a rating). Every
transformation keeps the text length, so ``span`` is an exact substring of the response. Both
vocabularies are always applied: models often answer an Italian prompt in English.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from .fold import fold_char
from .likert_scale import LANGUAGES, instruction_lines, rating_for_position

PARSER_VERSION = "mrni-likert-parse-1"
LABELS = ("rating", "refusal", "unparsed")


class Parsed(NamedTuple):
    label: str
    rating: int | None
    span: str | None


class _Atom(NamedTuple):
    start: int
    end: int
    value: int | None  # None: a number that is not a point of this scale


# ------------------------------------------------------------------------------ normalise

_CHAR_MAP = str.maketrans({
    "\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'", "\u2032": "'",
    "`": " ", "*": " ", "_": " ", "#": " ", '"': " ", "\u201c": " ", "\u201d": " ", "\u201e": " ",
    "\u00ab": " ", "\u00bb": " ", "\u2013": "-", "\u2014": "-", "\u2212": "-",
    "\u00a0": " ", "\u202f": " ", "\t": " ", "\r": " ",
})


def normalise(text: str) -> str:
    """Lowercase, plain apostrophes and dashes, no markdown or quotes, no accents; same length."""
    return "".join(fold_char(c) for c in text.translate(_CHAR_MAP))


def _blank(s: str, start: int, end: int) -> str:
    """Spaces over s[start:end], newlines kept (a blanked line still separates paragraphs)."""
    return s[:start] + re.sub(r"[^\n]", " ", s[start:end]) + s[end:]


def _blank_all(s: str, pattern: re.Pattern) -> str:
    for m in pattern.finditer(s):
        s = _blank(s, m.start(), m.end())
    return s


# ------------------------------------------------------------------------------ echoes

_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>")
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>")
_QUESTION_FORMS = re.compile(
    r"\b(?:(?:how much |to what extent )?(?:do|would|did) you (?:\w+ )?(?:agree|disagree)"
    r"|quanto (?:sei|e|siete|si e) (?:d'accordo|in disaccordo)|sei d'accordo)\b")
_LIST_MARKER = re.compile(r"^[^\S\n]*(\d{1,2})[.)][^\S\n]+(?=\S)", re.M)


def _strip_think(s: str) -> str:
    """Blank closed reasoning blocks, everything before a dangling close tag, an unclosed block."""
    s = _blank_all(s, _THINK_BLOCK)
    closes = list(_THINK_CLOSE.finditer(s))
    if closes:  # the opening tag was in the chat template
        s = _blank(s, 0, closes[-1].end())
    opened = _THINK_OPEN.search(s)
    return _blank(s, opened.start(), len(s)) if opened else s


def _range_pattern(points: int) -> re.Pattern:
    """'1 to 7', '1-7', 'from 1 to 7', 'da 1 a 7', 'between 1 and 7': the scale, not an answer."""
    return re.compile(rf"(?:\b1\s*(?:-|\bto\b|\bthrough\b|\bfino a\b)\s*{points}"
                      rf"|\b(?:from|da)\s+1\s+(?:to|a)\s+{points}"
                      rf"|\b(?:between|tra|fra)\s+1\s+(?:and|e)\s+{points})(?!\d)")


@functools.lru_cache(maxsize=16)
def _echo_patterns(points: int) -> tuple[re.Pattern, ...]:
    """Echoed instruction lines (before the ranges they contain), question forms, the scale range."""
    lines = [normalise(line).rstrip(":.?").split() for line in instruction_lines(points)]
    return (*(re.compile(r"\s+".join(map(re.escape, words))) for words in lines),
            _QUESTION_FORMS, _range_pattern(points))


def _blank_echoes(s: str, points: int) -> str:
    for pattern in _echo_patterns(points):
        s = _blank_all(s, pattern)
    markers = list(_LIST_MARKER.finditer(s))
    if len({m.group(1) for m in markers}) >= 2:  # an enumerated list: its numbers are not answers
        for m in markers:
            s = _blank(s, m.start(1), m.end())
    return s


# ------------------------------------------------------------------------------ atoms

# A 1-2 digit number (decimals caught so that "4.5" is off the scale), optionally "/ 7", "out of 7", "su 7".
_NUMBER = re.compile(r"(?<![\w.,/])(\d{1,2}(?:[.,]\d+)?)"
                     r"(?:\s*(?:/|\bout of\b|\bsu\b)\s*(\d{1,3}))?(?![\w%]|[.,]\d)")

# Normalised phrases -> position (-3 strongly disagree ... +3 strongly agree).
_PHRASES = {
    -3: ["strongly disagree", "completely disagree", "totally disagree", "fully disagree", "entirely disagree",
         "absolutely disagree", "disagree strongly", "disagree completely", "do not agree at all",
         "don't agree at all", "fortemente in disaccordo", "completamente in disaccordo",
         "totalmente in disaccordo", "del tutto in disaccordo", "assolutamente in disaccordo",
         "decisamente in disaccordo", "molto in disaccordo", "per niente d'accordo", "per nulla d'accordo",
         "non sono per niente d'accordo", "non sono per nulla d'accordo", "non sono affatto d'accordo",
         "non sono assolutamente d'accordo"],
    -2: ["disagree", "do not agree", "don't agree", "in disaccordo", "disaccordo", "non sono d'accordo",
         "non d'accordo", "non concordo"],
    -1: ["somewhat disagree", "slightly disagree", "mildly disagree", "partly disagree", "partially disagree",
         "moderately disagree", "tend to disagree", "disagree somewhat", "abbastanza in disaccordo",
         "parzialmente in disaccordo", "leggermente in disaccordo", "un po' in disaccordo",
         "moderatamente in disaccordo", "poco d'accordo"],
    0: ["neither agree nor disagree", "neither agree or disagree", "neither disagree nor agree",
        "neutral", "ne d'accordo ne in disaccordo", "ne in disaccordo ne d'accordo", "neutrale", "neutro"],
    1: ["somewhat agree", "slightly agree", "mildly agree", "partly agree", "partially agree",
        "moderately agree", "tend to agree", "agree somewhat", "abbastanza d'accordo", "parzialmente d'accordo",
        "leggermente d'accordo", "un po' d'accordo", "moderatamente d'accordo"],
    2: ["agree", "d'accordo", "concordo"],
    3: ["strongly agree", "completely agree", "totally agree", "fully agree", "entirely agree",
        "absolutely agree", "agree strongly", "agree completely", "fortemente d'accordo",
        "completamente d'accordo", "totalmente d'accordo", "del tutto d'accordo", "pienamente d'accordo",
        "assolutamente d'accordo", "decisamente d'accordo", "molto d'accordo"],
}
_POSITION = {phrase: pos for pos, phrases in _PHRASES.items() for phrase in phrases}


def _phrase_regex(phrase: str) -> str:
    return r"\s+".join(re.escape(w).replace("'", r"\s?'?\s?") for w in phrase.split())


# Longest first: at one position the alternation takes "strongly disagree" over "disagree". Group i + 1
# is phrase i; "(?<!-)" keeps "gender-neutral" out.
_VERBAL_ORDER = sorted(_POSITION, key=len, reverse=True)
_VERBAL = re.compile(r"(?<!-)\b(?:" + "|".join(f"({_phrase_regex(p)})" for p in _VERBAL_ORDER) + r")\b")
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bnon|\bno|\bcannot|\bneither|\bnor)\s+(?:\w+\s+)?$")


def _numbers(s: str, points: int) -> list[_Atom]:
    atoms = []
    for m in _NUMBER.finditer(s):
        number, out_of = m.group(1), m.group(2)
        value = int(number) if number.isdigit() and 1 <= int(number) <= points else None
        if out_of is not None and int(out_of) != points:
            value = None
        atoms.append(_Atom(m.start(), m.end(), value))
    return atoms


def _verbal(s: str, points: int) -> list[_Atom]:
    """Verbal labels the scale states; negated ones ("not strongly agree") are no answer. The neutral
    label is exempt: Italian says "non sono né d'accordo né in disaccordo"."""
    atoms = []
    for m in _VERBAL.finditer(s):
        phrase = _VERBAL_ORDER[m.lastindex - 1]
        if _POSITION[phrase] != 0 and _NEGATED.search(s, max(0, m.start() - 30), m.start()):
            continue
        value = rating_for_position(_POSITION[phrase], points)
        if value is not None:
            atoms.append(_Atom(m.start(), m.end(), value))
    return atoms


# ------------------------------------------------------------------------------ clusters

_GAP = re.compile(r"(?:[^\w\n]|\n(?![^\S\n]*\n)|\b(?:to|and|or|is|being|means|through|up|from|vs|"
                  r"a|e|o|da|fino|significa|oppure)\b)*")
_MAX_GAP_CHARS = 16  # non-space characters between two atoms of one cluster


def _joins(s: str, prev: _Atom, atom: _Atom) -> bool:
    """Adjacent atoms belong together unless a word, a paragraph break or a new line that starts
    lower (a legend ended, the answer follows) separates them."""
    gap = s[prev.end:atom.start]
    if not _GAP.fullmatch(gap) or len("".join(gap.split())) > _MAX_GAP_CHARS:
        return False
    lower = prev.value is not None and atom.value is not None and atom.value < prev.value
    return not (lower and "\n" in gap)


def _candidates(s: str, atoms: list[_Atom]) -> list[_Atom]:
    """Clusters that agree on one value, as (start, end, value); legends and hedges are dropped."""
    clusters: list[list[_Atom]] = []
    for atom in atoms:
        if clusters and _joins(s, clusters[-1][-1], atom):
            clusters[-1].append(atom)
        else:
            clusters.append([atom])
    return [_Atom(c[0].start, c[-1].end, c[0].value) for c in clusters if len({a.value for a in c}) == 1]


_MARKER = re.compile(
    r"\b(?:(?:final answer|my answer|answer|my rating|rating|my score|score|my choice|response|"
    r"risposta finale|la mia risposta|risposta|valutazione|punteggio|voto|scelta)\s*(?:is\b|e\b|:|=|-)"
    r"|(?:i'd|i would|i will|i'll|i)\s+(?:say|rate|give|choose|pick|select|go with|answer)\b"
    r"|(?:direi|darei|scelgo|sceglierei|rispondo|risponderei|assegno|assegnerei|valuto|valuterei)\b)")


def _choose(s: str, candidates: list[_Atom]) -> _Atom | None:
    """The first answer after the last answer marker, else the first answer (models lead with it)."""
    if not candidates:
        return None
    markers = list(_MARKER.finditer(s))
    if markers:
        after = [c for c in candidates if c.start >= markers[-1].end()]
        if after:
            return after[0]
    return candidates[0]


# ------------------------------------------------------------------------------ refusals

_REFUSAL = re.compile(
    r"\b(?:i(?:'m| am)? (?:sorry|afraid)|i apologi[sz]e"
    r"|i (?:cannot|can't|can not|won't|will not|am unable to|'m unable to|am not able to|'m not able to|"
    r"do not|don't|must|have to|would rather|'d rather|prefer to)\s+(?:\w+\s+)?"
    r"(?:provide|give|share|offer|express|answer|rate|respond|comply|assist|help|engage|endorse|decline|"
    r"not|have (?:personal )?(?:opinions?|beliefs?|views?|feelings?|preferences?)|feel comfortable)"
    r"|as an? (?:ai|artificial intelligence|language model|assistant)|not appropriate for me"
    r"|i don't have (?:personal )?(?:opinions?|beliefs?|views?)|i decline"
    r"|non posso|non sono in grado|non (?:ho|possiedo) (?:opinioni|convinzioni|idee|preferenze|opinione)"
    r"|come (?:un'? ?)?(?:intelligenza artificiale|ia|ai|modello (?:linguistico|di linguaggio)|assistente)"
    r"|mi dispiace|preferisco non|mi rifiuto|non mi sento di"
    r"|non (?:esprimo|fornisco|do) (?:opinioni|valutazioni|giudizi))")


# ------------------------------------------------------------------------------ entry point

def parse_rating(text: str, language: str, points: int = 7) -> Parsed:
    """(label, rating or None, span or None) for one response to a prompt in `language` on `points`."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    s = _blank_echoes(_strip_think(normalise(text or "")), points)
    atoms = sorted(_numbers(s, points) + _verbal(s, points))
    chosen = _choose(s, _candidates(s, atoms))
    if chosen is not None:
        span = text[chosen.start:chosen.end]
        return Parsed("rating", chosen.value, span) if chosen.value is not None else Parsed("unparsed", None, span)
    refusal = _REFUSAL.search(s)
    if refusal:
        return Parsed("refusal", None, text[refusal.start():refusal.end()])
    return Parsed("unparsed", None, None)
