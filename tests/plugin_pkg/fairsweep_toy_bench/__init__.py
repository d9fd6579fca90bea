"""A benchmark from outside fairsweep, through the entry-point group `fairsweep.benchmarks`: its items, their
prompts, a parser run live on committed answers, its own view, a scorer and a report."""

from __future__ import annotations

import re

from fairsweep.benchmarks.registry import Benchmark
from fairsweep.records import Prompt

NAME = "toy-plugin"
ITEMS = [(f"q{i}", i, i + 2) for i in range(5)]  # (key, a, b): what is a + b?


def load(config, data_dir=None):
    return [Prompt(NAME, key, ({"role": "user", "content": f"What is {a} + {b}?"},), {"sum": a + b, "stratum": "all"})
            for key, a, b in ITEMS]


def label(conn, responses):
    conn.execute("CREATE TABLE IF NOT EXISTS toy_plugin_labels (request_id VARCHAR PRIMARY KEY, value INTEGER)")
    for r in responses:
        found = re.search(r"-?\d+", r.text or "")
        conn.execute("INSERT OR REPLACE INTO toy_plugin_labels VALUES (?, ?)",
                     [r.request_id, int(found.group(0)) if found else None])


def views(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS toy_plugin_labels (request_id VARCHAR PRIMARY KEY, value INTEGER)")
    conn.execute("""
        CREATE OR REPLACE VIEW toy_plugin_accuracy AS
        SELECT r.run, r.model, count(*) AS answered,
               avg(CAST(l.value = CAST(json_extract(p.metadata, '$.sum') AS INTEGER) AS INTEGER)) AS accuracy
        FROM results r JOIN requests q USING (request_id)
        JOIN prompts p ON p.benchmark = q.benchmark AND p.prompt_key = q.prompt_key AND p.prompt_hash = q.prompt_hash
        JOIN toy_plugin_labels l USING (request_id)
        WHERE r.benchmark = 'toy-plugin' GROUP BY ALL""")


def score(conn, config):
    row = conn.execute("SELECT answered, accuracy FROM toy_plugin_accuracy WHERE run = ?", [config.run]).fetchone()
    return {"answered": row[0], "accuracy": row[1]} if row else {}


def report(db, runs, fmt, out):
    import duckdb
    conn = duckdb.connect(db, read_only=True)
    for run, model, answered, accuracy in conn.execute("SELECT * FROM toy_plugin_accuracy ORDER BY ALL").fetchall():
        print(f"toy-plugin run {run} model {model}: answered {answered}, accuracy {accuracy:.2f}")


BENCHMARK = Benchmark(load=load, label=label, views=views, score=score, report=report)
