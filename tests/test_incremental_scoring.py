"""Scoring after a run is incremental: only answers without a label are parsed, and the statistics tables
are recomputed only for the (run, model) cells whose inputs changed; every other run and model keeps its
rows untouched (the same computed_at). Real DuckDB file, real MRNI-BB prompts, the real parser."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from fairsweep.benchmarks.mrni import stats
from fairsweep.benchmarks.mrni.parse import PARSER_VERSION
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.mrni.labels import store_labels
from fairsweep.benchmarks.mrni.score import score_run
from fairsweep.config import ModelSpec, SweepConfig
from fairsweep.engine.work import plan_items
from fairsweep.records import AttemptRow, ResponseRow
from fairsweep.storage.checkpoint import plan_requests, register_run
from fairsweep.storage.db import open_db
from fairsweep.storage.bulk import insert_rows

NOW = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)
TEXTS = {"disambiguated_ga": ["Person X.", "Person Y."], "disambiguated_gs": ["The woman.", "The man."],
         "ambiguous_ga": ["Insufficient information.", "Person Y."], "ambiguous_gs": ["The man.", "Not enough info."],
         "control_gs": ["I cannot answer that.", "The woman."]}
BOOT = 60


def specs(*names: str) -> tuple[ModelSpec, ...]:
    return tuple(ModelSpec(name=n, model=f"sim/{n}", api_base="http://127.0.0.1:9/v1") for n in names)


def answer(conn, items) -> None:
    """Store an answer for each item, through the writer's insert path."""
    attempts, responses = [], []
    for n, item in enumerate(items):
        aid = f"{item.request_id}-1"
        text = TEXTS[item.prompt.metadata["condition"]][n % 2]
        attempts.append(AttemptRow(aid, item.request_id, "s", 1, NOW, 10.0, "ok", None, 200, None, None, 5, 3))
        responses.append(ResponseRow(item.request_id, aid, text, "stop", 5, 3, None, item.model, None, 10.0, NOW))
    insert_rows(conn, "attempts", AttemptRow._fields, attempts)
    insert_rows(conn, "responses", ResponseRow._fields, responses)


def plan(conn, run: str, models: tuple[ModelSpec, ...], prompts) -> dict[str, list]:
    register_run(conn, SweepConfig(db="x", run=run, models=models), "test")
    items = {spec.name: plan_items(run, spec, prompts) for spec in models}
    plan_requests(conn, [i for found in items.values() for i in found])
    return items


def score(conn, run: str, **kw) -> dict:
    return score_run(conn, SweepConfig(db="x", run=run), n_boot=kw.pop("n_boot", BOOT), **kw)


def snapshot(conn) -> dict[str, list[tuple]]:
    """Every statistics row (with computed_at), every label (with scored_at), the scoring state."""
    return {table: conn.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
            for table in ("mrni_intervals", "mrni_binomial", "mrni_labels", "scoring_state")}


def cell(rows: list[tuple], run: str, model: str) -> list[tuple]:
    return [r for r in rows if r[0] == run and r[1] == model]


@pytest.fixture
def sweep(db_path, mrni_dir):
    """Run A: models a1 (every prompt answered) and a2 (the first 32 answered, 16 pending); run B: model b1
    (every prompt answered). 48 prompts = 3 item-scenario pairs. All scored once."""
    prompts = build_prompts(mrni_dir)[:48]
    conn = open_db(db_path)
    a = plan(conn, "A", specs("a1", "a2"), prompts)
    b = plan(conn, "B", specs("b1"), prompts)
    answer(conn, a["a1"] + a["a2"][:32] + b["b1"])
    assert score(conn, "A")["labelled"] == 80 and score(conn, "B")["labelled"] == 48
    yield conn, a, prompts
    conn.close()


def test_scoring_again_labels_nothing_and_rewrites_no_statistics(sweep):
    conn, _, _ = sweep
    before = snapshot(conn)
    assert {(r[1], r[2]) for r in before["scoring_state"]} == {("A", "a1"), ("A", "a2"), ("B", "b1")}
    counts = score(conn, "A")
    assert (counts["labelled"], counts["already labelled"], counts["models recomputed"],
            counts["models up to date"], counts["intervals"]) == (0, 80, 0, 2, 0)
    assert snapshot(conn) == before  # not one row rewritten, computed_at included


def test_new_answers_recompute_only_the_cells_they_belong_to(sweep):
    conn, a, _ = sweep
    before = snapshot(conn)
    answer(conn, a["a2"][32:])  # the rest of a2's answers arrive (a resume)
    counts = score(conn, "A")
    assert (counts["labelled"], counts["models recomputed"], counts["models up to date"]) == (16, 1, 1)
    after = snapshot(conn)
    for table in ("mrni_intervals", "mrni_binomial"):
        for run, model in (("A", "a1"), ("B", "b1")):  # untouched: the very same rows
            assert cell(after[table], run, model) == cell(before[table], run, model)
        assert cell(after[table], "A", "a2") != cell(before[table], "A", "a2")
    # 3 pairs: 12 prompts of disambiguated_ga in each model, all answered now
    assert dict(conn.execute("SELECT model, max(answered) FROM mrni_intervals WHERE run = 'A' GROUP BY model"
                             ).fetchall()) == {"a1": 12, "a2": 12}
    # the incremental rows are those a full recomputation gives
    incremental = conn.execute("SELECT * EXCLUDE (computed_at) FROM mrni_intervals WHERE run = 'A' ORDER BY ALL"
                               ).fetchall()
    stats.compute_statistics(conn, "A", n_boot=BOOT)
    assert conn.execute("SELECT * EXCLUDE (computed_at) FROM mrni_intervals WHERE run = 'A' ORDER BY ALL"
                        ).fetchall() == incremental


