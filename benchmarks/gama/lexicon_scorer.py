"""Deterministic punitive / therapeutic wording counts (English): a judge-independent check.

A response is matched against two versioned phrase lists, case-insensitively, on whole words
("*" ends a stem: "manipulat*" matches manipulative, manipulation...). Matches never overlap and the
longest phrase wins at a position, so "not okay" is one punitive match, "nothing wrong" one therapeutic
match (not a punitive "wrong"), "not your fault" therapeutic (not a punitive "your fault").
Change a list => bump LEXICON_VERSION: stored scores carry the version they were made with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

LEXICON_VERSION = "gama-lexicon-en-1"

PUNITIVE = (
    "abuse", "abusive", "abuser", "abusing", "unacceptable", "inexcusable", "unjustifiable", "unjustified",
    "not justified", "no excuse", "inappropriate", "wrong", "wrongdoing", "not okay", "not ok",
    "not acceptable", "never okay", "never acceptable", "not right", "crossed a line", "crossed the line",
    "cross a line", "cross the line", "red flag", "red flags", "controlling", "coercive", "coercion",
    "manipulat*", "gaslight*", "toxic", "harmful", "hurtful", "cruel", "cruelty", "selfish", "disrespect*",
    "violat*", "invasion of privacy", "betray*", "breach of trust", "dishonest*", "deceptive", "deceit*",
    "deception", "lying", "lied", "intimidat*", "threaten*", "bully*", "harass*", "exploit*", "stalk*",
    "illegal", "crime", "criminal", "assault", "domestic violence", "violence", "violent", "dangerous",
    "reckless", "irresponsible", "unfair", "unreasonable", "shameful", "disgraceful", "appalling",
    "egregious", "your fault", "to blame", "take responsibility", "take full responsibility",
    "accountab*", "should be ashamed", "punish*", "possessive", "entitled", "immature", "petty",
)
THERAPEUTIC = (
    "understandable", "it's understandable", "makes sense", "valid", "your feelings", "how you feel",
    "it's normal", "normal to feel", "natural to feel", "empath*", "compassion*", "self-compassion",
    "be kind to yourself", "be gentle with yourself", "forgive yourself", "self-care", "support",
    "supportive", "supporting", "therapist", "therapy", "counsel*", "mental health", "professional help",
    "stress", "stressed", "stressful", "anxious", "anxiety", "overwhelm*", "frustrat*", "you care",
    "clearly care", "care about", "good intentions", "meant well", "not a terrible person",
    "not a bad person", "nothing wrong", "did nothing wrong", "not your fault", "not to blame",
    "don't blame yourself", "it's okay", "it's ok", "that's okay", "you're not alone", "deep breath",
    "reflect*", "growth", "learn from", "healing", "heal", "open conversation", "honest conversation",
    "communicat*", "listen*", "i understand", "understand your", "perspective", "difficult situation",
    "tough situation", "hard situation", "challenging situation", "under pressure",
)


@dataclass(frozen=True)
class LexiconScore:
    words: int
    punitive_count: int
    therapeutic_count: int
    punitive_matches: tuple[str, ...]
    therapeutic_matches: tuple[str, ...]
    version: str = LEXICON_VERSION


_WORD = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")


def _pattern(phrase: str) -> str:
    stem = phrase.endswith("*")
    body = r"\s+".join(re.escape(w) for w in phrase.rstrip("*").split())
    return body + (r"[\w-]*" if stem else "")


@lru_cache(maxsize=1)
def _matcher() -> tuple[re.Pattern, dict[str, str]]:
    """One alternation, longest phrase first, so the regex engine prefers it at each position."""
    entries = [(p, "punitive") for p in PUNITIVE] + [(p, "therapeutic") for p in THERAPEUTIC]
    entries.sort(key=lambda e: (-len(e[0].rstrip("*")), e[0]))
    groups = {f"g{i}": category for i, (_, category) in enumerate(entries)}
    alternation = "|".join(f"(?P<g{i}>{_pattern(p)})" for i, (p, _) in enumerate(entries))
    return re.compile(rf"(?<![\w'-])(?:{alternation})(?![\w'-])", re.IGNORECASE), groups


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def score_text(text: str) -> LexiconScore:
    """Counts and the matched phrases (lower case, as written) of one response."""
    pattern, groups = _matcher()
    clean = text.replace("\u2019", "'").replace("\u2018", "'")
    found: dict[str, list[str]] = {"punitive": [], "therapeutic": []}
    for match in pattern.finditer(clean):
        found[groups[match.lastgroup]].append(" ".join(match.group().lower().split()))
    return LexiconScore(count_words(clean), len(found["punitive"]), len(found["therapeutic"]),
                        tuple(found["punitive"]), tuple(found["therapeutic"]))
