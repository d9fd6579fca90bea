"""Options named by a description: "the one who lists the tools", "quella che mantiene un'espressione neutra",
"the latter", "the second option".

A description is matched against the prompt's context: each person's role is the text of the clauses the
person is the subject of ("The man immediately talks about fixing it himself" -> the man's role), and a
description names the person whose role shares more distinctive words with it. A description that matches
neither role, or a context that gives no person a role (the ambiguous conditions: "One ... The other ..."),
names nobody. Ordinals name a person by the order of introduction ("the former", "il primo") or an option
by its place in the option list ("the second option").

Works on text already normalised by parse.py (lowercase, accents off except è, straight apostrophes); every
function returns positions in the string it is given. Imports nothing from parse.py (which imports this).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

_PERSONS = {
    "gs": {"M": re.compile(r"\b(?:the\s+|a\s+)?man\b|\b(?:l|dell|all|dall|nell|sull)'\s*uomo\b|\bun\s+uomo\b"),
           "W": re.compile(r"\b(?:the\s+|a\s+)?woman\b|\b(?:la|una|della|alla|dalla|nella|sulla)\s+donna\b")},
    "ga": {"X": re.compile(r"\b(?:(?:the|la)\s+)?(?:person|persona)\s+x\b|(?<![\w'-])x(?![\w'-])"),
           "Y": re.compile(r"\b(?:(?:the|la)\s+)?(?:person|persona)\s+y\b|(?<![\w'-])y(?![\w'-])")},
}
# a context's clause boundaries: sentences, and "..., while the man ..." / "mentre" / "whereas"
_CLAUSE_END = re.compile(r"[.;!?:](?:\s+|$)|,?\s+(?:while|whereas|but|mentre|invece|ma)\s+|\n")
_JOINED = re.compile(r"^\s*(?:,|and|e|or|o)\s*$")  # "A man and a woman discuss ...": both, nobody's role
_INTRO = r"^[\s,]*(?:[\w' ]{1,40},\s*)?"  # "After the movie, the man ...", "Dopo il film, l'uomo ..."
_CLAUSE_OPENER = re.compile(_INTRO + r"(?:(?:and|then|also|e|poi|anche|invece|instead|so|quindi)\s+)*$")
# "Il volto dell'uomo", "Le espressioni della persona Y", "The face of the man": the person's, a subject
_OF_OPENER = re.compile(_INTRO + r"(?:(?:the|il|lo|la|le|i|gli|l')\s*)?\w+\s+"
                        r"(?:of\s+|della\s+|dello\s+|del\s+|di\s+)?$")

_HEADS = re.compile(  # the \b before the group: its alternatives, which start a word, are tried only there
    r"\b(?:\b(?:the\s+|that\s+)?(?:one|person|individual|participant|speaker|party|partner|friend|colleague"
    r"|character)\s+(?:who|that|which)\b"
    r"|\b(?:the\s+)?(?:one|person|individual)\s+(?=\w+ing\b)"
    r"|\bwhoever\b|\b(?:he|she)\s+who\b"
    r"|\b(?:quell[oa]|colui|colei|la\s+persona|il\s+soggetto|l'individuo)\s+che\b)"
    r"|(?:^|(?<=[.;:!?\-]\s)|(?<=[.;:!?\-])|\b(?:è|e'|quindi|direi|probabilmente|forse|sicuramente"
    r"|risposta\s+(?:è|e'|sarebbe)|sarebbe)\s+)[ ]*chi\b",
    re.M,
)
_HARD_STOP = re.compile(r"[.;:!?\n,()]")
_SOFT_STOP = re.compile(  # "the one suggesting a professional | is less likely", "... | because he ..."
    r"\s(?:(?:is|was|would\s+be|seems|è|e'|sarebbe|sembra|risulta)(?=\s+(?:not|less|more|most|the|likely|probably"
    r"|clearly|certainly|definitely|meno|piu|il|la|quell|propens|non|probabil|sicur|chiar))"
    r"|must|might|could|because|since|so|given|but|and\s+so|perch[eè]|poich[eè]|quindi|ma|dato|visto)\b"
)
_ORDINALS = re.compile(
    r"(?P<first>\bthe\s+former\b|\bthe\s+first\s+(?:one|person)(?:\s+(?:mentioned|introduced|named))?\b"
    r"|\bthe\s+(?:one|person)\s+(?:mentioned|introduced|named)\s+first\b"
    r"|\b(?:il\s+primo|la\s+prima)\s+(?:persona\b|(?:citat|menzionat|nominat)[oa]\b))"
    r"|(?P<second>\bthe\s+latter\b|\bthe\s+second\s+(?:one|person)(?:\s+(?:mentioned|introduced|named))?\b"
    r"|\bthe\s+(?:one|person)\s+(?:mentioned|introduced|named)\s+(?:second|last)\b"
    r"|\bquest'ultim[oa]\b|\b(?:il\s+secondo|la\s+seconda)\s+(?:persona\b|(?:citat|menzionat|nominat)[oa]\b))"
)
_OPTION_ORDINAL = re.compile(
    r"\b(?:the\s+)?(?P<en>first|second|third|last)\s+(?:option|answer\s+option)\b"
    r"|\boption\s+(?P<num>[1-3a-c])\b"
    r"|\b(?:la\s+|l')?(?P<it>prima|seconda|terza|ultima)\s+opzione\b"
    r"|\bl'opzione\s+(?P<inum>[1-3a-c])\b"
)
_PLACES = {"first": 0, "second": 1, "third": 2, "last": -1, "prima": 0, "seconda": 1, "terza": 2, "ultima": -1,
           "1": 0, "2": 1, "3": 2, "a": 0, "b": 1, "c": 2}

_STOP = frozenset("""
the a an and or of to in on at for with about who that which one person people is are was were be been being
it its they them their themselves himself herself he she his her him this these those as by from into up out
some any would could should can will just more most very so than then also not no do does did has have had
there what when while whereas like other others own only whoever likely believe believes think thinks hold
holds view say says said saying tell tells told
il lo la i gli le un uno una di a da in con su per tra fra e o che chi quello quella quelli colui colei
persona non si ne ci del della dello dei delle degli al alla allo ai alle dal dalla dallo nel nella nello
sul sulla sullo suo sua suoi sue loro lui lei proprio come piu anche ma se ha hanno essere sono
piu propenso propensa crede credere pensa pensare dice dicono detto dire
""".split())
_WORD = re.compile(r"[a-zè]+")


@dataclass(frozen=True)
class Described:
    label: str | None  # None: a description that fits neither person (it still covers the words it spans)
    start: int
    end: int


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if len(w) >= 3 and w not in _STOP]


_SUFFIXES = ("ing", "ed", "es", "s", "ly", "ando", "endo", "are", "ere", "ire", "ato", "ata", "ati", "ate", "ito",
             "ita", "iti", "ite", "o", "a", "e", "i")


@lru_cache(maxsize=16384)  # the words of contexts and answers repeat
def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def _same_stem(sa: str, sb: str) -> bool:
    """Crude stemming for EN/IT: two words are the same if their stems (common endings off, _stem) have the same
    first letters (all of the shorter stem, at least 3, at most 5): fixes/fixing, costs/costi, tool/tools,
    suggests/suggesting, professional/professionista."""
    need = max(3, min(5, len(sa), len(sb)))
    return len(sa) >= need and len(sb) >= need and sa[:need] == sb[:need]


class _Stems:
    """Stems indexed so that whether any of them is _same_stem as a given stem s takes a few set lookups: an s of
    3-4 letters matches the stems that start with s, and the stem s[:3]; a longer s matches the stems of 5+
    letters that start with s[:5], and the stems s[:3] and s[:4]."""

    def __init__(self, stems: Iterable[str]) -> None:
        stems = [r for r in stems if len(r) >= 3]
        self._short = {n: {r for r in stems if len(r) == n} for n in (3, 4)}
        self._prefix = {n: {r[:n] for r in stems if len(r) >= n} for n in (3, 4, 5)}

    def match(self, s: str) -> bool:
        n = len(s)
        if n < 3:
            return False
        if n < 5:  # a stem at least as long shares all of s; a shorter one (3 letters) is s[:3]
            return s in self._prefix[n] or (n == 4 and s[:3] in self._short[3])
        return s[:5] in self._prefix[5] or s[:3] in self._short[3] or s[:4] in self._short[4]


@lru_cache(maxsize=8192)  # read twice per answer (roles, ordinal_persons) for each of a prompt's answers
def person_mentions(context: str, marker: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, label) of every mention of the two people in the context, in order."""
    found = []
    for label, rx in _PERSONS[marker].items():
        found += [(m.start(), m.end(), label) for m in rx.finditer(context)]
    found.sort()
    out: list[tuple[int, int, str]] = []
    for start, end, label in found:  # "person x" and its bare "x" overlap: keep the longer, earlier one
        if out and start < out[-1][1]:
            continue
        out.append((start, end, label))
    return tuple(out)