def test_a_larger_plan_or_other_settings_recompute_the_cells_they_change(sweep, mrni_dir):
    conn, _, prompts = sweep
    plan(conn, "B", specs("b1"), build_prompts(mrni_dir)[:64])  # B extended by one pair, not answered yet
    counts = score(conn, "B")
    assert (counts["labelled"], counts["models recomputed"]) == (0, 1)
    assert conn.execute("SELECT sum(expected) FROM mrni_binomial WHERE run = 'B'").fetchone()[0] == \
        conn.execute("SELECT count(*) FROM mrni_scored WHERE run = 'B' AND condition LIKE '%_gs'").fetchone()[0]
    assert score(conn, "B")["models recomputed"] == 0
    assert score(conn, "B", n_boot=BOOT + 1)["models recomputed"] == 1  # another bootstrap size
    assert conn.execute("SELECT DISTINCT n_boot FROM mrni_intervals WHERE run = 'B'").fetchall() == [(BOOT + 1,)]
    assert score(conn, "B", n_boot=BOOT + 1, seed=7)["models recomputed"] == 1  # another seed
    assert score(conn, "A")["models recomputed"] == 0


def test_labels_stored_without_their_statistics_are_caught_up(sweep):
    """A scorer that died between storing labels and computing statistics: the next scoring sees the
    labels' fingerprint changed and recomputes, although it labels nothing itself."""
    conn, a, _ = sweep
    answer(conn, a["a2"][32:])
    store_labels(conn, [(item.request_id, "U", None) for item in a["a2"][32:]])
    counts = score(conn, "A")
    assert (counts["labelled"], counts["models recomputed"]) == (0, 1)
    assert conn.execute("SELECT max(answered) FROM mrni_intervals WHERE run = 'A' AND model = 'a2'").fetchone() == (12,)


def test_a_new_parser_version_relabels_and_recomputes_once(sweep, monkeypatch):
    conn, _, _ = sweep
    from fairsweep.benchmarks.mrni import labels as labels_module
    monkeypatch.setattr(labels_module, "PARSER_VERSION", PARSER_VERSION + "-next")
    counts = score(conn, "A")
    assert (counts["labelled"], counts["already labelled"], counts["models recomputed"]) == (80, 0, 2)
    assert (score(conn, "A")["labelled"], score(conn, "A")["models recomputed"]) == (0, 0)


def test_answers_are_labelled_in_chunks_each_once_as_in_one(sweep, monkeypatch):
    """What a run left unlabelled is parsed LABEL_CHUNK answers at a time (never all held at once): the same
    labels as in one chunk, each answer once."""
    conn, _, _ = sweep
    from fairsweep.benchmarks.mrni import labels as labels_module, score as score_module
    labels_of = ("SELECT request_id, label, span FROM mrni_labels "
                 "WHERE request_id IN (SELECT request_id FROM requests WHERE run = 'A') ORDER BY ALL")
    in_one = conn.execute(labels_of).fetchall()
    stored, store = [], labels_module.store_labels
    monkeypatch.setattr(labels_module, "store_labels", lambda c, rows: stored.append(len(rows)) or store(c, rows))
    monkeypatch.setattr(labels_module, "PARSER_VERSION", PARSER_VERSION + "-next")
    monkeypatch.setattr(score_module, "LABEL_CHUNK", 7)  # 80 answers: 12 chunks, the last one short
    assert score(conn, "A")["labelled"] == 80
    assert stored == [7] * 11 + [3]
    assert conn.execute(labels_of).fetchall() == in_one
    assert conn.execute("SELECT count(*), count(DISTINCT request_id) FROM mrni_labels WHERE parser_version = ?",
                        [PARSER_VERSION + "-next"]).fetchone() == (80, 80)


def test_scoring_a_resume_that_added_nothing_does_not_import_scipy(sweep, db_path):
    """scipy (the binomial test) takes about a second to import; a resume with nothing new needs none of it."""
    conn, _, _ = sweep
    conn.close()
    code = ("import sys\nfrom fairsweep.benchmarks.mrni.score import score_run\nfrom fairsweep.config import "
            "SweepConfig\nfrom fairsweep.storage.db import open_db\n"
            f"conn = open_db({db_path!r})\ncounts = score_run(conn, SweepConfig(db='x', run='A'), n_boot={BOOT})\n"
            "print(counts['labelled'], counts['models recomputed'], 'scipy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0", "0", "False"], done.stderr
