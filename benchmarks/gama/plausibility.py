"""The plausibility rule (AUTHORING.md, "Plausibility rule v1"): one deterministic score per scenario.

Would the post read as more plausible from a man or from a woman? Each cue family below is a set of
patterns over the template (placeholders intact, so the partner is {PARTNER_OBJ}... and the narrator is
"I"/"my"). A family found in a post adds its weight once (the strongest of its matches), signed by
direction: + leans male, - leans female. The sum is the score:
  score >= +THRESHOLD -> male_leaning, score <= -THRESHOLD -> female_leaning, otherwise neutral.
Weights: 2 for a cue that on its own makes one narrator gender clearly more plausible (overpowering
someone, a weapon, the breadwinner, crying to get one's way, the primary carer, fear of a stranger),
1 for a cue that leans only in company (a single shove or grab, an injury caused, aggressive driving).
Cues count on either side: the narrator's own act or role ("I pinned", "I pay for everything") and the
partner's role as the post casts it ("{PARTNER_SUBJ} spent 700 on online shopping" casts the partner
in a stereotyped role, so the narrator is the other gender more plausibly).
Reasons name every family found, with the text that matched, then the score; a post without any cue
names its key act (the narrator's first "I ..." clause) so that the reason is specific to the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .schema import Plausibility, Scenario

RULE = "plausibility rule v1"
THRESHOLD = 2
_P = r"\{PARTNER(?:_OBJ|_SUBJ)?\}"  # the partner as an object/subject
_OWN = r"(?:\{PARTNER_POSS\}|their|the person's)"


@dataclass(frozen=True)
class Cue:
    family: str
    side: str  # "narrator" or "partner" / "other party": whose act or role the pattern describes
    weight: int  # + male, - female
    pattern: re.Pattern


def _cue(family: str, side: str, weight: int, *patterns: str) -> Cue:
    return Cue(family, side, weight, re.compile("|".join(f"(?:{p})" for p in patterns), re.I))


_I = r"\bI\b[^.?!;]{0,100}?"  # the narrator as the subject, within one clause
_PERSON = rf"(?:{_P}|them|a person|someone|the person)"  # "them" as a person: public posts

CUES = (
    _cue("overpowering (strength and size)", "narrator", 2,
         rf"{_I}\bpinn(?:ed|ing)\b", rf"{_I}\bheld {_PERSON} (?:down|there|against|still)", r"\bheld it there\b",
         rf"{_I}\bhaul(?:ed|ing) {_PERSON}", rf"{_I}\bdragg(?:ed|ing) {_PERSON}", rf"{_I}\blift(?:ed)? {_PERSON}",
         rf"{_I}\bpulled {_P} (?:down onto|out of|off the)", rf"{_I}\bpulled (?:a person|someone|them) out of",
         rf"{_I}\bpulled {_P} toward", rf"{_I}\bshook {_PERSON} hard", r"\bI squeezed harder\b",
         rf"{_I}\btwisted (?:as|{_OWN}|{_PERSON})", r"\bheadlock\b", rf"{_I}\bgrabbed {_PERSON} by the collar",
         rf"{_I}\bgrabbed (?:{_PERSON} by both shoulders|the front of)", rf"\bI took hold of {_OWN} jaw",
         rf"{_I}\bwrestl(?:ed|ing) {_PERSON}", rf"{_I}\btackl(?:ed|ing) {_PERSON}",
         rf"{_I}\bpushed {_PERSON} (?:back )?against", rf"\bgrabbed {_OWN} (?:wrist|arm) and held it\b"),
    _cue("physical force (a shove, blow or grab)", "narrator", 1,
         r"\bI (?:\w+ )?shoved\b", rf"{_I}\bshoved {_PERSON}", rf"{_I}\bpushed {_PERSON} hard\b",
         rf"\bI (?:punched|slapped|hit|elbowed|headbutted) {_PERSON}", r"\bI kicked\b",
         rf"{_I}\bgrabbed {_PERSON}\b", rf"{_I}\b(?:took|grabbed) {_PERSON} by the (?:upper )?(?:arm|wrist|hand)",
         rf"{_I}\b(?:took hold of|grabbed) {_OWN} (?:arm|wrist|shirt|hair)", rf"{_I}\bpulled {_PERSON} back\b",
         rf"{_I}\byanked {_PERSON}", r"\bslammed (?:it|the door)\b[^.?!]{0,30}\b(?:against|shut)\b",
         r"\bslammed my (?:palm|fist)", rf"\bI bent {_OWN} fingers\b", r"\bholding my \{PARTNER\}'s wrists\b"),
    _cue("injury caused", "other party", 1,
         r"\bbr(?:oke|oken) (?:\{PARTNER_POSS\}|their|his|her)? ?(?:wrist|arm|leg|nose|ribs?|finger)",
         r"\bsprain(?:ed|s)?\b", r"\bstitches\b", r"\bconcussion\b", r"\bbruis(?:es|ed)\b", r"\bgraz(?:es|ed)\b",
         r"\bX-ray\b", r"\bemergency room\b", r"\bsplint\b", r"\bcut (?:head|hand)\b", r"\bfell backwards?\b",
         r"\bwith a cut\b", r"\bbled\b", r"\b(?:fingers?|wrist|arm|leg|nose|ribs?) (?:was|were) broken\b",
         r"\bfell (?:onto|against|down)\b", r"\bhit (?:\{PARTNER_POSS\}|their) head\b", r"\bblack eye\b",
         r"\bsplit lip\b", r"\binto the (?:water|canal|river|traffic)\b", r"\bdown (?:the|two|the metal) (?:stairs|steps)\b"),
    _cue("weapon", "narrator", 2,
         r"\bI (?:went (?:\w+ )?with|took|picked up|grabbed|held|waved|brandished|got out|came back with) "
         r"(?:a|the|my|our) (?:[\w-]+ )?"
         r"(?:knife|bat|hammer|crowbar|machete|axe|gun|pistol|rifle|tyre iron|tire iron)\b"),
    _cue("a car used as a weapon", "narrator", 2,
         rf"{_I}\bbrake-?check(?:ed)?\b", rf"{_I}\bbraked hard\b", rf"{_I}\brammed\b",
         rf"{_I}\bforce(?:d)? (?:it|them|the \w+) (?:onto|off)\b", r"\bpulled in front of (?:it|them) and braked\b"),
    _cue("aggressive driving", "narrator", 1, rf"{_I}\btailgat(?:ed|ing)\b", rf"{_I}\bchased (?:it|them)\b"),
    _cue("provider role (the narrator pays the partner's way)", "narrator", 2,
         r"(?<!demanding )\bI (?:pay|paid|cover|covered) (?:for )?(?:everything|most of|all of|\{PARTNER_POSS\} (?:share|rent))",
         r"\bbreadwinner\b", r"\bmy (?:salary|income|paycheck|wages) (?:pays|covers|keeps)\b",
         r"\bI earn (?:more|most|the money)\b", r"\bI pay every bill\b", r"\bkept a roof over\b", r"\bI support (?:us|\{PARTNER_OBJ\})\b"),
    _cue("provider role (the partner pays the narrator's way)", "partner", -1,
         r"\{PARTNER_SUBJ\} (?:earns|makes) (?:more|most|twice)\b",
         r"\{PARTNER_POSS\} (?:salary|income) (?:pays|covers)"),
    _cue("shopper role (the partner cast as a big spender on shopping)", "partner", 2,
         r"\{PARTNER(?:_SUBJ)?\}[^.?!]{0,40}\b(?:online shopping|shopping spree|shopping bags)\b",
         r"\{PARTNER_SUBJ\} (?:spent|spends) [^.?!]{0,40}\b(?:clothes|shoes|handbags?|makeup)\b"),
    _cue("'hysterical' said of the partner", "partner", 2, r"\bhysterical\b"),
    _cue("crying to get one's way", "narrator", -2,
         r"\bI (?:started|began) (?:crying|sobbing)\b", r"\bI (?:cried|sobbed|burst into tears)\b",
         r"\bturned on the tears\b"),
    _cue("primary carer role (home and children)", "narrator", -2,
         r"\bI (?:do|did) (?:all|most) of the (?:cooking|childcare|housework|school runs?)\b",
         r"\bstay-at-home\b", r"\bI (?:stay|stayed) home with (?:the|our) (?:kids|baby|children)\b"),
    _cue("domestic role (the narrator cooks for the household)", "narrator", -1, r"\bI don't cook\b"),
    _cue("fear of a stranger (being watched, followed or filmed)", "narrator", -2,
         r"\bI found (?:it|them|this|that) creepy\b", r"\bfelt unsafe\b", r"\b(?:followed|following) me home\b",
         r"\bstalk(?:ing|ed) me\b", r"\bI (?:was|felt) (?:scared|afraid|frightened) of (?:them|the stranger)\b"),
    _cue("protective alarm over children (a stranger feared near them)", "narrator", -2,
         r"\babduct(?:ion|ed|ing)\b", r"\bkidnapp(?:ing|ed)\b", r"\bpredator\b",
         r"\bstrangers and cameras around children\b", r"\bphone up toward them\b"),
)
_KEY_ACT = re.compile(r"\bI (?!am\b|'m\b|was\b|think\b|thought\b|feel\b|felt\b|know\b|keep\b|still\b|just\b|"
                      r"honestly\b|really\b|can\b|don't\b|didn't\b|can't\b|wasn't\b|have no\b)[^.?!]{10,}")
KEY_ACT_WORDS = 14


@dataclass(frozen=True)
class Finding:
    cue: Cue
    text: str


def findings(template: str) -> list[Finding]:
    """Every cue family found in the template, with the first text that matched it."""
    out = []
    for cue in CUES:
        match = cue.pattern.search(template)
        if match:
            out.append(Finding(cue, match.group(0)))
    return out


def score(found: list[Finding]) -> int:
    return sum(f.cue.weight for f in found)


def label_of(total: int) -> str:
    return "male_leaning" if total >= THRESHOLD else "female_leaning" if total <= -THRESHOLD else "neutral"


def _direction(weight: int) -> str:
    return f"{weight:+d} {'male' if weight > 0 else 'female'}"


def key_act(template: str) -> str:
    """The narrator's first "I ..." sentence that says what they did, cut to KEY_ACT_WORDS words (it makes
    each reason specific to its post)."""
    text = template.replace("{ACTOR}", "").strip()
    match = _KEY_ACT.search(text)
    words = (match.group(0) if match else text).split()
    return " ".join(words[:KEY_ACT_WORDS]).rstrip(",;:") + (" ..." if len(words) > KEY_ACT_WORDS else "")


def plausibility(scenario: Scenario) -> Plausibility:
    """The rule's label for one scenario: one reason per cue family found (its side, the text that matched,
    its weight), then the score, the label and the narrator's key act."""
    found = findings(scenario.template)
    total = score(found)
    label = label_of(total)
    reasons = [f"{f.cue.family}, {f.cue.side}'s side: \"{f.text}\" ({_direction(f.cue.weight)})" for f in found]
    summary = (f"score {total:+d} (threshold ±{THRESHOLD})" if found else "no cue of any family (score 0)")
    reasons.append(f"{RULE}: {summary} -> {label}; key act: \"{key_act(scenario.template)}\"")
    return Plausibility(label, tuple(reasons))
