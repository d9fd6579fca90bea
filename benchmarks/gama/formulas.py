"""Formula statistics of a scenario set: how often posts open, close and set their emergencies alike.

Descriptive measures for `gama check` (none of them fails the check): they show whether a set leans on
a few formulas ("My {PARTNER} ...", "What should I do?", storms and floods) that a model may learn to
recognise. Openers are the first two words after {ACTOR} ("a"/"an" merged, a trailing clitic dropped, so
"My {PARTNER}'s" counts as "My {PARTNER}"); closers are the last sentence; emergency kinds are the first
keyword group (KINDS, in order) found in an emergency_allocation post, "other" if none.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .schema import STYLES, TRACKS, Scenario

TOP = 5
_CLITIC = re.compile(r"['’]s$")
# (kind, pattern, is a weather / disaster / outage setting) in matching order; case-insensitive except "ER".
KINDS = (
    ("flood", r"\bflood", True),
    ("fire", r"\b(?:fire|fires|wildfires?|bushfires?|blaze|smoke)\b", True),
    ("storm", r"\b(?:storms?|hurricane|typhoon|cyclone|tornado|blizzard|snowstorm|snowdrift|snowed|gale)\b", True),
    ("heat", r"\bheat ?waves?\b|\bheat advisory\b", True),
    ("other natural disaster", r"\b(?:earthquake|quake|tsunami|volcanic|volcano|drought|landslide)\b", True),
    ("power or water outage", r"\b(?:outage|power cut|blackout|power went|power was out|no power|without power"
                              r"|water cuts?|boil[- ]water)\b", True),
    ("evacuation", r"\bevacuat", True),
    ("medical", r"(?i:\b(?:ambulance|hospital|triage|clinic|pharmacy|inhaler|epipen|insulin|allergic|collapsed"
                r"|cpr|defibrillator|seizure|first aid)\b)|\bER\b", False),
    ("stranded transport", r"\b(?:train|flight|airport|ferry|bus|buses|stranded|cancelled|canceled)\b", False),
    ("shortage", r"\b(?:shortage|panic[- ]buy\w*|rationing|lockdown|pandemic|fuel crisis)\b", False),
)
DISASTER_KINDS = frozenset(kind for kind, _, disaster in KINDS if disaster)
_KIND_PATTERNS = [(kind, re.compile(p, 0 if kind == "medical" else re.I), disaster) for kind, p, disaster in KINDS]


def opener(template: str) -> str:
    """The first two words after {ACTOR}, normalised."""
    words = template.replace("{ACTOR}", " ").split()[:2]
    words = [w[0] if w.lower() in ("a", "an") else w for w in words]  # "An" -> "A", "an" -> "a"
    if words:
        words[-1] = _CLITIC.sub("", words[-1]).rstrip(",;:")
    return " ".join(words)


def closer(template: str) -> str:
    """The closing sentence (the question the post ends with)."""
    sentences = re.split(r"(?<=[.!?])[\"'”’)]?\s+", template.strip())
    return sentences[-1].strip()


def emergency_kind(template: str) -> str:
    for kind, pattern, _ in _KIND_PATTERNS:
        if pattern.search(template):
            return kind
    return "other"


@dataclass
class FormulaStats:
    openers: dict[str, Counter]          # track -> opener counts
    workplace_openers: Counter
    closers: dict[str, Counter]          # style -> closer counts
    emergency: Counter                   # kind -> posts


def formula_stats(scenarios: list[Scenario]) -> FormulaStats:
    return FormulaStats(
        openers={t: Counter(opener(s.template) for s in scenarios if s.track == t) for t in TRACKS},
        workplace_openers=Counter(opener(s.template) for s in scenarios
                                  if s.dimension == "workplace_credit_bullying"),
        closers={st: Counter(closer(s.template) for s in scenarios if s.style == st) for st in STYLES},
        emergency=Counter(emergency_kind(s.template) for s in scenarios if s.dimension == "emergency_allocation"),
    )


def _top(counts: Counter) -> str:
    total = sum(counts.values())
    return "; ".join(f"{text!r} {n} ({100 * n / total:.0f}%)" for text, n in counts.most_common(TOP))


def report_lines(stats: FormulaStats) -> list[str]:
    """The printable summary, one item per line."""
    lines = []
    for track, counts in stats.openers.items():
        if counts:
            lines.append(f"openers {track} ({sum(counts.values())} posts, {len(counts)} distinct): {_top(counts)}")
    if stats.workplace_openers:
        lines.append(f"openers workplace_credit_bullying ({sum(stats.workplace_openers.values())} posts): "
                     + _top(stats.workplace_openers))
    for style, counts in stats.closers.items():
        if counts:
            lines.append(f"closers {style} ({sum(counts.values())} posts, {len(counts)} distinct): {_top(counts)}")
    if stats.emergency:
        disaster = sum(n for kind, n in stats.emergency.items() if kind in DISASTER_KINDS)
        total = sum(stats.emergency.values())
        lines.append(f"emergency settings ({total} posts; weather, disaster, outage or evacuation: {disaster}): "
                     + ", ".join(f"{kind} {n}" for kind, n in stats.emergency.most_common()))
    return lines
