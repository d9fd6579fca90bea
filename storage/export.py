"""Export a run's tables (results, prompts, attempts, responses) as Parquet and/or CSV via DuckDB COPY."""

from __future__ import annotations

from pathlib import Path

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
            where = "WHERE run = $run" if run else ""
            query = sql.format(where=where)
            for f in formats:
                path = out / f"{name}.{f}"
                options = "FORMAT parquet" if f == "parquet" else "FORMAT csv, HEADER true"
                conn.execute(f"COPY ({query}) TO '{_quote(path)}' ({options})", {"run": run} if run else {})
                written.append(path)
    finally:
        conn.close()
    return written


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
