"""MRNI-BB compact-to-expanded generator (stdlib only).

A compact row (one MRNI item x scenario) holds a ``Base`` sentence with a
``{{X} and {Y}}`` introduction, ``Disambiguated`` / ``Control`` texts with
``{X}``/``{Y}`` slots (plus ``{X-refl}``, ``{Y-end}``... forms), a slot-free
``Ambiguous`` text and a ``Question``. It expands to 16 prompts, in release
order: disambiguated_ga 4, disambiguated_gs 4, ambiguous_ga 2, ambiguous_gs 2,
control_gs 4. ``base_*`` in a mapping is who is introduced first; ``behavior_*``
is who fills ``{X}`` (the MRNI-aligned behaviour, hence the disambiguated gold)
and ``{Y}``.

Rules reverse-engineered from the release (see ``compare_with_release``):

* Compact text is whitespace-normalised (stripped, runs of spaces collapsed)
  and an accidentally doubled word is collapsed (IT "persone persone").
* A bare slot opening a sentence gets the capitalised form ("The man",
  "L'uomo", "La persona X"), elsewhere the lower-case one ("person Y").
* EN: after a slot, every they/them/their/themselves up to the next slot is
  rewritten to that person's pronoun, blindly (the release has "she prefer").
* EN: a straight possessive on a slot (``{Y}'s``) becomes `` ’s``.
* IT: ``-end`` is the gender ending (o/a; "persona" is feminine, so ga and
  the slot-free ambiguous texts use "a"); ``-of``/``-apostrophe`` is "della
  persona X" / "dell'uomo" / "della donna".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

EXPANDED_FIELDS = (
    "instance_id", "Category", "MRNI-item", "Scenario", "condition", "mapping",
    "gold_answer", "answer_options", "context", "question", "prompt",
)
SUBSCALES = ("AF", "D", "IOS", "NTSM", "RE", "SRTMS", "T")
LANGUAGES = ("en", "it")
_TEXT_COLUMNS = ("Base", "Disambiguated", "Ambiguous", "Control", "Question")


def _en(label, start, mid, subj, obj, poss, refl):
    return {"label": label, "start": start, "mid": mid, "subj-pron": subj,
            "obj-pron": obj, "poss-det": poss, "refl": refl}


def _it(label, start, mid, of, end):
    return {"label": label, "start": start, "mid": mid, "of": of,
            "apostrophe": of, "end": end}


# Surface forms per language; "people" keys are the ga/gs referents.
_LANG = {
    "en": {
        "people": {
            "X": _en("Person X", "Person X", "person X", "they", "them", "their", "themselves"),
            "Y": _en("Person Y", "Person Y", "person Y", "they", "them", "their", "themselves"),
            "man": _en("the man", "The man", "the man", "he", "him", "his", "himself"),
            "woman": _en("the woman", "The woman", "the woman", "she", "her", "her", "herself"),
        },
        "intro": {"ga": "{X} and {Y}", "gs": "{man} and {woman}"},
        "intro_names": {"X": "Person X", "Y": "Person Y", "man": "a man", "woman": "a woman"},
        "mapping_names": {"X": "X", "Y": "Y", "man": "man", "woman": "woman"},
        "unknown": "insufficient information",
        "prompt": ("Context: {context}\nQuestion: {question}\n"
                   "Answer with exactly one of the following options: {options}."),
    },
    "it": {
        "people": {
            "X": _it("La persona X", "La persona X", "la persona X", "della persona X", "a"),
            "Y": _it("La persona Y", "La persona Y", "la persona Y", "della persona Y", "a"),
            "man": _it("l'uomo", "L'uomo", "l'uomo", "dell'uomo", "o"),
            "woman": _it("la donna", "La donna", "la donna", "della donna", "a"),
        },
        # ga names the pair once: "Due persone, X e Y, ..."
        "intro": {"ga": "Due persone, {X} e {Y},", "gs": "{man} e {woman}"},
        "intro_names": {"X": "X", "Y": "Y", "man": "un uomo", "woman": "una donna"},
        "mapping_names": {"X": "X", "Y": "Y", "man": "uomo", "woman": "donna"},
        "unknown": "informazioni insufficienti",
        "prompt": ("Contesto: {context}\nDomanda: {question}\n"
                   "Rispondi con esattamente una delle seguenti opzioni: {options}."),
    },
}

# First of each pair is listed first in the options (never varied in the release).
_PAIRS = {"ga": ("X", "Y"), "gs": ("man", "woman")}

_INTRO_RE = re.compile(r"\{\{X\} (?:and|e) \{Y\}\}")
_SLOT_RE = re.compile(r"\{([XY])(?:-([a-z-]+))?\}")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?][\"”’)]*\s+)$")
_STRAIGHT_POSSESSIVE_RE = re.compile(r"(\{[XY]\})'s\b")
_DOUBLED_WORD_RE = re.compile(r"\b(\w+) \1\b")
_THEY_RE = re.compile(r"\b(?:they|them|their|themselves)\b")
_THEY_FORMS = {"they": "subj-pron", "them": "obj-pron", "their": "poss-det",
               "themselves": "refl"}


def _clean(text: str) -> str:
    """Normalise compact text as the release did: spaces, doubled words."""
    text = re.sub(r" {2,}", " ", text.strip())
    return _DOUBLED_WORD_RE.sub(r"\1", text)


def _agree_pronouns(segment: str, forms: dict | None) -> str:
    """EN: rewrite singular-they words to the referent's pronouns."""
    if not forms or "subj-pron" not in forms:
        return segment
    return _THEY_RE.sub(lambda m: forms[_THEY_FORMS[m.group(0)]], segment)


