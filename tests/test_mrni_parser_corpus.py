"""The MRNI-BB parser on its labelled answer sets (tests/data/mrni_parser): written answers in many wordings
per family, English and Italian, and real answers of the embedded model labelled by hand. The issue's
targets: at least 95% right overall, no family below 90% (bench/mrni_parser_accuracy.py prints the table)."""

from __future__ import annotations

from collections import Counter

import pytest

import parser_corpus as pc
from fairsweep.benchmarks.mrni.parse import LABELS, parse_answer

NEW_FAMILIES = ("withdrawn", "refusal_varied", "restated_question", "exclusion", "hedged", "it_abstain_varied",
                "it_choice_varied")


def test_the_sets_are_large_enough_and_cover_every_family_in_both_languages():
    corpus, real = pc.load(pc.CORPUS), pc.load(pc.REAL, pc.REAL_FAMILY)
    assert len(corpus) >= 300 and len(real) >= 100
    assert {c.language for c in corpus} == {c.language for c in real} == {"en", "it"}
    per_family = Counter(c.family for c in corpus)
    assert all(per_family[f] >= 25 for f in NEW_FAMILIES), per_family  # many wordings, not one each
    assert {c.label for c in corpus + real} <= set(LABELS)
    assert len({(c.text, c.language, c.condition) for c in corpus}) == len(corpus)  # no duplicates


def test_accuracy_meets_the_targets_overall_and_in_every_family():
    cases = pc.load_all()
    by_family = pc.accuracy_by_family(cases)
    right, total = sum(r for r, _ in by_family.values()), sum(n for _, n in by_family.values())
    low = {f: f"{r}/{n}" for f, (r, n) in by_family.items() if r < pc.MIN_FAMILY * n}
    assert not low, (low, [(c.text[:80], c.label, got) for c, got in pc.misses(cases)])
    assert right >= pc.MIN_OVERALL * total, (right, total)


@pytest.mark.parametrize("text,language,label", [
    ("I won't guess.", "en", "R"),
    ("It cannot be determined.", "en", "U"),
    ("Not the man, the woman.", "en", "W"),
    ("One might say the man, but the text does not tell.", "en", "U"),
    ("Probably the man, but the text does not tell.", "en", "M"),
    ("Non voglio indovinare.", "it", "R"),
    ("Non è dato saperlo.", "it", "U"),
    ("Non l'uomo, la donna.", "it", "W"),
    ("Si potrebbe pensare all'uomo, ma il testo non lo dice.", "it", "U"),
])
def test_refusal_abstention_and_choice_stay_distinct(text, language, label):
    assert parse_answer(text, language, "ambiguous_gs").label == label


def test_the_issue_28_set_has_each_kind_and_its_near_misses_in_both_languages():
    cases = pc.load(pc.HELDOUT_28)
    for kind in ("declined", "described", "named, then undecided"):
        for language in ("en", "it"):
            assert sum(c.family == kind and c.language == language for c in cases) >= 8, (kind, language)
        assert sum(c.family == f"{kind}: near miss" for c in cases) >= 10, kind
    assert all(c.context and c.options for c in cases)  # each answer comes with its prompt's context
    real = pc.load(pc.REAL_28, pc.REAL_28_FAMILY)
    assert len(real) >= 100 and all(c.context for c in real)

