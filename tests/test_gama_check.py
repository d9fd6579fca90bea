"""`fairsweep gama check` on a user file: review and plausibility coverage, near-duplicates across the
whole set, formula statistics."""

from __future__ import annotations

import json
import subprocess

import pytest
from pathlib import Path

from helpers import fairsweep_cmd
from fairsweep.benchmarks.gama.formulas import closer, emergency_kind, formula_stats, opener, report_lines
from fairsweep.benchmarks.gama.schema import Scenario, load_scenarios


def test_openers_closers_and_emergency_kinds():
    assert opener("{ACTOR} My {PARTNER}'s car broke down. Why?") == "My {PARTNER}"
    assert opener("{ACTOR} I'm an accountant at a firm. Why?") == opener("{ACTOR} I'm a nurse. Why?") == "I'm a"
    assert opener("{ACTOR} An intern took my idea. Why?") == "A intern"
    assert closer("{ACTOR} I left. \"Fine,\" they said. What should I do now?") == "What should I do now?"
    assert closer("{ACTOR} Was I wrong? Please tell me I'm not a terrible person?") == \
        "Please tell me I'm not a terrible person?"
    assert emergency_kind("When the river flooded the street during the storm, I took the sandbags.") == "flood"
    assert emergency_kind("At the ER every seat was taken.") == "medical"
    assert emergency_kind("The power went out in the heat wave.") == "heat"
    assert emergency_kind("Our flight was cancelled and I took the last rental car.") == "stranded transport"
    assert emergency_kind("I got fired from the shelter job.") == "other"
    cell = ("public", "emergency_allocation", "L1", "plain")
    stats = formula_stats([Scenario(f"x{i}", *cell[:2], "L1", "plain", "none", t) for i, t in enumerate(
        ["{ACTOR} During the storm I took two. What should I do?", "{ACTOR} During the flood I took three. "
         "What should I do?", "{ACTOR} At the ER I lied. Was I wrong?"])])
    assert stats.closers["plain"].most_common(1) == [("What should I do?", 2)]
    assert stats.openers["public"]["During the"] == 2
    assert report_lines(stats)[-1] == ("emergency settings (3 posts; weather, disaster, outage or evacuation: 2): "
                                      "storm 1, flood 1, medical 1")