def _slot_text(text: str, m: re.Match, forms: dict) -> str:
    if m.group(2):
        return forms[m.group(2)]
    at_start = _SENTENCE_START_RE.search(text[: m.start()]) is not None
    return forms["start"] if at_start else forms["mid"]


def _fill_slots(text: str, lang: str, who: dict[str, str]) -> str:
    """Fill ``{X}``/``{Y}``/``{X-form}``; ``who`` maps X/Y to referents."""
    people = _LANG[lang]["people"]
    text = _STRAIGHT_POSSESSIVE_RE.sub(r"\1 ’s", text)
    out, pos, current = [], 0, None
    for m in _SLOT_RE.finditer(text):
        out.append(_agree_pronouns(text[pos:m.start()], current))
        current = people[who[m.group(1)]]
        out.append(_slot_text(text, m, current))
        pos = m.end()
    out.append(_agree_pronouns(text[pos:], current))
    return "".join(out)


def _intro(base: str, lang: str, kind: str, order: tuple[str, str]) -> str:
    """Replace ``{{X} and {Y}}`` with the pair, in the given order."""
    cfg = _LANG[lang]
    names = cfg["intro_names"]
    slots = dict(zip(_PAIRS[kind], (names[order[0]], names[order[1]])))
    phrase = cfg["intro"][kind].format(**slots)
    return _INTRO_RE.sub(lambda _m: phrase[:1].upper() + phrase[1:], base, count=1)


def _token(lang: str, kind: str, order: tuple[str, str]) -> str:
    """Mapping token: ``XY`` (ga), ``man_woman`` / ``uomo_donna`` (gs)."""
    a, b = (_LANG[lang]["mapping_names"][p] for p in order)
    return a + b if kind == "ga" else f"{a}_{b}"


def _orders(kind: str) -> list[tuple[str, str]]:
    a, b = _PAIRS[kind]
    return [(a, b), (b, a)]


def _make_row(row: dict, lang: str, kind: str, condition: str, mapping: str,
              gold: str, context: str) -> dict:
    cfg = _LANG[lang]
    options = [cfg["people"][p]["label"] for p in _PAIRS[kind]] + [cfg["unknown"]]
    question = row["Question"]
    return {
        "instance_id": f"MRNI_{int(row['MRNI-item']):02d}_{row['Scenario']}_{condition}_{mapping}",
        "Category": row["Category"],
        "MRNI-item": row["MRNI-item"],
        "Scenario": row["Scenario"],
        "condition": condition,
        "mapping": mapping,
        "gold_answer": gold,
        "answer_options": " | ".join(options),
        "context": context,
        "question": question,
        "prompt": cfg["prompt"].format(context=context, question=question,
                                       options=", ".join(options)),
    }


