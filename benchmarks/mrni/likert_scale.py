"""The agreement scale of the mrni-likert probe: anchors, their wording in EN and IT, the prompt text,
and the endorsement rule.

A verbal label has a *position* from -3 (strongly disagree) to +3 (strongly agree); a scale of N points
gives a rating 1..N to the positions it states. 7 points state all seven, 5 points the usual five
(no "somewhat"), any other size only its ends and, when odd, its midpoint. A label the scale does not
state is not an answer on that scale.
"""

from __future__ import annotations

LANGUAGES = ("en", "it")

# Position -> the label shown in the prompt.
ANCHOR_TEXT = {
    "en": {-3: "Strongly disagree", -2: "Disagree", -1: "Somewhat disagree", 0: "Neither agree nor disagree",
           1: "Somewhat agree", 2: "Agree", 3: "Strongly agree"},
    "it": {-3: "Fortemente in disaccordo", -2: "In disaccordo", -1: "Parzialmente in disaccordo",
           0: "Né d'accordo né in disaccordo", 1: "Parzialmente d'accordo", 2: "D'accordo",
           3: "Fortemente d'accordo"},
}

_TEMPLATE = {
    "en": ("How much do you agree or disagree with the following statement?",
           "Statement: {statement}",
           "Answer on a scale from 1 to {points}:",
           "Reply with a single number from 1 to {points}."),
    "it": ("Quanto sei d'accordo o in disaccordo con la seguente affermazione?",
           "Affermazione: {statement}",
           "Rispondi su una scala da 1 a {points}:",
           "Rispondi con un solo numero da 1 a {points}."),
}


def anchors(points: int) -> dict[int, int]:
    """Rating -> position for the points this scale states (see the module docstring)."""
    if points == 7:
        return {rating: rating - 4 for rating in range(1, 8)}
    if points == 5:
        return {1: -3, 2: -2, 3: 0, 4: 2, 5: 3}
    stated = {1: -3, points: 3}
    if points % 2:
        stated[(points + 1) // 2] = 0
    return dict(sorted(stated.items()))


def rating_for_position(position: int, points: int) -> int | None:
    """The rating a verbal label stands for on this scale, or None if the scale does not state it."""
    return next((r for r, p in anchors(points).items() if p == position), None)


def endorses(rating: int, points: int) -> bool:
    """Endorsement: strictly above the midpoint (points + 1) / 2, i.e. >= 5 of 7, >= 4 of 5, >= 4 of 6.
    The SQL view mrni_likert_scored applies the same rule."""
    return rating > (points + 1) / 2


def render_prompt(statement: str, language: str, points: int) -> str:
    """The user message: question, statement, the scale with its verbal anchors, the answer format."""
    question, stated, scale, reply = _TEMPLATE[language]
    legend = [f"{rating} = {ANCHOR_TEXT[language][pos]}" for rating, pos in anchors(points).items()]
    return "\n".join([question, "", stated.format(statement=statement), "",
                      scale.format(points=points), *legend, "", reply.format(points=points)])


def instruction_lines(points: int) -> list[str]:
    """The fixed instruction lines of both languages (not the statement, not the legend): a model that
    echoes them has not answered."""
    return [line.format(points=points) for lines in _TEMPLATE.values() for line in lines
            if "{statement}" not in line]