def _clauses(context: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _CLAUSE_END.finditer(context):
        if context[start:m.start()].strip():
            out.append((start, m.start()))
        start = m.end()
    if context[start:].strip():
        out.append((start, len(context)))
    return out


def _clause_subject(context: str, lo: int, mentions: list[tuple[int, int, str]]) -> str | None:
    """The person a clause is about: the first person who opens it ("The man ...", "and then Person X ...",
    "Il volto dell'uomo ...", "the man 's emotions"); nobody if two open it together ("A man and a woman
    discuss") or if it opens with someone else ("One says ... a man should ...", "L'altra persona ...")."""
    if not mentions:
        return None
    first = mentions[0]
    lead = context[lo:first[0]]
    if not (_CLAUSE_OPENER.match(lead) or _OF_OPENER.match(lead)):
        return None
    if len(mentions) > 1 and _JOINED.match(context[first[1]:mentions[1][0]]):
        return None
    return first[2]


@lru_cache(maxsize=8192)  # a run's answers share 4,704 contexts at most
def roles(context: str, marker: str) -> dict[str, frozenset[str]]:
    """label -> the words of the clauses that person is the subject of (a clause with nobody in it continues
    the previous clause's subject: "The man looks away. He says ..."); people without a role are absent."""
    mentions = person_mentions(context, marker)
    out: dict[str, set[str]] = {}
    subject: str | None = None
    for lo, hi in _clauses(context):
        inside = [m for m in mentions if lo <= m[0] < hi]
        subject = _clause_subject(context, lo, inside) if inside else subject
        if subject is None:
            continue
        text = list(context[lo:hi])
        for a, b, _ in inside:
            text[a - lo:b - lo] = " " * (b - a)
        out.setdefault(subject, set()).update(_content_words("".join(text)))
    return {label: frozenset(words) for label, words in out.items()}


@lru_cache(maxsize=8192)  # a prompt's answers share its roles
def _role_stems(context: str, marker: str) -> dict[str, tuple[_Stems, _Stems]]:
    """label -> (the stems of its role's words, the stems of the other people's role words)."""
    stems = {label: [_stem(w) for w in role] for label, role in roles(context, marker).items()}
    return {label: (_Stems(own), _Stems(o for lab, other in stems.items() if lab != label for o in other))
            for label, own in stems.items()}


def _match_role(words: list[str], role_stems: dict[str, tuple[_Stems, _Stems]]) -> str | None:
    """The label whose role shares more distinctive words with the description (none on a tie or no match);
    role_stems as _role_stems gives them (_same_stem of the words' stems)."""
    stems = [_stem(w) for w in words]
    scores = {}
    for label, (role, others) in role_stems.items():
        scores[label] = sum(1 for w in stems if role.match(w) and not others.match(w))
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] < 1 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def _first_content_word(s: str, start: int, end: int) -> re.Match[str] | None:
    return next((m for m in _WORD.finditer(s, start, end) if m.group(0) not in _STOP and len(m.group(0)) >= 3), None)


