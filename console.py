"""What the CLI prints: the end-of-run summary, `status`, and `query` results (rich tables)."""

from __future__ import annotations

import csv
import json
import sys

from rich.console import Console
from rich.table import Table

from .engine.runner import RunOutcome
from .storage.db import open_db

_out = Console()
_err = Console(stderr=True)


def print_run_summary(outcome: RunOutcome, command: str) -> None:
    """One screen: per model what was stored, failed for good, or is still missing and why."""
    table = Table(title=f"run {outcome.run} ({outcome.db})")
    for col in ("model", "planned", "stored before", "stored now", "failed (permanent)", "missing"):
        table.add_column(col, justify="right" if col != "model" else "left")
    for m in outcome.models:
        table.add_row(m.name, str(m.planned), str(m.already_done), str(m.stored), str(m.failed),
                      str(m.missing if not outcome.interrupted else m.planned - m.already_done - m.stored - m.failed))
    _err.print(table)
    for m in outcome.models:
        if m.stopped:
            _err.print(f"[red]{m.name}: stopped: {m.stopped}[/red]")
        if m.gave_up:
            _err.print(f"[yellow]{m.name}: {m.gave_up} request(s) still failing after every retry "
                       f"(last errors: {', '.join(sorted(m.last_errors)) or 'n/a'})[/yellow]")
        if m.failed:
            _err.print(f"{m.name}: {m.failed} permanent failure(s) stored (see `fairsweep query \"SELECT * FROM "
                       f"attempt_errors\"`)")
    if outcome.interrupted:
        _err.print(f"[yellow]interrupted: everything that arrived is stored. Resume with:[/yellow]\n  {command}")
    elif not outcome.complete:
        _err.print(f"[yellow]incomplete: the missing requests are not stored. Resume with:[/yellow]\n  {command}")


def print_status(db: str, run: str | None) -> None:
    conn = open_db(db, read_only=True)
    try:
        where, params = ("WHERE run = ?", [run]) if run else ("", [])
        rows = conn.execute(f"SELECT * FROM run_status {where} ORDER BY run, model", params).fetchall()
        cols = [d[0] for d in conn.description]
        errors = conn.execute(f"SELECT run, model, outcome, error_class, n FROM attempt_errors {where} "
                              f"ORDER BY run, model, n DESC", params).fetchall()
    finally:
        conn.close()
    table = Table(title=f"fairsweep status ({db})")
    for col in cols:
        table.add_column(col)
    for row in rows:
        table.add_row(*("" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)) for v in row))
    _out.print(table)
    if errors:
        err_table = Table(title="failed attempts by class")
        for col in ("run", "model", "outcome", "error_class", "n"):
            err_table.add_column(col)
        for row in errors:
            err_table.add_row(*(str(v) for v in row))
        _out.print(err_table)


def run_query(db: str, sql: str, fmt: str) -> None:
    conn = open_db(db, read_only=True)
    try:
        cursor = conn.execute(sql)
        cols = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if cols else []
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
