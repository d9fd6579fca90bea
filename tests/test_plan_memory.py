"""Memory that does not grow with the plan or its answers: the plan table (migration 0019) and the answer tables
(0020) without keyed indexes, each request planned and each answer stored once all the same, and DuckDB's memory
limit fitted to the indexes that remain (storage/memory.py)."""

from __future__ import annotations

import datetime as dt
import gc
import weakref

import duckdb
import pytest

from helpers import make_prompts, rows, sim_model, sweep
from fairsweep.engine.runner import run_sweep
from fairsweep.errors import DatabaseError, DataError, first_fixable
from fairsweep.records import AttemptRow, DriftRow
from fairsweep.storage import memory
from fairsweep.storage.db import open_db
from fairsweep.storage.migrations import apply_migrations
from fairsweep.storage.writer import RowWriter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
REQUEST = ("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, params, "
           "ordinal, cache_key) VALUES (?, 'r', 'm', 'toy', ?, 'h', 0, '{}', ?, ?)")


def requests_indexes(conn) -> int:
    return conn.execute("SELECT index_count FROM duckdb_tables() WHERE table_name = 'requests'").fetchone()[0]


def schema_at(db: str, last: int) -> duckdb.DuckDBPyConnection:
    """A DB whose schema stops at migration `last` (as an older fairsweep left it)."""
    conn = duckdb.connect(db)
    apply_migrations(conn, upto=last)
    return conn


def test_the_plan_table_of_an_older_db_loses_its_indexes_and_keeps_every_row_in_order(db_path):
    old = schema_at(db_path, 18)
    for i in range(300):
        old.execute(REQUEST, [f"id{i:04d}", f"p{i}", i, f"k{i % 7}" if i % 2 else None])
    assert requests_indexes(old) == 2  # the primary key and the cache-key index
    before = old.execute("SELECT * FROM requests").fetchall()
    old.close()
    conn = open_db(db_path)
    assert requests_indexes(conn) == 0
    assert conn.execute("SELECT * FROM requests").fetchall() == before
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] >= 19
    conn.execute(REQUEST, ["new", "p-new", 300, None])  # DEFAULT now() and NOT NULL kept
    assert conn.execute("SELECT count(*), min(planned_at) IS NOT NULL FROM requests").fetchone() == (301, True)
    assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == 301  # the views read the new table
    conn.close()


def test_the_same_prompt_twice_is_refused_before_anything_is_planned(server, db_path):
    prompts = make_prompts(5)
    config = sweep(db_path, [sim_model(server)])
    with pytest.raises(DataError, match=r"gives prompt 'p00003' twice.*own key"):
        run_sweep(config, [*prompts, prompts[3]], command="test", progress=False)
    conn = duckdb.connect(db_path, read_only=True)
    assert conn.execute("SELECT count(*) FROM requests").fetchone() == (0,)
    conn.close()


def test_a_run_plans_and_stores_each_request_once_with_no_key_to_drop_a_copy(server, db_path):
    config = sweep(db_path, [sim_model(server, "a"), sim_model(server, "b")])
    prompts = make_prompts(40)
    for _ in range(2):  # the second run resumes: it plans and stores nothing again
        assert run_sweep(config, prompts, command="test", progress=False).complete
    conn = duckdb.connect(db_path, read_only=True)
    for table, key in (("requests", "request_id"), ("responses", "request_id"), ("attempts", "attempt_id")):
        assert conn.execute(f"SELECT count(*), count(DISTINCT {key}) FROM {table}").fetchone() == (80, 80), table
    conn.close()


def attempt_rows(n: int, prefix: str) -> list[AttemptRow]:
    return [AttemptRow(f"{prefix}{i:08d}", f"r{prefix}{i}", "s", 1, NOW, 1.0, "ok", None, None, None, None, 1, 1)
            for i in range(n)]


