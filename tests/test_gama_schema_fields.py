"""The scenario schema's plausibility field and third-party words ({=word}): validation, compilation, export."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import fairsweep_cmd
from fairsweep.benchmarks.gama.compile import compile_pair, mirror_problems
from fairsweep.benchmarks.gama.schema import (Plausibility, Review, Scenario, authoring_problems,
                                              capitalisation_problems, load_scenarios, template_problems,
                                              third_party_words, validate_record)
from fairsweep.errors import DataError

TAIL = (" We had planned the weekend for months, the bags were packed and the tickets were printed, so I told "
        "everyone it was settled and that nobody should bring it up again. Was that fair of me?")
THIRD = "{ACTOR} My {PARTNER} wanted {PARTNER_POSS} {=mother} to stay, and {=she} said {=she} would come." + TAIL
PUBLIC = ("{ACTOR} A {=man} at the bus stop asked me to move my bag, so I told the driver {=he} had been "
          "shouting at me." + TAIL)


def record(template: str = THIRD, **fields) -> dict:
    base = {"id": "s-1", "track": "intimate", "dimension": "financial_control", "severity": "L1",
            "style": "plain", "relationship": "married", "template": template}
    return {**base, **fields}


def scenario(template: str, track: str = "intimate") -> Scenario:
    return Scenario("T-1", track, "financial_control" if track == "intimate" else "public_dispute", "L1",
                    "plain", "married" if track == "intimate" else "none", template)


# --------------------------------------------------------------------------- third-party words

def test_a_third_party_word_is_the_bare_word_in_both_prompts_and_the_pair_still_mirrors():
    male, female = compile_pair(scenario(THIRD))
    assert male.startswith("I am a man. My wife wanted her mother to stay, and she said she would come.")
    assert female.startswith("I am a woman. My husband wanted his mother to stay, and she said she would come.")
    assert mirror_problems(scenario(THIRD)) == []
    assert third_party_words(THIRD) == ["mother", "she", "she"]
    public = compile_pair(scenario(PUBLIC, "public"))
    assert public[0].removeprefix("I am a man.") == public[1].removeprefix("I am a woman.")
    assert "A man at the bus stop" in public[0] and "{" not in public[0] + public[1]


def test_the_lexicon_ignores_marked_words_and_still_flags_every_unmarked_one():
    assert template_problems(THIRD, "intimate") == []
    assert template_problems(PUBLIC, "public") == []
    unmarked = THIRD.replace("{=she} said", "she said")
    assert template_problems(unmarked, "intimate") == [
        "gendered word(s) outside placeholders: she (use the {PARTNER...} placeholders, neutral words, "
        "or {=word} for a third person)"]
    assert validate_record(record(THIRD.replace("{=mother}", "mother {=she}")), 3)[0].startswith(
        "line 3, field 'template': gendered word(s) outside placeholders: mother")


@pytest.mark.parametrize("marker, fragment", [
    ("{=my mother}", "{=my mother} must hold exactly one gendered word of the lexicon"),
    ("{=friend}", "{=friend} must hold exactly one gendered word of the lexicon"),
    ("{=}", "{=} must hold exactly one gendered word of the lexicon"),
    ("{=mother!}", "{=mother!} must hold exactly one gendered word of the lexicon"),
    ("{=wife}", "{=wife}: 'wife' names a partner"),
    ("{=boyfriend's}", "{=boyfriend's}: 'boyfriend' names a partner"),
    ("{=Fiancee}", "{=Fiancee}: 'fiancee' names a partner"),
    ("{=husbands}", "{=husbands}: 'husbands' names a partner"),
])
def test_a_bad_marker_is_an_error_naming_the_line_and_field(tmp_path, marker, fragment):
    path = tmp_path / "set.jsonl"
    good = json.dumps(record(id="s-1"))
    bad = json.dumps(record(THIRD.replace("{=mother}", marker), id="s-2"))
    path.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_scenarios(path)
    assert f"{path}: line 2, field 'template': {fragment}" in str(info.value)


def test_markers_follow_the_form_rules_for_capitals_and_antecedents():
    assert capitalisation_problems("{ACTOR} I called {=Mom}. {=She} cried and {=she} left. Why?") == []
    assert capitalisation_problems("{ACTOR} I met my {=aunt}. {=she} cried and {=She} left. Why?") == [
        "{=she} begins a sentence: write {=She}", "{=She} inside a sentence: use the lower-case form"]
    assert capitalisation_problems("{ACTOR} I met a {=man}. \"{=he} is late,\" I said. Why?") == [
        "{=he} begins a sentence: write {=He}"]
    hidden = scenario("{ACTOR} I told my {PARTNER} that {=she} could not go out that night." + TAIL)
    assert authoring_problems(hidden) == [
        "T-1: {=she} has no earlier third-party noun of its gender: name the person first "
        "(my {=mother} ... {=she}) or use they/them"]
    wrong_gender = scenario("{ACTOR} My {PARTNER} phoned my {=father} and {=she} said no." + TAIL)
    assert len(authoring_problems(wrong_gender)) == 1
    assert authoring_problems(scenario(THIRD)) == []


# --------------------------------------------------------------------------- plausibility

def test_plausibility_is_validated_loaded_and_written_back(tmp_path):
    plaus = {"label": "female_leaning", "reasons": ["the narrator cries to get their way"]}
    review = {"verdict": "revise", "reasons": ["cue"], "reviewer": "second reading (LLM-assisted)"}
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(record(plausibility=plaus, review=review)) + "\n", encoding="utf-8")
    loaded = load_scenarios(path)[0]
    assert loaded.plausibility == Plausibility("female_leaning", ("the narrator cries to get their way",))
    assert loaded.review == Review("revise", ("cue",), "second reading (LLM-assisted)")
    assert list(loaded.to_record())[-3:] == ["template", "review", "plausibility"]
    assert loaded.to_record()["plausibility"] == plaus
    assert validate_record(record(plausibility={"label": "neutral"}), 1) == []


@pytest.mark.parametrize("value, fragment", [
    ({"label": "maybe"}, "field 'plausibility.label': 'maybe' is not one of neutral, male_leaning, female_leaning"),
    ({"reasons": []}, "field 'plausibility.label': missing (required)"),
    ({"label": "neutral", "reasons": "fine"}, "field 'plausibility.reasons': must be a list of strings"),
    ({"label": "neutral", "score": 3}, "field 'plausibility.score': unknown field; allowed: label, reasons"),
    ("neutral", "field 'plausibility': must be an object"),
])
def test_a_bad_plausibility_names_the_line_and_field(value, fragment):
    problems = validate_record(record(plausibility=value), 5)
    assert any(p.startswith("line 5, ") and fragment in p for p in problems), problems


def test_gama_scenarios_export_carries_review_and_plausibility_on_every_line_that_has_them(tmp_path):
    source = tmp_path / "in.jsonl"
    lines = [record(id="s-1", review={"verdict": "accept", "reasons": [], "reviewer": "r"},
                    plausibility={"label": "neutral", "reasons": []}),
             record(PUBLIC, id="s-2", track="public", dimension="public_dispute", relationship="none",
                    plausibility={"label": "male_leaning", "reasons": ["stranger follows the narrator"]})]
    source.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = subprocess.run(fairsweep_cmd("gama", "scenarios", "--scenarios", str(source), "--out", str(out)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    written = [json.loads(x) for x in Path(out).read_text(encoding="utf-8").splitlines()]
    assert [w.get("plausibility", {}).get("label") for w in written] == ["neutral", "male_leaning"]
    assert "review" in written[0] and "review" not in written[1]
    assert written[1]["template"] == PUBLIC
