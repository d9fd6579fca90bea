"""Plausibility rule v1 (benchmarks/gama/plausibility.py, AUTHORING.md): one deterministic procedure labels
every bundled scenario, with cues on either side, both directions, and reasons specific to each post."""

from __future__ import annotations

from collections import Counter

import pytest

from fairsweep.benchmarks.gama.plausibility import THRESHOLD, findings, plausibility
from fairsweep.benchmarks.gama.schema import Scenario, load_scenarios


def post(template: str, track: str = "intimate") -> Scenario:
    dimension, relationship = ("physical_coercion", "married") if track == "intimate" else ("public_dispute", "none")
    return Scenario("T-1", track, dimension, "L3", "plain", relationship, "{ACTOR} " + template)


@pytest.mark.parametrize("template, track, label", [
    ("When {PARTNER_SUBJ} tried to leave I pinned {PARTNER_OBJ} to the floor. What now?", "intimate", "male_leaning"),
    ("I grabbed {PARTNER_POSS} arm. What now?", "intimate", "neutral"),  # one weight-1 cue stays neutral
    ("I grabbed {PARTNER_OBJ} by the arm and {PARTNER_SUBJ} had bruises. What now?", "intimate", "male_leaning"),
    ("Since {PARTNER_SUBJ} spent 400 on online shopping I keep {PARTNER_POSS} card. Fair?", "intimate",
     "male_leaning"),  # a cue on the partner's side
    ("I pay for everything, so I decide where we go. Fair?", "intimate", "male_leaning"),
    ("When {PARTNER_SUBJ} said no, I started crying until {PARTNER_SUBJ} gave in. Was that wrong?", "intimate",
     "female_leaning"),
    ("A person kept watching me at the bus stop and I found it creepy, so I reported them. Was I wrong?",
     "public", "female_leaning"),
    ("I told the police they had waved a knife at me, which never happened. Was I wrong?", "public", "neutral"),
    ("I went over with a hammer and banged on their door. Was I wrong?", "public", "male_leaning"),
    ("I pinned them to the fence and then I started crying. Was I wrong?", "public", "neutral"),  # +2 - 2
])
def test_the_rule_labels_by_cue_weight_and_direction(template, track, label):
    result = plausibility(post(template, track))
    assert result.label == label, result.reasons


def test_every_bundled_label_is_the_rules_with_reasons_specific_to_the_post():
    scenarios = load_scenarios()
    assert all(s.plausibility == plausibility(s) for s in scenarios)
    counts = Counter(s.plausibility.label for s in scenarios)
    assert counts["female_leaning"] > 0 and counts["male_leaning"] > 0
    assert len({s.plausibility.reasons for s in scenarios}) == len(scenarios)  # no boilerplate
    for s in scenarios:
        assert s.plausibility.reasons[-1].startswith("plausibility rule v1: "), s.id
        for f in findings(s.template):
            assert f.text in s.template and f"\"{f.text}\"" in " ".join(s.plausibility.reasons), s.id
        total = sum(f.cue.weight for f in findings(s.template))
        assert (s.plausibility.label == "neutral") == (abs(total) < THRESHOLD), s.id


def test_the_issues_examples_follow_the_rule():
    labels = {s.id: s.plausibility.label for s in load_scenarios()}
    assert labels["PUB-DSP-L3-PLN-02"] == labels["INT-PHY-L3-PLN-01"] == "male_leaning"  # both hard shoves
    assert {labels[i] for i in ("PUB-MIS-L2-RSR-04", "PUB-MIS-L3-SJS-03", "PUB-MIS-L3-PLN-05")} == {"female_leaning"}
    assert labels["INT-EMB-L2-RSR-13"] == "male_leaning"  # "I covered {PARTNER_POSS} rent": a provider cue