def test_the_memory_limit_follows_the_keyed_rows(db_path):
    conn = open_db(db_path)
    empty = memory.fit_memory_limit(conn)
    assert memory.WORKING_BYTES <= empty < memory.WORKING_BYTES + 2**20
    conn.execute(keyed_labels(50_000))
    assert memory.fit_memory_limit(conn) >= empty + 50_000 * memory.KEY_BYTES
    limit = conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.endswith("MiB") and float(limit.split()[0]) * 2**20 >= empty + 50_000 * memory.KEY_BYTES - 2**20
    conn.close()


def test_a_db_whose_indexes_outgrow_the_working_margin_still_takes_answers(db_path, monkeypatch):
    """A fixed limit of the working margin alone fails once the indexes outgrow it; the fitted one does not."""
    conn = open_db(db_path)
    conn.execute(keyed_labels(200_000))
    conn.close()
    monkeypatch.setattr(memory, "WORKING_BYTES", 4 * 2**20)
    monkeypatch.setattr(memory, "REFIT_ROWS", 1000)

    fixed = open_db(db_path)
    fixed.execute("SET memory_limit = '4MB'")
    with pytest.raises(duckdb.OutOfMemoryException):
        fixed.execute(keyed_labels(5000, first=10**7))
    fixed.close()

    conn = open_db(db_path)
    memory.fit_memory_limit(conn)
    writer = RowWriter(conn, flush_rows=1000, flush_ms=60_000)
    for batch in range(5):
        writer.add(*attempt_rows(1000, f"w{batch}-"))
        writer.flush()
    writer.close()
    conn.execute(keyed_labels(5000, first=10**7))
    assert conn.execute("SELECT count(*) FROM attempts").fetchone() == (5000,)
    assert conn.execute("SELECT count(*) FROM promptset_labels").fetchone() == (205_000,)
    conn.close()


def test_a_run_whose_writes_run_out_of_memory_doubles_the_margin_and_stores_each_answer_once(
        server, tmp_path, monkeypatch, capsys):
    """A margin far too small: the plan's and the answers' writes run out, are rolled back, and done again with
    the margin doubled; without that (GROWTHS = 0) the run fails."""
    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    monkeypatch.setattr(memory, "PLANNED_WORKING_BYTES", 2**20)
    config = lambda name: sweep(str(tmp_path / f"{name}.duckdb"), [sim_model(server, "a"), sim_model(server, "b")])
    monkeypatch.setattr(memory, "_grown", 0)
    monkeypatch.setattr(memory, "GROWTHS", 0)
    with pytest.raises(DatabaseError, match="working margin of 1 MB: set FAIRSWEEP_DUCKDB_WORKING_MB higher"):
        run_sweep(config("fixed"), make_prompts(300), command="test", progress=False)

    monkeypatch.setattr(memory, "_grown", 0)
    monkeypatch.setattr(memory, "GROWTHS", 3)
    assert run_sweep(config("grown"), make_prompts(300), command="test", progress=False).complete
    assert memory.working_bytes() >= 2 * 2**20
    assert "ran out of memory in a write, done again with a working margin of" in capsys.readouterr().err
    for table, key in (("requests", "request_id"), ("responses", "request_id"), ("attempts", "attempt_id")):
        assert rows(str(tmp_path / "grown.duckdb"), f"SELECT count(*), count(DISTINCT {key}) FROM {table}") == \
            [(600, 600)], table


