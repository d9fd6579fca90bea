"""The parser's normalisation (a str.translate table filled on demand) is the per-character rule it replaced,
and the caches over a prompt's context and options give what the uncached functions give."""

from fairsweep.benchmarks.mrni import describe, parse
from fairsweep.benchmarks.mrni.fold import fold_char


def per_character(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):
        return "".join(parse._norm_char(c) for c in text)
    return "".join(c if c.isascii() and c not in parse._CHAR_MAP else parse._norm_char(c) for c in lowered)


def test_normalise_is_the_per_character_rule():
    samples = ["The MAN, clearly.", "L\u2019uomo \u00e8 pi\u00f9 propenso \u2014 «sì»", "**Person X**\t`y`\r\n",
               "Caf\u00e9 na\u00efve \u00c9T\u00c9 \u00df \u0130stanbul", "\u00a0\u2009\u202f\u201c\u201d\u2018\u2019",
               "".join(chr(c) for c in range(32, 0x250)), "\u65e5\u672c \u0394\u03b5\u03bb\u03c4\u03b1 \u00f1"]
    for text in samples:
        assert parse._normalise(text) == per_character(text)
        assert len(parse._normalise(text)) == len(text)
    assert parse._normalise("Caf\u00c9") == "cafè" and parse._normalise("NÉ") == "nè"
    assert fold_char("\u00f1") == "n" and parse._normalise("\u00d1") == "n"


def test_cached_context_helpers_match_their_inputs():
    context = "The man talks about fixing it himself, while the woman suggests calling a plumber."
    assert parse._normalised_context(context) == parse._normalise(context)
    mentions = describe.person_mentions(parse._normalise(context), "gs")
    assert [m[2] for m in mentions] == ["M", "W"] and isinstance(mentions, tuple)
    assert parse.option_label("The woman", "disambiguated_gs") == "W"
    assert parse.option_label("Person Y", "ambiguous_ga") == "Y"
    assert parse.option_label("The woman", "ambiguous_ga") is None
    assert parse.option_label("Insufficient information", "ambiguous_gs") == "U"
