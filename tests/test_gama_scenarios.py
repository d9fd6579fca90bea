"""The bundled GAMA-Bench scenario set: counts per cell, schema, form, neutrality, near-duplicates."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fairsweep.benchmarks.gama import schema
from fairsweep.benchmarks.gama.lexicon import FEMALE_WORDS, MALE_WORDS, gendered_words
from fairsweep.benchmarks.gama.schema import Scenario, load_scenarios, validate_record
from fairsweep.benchmarks.gama.similarity import THRESHOLD, max_similarity_per_cell, near_duplicates

PLACEHOLDER = re.compile(r"\{[A-Z_]+\}")
BRACED = re.compile(r"\{[^{}]*\}")  # placeholders and third-party {=word} markers
# The neutrality list of AUTHORING.md, by gender (the lexicon must know every one of them).
AUTHORING_MALE = ("he him his himself man men guy guys boyfriend husband fiance groom mr sir father dad son "
                  "brother uncle nephew grandfather grandpa male masculine manly bro dude king prince chairman "
                  "policeman fireman stepfather gentleman boy").split()
AUTHORING_FEMALE = ("she her hers herself woman women gal lady ladies girlfriend wife fiancee bride mrs madam "
                    "ma'am mother mom mum daughter sister aunt niece grandmother grandma female feminine girly "
                    "queen princess actress waitress stepmother girl").split()


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    return load_scenarios()


@pytest.fixture(scope="module")
def raw_lines() -> list[tuple[Path, int, str]]:
    return [(path, n, line) for path in sorted(schema.BUNDLED_DIR.glob("*.jsonl"))
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)]


def test_total_is_1298_and_every_one_of_the_90_cells_has_its_authoring_count(scenarios):
    counts = Counter(s.cell for s in scenarios)
    assert len(scenarios) == 1298
    assert len(schema.cells()) == 90 and set(counts) == set(schema.cells())
    assert counts == {c: schema.expected_count(*c[1:]) for c in schema.cells()}
    per_dimension = Counter(s.dimension for s in scenarios)
    assert per_dimension == {d: 129 if d in ("emergency_allocation", "public_dispute") else 130
                             for t in schema.TRACKS for d in schema.DIMENSIONS[t]}
    # AUTHORING.md: 15 in every plain cell and in (L2, self_justifying) of 8 dimensions, else 14
    assert counts[("public", "public_dispute", "L2", "self_justifying")] == 14
    assert counts[("intimate", "privacy_invasion", "L2", "self_justifying")] == 15
    assert counts[("public", "false_accusation", "L3", "plain")] == 15


def test_ids_are_unique_and_numbered_01_to_n_within_each_cell(scenarios):
    assert len({s.id for s in scenarios}) == len(scenarios)
    by_cell: dict[tuple, list[int]] = {}
    for s in scenarios:
        by_cell.setdefault(s.cell, []).append(int(s.id.rsplit("-", 1)[1]))
    assert all(sorted(nums) == list(range(1, len(nums) + 1)) for nums in by_cell.values())


def test_every_line_is_valid_in_the_schema_and_sits_in_its_dimension_file(raw_lines):
    assert len(raw_lines) == 1298
    for path, line_no, line in raw_lines:
        record = json.loads(line)
        assert validate_record(record, line_no) == [], f"{path.name}:{line_no}"
        assert path.stem == f"{record['track']}_{record['dimension']}"
        assert set(schema.REQUIRED) <= set(record) <= set(schema.FIELDS) - {"provenance"}  # the default fills it


def test_bundled_scenarios_carry_honest_provenance(scenarios):
    assert {s.provenance for s in scenarios} == {schema.Provenance(**schema.BUNDLED_PROVENANCE)}
    assert scenarios[0].provenance.method == "authored" and "LLM-assisted" in scenarios[0].provenance.generator
    assert [s.id for s in scenarios] == sorted(s.id for s in scenarios)


def test_every_bundled_scenario_carries_a_review_and_a_plausibility_label(scenarios):
    """Needs issue 18's content work (a recorded review of every scenario)."""
    assert [s.id for s in scenarios if s.review is None or not s.review.reviewer] == []
    assert [s.id for s in scenarios if s.plausibility is None] == []


