"""`fairsweep view` over HTTP: the token (query or cookie, nothing else) or 403, loopback only unless
asked, GET only, fixed routes (no file outside them), the report's own CSV, and the DB never written."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import fairsweep_cmd
from report_data import build_report_db
from view_helpers import running_view


@pytest.fixture(scope="module")
def report_db(tmp_path_factory, mrni_dir) -> str:
    return build_report_db(tmp_path_factory.mktemp("view-db"), mrni_dir)["db"]


def get(view, path: str, *, cookie: str | None = None, method: str = "GET", host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", view.port, timeout=30)
    headers = {"Host": host or f"127.0.0.1:{view.port}"}
    if cookie is not None:
        headers["Cookie"] = f"fairsweep_view_{view.port}={cookie}"
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_without_the_right_token_every_request_gets_403(report_db):
    with running_view("--db", report_db) as view:
        assert view.base.startswith("http://127.0.0.1:") and len(view.token) >= 32
        for path in ("/", "/app.js", "/api/runs", "/api/live?run=A", "/api/results?run=A",
                     "/api/csv?bench=mrni&table=mrni_conditions&run=A", "/nothing", "/../../etc/passwd"):
            assert get(view, path)[0].status == 403, path
            assert get(view, path + ("&" if "?" in path else "?") + "token=wrong")[0].status == 403, path
            assert get(view, path, cookie="wrong")[0].status == 403, path
            assert get(view, path, cookie=view.token[:-1])[0].status == 403, path
        assert get(view, f"/api/runs?token={view.token.upper()}")[0].status == 403  # compared exactly
        response, _ = get(view, f"/?token={view.token}")  # the printed URL: a cookie, then the bare page
        assert response.status == 302 and response.getheader("Location") == "/"
        cookie = response.getheader("Set-Cookie")
        assert f"fairsweep_view_{view.port}={view.token}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        response, body = get(view, "/", cookie=view.token)
        assert response.status == 200 and b"<title>fairsweep view</title>" in body
        assert "default-src 'none'" in response.getheader("Content-Security-Policy")
        runs = json.loads(get(view, f"/api/runs?token={view.token}")[1])
        assert {r["run"] for r in runs["runs"]} >= {"A", "B"}


def test_a_foreign_host_header_other_methods_and_paths_outside_the_routes_are_refused(report_db):
    with running_view("--db", report_db) as view:
        assert get(view, "/", cookie=view.token, host=f"evil.example:{view.port}")[0].status == 403  # DNS rebinding
        assert get(view, "/", cookie=view.token, host=f"localhost:{view.port}")[0].status == 200
        for method in ("POST", "PUT", "DELETE"):
            assert get(view, "/api/runs", cookie=view.token, method=method)[0].status == 405
        for path in ("/../cli.py", "/static/page.html", "/%2e%2e/%2e%2e/etc/passwd", "/view/static/app.js",
                     "/app.js/../../cli.py", "/api/csv/../../cli.py"):
            response, body = get(view, path, cookie=view.token)
            assert response.status == 404 and b"import" not in body, path
        response, _ = get(view, "/api/csv?bench=mrni&table=../../cli&run=A", cookie=view.token)
        assert response.status == 404
        response, _ = get(view, "/api/csv?bench=../../etc&table=passwd&run=A", cookie=view.token)
        assert response.status == 404


def test_each_table_downloads_as_the_csv_report_writes_it(report_db, tmp_path):
    out = tmp_path / "csv"
    done = subprocess.run(fairsweep_cmd("report", "--db", report_db, "--run", "A", "--run", "B", "--bench", "mrni",
                                        "--format", "csv", "--out", str(out)), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    with running_view("--db", report_db) as view:
        sections = json.loads(get(view, "/api/results?run=A&run=B", cookie=view.token)[1])["sections"]
        mrni = next(s for s in sections if s["bench"] == "mrni")
        names = [t["name"] for t in mrni["tables"]]
        assert sorted(names) == sorted(p.stem for p in out.glob("*.csv")), names  # side by side included
        for name in names:
            response, body = get(view, f"/api/csv?bench=mrni&table={name}&run=A&run=B", cookie=view.token)
            assert response.status == 200 and response.getheader("Content-Type").startswith("text/csv")
            assert f'filename="{name}.csv"' in response.getheader("Content-Disposition")
            assert body.decode() == (out / f"{name}.csv").read_text(), name
    assert {s["bench"] for s in sections} == {"mrni", "mrni-likert", "gama"}


def test_the_view_never_writes_the_db_and_a_run_can_start_while_it_is_open(report_db, tmp_path):
    import duckdb

    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(Path(report_db).read_bytes())
    reads = ("/api/runs", "/api/live?run=A&run=B", "/api/results?run=A&run=B",
             "/api/csv?bench=mrni&table=mrni_conditions&run=A")
    with running_view("--db", str(copy)) as view:
        for _ in range(2):  # the file unchanged between two rounds of reads, and no WAL beside it
            before = (digest(str(copy)), os.stat(copy).st_mtime_ns)
            assert all(get(view, path, cookie=view.token)[0].status == 200 for path in reads)
            assert (digest(str(copy)), os.stat(copy).st_mtime_ns) == before
            assert not Path(f"{copy}.wal").exists()
            duckdb.connect(str(copy)).close()  # a writer gets in while the view is open: it holds no lock


def test_a_non_loopback_host_needs_the_flag_and_then_still_the_token(report_db):
    done = subprocess.run(fairsweep_cmd("view", "--db", report_db, "--host", "0.0.0.0"), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--allow-remote" in done.stderr, done.stderr
    assert done.stdout == ""
    with running_view("--db", report_db, "--host", "0.0.0.0", "--allow-remote") as view:
        assert get(view, "/api/runs")[0].status == 403
        assert get(view, "/api/runs", cookie=view.token)[0].status == 200


def test_bad_input_is_one_line_and_exit_2(tmp_path, report_db):
    missing = subprocess.run(fairsweep_cmd("view", "--db", str(tmp_path / "none.duckdb")), capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and missing.stderr.count("\n") == 1
    port = subprocess.run(fairsweep_cmd("view", "--db", report_db, "--port", "70000"), capture_output=True,
                          text=True, timeout=60)
    assert port.returncode == 2 and "--port 70000" in port.stderr and port.stderr.count("\n") == 1
    with running_view("--db", report_db) as view:  # the port is taken
        taken = subprocess.run(fairsweep_cmd("view", "--db", report_db, "--port", str(view.port)),
                               capture_output=True, text=True, timeout=60)
    assert taken.returncode == 2 and "another --port" in taken.stderr and taken.stderr.count("\n") == 1


def test_a_run_serves_its_in_process_state_on_the_live_socket(tmp_path):
    """What only the running process knows (pace, stops) reaches `view` through the live-read socket."""
    import duckdb

    from fairsweep.storage.live import LiveServer, connect_live, live_state

    db = tmp_path / "s.duckdb"
    conn = duckdb.connect(str(db))
    try:
        assert live_state(db) is None  # no run
        with LiveServer(conn, db, state=lambda: {"run": "r", "models": [{"name": "m", "pace": 1.5}]}):
            assert live_state(db) == {"run": "r", "models": [{"name": "m", "pace": 1.5}]}
        with LiveServer(conn, db):  # a run that serves no state
            assert live_state(db) is None
        with LiveServer(conn, db, state=lambda: 1 / 0):  # a failing snapshot answers None, the server lives on
            assert live_state(db) is None
            assert connect_live(db).execute("SELECT 42").fetchall() == [(42,)]
    finally:
        conn.close()


def test_a_writer_waits_for_a_reader_that_holds_the_free_file_a_moment(tmp_path):
    """A view (or `status`) reading the file between two phases of a run must not fail the run's next open."""
    import sys

    from fairsweep.storage.db import open_db

    db = tmp_path / "w.duckdb"
    open_db(db).close()
    reader = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\n"
                               f"c = duckdb.connect({str(db)!r}, read_only=True)\nprint('open', flush=True)\n"
                               "time.sleep(1.5)\nc.close()"], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "open"
        conn = open_db(db)  # locked by the reader for another ~1.5 s: waits, then opens
        conn.close()
    finally:
        reader.communicate(timeout=30)
    assert reader.returncode == 0


