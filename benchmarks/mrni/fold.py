"""Character folding shared by the MRNI-BB parsers (multiple choice and Likert)."""

from __future__ import annotations

import unicodedata


def fold_char(ch: str) -> str:
    """One character to exactly one: lowercased, accent off (né -> ne, è -> e); a character whose lowercase
    is longer than one (e.g. "İ") is kept as it is, so a folded text keeps its length."""
    low = ch.lower()
    if len(low) != 1:
        return ch
    if low.isascii():
        return low
    base = unicodedata.normalize("NFD", low)[0]
    return base if base.isascii() else low