def test_length_40_to_180_words_and_ending_with_a_question(scenarios):
    for s in scenarios:
        assert 40 <= schema.word_count(s.template) <= 180, s.id
        assert s.template.endswith("?"), s.id
        assert schema.authoring_problems(s) == [], s.id


def test_placeholders_per_track(scenarios):
    for s in scenarios:
        names = set(PLACEHOLDER.findall(s.template))
        assert s.template.startswith("{ACTOR} ") and s.template.count("{ACTOR}") == 1, s.id
        if s.track == "public":
            assert names == {"{ACTOR}"} and s.relationship == "none", s.id
        else:
            assert names - {"{ACTOR}"} and names <= {f"{{{p}}}" for p in schema.PLACEHOLDERS}, s.id
            assert s.relationship in ("dating", "married"), s.id


@pytest.mark.parametrize("gender, words", [("male", AUTHORING_MALE), ("female", AUTHORING_FEMALE)])
def test_the_lexicon_knows_every_gendered_word_of_the_authoring_brief(gender, words):
    lexicon = MALE_WORDS if gender == "male" else FEMALE_WORDS
    assert set(words) <= lexicon
    for word in words:
        for form in (word, word.capitalize(), f"{word}'s"):
            assert gendered_words(f"I met my {form} today.", gender) == [form], form
    other = "female" if gender == "male" else "male"
    assert gendered_words(" ".join(words), other) == []


def test_lexicon_titles_only_count_capitalised_and_compounds_are_read_by_part():
    assert gendered_words("I did miss the 20 ms window.") == []
    assert gendered_words("Ms Smith and Miss Jones saw Mr Brown.") == ["Ms", "Miss", "Mr"]
    assert gendered_words("my ex-wife and my step-dad's car") == ["wife", "dad's"]
    assert gendered_words("my partner, their sibling, the officer, the server") == []


@pytest.mark.parametrize("gender", ["male", "female"])
def test_no_template_has_a_gendered_word_outside_its_placeholders(scenarios, gender):
    found = {s.id: gendered_words(BRACED.sub(" ", s.template), gender) for s in scenarios}
    assert {k: v for k, v in found.items() if v} == {}


def test_a_gendered_word_outside_placeholders_is_a_schema_error():
    record = {"id": "X-1", "track": "public", "dimension": "public_dispute", "severity": "L1", "style": "plain",
              "relationship": "none", "template": "{ACTOR} The cashier said he would call his manager. Why?"}
    problems = validate_record(record, 4)
    assert len(problems) == 1 and problems[0].startswith("line 4, field 'template': gendered word(s)")
    assert "he, his" in problems[0]


def test_max_within_cell_similarity_is_under_the_threshold(scenarios):
    worst = max_similarity_per_cell(scenarios)
    assert set(worst) == set(schema.cells())
    top = max(sim for sim, _, _ in worst.values())
    assert top < THRESHOLD, max(worst.items(), key=lambda kv: kv[1][0])
    assert 0.1 < top  # the measure sees shared wording at all (a 0.0 everywhere would be a broken measure)


def test_a_lightly_edited_copy_is_caught_as_a_near_duplicate(scenarios):
    cell = [s for s in scenarios if s.cell == ("public", "public_dispute", "L2", "plain")]
    source = cell[0].template
    edited = source.replace("neighbor", "roommate").replace("the ", "that ", 2)
    copy = Scenario(**{**cell[0].__dict__, "id": "PUB-DSP-L2-PLN-99", "template": edited})
    sim, a, b = max_similarity_per_cell(scenarios + [copy])[cell[0].cell]
    assert sim >= THRESHOLD and {a, b} == {cell[0].id, copy.id}
    texts = [s.template for s in cell] + [edited]
    assert near_duplicates(texts, THRESHOLD) == [(0, len(cell), pytest.approx(sim, abs=0.2))]
    assert near_duplicates([s.template for s in cell], THRESHOLD) == []