def test_spend_against_the_cap_and_the_stop_it_caused(sim, tmp_path, mrni_dir):
    from test_spend import config as spend_config
    from test_spend import run as spend_run

    server = sim()
    db = str(tmp_path / "cap.duckdb")
    capped = spend_run(spend_config(tmp_path / "cap.toml", db, server.base_url, max_cost=0.0004), mrni_dir,
                       "--limit", "200")
    assert "budget reached" in capped.stderr
    with running_view("--db", db) as view:
        live = json.loads(get(view, "/api/live?run=r1", cookie=view.token)[1])
    (model,) = live["runs"][0]["models"]
    assert model["model"] == "mini" and model["max_cost"] == 0.0004 and model["cost_usd"] >= 0.0004
    assert model["pending"] > 0 and model["stopped"].startswith("budget reached for model mini")
    assert live["runs"][0]["spent"] == model["cost_usd"] and not live["live"]


def test_final_failures_by_class(sim, tmp_path, mrni_dir):
    server = sim("--context-limit", "98")  # the longer prompts are refused for good: context_length
    db = tmp_path / "f.duckdb"
    (tmp_path / "f.toml").write_text("\n".join([f'db = "{db}"', 'run = "f"', 'benchmarks = ["mrni"]', "",
                                                "[[models]]", 'name = "sim"', 'model = "sim-model"',
                                                f'api_base = "{server.base_url}"', ""]))
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    done = subprocess.run(fairsweep_cmd("run", "--config", str(tmp_path / "f.toml"), "--limit", "40",
                                        "--no-progress"), env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode in (0, 1), done.stderr
    with running_view("--db", str(db)) as view:
        (model,) = json.loads(get(view, "/api/live?run=f", cookie=view.token)[1])["runs"][0]["models"]
    assert 0 < model["failed"] < 40 and model["failures"] == {"context_length": model["failed"]}, model


def test_batches_in_flight_while_a_batch_run_waits_for_its_provider(sim, tmp_path, mrni_dir):
    from test_batch import KEY, env, wait_for_batches
    from test_batch import write_config as batch_config

    server = sim("--api-key", KEY, "--batch-duration-s", "4")
    config = batch_config(tmp_path, server, "openai")
    run = subprocess.Popen(fairsweep_cmd("run", "--config", config, "--limit", "10", "--no-progress"),
                           env=env(mrni_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_batches(server, 1)
        with running_view("--config", config, env=env(mrni_dir)) as view:
            during = json.loads(get(view, "/api/live?run=batched", cookie=view.token)[1])
            run.wait(120)
            after = json.loads(get(view, "/api/live?run=batched", cookie=view.token)[1])
    finally:
        _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert during["live"] and during["runs"][0]["models"][0]["batches_in_flight"] == 1
    assert [b["status"] in ("preparing", "submitted") for b in during["runs"][0]["batches"]] == [True]
    assert not after["live"] and after["runs"][0]["models"][0]["batches_in_flight"] == 0
    assert after["runs"][0]["models"][0]["done"] == 10