def _description_end(s: str, start: int) -> int:
    """Where a description's clause ends: punctuation, or a verb/connective after its first content word."""
    hard = _HARD_STOP.search(s, start)
    end = hard.start() if hard else len(s)
    first = _first_content_word(s, start, end)
    if first is None and hard is not None and hard.group(0) == ",":  # "quella che ha detto che, se ..."
        hard = _HARD_STOP.search(s, hard.end())
        end = hard.start() if hard else len(s)
        first = _first_content_word(s, start, end)
    if first is not None:
        soft = _SOFT_STOP.search(s, first.end(), end)
        if soft is not None:
            end = soft.start()
    return end


def descriptions(s: str, context: str, marker: str) -> list[Described]:
    """Role descriptions in the answer `s`, each with the person of the (normalised) context it matches, or
    None ("the one who says the provider should be the man" in an ambiguous context names nobody, and the
    man inside it is not the answer either)."""
    role_stems = _role_stems(context, marker)
    out = []
    for head in _HEADS.finditer(s):
        end = _description_end(s, head.end())
        out.append(Described(_match_role(_content_words(s[head.end():end]), role_stems), head.start(), end))
    return out


def ordinal_persons(s: str, context: str, marker: str) -> list[Described]:
    """"the former" / "the second person mentioned": the people in the order the context introduces them."""
    order: list[str] = []
    for _, _, label in person_mentions(context, marker):
        if label not in order:
            order.append(label)
    if len(order) != 2:
        return []
    return [Described(order[0] if m.lastgroup == "first" else order[1], m.start(), m.end())
            for m in _ORDINALS.finditer(s)]


def ordinal_options(s: str, option_labels: list[str | None]) -> list[Described]:
    """"the second option" / "option 3" / "la prima opzione": the option list's entry at that place."""
    out = []
    for m in _OPTION_ORDINAL.finditer(s):
        place = _PLACES[next(g for g in m.groups() if g is not None)]
        if -len(option_labels) <= place < len(option_labels) and option_labels[place] is not None:
            out.append(Described(option_labels[place], m.start(), m.end()))
    return out
