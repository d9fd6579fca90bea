"""What the CLI prints: the end-of-run summary, `status`, and `query` results (rich tables)."""

from __future__ import annotations

import csv
import json
import shlex
import sys

from rich.console import Console
from rich.table import Table

from ..engine.runner import RunOutcome
from ..storage.batches import batch_rows, has_batches_table
from ..storage.db import open_db, open_readonly
from ..storage.readonly import run_readonly

# Wide when piped: tables are for reading, not for an 80-column default.
_out = Console(width=None if sys.stdout.isatty() else 200)
_err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def print_run_summary(outcome: RunOutcome, command: str) -> None:
    """One screen: per model what was stored, failed for good, or is still missing and why."""
    table = Table(title=f"run {outcome.run} ({outcome.db})")
    for col in ("model", "planned", "stored before", "from cache", "stored now", "failed (permanent)", "missing"):
        table.add_column(col, justify="right" if col != "model" else "left")
    for m in outcome.models:
        missing = m.missing if not outcome.interrupted else m.planned - m.already_done - m.cached - m.stored - m.failed
        table.add_row(m.name, str(m.planned), str(m.already_done), str(m.cached), str(m.stored), str(m.failed),
                      str(missing))
    _err.print(table)
    for line, style in summary_lines(outcome):
        _err.print(f"[{style}]{line}[/{style}]" if style else line, soft_wrap=True)  # one line each, never wrapped
    if outcome.batches_in_flight:
        run = outcome.stage_of or outcome.run
        _err.print(f"[yellow]{outcome.batches_in_flight} provider batch(es) still running: they keep going (and are "
                   f"paid for). The command below collects their answers; to cancel them instead:[/yellow]",
                   soft_wrap=True)
        print(f"  fairsweep batches cancel --db {shlex.quote(outcome.db)} --run {shlex.quote(run)}", file=sys.stderr)
    if outcome.interrupted:
        _err.print("[yellow]interrupted: everything that arrived is stored. Resume with:[/yellow]")
    elif not outcome.complete:
        _err.print("[yellow]incomplete: the missing requests are not stored. Resume with:[/yellow]")
    if not outcome.complete:
        print(f"  {command}", file=sys.stderr, flush=True)  # plain print: never wrapped, copy-pasteable


def summary_lines(outcome: RunOutcome) -> list[tuple[str, str]]:
    """(text, rich style) of each line under the table: drift, stops and their fix, what still fails."""
    lines = [(f"{w} (recorded in drift_events)", "bold red") for w in outcome.warnings]
    for m in outcome.models:
        if m.stopped:
            lines.append((f"{m.name}: stopped: {m.stopped} (its {m.missing} request(s) stay pending: fix the cause "
                          f"and run the same command)", "red"))
        if m.gave_up:
            lines.append((f"{m.name}: {m.gave_up} request(s) still failing after every retry "
                          f"(last errors: {', '.join(sorted(m.last_errors)) or 'n/a'})", "yellow"))
        if m.failed:
            lines.append((f"{m.name}: {m.failed} final failure(s) stored (see `fairsweep status`; send them again "
                          f"with --retry-failed [CLASS ...])", ""))
        if m.planned and not m.answered and not m.missing:
            lines.append((f"{m.name}: no answers at all, only failures: this run is not complete", "red"))
    return lines


def print_status(db: str, run: str | None) -> None:
    """Per run and model: done / total, failures, pending, retries, 429s, tokens, cost; then errors by class."""
    conn = open_db(db, read_only=True)
    try:
        where, params = ("WHERE run = ?", [run]) if run else ("", [])
        rows = conn.execute(f"SELECT * FROM run_status {where} ORDER BY run, model", params).fetchall()
        errors = conn.execute(f"SELECT run, model, outcome, error_class, n FROM attempt_errors {where} "
                              f"ORDER BY run, model, n DESC", params).fetchall()
        batches = batch_rows(conn, run, live_only=True) if has_batches_table(conn) else []
    finally:
        conn.close()
    table = Table(title=f"fairsweep status ({db})")
    for col in ("run", "model", "done / total", "failed", "pending", "retries", "429s", "tokens in/out", "cost $"):
        table.add_column(col, justify="left" if col in ("run", "model") else "right")
    for run_name, model, total, done, failed, pending, _attempts, retries, http_429, tin, tout, cost in rows:
        pct = f"{100 * done / total:.1f}%" if total else "-"
        table.add_row(run_name, model, f"{done} / {total} ({pct})", str(failed), str(pending), str(retries),
                      str(http_429), f"{tin or 0} / {tout or 0}", "unknown" if cost is None else f"{cost:.4f}")
    _out.print(table)
    if errors:
        err_table = Table(title="failed attempts by class")
        for col in ("run", "model", "outcome", "error_class", "n"):
            err_table.add_column(col)
        for row in errors:
            err_table.add_row(*(str(v) for v in row))
        _out.print(err_table)
    if batches:
        _out.print(batches_table(batches, "batches in flight"))


def batches_table(batches: list[tuple], title: str) -> Table:
    """Rows of storage.batches.batch_rows as a table."""
    table = Table(title=title)
    for col in ("run", "model", "api", "batch", "status", "provider status", "requests", "answered", "errors",
                "unprocessed", "priced by", "created", "ended"):
        table.add_column(col, justify="right" if col in ("requests", "answered", "errors", "unprocessed") else "left")
    for run, model, api, batch, status, provider, n, ok, errored, unfinished, price, created, ended, *_ in batches:
        table.add_row(run, model, api, batch, status, provider or "", str(n), *(
            "" if v is None else str(v) for v in (ok, errored, unfinished)), price or "unknown",
            f"{created:%Y-%m-%d %H:%M:%S}", "" if ended is None else f"{ended:%Y-%m-%d %H:%M:%S}")
    return table


def run_query(db: str, sql: str, fmt: str) -> None:
    """Print what `sql` reads from the DB; anything that is not a read is refused (storage/readonly.py)."""
    conn = open_readonly(db)
    try:
        cols, rows = run_readonly(conn, sql)
    finally:
        conn.close()
    if fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(cols)
        writer.writerows(rows)
    elif fmt == "json":
        print(json.dumps([dict(zip(cols, row)) for row in rows], default=str, ensure_ascii=False, indent=1))
    else:
        table = Table()
        for col in cols:
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*("NULL" if v is None else str(v) for v in row))
        _out.print(table)