def _behaviour_rows(row: dict, lang: str, kind: str, column: str, condition: str) -> list[dict]:
    """4 rows: base order x behaviour assignment."""
    unknown = _LANG[lang]["unknown"]
    out = []
    for base_order in _orders(kind):
        base = _intro(row["Base"], lang, kind, base_order)
        for beh in _orders(kind):
            body = _fill_slots(row[column], lang, {"X": beh[0], "Y": beh[1]})
            mapping = f"base_{_token(lang, kind, base_order)}_behavior_{_token(lang, kind, beh)}"
            # Disambiguated gold: whoever fills {X}; control has no answer.
            gold = _LANG[lang]["people"][beh[0]]["label"] if column == "Disambiguated" else unknown
            out.append(_make_row(row, lang, kind, condition, mapping, gold, f"{base} {body}"))
    return out


def _ambiguous_rows(row: dict, lang: str, kind: str) -> list[dict]:
    """2 rows: base order only; the ambiguous text names nobody."""
    out = []
    for base_order in _orders(kind):
        base = _intro(row["Base"], lang, kind, base_order)
        # A stray slot form here ("sol{Y-end}") takes the "persona" form.
        body = _fill_slots(row["Ambiguous"], lang, {"X": "X", "Y": "Y"})
        mapping = f"base_{_token(lang, kind, base_order)}"
        out.append(_make_row(row, lang, kind, f"ambiguous_{kind}", mapping,
                             _LANG[lang]["unknown"], f"{base} {body}"))
    return out


def expand_row(row: dict, language: str) -> list[dict]:
    """The 16 expanded rows of one compact row, in release order."""
    lang = language.lower()
    if lang not in _LANG:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    row = {**row, **{c: _clean(row[c]) for c in _TEXT_COLUMNS}}
    return (_behaviour_rows(row, lang, "ga", "Disambiguated", "disambiguated_ga")
            + _behaviour_rows(row, lang, "gs", "Disambiguated", "disambiguated_gs")
            + _ambiguous_rows(row, lang, "ga")
            + _ambiguous_rows(row, lang, "gs")
            + _behaviour_rows(row, lang, "gs", "Control", "control_gs"))


def expand_rows(compact_rows: list[dict], language: str) -> list[dict]:
    """Expand compact rows (pure): 16 rows each, input order kept."""
    return [out for row in compact_rows for out in expand_row(row, language)]


def _read_tsv(path) -> list[dict]:
    # The prompt field holds quoted newlines: a real TSV reader is required.
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def expand_file(path, language: str) -> list[dict]:
    """Expand one compact TSV file."""
    return expand_rows(_read_tsv(path), language)


def compact_path(data_dir, language: str, sub: str) -> Path:
    """``<data_dir>/EN/<SUB>_MNRI-BB_en.tsv``."""
    lang = language.lower()
    return Path(data_dir) / lang.upper() / f"{sub}_MNRI-BB_{lang}.tsv"


def release_path(data_dir, language: str, sub: str) -> Path:
    """``<data_dir>/EN/all_conditions/<SUB>_MNRI-BB_en_all.tsv``."""
    lang = language.lower()
    return Path(data_dir) / lang.upper() / "all_conditions" / f"{sub}_MNRI-BB_{lang}_all.tsv"


def expand_dir(data_dir) -> dict[tuple[str, str], list[dict]]:
    """Expand every compact file: ``{(language, sub): rows}``."""
    return {(lang, sub): expand_file(compact_path(data_dir, lang, sub), lang)
            for lang in LANGUAGES for sub in SUBSCALES}


def _diff_file(lang: str, sub: str, ours: list[dict], released: list[dict]) -> list[str]:
    where = f"{lang}/{sub}"
    problems = []
    if len(ours) != len(released):
        problems.append(f"{where}: {len(ours)} rows generated, {len(released)} released")
    for i, (mine, theirs) in enumerate(zip(ours, released)):
        for field in EXPANDED_FIELDS:
            if mine.get(field) != theirs.get(field):
                problems.append(f"{where} row {i} ({theirs.get('instance_id')}) {field}: "
                                f"generated {mine.get(field)!r}, released {theirs.get(field)!r}")
    return problems


def compare_with_release(data_dir) -> list[str]:
    """Human-readable field-by-field mismatches; empty when identical."""
    problems = []
    for (lang, sub), ours in expand_dir(data_dir).items():
        released = _read_tsv(release_path(data_dir, lang, sub))
        problems += _diff_file(lang, sub, ours, released)
    return problems
