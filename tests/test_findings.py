"""The end of `fairsweep run` on MRNI-BB: a findings table and a plain reading of it, from the same views as
`fairsweep report`, and the command that writes the full report."""

from __future__ import annotations

import json
import os
import subprocess

import duckdb

from helpers import fairsweep_cmd, rows
from fairsweep.benchmarks.mrni import chunks
from fairsweep.benchmarks.mrni.chunks import model_chunks
from fairsweep.benchmarks.mrni.findings import AMB, DIS, Finding, Score, load, reading
from fairsweep.benchmarks.mrni.stats import compute_statistics
from fairsweep.storage.db import open_db


def test_a_run_ends_with_its_findings_their_reading_and_the_report_command(sim, tmp_path, mrni_dir):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"default": "The man."}))  # every answer names the man: s = +1 everywhere
    server = sim("--answers", str(answers))
    db = str(tmp_path / "f.duckdb")
    run = subprocess.run(fairsweep_cmd("run", "--model", f"sim=sim-model@{server.base_url}", "--limit", "240",
                                       "--db", db, "--run", "first", "--no-progress"),
                         env={**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "MRNI-BB findings · run first" in out
    table_row = next(line for line in out.splitlines() if line.startswith("│ sim"))
    assert "+1.00 [+1.00,+1.00]" in table_row and "100% (240/240)" in table_row  # s_DIS and s_AMB, coverage
    (answered, pairs), = rows(db, "SELECT answered, n_pairs FROM mrni_condition_metrics "
                                  "WHERE run = 'first' AND condition = 'ambiguous_gs'")
    assert pairs >= 10
    assert (f"sim (EN): when the context does not say who, answers lean towards the man (the stereotyped answer), "
            f"s_AMB +1.00; its 95% interval excludes 0, from {answered} answers over {pairs} item-scenario pairs."
            in out)
    assert f"fairsweep report --db {db} --run first --format html --out report" in out


def finding(value, low, high, answers=120, pairs=30) -> Finding:
    score = Score(value, low, high, answers, pairs)
    return Finding("m", "it", score, score, 0.5, 0.9, 10, 10)


def test_the_reading_says_which_way_whether_the_interval_excludes_0_and_what_it_rests_on():
    assert "lean towards the woman (against the stereotype), s_AMB -0.20; its 95% interval excludes 0, from 120 " \
           "answers over 30 item-scenario pairs." in reading(finding(-0.2, -0.3, -0.1))
    assert "its 95% interval includes 0, so no clear lean" in reading(finding(0.1, -0.05, 0.2))
    assert "m (IT)" in reading(finding(0.1, -0.05, 0.2))
    assert "but it rests on only 8 answers over 4 item-scenario pairs: too few to conclude" \
        in reading(finding(0.5, 0.1, 0.9, answers=8, pairs=4))
    assert "cannot be computed: no answer in the ambiguous contexts named a person" in reading(finding(None, None, None))
    assert "none of its answers is in an ambiguous" in reading(finding(None, None, None, answers=0, pairs=0))
    assert "towards neither person" in reading(finding(0.0, -0.1, 0.1))


def test_the_findings_are_the_views_numbers_for_every_model_and_language_with_pending_requests(sim, tmp_path,
                                                                                                mrni_dir, monkeypatch):
    """load() reads the view once per run (the coverage from the same rows): each Finding must still be the
    views' s_DIS, s_AMB, accuracies and intervals of its cell, and its coverage summed over every condition,
    pending requests included."""
    answers = tmp_path / "answers.json"  # some answers name the woman, the rest the man: scores inside (-1, 1)
    answers.write_text(json.dumps({"rules": [{"contains": "football", "answer": "The woman."}], "default": "The man."}))
    server = sim("--answers", str(answers))
    db = str(tmp_path / "v.duckdb")
    run = subprocess.run(fairsweep_cmd("run", "--model", f"a=sim-model@{server.base_url}",
                                       "--model", f"b=sim-model@{server.base_url}", "--limit", "160",
                                       "--db", db, "--run", "v", "--no-progress"),
                         env={**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    conn = duckdb.connect(db)  # five more requests of b planned and never sent: its coverage drops below 100%
    conn.execute("INSERT INTO requests SELECT * REPLACE (request_id || '-pending' AS request_id, sample + 1 AS sample) "
                 "FROM requests WHERE run = 'v' AND model = 'b' ORDER BY request_id LIMIT 5")
    conn.close()
    expected_coverage = {(m, lang): (int(a), int(e)) for m, lang, a, e in rows(
        db, "SELECT model, language, sum(answered), sum(expected) FROM mrni_condition_metrics WHERE run = 'v' "
            "GROUP BY ALL")}
    cells = {(m, lang, c): rest for m, lang, c, *rest in rows(db, """
        SELECT m.model, m.language, m.condition, m.s_dis, m.s_amb, m.acc_strict, m.answered, m.n_pairs,
               i.ci_low, i.ci_high
        FROM mrni_condition_metrics m LEFT JOIN mrni_intervals i USING (run, model, language, condition)
        WHERE m.run = 'v' AND m.condition IN (?, ?)
          AND (i.metric IS NULL OR i.metric = CASE m.condition WHEN ? THEN 's_dis' ELSE 's_amb' END)""",
        [DIS, AMB, DIS])}
    found = load(db, "v")
    assert [(f.model, f.language) for f in found] == sorted(expected_coverage) == [("a", "en"), ("b", "en")]
    assert expected_coverage[("b", "en")][0] < expected_coverage[("b", "en")][1]  # the pending ones show
    for f in found:
        assert (f.answered, f.expected) == expected_coverage[(f.model, f.language)]
        s_dis, _, acc_dis, n_dis, pairs_dis, low_dis, high_dis = cells[(f.model, f.language, DIS)]
        _, s_amb, acc_amb, n_amb, pairs_amb, low_amb, high_amb = cells[(f.model, f.language, AMB)]
        assert f.s_dis == Score(s_dis, low_dis, high_dis, n_dis, pairs_dis)
        assert f.s_amb == Score(s_amb, low_amb, high_amb, n_amb, pairs_amb)
        assert (f.acc_dis, f.acc_amb) == (acc_dis, acc_amb)
    assert all(f.s_dis.low is not None for f in found)  # the intervals were joined

    # a few models per query (benchmarks/mrni/chunks.py): one model per query gives the same findings and statistics
    statistics = ("SELECT * EXCLUDE (computed_at) FROM mrni_intervals WHERE run = 'v' ORDER BY ALL",
                  "SELECT * EXCLUDE (computed_at) FROM mrni_binomial WHERE run = 'v' ORDER BY ALL")
    computed = []
    for size, grouped in ((10**9, [["a", "b"]]), (1, [["a"], ["b"]])):
        monkeypatch.setattr(chunks, "CHUNK_ANSWERS", size)
        conn = open_db(db)
        assert model_chunks(conn, "v") == grouped
        compute_statistics(conn, "v")
        conn.close()
        computed.append([rows(db, query) for query in statistics])
        assert load(db, "v") == found
    assert all(computed[0]) and computed[1] == computed[0]


def test_models_are_grouped_up_to_a_number_of_labelled_answers_and_a_large_model_alone(tmp_path, monkeypatch):
    conn = open_db(tmp_path / "c.duckdb")
    labelled = {"a": 10, "b": 10, "c": 30, "d": 5, "e": 15}
    for model, n in labelled.items():  # each model has 40 requests planned, n of them answered and labelled
        conn.execute("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, "
                     "params, ordinal) SELECT ? || range, 'r', ?, 'mrni', 'k' || range, 'h', 0, '{}', range "
                     "FROM range(40)", [model, model])
        conn.execute("INSERT INTO mrni_labels SELECT ? || range, 'U', NULL, 'v1', now() FROM range(?)", [model, n])
    conn.execute("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, params, "
                 "ordinal) VALUES ('other', 'r2', 'z', 'mrni', 'k', 'h', 0, '{}', 0), "
                 "('set', 'r', 'y', 'myset', 'k', 'h', 0, '{}', 0)")  # another run, another benchmark
    monkeypatch.setattr(chunks, "CHUNK_ANSWERS", 20)
    assert model_chunks(conn, "r") == [["a", "b"], ["c"], ["d", "e"]]
    assert model_chunks(conn, "r", ["e", "a", "c"]) == [["a"], ["c"], ["e"]]
    monkeypatch.setattr(chunks, "CHUNK_ANSWERS", 10**6)
    assert model_chunks(conn, "r") == [["a", "b", "c", "d", "e"]]
    assert model_chunks(conn, "missing") == []
    conn.close()
