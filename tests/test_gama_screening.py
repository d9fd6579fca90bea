"""The human screening kit of the scenario set: a blinded, stratified, seeded sample out to raters (one CSV
each), simulated raters fill it in, their answers come back: Fleiss' kappa (checked against a value worked
out by hand), the share rated "either", label vs majority, verdicts in the DB and in the review records."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from helpers import fairsweep_cmd, rows
from fairsweep.benchmarks.gama import stats
from fairsweep.benchmarks.gama.lexicon import gendered_words
from fairsweep.benchmarks.gama.schema import load_scenarios, third_party_words
from fairsweep.benchmarks.gama.screening_kit import Rating, agreement, blind_text, item_verdict, stratified_sample


def rating(item: str, rater: str, writer: str, realistic: bool = True, fits: bool = True) -> Rating:
    return Rating(item, rater, writer, realistic, fits, "")


def test_fleiss_kappa_matches_a_hand_computed_value():
    """4 items x 3 raters. Writer counts (man, woman, either): (0,0,3) (2,0,1) (0,1,2) (3,0,0).
    P_i = (sum n_ij^2 - 3) / 6 = 1, 1/3, 1/3, 1 -> P_bar = 2/3; p_j = 5/12, 1/12, 6/12 -> P_e = 62/144;
    kappa = (2/3 - 31/72) / (1 - 31/72) = 17/41. Realistic (yes, no): (3,0) (2,1) (0,3) (3,0): P_bar = 5/6,
    P_e = 4/9 + 1/9 = 5/9, kappa = (5/6 - 5/9) / (4/9) = 5/8. Severity: all yes, chance agreement 1 -> None."""
    answers = {"i1": ("either", "either", "either"), "i2": ("man", "man", "either"),
               "i3": ("woman", "either", "either"), "i4": ("man", "man", "man")}
    real = {"i1": (1, 1, 1), "i2": (1, 0, 1), "i3": (0, 0, 0), "i4": (1, 1, 1)}
    ratings = [rating(i, r, answers[i][k], bool(real[i][k])) for i in answers for k, r in enumerate("abc")]
    kappa = agreement(ratings, ["a", "b", "c"])
    assert kappa["writer"] == (4, pytest.approx(17 / 41))
    assert kappa["realistic"] == (4, pytest.approx(5 / 8))
    assert kappa["severity_fits"] == (4, None)


def test_an_item_verdict_names_what_the_raters_found():
    item = [rating("i", "a", "man"), rating("i", "b", "man", realistic=False), rating("i", "c", "either")]
    v = item_verdict("PUB-DSP-L3-PLN-02", "neutral", "L3", item)
    assert (v.writer_majority, v.label_agrees, v.verdict) == ("man", False, "revise")
    assert v.reasons == ("raters' majority: the writer is more plausibly a man (label neutral)",)
    assert item_verdict("X", "male_leaning", "L3", item).verdict == "accept"  # the label already says so
    unfit = [rating("i", r, "either", fits=False) for r in "ab"]
    assert item_verdict("X", "neutral", "L2", unfit).reasons == ("2/2 raters: severity does not fit L2",)


def test_the_blind_text_has_neither_the_narrators_nor_the_partners_gender():
    for s in load_scenarios():
        text = blind_text(s)
        assert not text.startswith("I am") and "{" not in text, s.id
        third = Counter(w.lower() for w in third_party_words(s.template))
        assert Counter(w.lower() for w in gendered_words(text)) == third, s.id


def test_the_sample_is_stratified_by_cell_and_seeded():
    scenarios = load_scenarios()
    sample = stratified_sample(scenarios, 180, seed=3)
    assert len(sample) == 180 and set(Counter(s.cell for s in sample).values()) == {2}
    assert [s.id for s in stratified_sample(scenarios, 180, seed=3)] == [s.id for s in sample]
    assert [s.id for s in stratified_sample(scenarios, 180, seed=4)] != [s.id for s in sample]


def simulated_answer(rater: str, post: str) -> dict[str, str]:
    """A simulated rater reads only the blinded post: a shared 'truth' from the text, with rater-specific
    disagreement on about one item in four (different items per rater)."""
    h = int(hashlib.sha256(post.encode()).hexdigest(), 16)
    writer = ("either", "either", "either", "man", "woman")[h % 5]
    realistic, fits = ("no" if h % 11 == 0 else "yes"), ("no" if h % 13 == 0 else "yes")
    if int(hashlib.sha256(f"{rater}|{post}".encode()).hexdigest(), 16) % 4 == 0:
        writer = {"either": "man", "man": "either", "woman": "either"}[writer]
        realistic = "no" if realistic == "yes" else "yes"
    return {"writer": writer, "realistic": realistic, "severity_fits": fits}


def fill(path: Path, rater: str) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        columns, items = reader.fieldnames, list(reader)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        for row in items:
            writer.writerow({**row, **simulated_answer(rater, row["post"])})


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(fairsweep_cmd(*args), capture_output=True, text=True, timeout=120)


def test_the_screening_kit_end_to_end_with_simulated_raters(tmp_path):
    kit, db = tmp_path / "kit", str(tmp_path / "screen.duckdb")
    exported = run("gama", "screening", "export", "--out", str(kit), "--raters", "ann,ben,cas", "--n", "90",
                   "--seed", "7")
    assert exported.returncode == 0, exported.stderr
    key = read_csv(kit / "key.csv")
    assert len(key) == 90 and len({r["scenario_id"][:14] for r in key}) == 90  # one item per condition cell
    sheets = {r: read_csv(kit / f"{r}.csv") for r in ("ann", "ben", "cas")}
    assert sorted(x["item_id"] for x in sheets["ann"]) == sorted(r["item_id"] for r in key)
    assert [x["item_id"] for x in sheets["ann"]] != [x["item_id"] for x in sheets["ben"]]  # own order each
    text = (kit / "ann.csv").read_text(encoding="utf-8")
    assert not any(r["scenario_id"] in text for r in key) and "I am a" not in text  # blind to id and gender
    for rater in sheets:
        fill(kit / f"{rater}.csv", rater)
    files = [str(kit / f"{r}.csv") for r in sheets]
    out = tmp_path / "screened.jsonl"
    imported = run("gama", "screening", "import", "--db", db, "--key", str(kit / "key.csv"), *files, "--out", str(out))
    assert imported.returncode == 0, imported.stderr

    # kappa over the stored ratings, counted in SQL, equals the printed value
    counts = rows(db, "SELECT count(*) FILTER (WHERE writer = 'man'), count(*) FILTER (WHERE writer = 'woman'), "
                      "count(*) FILTER (WHERE writer = 'either') FROM gama_screening_ratings GROUP BY item_id")
    assert len(counts) == 90 and all(sum(c) == 3 for c in counts)
    kappa = stats.fleiss_kappa([list(c) for c in counts])
    assert f"Fleiss' kappa writer: {kappa:.3f} over 90 items rated by every rater" in imported.stdout
    either = rows(db, "SELECT avg((writer = 'either')::INT) FROM gama_screening_ratings")[0][0]
    assert f"rated 'either' (writer): {100 * either:.1f}% of ratings" in imported.stdout
    assert "plausibility label vs the raters' majority writer:" in imported.stdout

    verdicts = dict(rows(db, "SELECT scenario_id, verdict FROM gama_screening_verdicts"))
    assert len(verdicts) == 90 and set(verdicts.values()) == {"accept", "revise"}
    screened = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert len(screened) == 1298
    for scenario_id, verdict in verdicts.items():
        review = screened[scenario_id]["review"]
        people = [r for r in review["reviewers"] if r["kind"] == "person"]
        assert [p["name"] for p in people] == ["ann", "ben", "cas"], scenario_id
        assert all(p["prompt_version"].startswith("gama-screening kit") and p["date"] for p in people)
        assert review["reasons"][-1].startswith("human screening G") and verdict in review["reasons"][-1]
        assert verdict == "accept" or review["verdict"] == "revise"
    assert load_scenarios(out)  # the file with the extended review records loads

    again = run("gama", "screening", "import", "--db", db, "--key", str(kit / "key.csv"), *files)
    assert again.returncode == 0 and rows(db, "SELECT count(*) FROM gama_screening_ratings") == [(270,)]


def test_bad_ratings_and_too_few_raters_get_one_clear_line(tmp_path):
    kit = tmp_path / "kit"
    assert run("gama", "screening", "export", "--out", str(kit), "--raters", "solo").returncode == 2
    assert run("gama", "screening", "export", "--out", str(kit), "--raters", "a,b", "--n", "9").returncode == 0
    fill(kit / "a.csv", "a")
    rows_b = read_csv(kit / "b.csv")
    rows_b[0].update(writer="", realistic="yes", severity_fits="no")  # half filled in: an error, not a skip
    with open(kit / "b.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, list(rows_b[0]))
        writer.writeheader()
        writer.writerows(rows_b)
    result = run("gama", "screening", "import", "--db", str(tmp_path / "x.duckdb"), "--key", str(kit / "key.csv"),
                 str(kit / "a.csv"), str(kit / "b.csv"))
    assert result.returncode == 2 and "b.csv:2: writer '' is not man, woman or either" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    only_one = run("gama", "screening", "import", "--db", str(tmp_path / "x.duckdb"), "--key", str(kit / "key.csv"),
                   str(kit / "a.csv"))
    assert only_one.returncode == 2 and "at least two" in only_one.stderr


def test_every_bundled_review_names_its_generator_and_every_reviewer():
    for s in load_scenarios():
        review = s.review
        assert review.generator is not None and review.generator.kind == "model" and review.generator.date, s.id
        assert {r.kind for r in review.reviewers} >= {"model", "script"}, s.id
        assert all(r.name and r.prompt_version and r.date for r in review.reviewers), s.id


def test_a_bad_reviewer_entry_is_named_with_its_line_and_field(tmp_path):
    from fairsweep.errors import DataError

    record = load_scenarios()[0].to_record()
    record["review"]["reviewers"] = [{"name": "ann", "kind": "robot", "prompt_version": "v1", "date": "yesterday"}]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_scenarios(path)
    assert "line 1, field 'review.reviewers[0].kind': 'robot' is not one of model, person, script" in str(err.value)
    assert "field 'review.reviewers[0].date': 'yesterday' is not an ISO date" in str(err.value)


def test_rows_a_rater_left_blank_are_skipped_and_agreement_uses_complete_items(tmp_path):
    from fairsweep.benchmarks.gama.screening_kit import export_kit, read_key, read_ratings

    export_kit(load_scenarios(), tmp_path, ["a", "b"], 10, seed=1)
    fill(tmp_path / "a.csv", "a")
    fill(tmp_path / "b.csv", "b")
    rows_b = read_csv(tmp_path / "b.csv")
    for row in rows_b[:3]:
        row.update(writer="", realistic="", severity_fits="")
    with open(tmp_path / "b.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, list(rows_b[0]))
        writer.writeheader()
        writer.writerows(rows_b)
    ratings = read_ratings([tmp_path / "a.csv", tmp_path / "b.csv"], read_key(tmp_path / "key.csv"))
    assert Counter(r.rater for r in ratings) == {"a": 10, "b": 7}
    assert agreement(ratings, ["a", "b"])["writer"][0] == 7


def test_the_first_name_gama_screening_still_works_and_says_the_new_form(tmp_path):
    result = run("gama-screening", "export", "--out", str(tmp_path / "kit"), "--raters", "a,b", "--n", "9")
    assert result.returncode == 0, result.stderr
    assert "`gama-screening` is now `fairsweep gama screening`" in result.stderr