@pytest.mark.parametrize("growths", [0, 3])
def test_a_writer_batch_that_runs_out_of_memory_is_written_again_with_a_doubled_margin(tmp_path, monkeypatch,
                                                                                       growths):
    """5,000 keyed rows (drift events) in one batch run out of a 1 MB margin: the writer fails without the
    doubling (GROWTHS = 0), and with it stores each row once."""
    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    monkeypatch.setattr(memory, "GROWTHS", growths)
    conn = open_db(str(tmp_path / "w.duckdb"))
    memory.fit_memory_limit(conn)
    writer = RowWriter(conn, flush_rows=10**6, flush_ms=60_000)
    writer.add(*(DriftRow("r", "m", f"q{i}", "system_fingerprint", "a", f"b{i}", NOW) for i in range(5000)))
    if growths:
        writer.flush()
        writer.close()
        assert conn.execute("SELECT count(*), count(DISTINCT observed) FROM drift_events").fetchone() == (5000, 5000)
    else:
        with pytest.raises(DatabaseError, match="ran out of memory in a write with a working margin of 1 MB"):
            writer.flush()
    conn.close()


def test_a_write_that_still_runs_out_after_the_last_doubling_raises(db_path, monkeypatch):
    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    conn = open_db(db_path)
    calls = []

    def write():
        calls.append(memory.working_bytes())
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")

    with pytest.raises(DatabaseError, match=r"^DuckDB ran out of memory in a write with a working margin of 8 MB: "
                                            r"set FAIRSWEEP_DUCKDB_WORKING_MB higher$"):
        memory.retry_out_of_memory(conn, write)
    assert calls == [2**20, 2 * 2**20, 4 * 2**20, 8 * 2**20]  # GROWTHS = 3 doublings, then the error
    limit = conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.endswith("MiB") and 8 <= float(limit.split()[0]) < 10
    conn.close()


def read_short_at_first(db_path, monkeypatch):
    """A DB fitted to a 1 MB margin whose next read of the catalog for a fit (memory_limit_bytes) runs out of
    memory, as after a failed write at DuckDB's limit; the reads after it are real. Returns (conn, reads, fitted)."""
    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    conn = open_db(db_path)
    memory.fit_memory_limit(conn)
    fitted = memory.memory_limit_bytes
    reads = []

    def short_at_first(conn, *, new=False):
        reads.append(new)
        if len(reads) == 1:
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 4.0 KiB")
        return fitted(conn, new=new)

    monkeypatch.setattr(memory, "memory_limit_bytes", short_at_first)
    return conn, reads, fitted


def test_a_refit_that_runs_out_itself_raises_the_limit_first_and_the_write_is_done_again(db_path, monkeypatch):
    """After a failed write DuckDB can hold more than its limit for a moment, and the refit's read of the catalog
    then ran out too: that error escaped the retry (2 of 30 runs of this file, in the two-model run at a 1 MB
    margin). Now the limit is first raised by the growth without reading, then fitted."""
    conn, reads, fitted = read_short_at_first(db_path, monkeypatch)
    writes = []

    def write():
        writes.append(memory.working_bytes())
        if len(writes) == 1:
            raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")
        return "stored"

    assert memory.retry_out_of_memory(conn, write) == "stored"
    assert writes == [2**20, 2 * 2**20] and len(reads) == 2  # the refit read again once the limit was raised
    assert memory._fitted == fitted(conn) >= 2 * 2**20
    conn.close()


class FirstRollbackShort:
    """A real connection whose first ROLLBACK runs out of memory, as DuckDB's did when a failed write had left it
    at its limit (the rest is the connection's own)."""

    def __init__(self, conn):
        self.conn, self.rollbacks = conn, 0

    def execute(self, sql, *args):
        if sql == "ROLLBACK":
            self.rollbacks += 1
            if self.rollbacks == 1:
                raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 2.0 KiB")
        return self.conn.execute(sql, *args)

    def cursor(self):
        return self.conn.cursor()


