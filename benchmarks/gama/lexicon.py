"""English gendered-word lexicon, both directions, for the neutrality checks of GAMA-Bench templates.

A word is matched whole (case-insensitive), also after stripping a clitic ("man's" -> man, "she'd" -> she,
"ma'am's" -> ma'am).
Titles that are also ordinary words ("Ms" vs ms = milliseconds, "Miss" vs to miss) count only when
written with a capital letter.
"""

from __future__ import annotations

import re

# (male, female) counterparts separated by "|" or a line break; "-" means the word has no common counterpart.
_PAIRS = """
he she | him her | his hers | himself herself | man woman | men women | boy girl | boys girls
boyfriend girlfriend | boyfriends girlfriends | husband wife | husbands wives | fiance fiancee
fiancé fiancée | fiances fiancees | groom bride | grooms brides | bridegroom - | groomsman bridesmaid
groomsmen bridesmaids | mr mrs | mister missus | - missis | sir madam | - ma'am | - maam | lord lady
lords ladies | gentleman lady | gentlemen ladies | guy gal | guys gals | dude - | dudes - | bro sis
bros - | bloke - | blokes - | chap - | lad lass | lads lasses | father mother | fathers mothers
dad mom | dads moms | daddy mommy | - mum | - mums | - mummy | papa mama | son daughter
sons daughters | brother sister | brothers sisters | uncle aunt | uncles aunts | - auntie | - aunty
nephew niece | nephews nieces | grandfather grandmother | grandfathers grandmothers | grandpa grandma
grandpas grandmas | - granny | grandson granddaughter | grandsons granddaughters
stepfather stepmother | stepdad stepmom | stepson stepdaughter | stepbrother stepsister
godfather godmother | father-in-law mother-in-law | male female | males females
masculine feminine | manly womanly | - girly | boyish girlish | brotherly sisterly | fatherly motherly
paternal maternal | fatherhood motherhood | manhood womanhood | gentlemanly ladylike | king queen
kings queens | prince princess | princes princesses | duke duchess | emperor empress | monk nun
widower widow | - actress | - actresses | - waitress | - waitresses | - hostess | - stewardess
- heiress | - heroine | chairman chairwoman | policeman policewoman | policemen policewomen
fireman firewoman | firemen - | businessman businesswoman | businessmen businesswomen
salesman saleswoman | salesmen - | spokesman spokeswoman | congressman congresswoman | foreman -
mailman - | handyman - | doorman - | cameraman - | hubby wifey | boyhood girlhood | manspreading -
"""
# Words that name a partner: never a third person's word ({=...}) in a template; the narrator's partner is
# {PARTNER}, and another person's partner is written neutrally.
PARTNER_NOUNS = frozenset("""boyfriend girlfriend boyfriends girlfriends husband wife husbands wives fiance fiancee
fiancé fiancée fiances fiancees hubby wifey""".split())
# Titles that are ordinary words in lower case: matched only when capitalised.
_CAPITALISED_ONLY = {"Ms": "female", "Miss": "female", "Mrs": "female", "Mr": "male", "Dame": "female"}


def _parse_pairs() -> tuple[frozenset[str], frozenset[str]]:
    male, female = set(), set()
    for pair in filter(str.strip, re.split(r"[|\n]", _PAIRS)):
        m, f = pair.split()
        male.update({m} - {"-"})
        female.update({f} - {"-"})
    return frozenset(male), frozenset(female)


MALE_WORDS, FEMALE_WORDS = _parse_pairs()
_CLITIC = re.compile(r"'(?:s|d|ll|re|ve)$")
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")


def word_gender(word: str) -> str | None:
    """'male', 'female' or None for one word as written (case matters only for titles)."""
    if word in _CAPITALISED_ONLY:
        return _CAPITALISED_ONLY[word]
    lower = word.lower().replace("’", "'")
    for candidate in (lower, _CLITIC.sub("", lower)):
        if candidate in MALE_WORDS:
            return "male"
        if candidate in FEMALE_WORDS:
            return "female"
    return None


def is_single_word(text: str) -> bool:
    """One word as the lexicon reads words (letters, with inner hyphens or apostrophes)."""
    return _WORD.fullmatch(text) is not None


def _candidates(text: str) -> list[str]:
    """Words; a hyphenated compound that is not itself in the lexicon is also read part by part
    ("ex-wife" -> wife), so no gendered word hides inside one."""
    out = []
    for token in _WORD.findall(text):
        if "-" in token and word_gender(token) is None:
            out.extend(token.split("-"))
        else:
            out.append(token)
    return out


def gendered_words(text: str, gender: str | None = None) -> list[str]:
    """The gendered words of text in order (only those of one gender if given), as written."""
    return [w for w in _candidates(text) if (g := word_gender(w)) is not None and (gender is None or g == gender)]
