"""Mirror compilation: one gender-neutral template -> a male-actor and a female-actor prompt.

The only step where gender enters (gama-protocol.md, step 7):
- both tracks: {ACTOR} becomes "I am a man." or "I am a woman.";
- intimate track: the partner is of the other gender, so the male actor's prompt gets
  girlfriend/wife, she/her/her/herself and the female actor's gets boyfriend/husband, he/him/his/himself;
- public track: nothing else changes (the template has no other placeholder);
- a third person's gendered word, marked {=word} ("my {=mother}"), becomes the bare word in both prompts.
The *_CAP placeholders give the capitalised word (She/He, Her/His) for a sentence start; nothing else
is capitalised (schema.authoring_problems flags a lower-case placeholder that begins a sentence).
Deterministic: pure substitution.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .schema import THIRD_PARTY, Scenario

GENDERS = ("male", "female")
ACTOR_PREFIX = {"male": "I am a man.", "female": "I am a woman."}
OTHER = {"male": "female", "female": "male"}
PARTNER_NOUN = {("female", "dating"): "girlfriend", ("female", "married"): "wife",
                ("male", "dating"): "boyfriend", ("male", "married"): "husband"}
PARTNER_PRONOUN = {
    "female": {"PARTNER_SUBJ": "she", "PARTNER_OBJ": "her", "PARTNER_POSS": "her", "PARTNER_REFL": "herself"},
    "male": {"PARTNER_SUBJ": "he", "PARTNER_OBJ": "him", "PARTNER_POSS": "his", "PARTNER_REFL": "himself"},
}
_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")


def _partner_word(name: str, partner: str, relationship: str) -> str:
    base = name.removesuffix("_CAP")
    return PARTNER_NOUN[(partner, relationship)] if base == "PARTNER" else PARTNER_PRONOUN[partner][base]


def render(scenario: Scenario, actor_gender: str) -> str:
    """The prompt for one actor gender."""
    partner = OTHER[actor_gender]

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name == "ACTOR":
            return ACTOR_PREFIX[actor_gender]
        word = _partner_word(name, partner, scenario.relationship)
        return word.capitalize() if name.endswith("_CAP") else word

    return THIRD_PARTY.sub(r"\1", _PLACEHOLDER.sub(fill, scenario.template))


def compile_pair(scenario: Scenario) -> tuple[str, str]:
    """(male-actor prompt, female-actor prompt)."""
    return render(scenario, "male"), render(scenario, "female")


def prompt_key(scenario_id: str, actor_gender: str) -> str:
    return f"{scenario_id}:{actor_gender}"


def compile_all(scenarios: list[Scenario]) -> list[dict[str, Any]]:
    """Two records per scenario, ordered by scenario id, then male, female."""
    records = []
    for s in sorted(scenarios, key=lambda s: s.id):
        for gender, prompt in zip(GENDERS, compile_pair(s)):
            records.append({"key": prompt_key(s.id, gender), "scenario_id": s.id, "track": s.track,
                            "dimension": s.dimension, "severity": s.severity, "style": s.style,
                            "relationship": s.relationship, "actor_gender": gender, "prompt": prompt})
    return records


def write_prompts_jsonl(records: list[dict[str, Any]], out: str | Path) -> Path:
    """One JSON object per line, in the given order."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return out


# The token pairs (male-actor prompt, female-actor prompt) a mirror may differ in.
MIRROR_PAIRS = frozenset({("man", "woman"), ("girlfriend", "boyfriend"), ("wife", "husband"), ("she", "he"),
                          ("her", "him"), ("her", "his"), ("herself", "himself"), ("She", "He"),
                          ("Her", "His")})
_TOKEN = re.compile(r"\w+|[^\w\s]")


def mirror_problems(scenario: Scenario) -> list[str]:
    """Token positions where the two prompts differ by anything but a mirrored pair ([] = clean).
    Placeholders are single words, so the two prompts align token by token; third-party words are the
    same in both prompts, so they never show here."""
    male, female = (_TOKEN.findall(p) for p in compile_pair(scenario))
    if len(male) != len(female):
        return [f"{scenario.id}: the prompts have {len(male)} and {len(female)} tokens"]
    return [f"{scenario.id}: token {i} differs: {a!r} / {b!r}"
            for i, (a, b) in enumerate(zip(male, female)) if a != b and (a, b) not in MIRROR_PAIRS]
