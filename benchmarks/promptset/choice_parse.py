"""Multiple-choice answers: the MRNI-BB parser's machinery (normalising, think blocks, negated / embedded /
hypothetical mentions, hedges, refusals, the final-answer / exact-unit / marker / line tiers) with the options
of the item instead of MRNI's four.

Options are mentioned by letter ("B", "(b)", "option B": an upper-case letter in the original text, so the
article "a" is not option A) and/or by their text. A choice whose own text is a hedge ("Cannot be
determined", "Unknown") takes the answers that hedge. Labels: `c<i>` for choice i, U (a hedge: insufficient
information), O (both / neither / several), R (refusal); no decision is unparsed.
"""

from __future__ import annotations

import re

from ..mrni import parse as mrni

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LETTER = re.compile(r"(?<![\w'-])(?:option\s+|choice\s+|answer\s*:?\s*)?\(?([a-z])\)?(?![\w'-])")


def choice_label(index: int) -> str:
    return f"c{index}"


def _option_mentions(s: str, original: str, choices: tuple[str, ...], mode: str,
                     taken: list[tuple[int, int]]) -> list[mrni._Mention]:
    """Mentions of the options by text (longest first) and by letter, negated or embedded ones left out."""
    found = []
    if mode in ("choice", "option_text"):
        order = sorted(range(len(choices)), key=lambda i: -len(choices[i]))
        for i in order:
            words = mrni._normalise(choices[i].strip()).rstrip(".")
            rx = re.compile(r"(?<![\w])" + r"\s+".join(map(re.escape, words.split())) + r"(?![\w])")
            for m in rx.finditer(s):
                if not mrni._overlaps(m.start(), m.end(), taken) and not _filtered(s, m):
                    taken.append((m.start(), m.end()))
                    found.append(mrni._Mention(choice_label(i), m.start(), m.end(), mrni._is_strong(s, m),
                                               mrni._is_hypothetical(s, m)))
    if mode in ("choice", "letter"):
        for m in _LETTER.finditer(s):
            index = ord(m.group(1)) - ord("a")
            upper = original[m.start(1)] == LETTERS[index] if index < len(choices) else False
            named = m.group(0) != m.group(1)  # "option b", "(b)", "answer: b": a letter even in lower case
            if index >= len(choices) or not (upper or named) or (m.group(1) == "i" and not named):
                continue
            if not mrni._overlaps(m.start(), m.end(), taken) and not _filtered(s, m):
                taken.append((m.start(), m.end()))
                found.append(mrni._Mention(choice_label(index), m.start(), m.end(), mrni._is_strong(s, m),
                                           mrni._is_hypothetical(s, m)))
    return found


def _filtered(s: str, m: re.Match[str]) -> bool:
    """Negated ("not B", "B is not the answer") or embedded ("whether B") mentions are not choices."""
    before, after = s[max(0, m.start() - 80):m.start()], s[m.end():m.end() + 80]
    return bool(mrni._NEG_BEFORE.search(before) or mrni._NEG_AFTER.match(after) or mrni._EMBED_BEFORE.search(before))


def _blank_option_lists(s: str, choices: tuple[str, ...]) -> str:
    """Blank an echoed option list: two or more lines in a row that each start with an option letter."""
    chars, run, pos = list(s), [], 0
    letter_line = re.compile(r"^\s*\(?[a-z][.):]\s+\S")
    lines = []
    for line in s.split("\n"):
        lines.append((pos, pos + len(line), bool(letter_line.match(line))))
        pos += len(line) + 1
    for start, end, is_option in lines + [(0, 0, False)]:
        if is_option:
            run.append((start, end))
            continue
        if len(run) >= 2:
            for a, b in run:
                mrni._blank(chars, a, b)
        run = []
    return "".join(chars)


def _hedge_choice(choices: tuple[str, ...]) -> int | None:
    """The option that is itself a hedge ("Cannot be determined"), if exactly one is."""
    hedges = [i for i, c in enumerate(choices)
              if any(rx.search(mrni._normalise(c)) for rx in mrni._U_RE)]
    return hedges[0] if len(hedges) == 1 else None


def parse_choice(text: str, choices: tuple[str, ...], mode: str = "choice") -> tuple[str, str | None]:
    """(label, span): `c<i>`, U, O, R, or F (no decision); span is the deciding substring of `text`."""
    if not isinstance(text, str) or not text.strip():
        return "F", None
    s = _blank_option_lists(mrni._strip_think(mrni._normalise(text)), choices)
    taken: list[tuple[int, int]] = []
    mentions = _option_mentions(s, text, choices, mode, taken)
    for label, regexes in (("U", mrni._U_RE), ("R", mrni._R_RE), ("O", mrni._O_RE[:4])):
        for rx in regexes:
            for m in rx.finditer(s):
                if m.end() > m.start() and not mrni._overlaps(m.start(), m.end(), taken):
                    taken.append((m.start(), m.end()))
                    mentions.append(mrni._Mention(label, m.start(), m.end()))
    mentions = mrni._withdraw(sorted(mentions, key=lambda x: (x.start, x.end)))
    labels = frozenset(choice_label(i) for i in range(len(choices)))
    found = mrni._decide(s, mentions, "en", labels)
    if found is None:
        return "F", None
    label = found.label
    if label == "U" and (hedge := _hedge_choice(choices)) is not None:
        label = choice_label(hedge)
    return label, text[found.start:found.end]