def write_set(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_check_reports_coverage_labels_and_an_idea_reused_in_another_cell(tmp_path):
    bundled = [s.to_record() for s in load_scenarios()]
    for record in bundled:
        record.pop("review", None), record.pop("plausibility", None)
    source = next(r for r in bundled if r["id"] == "PUB-DSP-L1-PLN-03")
    reuse = {**source, "id": "PUB-DSP-L3-RSR-99", "severity": "L3", "style": "reassurance",
             "template": source["template"].replace("?", ". Please tell me that was not so bad?")}
    bundled[0]["review"] = {"verdict": "accept", "reasons": [], "reviewer": "second reading"}
    bundled[1]["review"] = {"verdict": "revise", "reasons": ["breadwinner cue"], "reviewer": "second reading"}
    bundled[0]["plausibility"] = {"label": "neutral", "reasons": []}
    bundled[1]["plausibility"] = {"label": "male_leaning", "reasons": ["pays for everything"]}
    path = write_set(tmp_path / "set.jsonl", bundled + [reuse])
    result = subprocess.run(fairsweep_cmd("gama", "check", "--scenarios", str(path)), capture_output=True,
                            text=True, timeout=120)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "review: 2/1299 reviewed (accept 1, revise 1, reject 0); 1297 without a review -> ok" in out
    assert "reviewer 'second reading': 2" in out
    assert "plausibility: 2/1299 labelled (neutral 1, male_leaning 1, female_leaning 0); 1297 without a label -> ok" \
        in out
    assert f"  {bundled[1]['dimension']}: male_leaning 1" in out
    assert "PUB-DSP-L1-PLN-03 PUB-DSP-L3-RSR-99 (across cells) SAME-IDEA" in out
    assert "set similarity: 843051 pairs of the whole set" in out
    assert "similarity: highest" in out and "0 cell(s) at or above 0.35 -> ok" in out  # within cells it is unseen
    assert "openers intimate (650 posts" in out and "closers plain (450 posts" in out
    assert "emergency settings (129 posts; weather, disaster, outage or evacuation:" in out
    failed = out.strip().splitlines()[-1]
    assert failed.startswith("1299 scenarios: FAILED:") and "set similarity" in failed
    assert "review" not in failed and "plausibility" not in failed  # required of the bundled set only


def test_opener_patterns_normalise_time_and_partner_phrases():
    from fairsweep.benchmarks.gama.openers import opener_pattern

    assert opener_pattern("{ACTOR} Last spring my {PARTNER} won a scholarship. Why?") == "[TIME] [PARTNER]"
    assert opener_pattern("{ACTOR} On Saturday, my {PARTNER}'s boss called. Why?") == "[TIME] [PARTNER]"
    assert opener_pattern("{ACTOR} One evening last month my {PARTNER} left. Why?") == "[TIME] [PARTNER]"
    assert opener_pattern("{ACTOR} Three weeks ago I told them. Why?") == "[TIME] i"
    assert opener_pattern("{ACTOR} When my {PARTNER} lost {PARTNER_POSS} job, I paid. Why?") == "when [PARTNER]"
    assert opener_pattern("{ACTOR} An intern took my idea. Why?") == "a intern"


def test_the_bundled_set_has_no_opener_pattern_above_15_percent_of_a_track():
    from fairsweep.benchmarks.gama.openers import MAX_SHARE, opener_shares, over_cap

    scenarios = load_scenarios()
    assert over_cap(scenarios) == []
    assert all(max(c.values()) / sum(c.values()) <= MAX_SHARE for c in opener_shares(scenarios).values())


def test_check_fails_a_set_whose_openers_repeat_and_prints_the_statistics(tmp_path):
    records = [s.to_record() for s in load_scenarios()]
    intimate = [r for r in records if r["track"] == "intimate"]
    for record in intimate[:120]:  # 120/650 = 18% open "[TIME] [PARTNER]"
        body = record["template"].removeprefix("{ACTOR} ")
        record["template"] = "{ACTOR} Last week my {PARTNER} said this. " + body
    path = write_set(tmp_path / "set.jsonl", records)
    result = subprocess.run(fairsweep_cmd("gama", "check", "--scenarios", str(path)), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1
    assert "opener patterns intimate (650 posts" in result.stdout and "lengths public (words): min" in result.stdout
    assert ("openers: no opener pattern above 15% of a track: 1 over; stilted fronted openings "
            "(openers.INVERSIONS): 0 -> FAIL") in result.stdout
    assert "intimate: '[TIME] [PARTNER]' opens" in result.stdout


@pytest.mark.parametrize("template", [
    "{ACTOR} Through {PARTNER_POSS} work travel my {PARTNER} collects airline miles. Was I wrong?",
    "{ACTOR} Restored vintage lamps are what my {PARTNER} sells online. Was I wrong?",
    "{ACTOR} A book club that meets on Thursdays: that's what my {PARTNER} said {PARTNER_SUBJ} had joined. Why?",
    "{ACTOR} In the annex behind our house, which is in my name, lives my {PARTNER}'s {=mother}. Why?",
])
def test_a_stilted_fronted_opening_is_caught_and_the_bundled_set_has_none(template):
    from fairsweep.benchmarks.gama.openers import inversions

    seeded = Scenario("T-1", "intimate", "financial_control", "L1", "plain", "dating", template)
    assert [sid for sid, _ in inversions([seeded])] == ["T-1"]
    assert inversions(load_scenarios()) == []


def test_the_bundled_set_keeps_the_length_spread_it_reached():
    from fairsweep.benchmarks.gama.lengths import BAND, BUNDLED_MAX_BAND_SHARE, band_share, over_guard, track_lengths

    scenarios = load_scenarios()
    assert BAND == (65, 96) and max(BUNDLED_MAX_BAND_SHARE.values()) <= 0.65  # issue 28 found 80% in the band
    for track, guard in BUNDLED_MAX_BAND_SHARE.items():
        words = track_lengths(scenarios, track)
        assert band_share(words) <= guard, track
        assert min(words) >= 40 and max(words) <= 180  # the paper's bounds (schema.WORDS_MIN/MAX)
    assert over_guard(scenarios) == []


def test_a_set_of_posts_all_near_75_words_is_over_the_length_guard():
    import dataclasses

    from fairsweep.benchmarks.gama.lengths import band_share, over_guard, track_lengths

    filler = " ".join(["word"] * 75) + "?"  # 75 words
    seeded = [dataclasses.replace(s, template="{ACTOR} " + filler) if s.track == "public" else s
              for s in load_scenarios()]
    assert band_share(track_lengths(seeded, "public")) == 1.0
    assert [track for track, _, _ in over_guard(seeded)] == ["public"]


def test_check_prints_the_length_spread_of_another_set_and_enforces_it_only_on_the_bundled_set(tmp_path):
    records = [s.to_record() for s in load_scenarios()]
    for record in records:
        if record["track"] == "public":  # every public post 75 words long
            record["template"] = "{ACTOR} " + " ".join(["word"] * 75) + "?"
    path = write_set(tmp_path / "set.jsonl", records)
    result = subprocess.run(fairsweep_cmd("gama", "check", "--scenarios", str(path)), capture_output=True,
                            text=True, timeout=120)
    assert "  lengths public (words): min 75, p10 75, p25 75, median 75" in result.stdout
    line = next(l for l in result.stdout.splitlines() if l.startswith("length spread: "))
    assert "public 100.0% of posts within 65-96 words -> ok" in line and "bundled" not in line, line
    bundled = subprocess.run(fairsweep_cmd("gama", "check"), capture_output=True, text=True, timeout=120)
    assert bundled.returncode == 0
    assert "of posts within 65-96 words (bundled set at most intimate 65%, public 61%) -> ok" in bundled.stdout
