"""Mirror clarity: a fixed third-party word must not be readable as the partner in one prompt of a pair only.

A third person's gendered word ({=he}, {=the man}) is written the same in both prompts, but the partner's
gender flips between them. In the prompt where the two genders match, the word can be read as the
partner ("His brother came anyway, and he hasn't let me speak to him since", woman's prompt); in the
other it cannot. The two prompts then differ in clarity, not only in gender.

The check renders both prompts of a pair, aligns them token by token (compile.mirror_problems makes sure
they align) and looks at every token that is gendered and the same in both prompts (a fixed word). It
is flagged when its gender equals the partner's in exactly one rendering (always, for a gendered word
in an intimate prompt; never on the public track, which has no partner) and it can refer to the partner:
- a pronoun (he, him, his, himself, she, her, hers, herself, with clitics) always can;
- a gendered noun can unless its noun phrase anchors it to someone else: a possessor that is the
  narrator ("my", "My", "your"), the partner ("his"/"her" or "girlfriend's" as mirrored words) or a
  fixed third person ("my brother's"), or an indefinite article that introduces a new person ("a man
  at the bus stop"); up to MAX_MODIFIERS words may stand between ("her late father", "my widowed
  father"). "The father of my kids" or "the guy" are flagged: they can be the partner.
Fix a flagged template by naming the third person ("my {=brother}", "the neighbor") or rephrasing.

A partner noun said of the narrator ("Does this make me a bad {PARTNER}?") is flagged too: it renders as
"a bad girlfriend" in the man's prompt, so it names the narrator with the partner's gender. So is
{PARTNER_POSS} without a noun after it ("half of that money is {PARTNER_POSS}.", "book {PARTNER_POSS}
too"): it renders "is his." but "is her." (hers), clear in one prompt only.
"""

from __future__ import annotations

import re

from .compile import GENDERS, OTHER, _TOKEN, compile_pair
from .lexicon import word_gender
from .schema import Scenario

PRONOUNS = frozenset("he she him her his hers himself herself".split())
ANCHORS = frozenset("my your a an another one".split())
DEFINITES = frozenset("the this that these those".split())  # "the father (of my kids)": no possessor
PARTNER_POSSESSIVES = frozenset({("her", "his"), ("Her", "His")})  # (male-actor, female-actor) token
MAX_MODIFIERS = 2
_NARRATOR_AS_PARTNER = re.compile(r"\b(?:me|I'm|I am|I was|myself|being) (?:a|an|the|such a) (?:[\w-]+ ){0,2}\{PARTNER\}")
_POSS_WITHOUT_NOUN = re.compile(r"\{PARTNER_POSS(?:_CAP)?\}(?=\s*(?:[.,;:!?)]|$|(?:too|and|or|is|was|are|were)\b))")
_CLITIC_TOKENS = frozenset({"'", "’"})


def _anchored(male: list[str], female: list[str], i: int) -> bool:
    """Whether the noun at i has a possessor or indefinite article that makes it someone other than the
    partner, within MAX_MODIFIERS words before it (male, female: the two prompts' tokens)."""
    tokens = male
    for j in range(i - 1, max(-1, i - MAX_MODIFIERS - 2), -1):
        tok = tokens[j]
        if tok.lower() in ANCHORS or (male[j], female[j]) in PARTNER_POSSESSIVES:
            return True
        if tok.lower() in DEFINITES:
            return False
        if tok == "s" and j >= 2 and tokens[j - 1] in _CLITIC_TOKENS:  # X's noun: X is the possessor
            owner = j - 2
            return male[owner] != female[owner] or word_gender(tokens[owner]) is not None
        if not tok.isalpha() or word_gender(tok) is not None:
            return False
    return False


def can_be_partner(male: list[str], female: list[str], i: int) -> bool:
    """Whether the fixed gendered token at i could be read as a reference to the partner."""
    return male[i].lower() in PRONOUNS or not _anchored(male, female, i)


def clarity_problems(scenario: Scenario) -> list[str]:
    """One message per fixed third-party word that can be read as the partner in one prompt only."""
    if scenario.track != "intimate":
        return []
    problems = [f"{scenario.id}: '{m.group(0)}' names the narrator with the partner's noun: write 'partner' or "
                "rephrase" for m in _NARRATOR_AS_PARTNER.finditer(scenario.template)]
    problems += [f"{scenario.id}: {m.group(0)} without a noun after it renders 'her' for 'hers' in the man's "
                 "prompt: put a noun after it or rephrase" for m in _POSS_WITHOUT_NOUN.finditer(scenario.template)]
    prompts = dict(zip(GENDERS, (_TOKEN.findall(p) for p in compile_pair(scenario))))
    male, female = prompts["male"], prompts["female"]
    if len(male) != len(female):
        return problems  # mirror_problems reports the misalignment
    for i, (a, b) in enumerate(zip(male, female)):
        gender = word_gender(a) if a == b else None
        if gender is None:
            continue
        # the partner is OTHER[actor]; the fixed word matches it in exactly one rendering
        matching = [actor for actor in GENDERS if OTHER[actor] == gender]
        if len(matching) == 1 and can_be_partner(male, female, i):
            context = " ".join(prompts[matching[0]][max(0, i - 6): i + 5])
            problems.append(f"{scenario.id}: fixed '{a}' can be read as the partner in the {matching[0]}-actor "
                            f"prompt only (\"... {context} ...\"): name the third person instead "
                            "(my {=brother}, the neighbor) or rephrase")
    return problems