def test_a_rollback_that_runs_out_raises_the_limit_and_leaves_no_transaction_open(db_path, monkeypatch):
    """The ROLLBACK after a failed write ran out of memory too (a run of two models at a 1 MB margin, 4 of 30
    runs of this file): the transaction stayed aborted and the retry died on "Current transaction is aborted".
    Now the limit is raised from another cursor and the ROLLBACK done again: nothing of the write is stored,
    and the connection takes the next statement."""
    from fairsweep.storage.tx import transaction

    monkeypatch.setattr(memory, "WORKING_BYTES", 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    conn = open_db(db_path)
    fitted = memory.fit_memory_limit(conn)
    proxy = FirstRollbackShort(conn)
    with pytest.raises(ValueError, match="a failed write"):
        with transaction(proxy):
            conn.execute(REQUEST, ["q1", "k1", 0, None])
            raise ValueError("a failed write")
    assert proxy.rollbacks == 2
    assert conn.execute("SELECT count(*) FROM requests").fetchone() == (0,)
    limit = conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert float(limit.split()[0]) * 2**20 >= fitted + 2**20  # raised by a margin to let the ROLLBACK through
    with transaction(conn):
        conn.execute(REQUEST, ["q2", "k2", 0, None])
    assert conn.execute("SELECT request_id FROM requests").fetchall() == [("q2",)]
    conn.close()


class SetsShortAtFirst(FirstRollbackShort):
    """A real connection whose first `short` SET statements run out of memory, as at DuckDB's limit a SET does
    while another thread's statement still holds what it took."""

    def __init__(self, conn, short):
        super().__init__(conn)
        self.sets, self.short = 0, short

    def execute(self, sql, *args):
        if sql.startswith("SET memory_limit"):
            self.sets += 1
            if self.sets <= self.short:
                raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 2.0 KiB")
        return self.conn.execute(sql, *args)


def test_a_refit_at_the_limit_raises_it_once_a_set_gets_through(db_path, monkeypatch):
    """Both the refit's read and the SETs that raise the limit run out at first (in the two-model run at a 1 MB
    margin the SET failed as well, 1 run in 40): the raise is tried again until one gets through, then fitted."""
    conn, _, fitted = read_short_at_first(db_path, monkeypatch)
    proxy = SetsShortAtFirst(conn, short=3)
    memory._refit_after_out_of_memory(proxy, 2**20)
    assert proxy.sets == 5  # three short, the raise, then the fit's own
    assert memory._fitted == fitted(conn)
    monkeypatch.setattr(memory, "RAISE_TRIES", 2)
    with pytest.raises(duckdb.OutOfMemoryException):  # never gets through: the error, not a hang
        memory._refit_after_out_of_memory(SetsShortAtFirst(conn, short=10), 2**20)
    conn.close()


def test_a_run_out_of_memory_after_the_last_doubling_is_one_line_at_the_command(server, tmp_path, mrni_dir,
                                                                                    monkeypatch, capsys):
    """Out of memory in a plan step taken in the event loop (the first, before it, fits in 3 MB): the planner's
    task fails, and the command says so in one line, naming the knob."""
    from fairsweep import cli

    monkeypatch.setattr(memory, "WORKING_BYTES", 3 * 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    monkeypatch.setattr(memory, "GROWTHS", 0)
    monkeypatch.setenv("FAIRSWEEP_PLAN_ROWS", "1")  # a first step of one request, then steps doubling to 1,024
    code = cli.main(["run", "--model", f"sim=sim-model@{server.base_url}", "--db", str(tmp_path / "x.duckdb"),
                     "--data-dir", str(mrni_dir), "--limit", "2000", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == ("fairsweep: error: DuckDB ran out of memory in a write with a working "
                                            "margin of 3 MB: set FAIRSWEEP_DUCKDB_WORKING_MB higher")
    assert "Traceback" not in err


def test_an_error_the_user_can_fix_is_found_inside_the_event_loops_task_groups():
    fixable = DatabaseError("DuckDB ran out of memory")
    nested = BaseExceptionGroup("tasks", [ValueError("other"), ExceptionGroup("inner", [KeyError("k"), fixable])])
    assert first_fixable(nested) is fixable
    assert first_fixable(fixable) is fixable
    assert first_fixable(ExceptionGroup("tasks", [ValueError("a"), KeyError("b")])) is None


def keyed_labels(n: int, first: int = 0) -> str:
    """SQL that adds n rows to a table that keeps its key by an index (a prompt set's labels)."""
    return ("INSERT INTO promptset_labels (request_id, benchmark, kind, label, parser_version, scored_at) "
            f"SELECT md5((range + {first})::VARCHAR), 'set', 'answer', 'x', 'v1', now() FROM range({n})")


ANSWER_TABLES = ("attempts", "responses", "mrni_labels")
ATTEMPT = ("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
           "VALUES (?, ?, 's', 1, ?, 'ok')")
RESPONSE = "INSERT INTO responses (request_id, attempt_id, text, received_at) VALUES (?, ?, ?, ?)"
LABEL = "INSERT INTO mrni_labels VALUES (?, ?, ?, 'v1', ?)"


def indexes(conn, table: str) -> int:
    return conn.execute("SELECT index_count FROM duckdb_tables() WHERE table_name = ?", [table]).fetchone()[0]


def test_the_answer_tables_of_an_older_db_lose_their_indexes_and_keep_every_row_and_check(db_path):
    old = schema_at(db_path, 19)
    for i in range(50):
        old.execute(ATTEMPT, [f"a{i}", f"r{i}", NOW])
        old.execute(RESPONSE, [f"r{i}", f"a{i}", f"answer {i} ünï", NOW])
        old.execute(LABEL, [f"r{i}", "MWXYURFO"[i % 8], None if i % 3 else "span", NOW])
    assert [indexes(old, t) for t in ANSWER_TABLES] == [1, 1, 1]
    before = {t: old.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in ANSWER_TABLES}
    old.close()
    conn = open_db(db_path)
    assert [indexes(conn, t) for t in ANSWER_TABLES] == [0, 0, 0]
    assert {t: conn.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in ANSWER_TABLES} == before
    with pytest.raises(duckdb.ConstraintException):  # NOT NULL kept
        conn.execute(RESPONSE, ["r-new", None, "x", NOW])
    with pytest.raises(duckdb.ConstraintException):  # the label's CHECK kept
        conn.execute(LABEL, ["r-new", "Q", None, NOW])
    assert conn.execute("SELECT count(*) FROM attempt_errors").fetchone() == (0,)  # the views read the new tables
    conn.close()


@pytest.mark.parametrize("columnar", [False, True])
def test_an_answer_table_without_an_index_keeps_the_first_row_of_each_key(db_path, monkeypatch, columnar):
    """insert_rows skips a key already stored or given earlier in the same call, as INSERT OR IGNORE did."""
    from fairsweep.records import ResponseRow
    from fairsweep.storage import bulk

    monkeypatch.setattr(bulk, "COLUMNAR_FROM", 1 if columnar else 10**6)
    conn = open_db(db_path)

    def response(i: int, text: str) -> ResponseRow:
        return ResponseRow(f"r{i}", f"a{i}", text, "stop", 1, 1, 0.0, "m", None, 1.0, NOW)

    bulk.insert_rows(conn, "responses", ResponseRow._fields, [response(i, "first") for i in range(0, 60, 2)])
    bulk.insert_rows(conn, "responses", ResponseRow._fields,
                     [response(i, "second") for i in range(60)] + [response(61, "third"), response(61, "fourth")])
    stored = dict(conn.execute("SELECT request_id, text FROM responses").fetchall())
    assert conn.execute("SELECT count(*) FROM responses").fetchone()[0] == len(stored) == 61
    assert stored == {**{f"r{i}": "second" for i in range(1, 60, 2)}, **{f"r{i}": "first" for i in range(0, 60, 2)},
                      "r61": "third"}
    conn.close()


def test_a_new_label_replaces_the_old_one_without_an_index(db_path):
    from fairsweep.benchmarks.mrni.labels import upsert_labels

    conn = open_db(db_path)
    upsert_labels(conn, [("r1", "M", "he"), ("r2", "W", "she")])
    upsert_labels(conn, [("r1", "U", None), ("r3", "X", "x"), ("r3", "Y", "y")])  # the last of r3 wins
    assert conn.execute("SELECT request_id, label, span FROM mrni_labels ORDER BY 1").fetchall() == \
        [("r1", "U", None), ("r2", "W", "she"), ("r3", "Y", "y")]
    conn.close()


def test_answers_written_pin_no_index_memory(db_path):
    """The writer's connection holds no index entry for the answers it stored (before 0020: ~70 bytes per key,
    two keys per answer, for as long as the connection lived)."""
    from fairsweep.records import ResponseRow

    conn = open_db(db_path)
    writer = RowWriter(conn, flush_rows=2000, flush_ms=60_000)
    for attempt in attempt_rows(20_000, "x"):
        writer.add(attempt, ResponseRow(attempt.request_id, attempt.attempt_id, "answer", "stop", 1, 1, 0.0, "m",
                                        None, 1.0, NOW))
    writer.close()
    assert conn.execute("SELECT count(*) FROM responses").fetchone() == (20_000,)
    pinned = conn.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
                          "WHERE tag = 'ART_INDEX'").fetchone()[0]
    assert pinned < 2**18, pinned
    conn.close()


def test_the_working_margin_is_a_knob_and_a_bad_value_is_refused_in_one_line(db_path, monkeypatch):
    from fairsweep.errors import ConfigError

    conn = open_db(db_path)
    monkeypatch.setenv("FAIRSWEEP_DUCKDB_WORKING_MB", "200")
    assert 200 * 2**20 <= memory.fit_memory_limit(conn) < 201 * 2**20
    monkeypatch.setenv("FAIRSWEEP_DUCKDB_WORKING_MB", "8")
    with pytest.raises(ConfigError, match=r"FAIRSWEEP_DUCKDB_WORKING_MB='8': expected a whole number from 32"):
        memory.fit_memory_limit(conn)
    conn.close()


def test_the_margin_is_smaller_once_the_plan_is_written_and_the_knob_sets_both(db_path, monkeypatch):
    conn = open_db(db_path)
    fit = lambda **phase: memory.fit_memory_limit(conn, **phase) // 2**20
    assert fit(planning=True) == memory.WORKING_BYTES // 2**20  # the migrations' keys: well under 1 MB
    assert fit() == memory.WORKING_BYTES // 2**20  # a refit (the writer's) keeps the phase
    assert fit(planning=False) == fit() == memory.PLANNED_WORKING_BYTES // 2**20 < memory.WORKING_BYTES // 2**20
    fit(planning=True)
    written = memory.plan_written(conn) // 2**20  # the indexes as last fitted: nothing read
    assert written == memory.PLANNED_WORKING_BYTES // 2**20 == fit()
    assert conn.execute("SELECT current_setting('memory_limit')").fetchone()[0] == f"{written + 1}.0 MiB"
    monkeypatch.setenv("FAIRSWEEP_DUCKDB_WORKING_MB", "200")
    assert fit(planning=True) == fit(planning=False) == 200
    conn.close()


@pytest.mark.parametrize("db_state", ["new", "planned"])
def test_a_run_plans_under_the_larger_margin_and_sends_the_rest_under_the_smaller(server, db_path, monkeypatch,
                                                                                     db_state):
    """A new DB (its first steps held while it opens) and a DB holding the whole plan already (every step
    empty): the open fits the planning margin, even after an earlier run in the process ended its plan, and the
    end of the plan fits the smaller one."""
    config = sweep(db_path, [sim_model(server, "a"), sim_model(server, "b")])
    if db_state == "planned":
        assert run_sweep(config, make_prompts(120), command="test", progress=False).complete
    fits = []

    def recorded(module: str, name: str) -> None:
        real = getattr(memory, name)

        def fit(conn, **kwargs):
            limit = real(conn, **kwargs)
            fits.append((name, memory.working_bytes(), limit // 2**20))
            return limit
        monkeypatch.setattr(f"fairsweep.engine.{module}.{name}", fit)

    recorded("opening", "fit_memory_limit")
    recorded("plan_stream", "plan_written")
    monkeypatch.setattr(memory, "_planning", False)  # as an earlier run in this process left it
    assert run_sweep(config, make_prompts(120), command="test", progress=False).complete
    mb = 2**20
    assert fits == [("fit_memory_limit", memory.WORKING_BYTES, memory.WORKING_BYTES // mb),
                    ("plan_written", memory.PLANNED_WORKING_BYTES, memory.PLANNED_WORKING_BYTES // mb)]
    assert memory.working_bytes() == memory.PLANNED_WORKING_BYTES  # for the rest: answers, scoring


def test_the_prompts_are_freed_before_the_scoring_and_the_findings(server, db_path, mrni_dir, monkeypatch):
    from fairsweep.benchmarks import pipeline
    from fairsweep.benchmarks.sampling import load_prompts

    config = sweep(db_path, [sim_model(server)], limit=40)
    prompts = load_prompts(config, str(mrni_dir))
    assert len(prompts) == 40
    refs = [weakref.ref(p) for p in prompts]  # this run's prompts, whatever other tests left alive
    alive = {}

    def counting(stage, real):
        def probe(*args):
            gc.collect()
            alive[stage] = sum(ref() is not None for ref in refs)
            return real(*args)
        return probe

    for stage in ("score_benchmarks", "show_findings"):
        monkeypatch.setattr(pipeline, stage, counting(stage, getattr(pipeline, stage)))
    outcomes = pipeline.run_pipeline(config, prompts, command="t", progress=False, report=lambda outcome: None)
    assert outcomes[0].complete and prompts == []
    assert alive == {"score_benchmarks": 0, "show_findings": 0}
    (labelled,), = rows(db_path, "SELECT count(*) FROM mrni_labels")
    assert labelled == 40  # scored and found from the stored rows alone


def test_rows_that_go_in_as_columns_and_run_out_of_memory_are_written_again(db_path, monkeypatch):
    """At COLUMNAR_FROM rows and more, rows go in through a registered view. Running out of memory there aborts
    the transaction; the view's unregister then failed too and its TransactionException replaced the Out of
    Memory error, so the write was not done again (a traceback through the planner's task: the million-request
    plan's first step at a 40 MB margin). Now it is, and each row is stored once."""
    from fairsweep.storage import bulk
    from fairsweep.storage.bulk import COLUMNAR_FROM, insert_rows
    from fairsweep.storage.tx import transaction

    monkeypatch.setattr(memory, "WORKING_BYTES", 4 * 2**20)
    monkeypatch.setattr(memory, "_grown", 0)
    conn = open_db(db_path)
    memory.fit_memory_limit(conn)
    filler = '"' + "x" * 1000 + '"'
    prompts = [("toy", f"p{i}", "h", "[]", filler) for i in range(2 * COLUMNAR_FROM)]  # ~4 MB of metadata

    def write() -> None:
        with transaction(conn):
            insert_rows(conn, "prompts", ("benchmark", "prompt_key", "prompt_hash", "messages", "metadata"), prompts)

    memory.retry_out_of_memory(conn, write)
    assert memory.working_bytes() > 4 * 2**20  # it did run out, and was done again with a larger margin
    assert conn.execute("SELECT count(*), count(DISTINCT prompt_key) FROM prompts").fetchone() == (len(prompts),) * 2
    assert bulk._left_registered == []  # the failed attempt's view (and its arrays) unregistered after its rollback
    left = "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '_fairsweep_rows_%'"
    assert conn.execute(left).fetchone() == (0,)
    conn.close()
