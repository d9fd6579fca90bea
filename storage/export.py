"""Export a run's tables (results, prompts, attempts, responses) as Parquet and/or CSV via DuckDB COPY."""

from __future__ import annotations

from pathlib import Path

from .duck import duckdb

from .db import open_db

EXPORTS = {
    "results": "SELECT * FROM results {where}",
    "prompts": "SELECT DISTINCT p.* FROM prompts p JOIN requests r USING (benchmark, prompt_key, prompt_hash) {where}",
    "attempts": "SELECT a.*, r.run, r.model FROM attempts a JOIN requests r USING (request_id) {where}",
    "runs": "SELECT * FROM runs {where}",
}


def export_run(db: str, run: str | None, out_dir: str, fmt: str = "both") -> list[Path]:
    """Write each table once per format; returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    formats = ("parquet", "csv") if fmt == "both" else (fmt,)
    conn = open_db(db, read_only=True)
    written = []
    try:
        for name, sql in EXPORTS.items():
            query = sql.format(where="WHERE run = $run" if run else "")
            params = {"run": run} if run else {}
            # A DB a run is writing is read through the run, which never writes files: copy here.
            source = _local_copy(conn, query, params) if getattr(conn, "live", False) else conn
            for f in formats:
                path = out / f"{name}.{f}"
                options = "FORMAT parquet" if f == "parquet" else "FORMAT csv, HEADER true"
                if source is conn:
                    conn.execute(f"COPY ({query}) TO '{_quote(path)}' ({options})", params)
                else:
                    source.execute(f"COPY rows TO '{_quote(path)}' ({options})")
                written.append(path)
    finally:
        conn.close()
    return written


def _local_copy(conn, query: str, params: dict) -> duckdb.DuckDBPyConnection:
    """The query's rows in an in-memory DB of this process, as table `rows` with the same column types."""
    result = conn.execute(query, params)
    local = duckdb.connect()
    local.execute("CREATE TABLE rows (" + ", ".join(f'"{d[0]}" {d[1]}' for d in result.description) + ")")
    if rows := result.fetchall():
        columns = ", ".join(f"unnest(${i + 1})" for i in range(len(result.description)))
        local.execute(f"INSERT INTO rows SELECT {columns}", [list(col) for col in zip(*rows)])
    return local


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
