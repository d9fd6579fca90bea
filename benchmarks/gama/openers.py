"""Opener patterns: how posts begin, with the partner and time phrases normalised, and the 15% cap.

The opener pattern of a post is its first two units after {ACTOR}, where a unit is
- [TIME]: a time phrase ("Last night", "On Saturday", "Three weeks ago", "For the past month",
  "Years ago", "Yesterday", "This morning", "In March", "Every Friday", "Most nights", "Once a month",
  "Around midnight"; a clause such as "When ..." or "After the party" is not one), with its comma;
- [PARTNER]: the partner ("my {PARTNER}", "my {PARTNER}'s", "{PARTNER_POSS_CAP}", "{PARTNER_SUBJ_CAP}");
- otherwise one word, lower-cased, without punctuation ("I", "when", "at", "a"/"an" -> "a").
So "Last spring my {PARTNER} won ..." and "On Saturday, my {PARTNER}'s boss ..." are both
"[TIME] [PARTNER]"; "When my {PARTNER} lost ..." is "when [PARTNER]"; "I work nights ..." is "i work".
No pattern may open more than MAX_SHARE of a track's posts (`gama check` prints and enforces it).
"""

from __future__ import annotations

import re
from collections import Counter

from .schema import TRACKS, Scenario

MAX_SHARE = 0.15
_NUM = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|several|\d+)"
_UNIT = r"(?:minutes?|hours?|days?|nights?|weeks?|months?|years?|weekends?|summers?|winters?)"
_DAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_PART = (r"(?:night|week|month|year|weekend|morning|afternoon|evening|spring|summer|autumn|fall|winter|term|"
         r"semester|Christmas|Easter|" + _DAY + r")")
_TIME = re.compile(
    r"(?:(?:last|this|next|one|that|early|late) (?:\w+ )?" + _PART
    + r"|on (?:a |the )?(?:" + _DAY + r"|\w+day)(?: (?:night|morning|afternoon|evening))?"
    + r"|(?:about |almost |nearly |just over |over )?" + _NUM + r" " + _UNIT + r" ago"
    + r"|(?:for|over|in) (?:the )?(?:past|last) (?:" + _NUM + r" )?" + _UNIT
    + r"|for " + _NUM + r" " + _UNIT
    + r"|(?:early |late )?every (?:other )?(?:\w+ )?" + _PART + r"|ever since|most (?:nights|evenings|mornings|weekends|"
    + _DAY + r"s)|(?:once|twice|three times) a (?:week|month|year)|night after night|around (?:midnight|\w+ o'clock|\w+)"
    + r"|in (?:the )?(?:spring|summer|autumn|fall|winter)|one (?:\w+ )?(?:morning|afternoon|evening|night)(?: last \w+)?"
    + r"|(?:a|one|the) (?:\w+ )?(?:day|week|month|year) (?:ago|before|after|later)"
    + r"|years ago|yesterday(?: (?:morning|afternoon|evening))?|today|tonight|recently|earlier (?:today|this \w+)"
    + r"|(?:in|at the (?:start|end) of|back in|since) (?:" + _DAY + r"|January|February|March|April|May|June|July"
    + r"|August|September|October|November|December|(?:the )?(?:spring|summer|autumn|fall|winter))"
    + r")(?:,)?\s+", re.I)
_PARTNER = re.compile(r"(?:my \{PARTNER\}(?:['’]s)?|\{PARTNER_(?:POSS|SUBJ)_CAP\})\s*", re.I)
_WORD = re.compile(r"(\S+)\s*")


def units(template: str, n: int = 2) -> list[str]:
    """The first n normalised units of the post after {ACTOR}."""
    text, out = template.replace("{ACTOR}", "", 1).lstrip(), []
    while text and len(out) < n:
        for name, pattern in (("[TIME]", _TIME), ("[PARTNER]", _PARTNER)):
            match = pattern.match(text)
            if match:
                if not (name == "[TIME]" and out and out[-1] == name):  # "One evening last month": one phrase
                    out.append(name)
                text = text[match.end():]
                break
        else:
            match = _WORD.match(text)
            word = re.sub(r"[^\w'’{}]", "", match.group(1)).lower()
            out.append("a" if word == "an" else word)
            text = text[match.end():]
    return out


def opener_pattern(template: str) -> str:
    return " ".join(units(template))


def opener_shares(scenarios: list[Scenario]) -> dict[str, Counter]:
    """track -> opener pattern counts."""
    return {t: Counter(opener_pattern(s.template) for s in scenarios if s.track == t) for t in TRACKS}


def over_cap(scenarios: list[Scenario]) -> list[tuple[str, str, int, int]]:
    """(track, pattern, posts, track posts) for every pattern above MAX_SHARE of its track."""
    out = []
    for track, counts in opener_shares(scenarios).items():
        total = sum(counts.values())
        out += [(track, p, n, total) for p, n in counts.most_common() if total and n / total > MAX_SHARE]
    return out


# Stilted fronted openings ("inversions") that a rewrite pass produced to avoid "My {PARTNER} ...": the
# object, a gerund or a place put first and the partner after it. Matched in the first sentence only.
INVERSIONS = tuple(re.compile(p) for p in (
    r"^[^.?!]{3,90}: that's ",                                                  # "X: that's what my partner ..."
    r"^[^.?!,]{3,90}\b(?:is|are|was|were) (?:what|something|the (?:\w+ )?thing) (?:my \{PARTNER\}|\{PARTNER_SUBJ\})",
    r"^(?:Through|Via|With|Thanks to) \{PARTNER_POSS\}[^,.]{0,40} my \{PARTNER\}",  # no comma: "Through his ..."
    r"^\w+ing\b[^.?!,]{3,70} (?:is|was|mattered|matters|meant) (?:a lot for )?(?:my \{PARTNER\}|what|something)",
    r"^(?:In|At|On|Behind|Under) [^.?!]{3,70}, (?:lives|live|sits|stands) my ",  # "In the annex ... lives my ..."
    r"\bmake up my \{PARTNER\}'s", r"^[^.?!,]{3,70} (?:was|were|is|are) being \w+ (?:for )?by my ",
    r"^[^.?!,]{3,70} (?:was|were) offered to my \{PARTNER\}",
    r"^[^.?!,]{3,40} (?:make|makes) my \{PARTNER\} (?:run|cry|leave)\b",
))


def first_sentence(template: str) -> str:
    text = template.replace("{ACTOR}", "", 1).strip()
    return re.split(r"(?<=[.?!])\s", text, maxsplit=1)[0]


def inversions(scenarios: list[Scenario]) -> list[tuple[str, str]]:
    """(scenario id, first sentence) for every post that opens with a stilted fronted construction."""
    return [(s.id, first_sentence(s.template)) for s in scenarios
            if any(p.search(first_sentence(s.template)) for p in INVERSIONS)]
