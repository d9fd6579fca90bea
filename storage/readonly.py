"""SQL that only reads the results DB: `fairsweep query`, and any other path that runs a user's SQL.

Two guards, both used by `query`:
- `check_query(sql)` refuses, statement by statement and with DuckDB's own parser, anything but reads of
  the DB's tables, views and macros. It needs no settings of its own, so it also guards a cursor of a
  connection whose instance-wide settings are not ours to lock (e.g. the live reads of a running sweep).
- `db.open_readonly(db)` opens the file read-only with these GUARDS: no file system access beyond the DB,
  no extension installing or loading, no persistent secrets, and the configuration locked.
This module opens nothing itself (db.py and live.py use it; it uses neither).
"""

from __future__ import annotations

import json
from .duck import duckdb

from ..errors import QueryError

GUARDS = {
    "enable_external_access": False,  # no COPY TO, read_csv, ATTACH, replacement scans of files
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "allow_persistent_secrets": False,
    "lock_configuration": True,  # last word: none of the above can be SET back
}
ALLOWED = "SELECT, WITH, DESCRIBE, SUMMARIZE, SHOW, information_schema"
# Table functions that read only the catalog or generate values; every other one (read_csv, read_text,
# read_parquet, glob, query, json_execute_serialized_sql, ...) is refused.
TABLE_FUNCTIONS = frozenset({
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies", "duckdb_functions",
    "duckdb_indexes", "duckdb_keywords", "duckdb_schemas", "duckdb_sequences", "duckdb_tables", "duckdb_types",
    "duckdb_views", "duckdb_settings", "duckdb_memory", "generate_series", "range", "unnest", "repeat",
    "repeat_row", "json_each", "json_tree", "summary", "histogram", "histogram_values", "pg_timezone_names",
    "icu_calendar_names", "pragma_table_info", "pragma_show", "pragma_database_size", "pragma_storage_info",
    "pragma_version", "pragma_platform", "pragma_collations", "pragma_metadata_info", "pragma_user_agent",
})
# Scalar functions that change state or read the process environment (getenv exists in DuckDB's own CLI).
SCALAR_FUNCTIONS = frozenset({"getenv", "nextval", "setval", "setseed"})
PRAGMAS = frozenset({"table_info", "show_tables", "show_tables_expanded", "show_databases", "database_list",
                     "database_size", "storage_info", "version", "platform", "collations", "show",
                     "metadata_info", "user_agent", "functions"})
_REASONS = {  # statement type -> why it is refused and what to use instead
    "COPY": "writes files: use `fairsweep export` (Parquet/CSV) or `query --format csv|json` to stdout",
    "EXPORT": "writes files: use `fairsweep export` (Parquet/CSV)",
    "ATTACH": "opens another database: query reads only --db",
    "DETACH": "changes the attached databases: query reads only --db",
    "LOAD": "installs or loads an extension",
    "SET": "changes a setting",
    "VARIABLE_SET": "changes a setting",
    "EXPLAIN": "is not run by query (EXPLAIN ANALYZE executes its statement)",
}


def refuse(what: str) -> QueryError:
    what = "".join(c if c.isprintable() else " " for c in what)  # names from the SQL: keep the message one line
    return QueryError(f"query refused: {what}; `fairsweep query` only reads the DB ({ALLOWED})")


def check_query(sql: str, conn: duckdb.DuckDBPyConnection | None = None) -> None:
    """Raise QueryError unless every statement of `sql` only reads the DB. `conn` (any connection or
    cursor, only used to parse) saves opening a private in-memory one."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"the query does not parse ({_first_line(exc)}): fix the SQL") from None
    if not statements:
        raise QueryError("no SQL statement given: e.g. \"SELECT * FROM results LIMIT 5\"")
    for statement in statements:
        kind = statement.type.name
        if kind == "PRAGMA":
            _check_pragma(statement.query)
        elif kind == "SELECT":
            _check_tree(_serialize(statement.query, conn))
        else:
            raise refuse(f"a {kind} statement {_REASONS.get(kind, 'is not a read')}")


def _check_pragma(text: str) -> None:
    words = _words(text)  # DuckDB's tokenizer: comments are not words
    name = words[1].strip('"').lower() if len(words) > 1 and words[0].lower() == "pragma" else ""
    if name not in PRAGMAS or "=" in words:
        raise refuse(f"PRAGMA {name or '?'} is not a read (allowed: {', '.join(sorted(PRAGMAS))})")


def _words(text: str) -> list[str]:
    spans = duckdb.tokenize(text)
    ends = [start for start, _ in spans[1:]] + [len(text)]
    return [text[start:end].strip() for (start, kind), end in zip(spans, ends) if kind != duckdb.token_type.comment]


def _serialize(text: str, conn: duckdb.DuckDBPyConnection | None) -> dict:
    """DuckDB's own syntax tree of one SELECT statement."""
    if conn is None:
        with duckdb.connect(config=dict(GUARDS)) as private:
            return _serialize(text, private)
    try:
        tree = json.loads(conn.execute("SELECT json_serialize_sql($1)", [text]).fetchone()[0])
    except (duckdb.Error, RecursionError) as exc:
        raise QueryError(f"the query cannot be checked ({_first_line(exc)}): simplify it") from None
    if tree.get("error"):
        raise QueryError(f"the query cannot be checked ({tree.get('error_message', 'unknown')}): fix the SQL")
    return tree


def _check_tree(tree: dict) -> None:
    """Walk every node: table functions on the allow-list, no file names as tables, no stateful functions."""
    stack: list = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind == "TABLE_FUNCTION":
            name = str((node.get("function") or {}).get("function_name", "")).lower()
            if name not in TABLE_FUNCTIONS:
                raise refuse(f"the table function {name}() is not allowed (it can read files or run unchecked SQL)")
        elif kind in ("BASE_TABLE", "SHOW_REF") and _looks_like_a_file(str(node.get("table_name") or "")):
            raise refuse(f"{node['table_name']!r} names a file (a replacement scan), not a table of the DB")
        elif node.get("class") == "FUNCTION" and str(node.get("function_name", "")).lower() in SCALAR_FUNCTIONS:
            raise refuse(f"the function {node['function_name']}() is not a read")
        stack.extend(v for v in node.values() if isinstance(v, (dict, list)))


def _looks_like_a_file(name: str) -> bool:
    # Tables and views of the DB are plain identifiers; DuckDB turns 'x.csv', 'dir/x', 's3://...' into file scans.
    return any(ch in name for ch in "./\\:*?~")


def run_readonly(conn: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]]:
    """Check, then run `sql`: (column names, rows) of the last statement. QueryError on any failure."""
    check_query(sql, conn)
    try:
        cursor = conn.execute(sql)
        cols = [d[0] for d in cursor.description] if cursor.description else []
        return cols, (cursor.fetchall() if cols else [])
    except duckdb.Error as exc:
        raise QueryError(f"the query failed ({_first_line(exc)}): see the README's schema for tables and "
                         f"views") from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return "".join(c if c.isprintable() else " " for c in (lines[0] if lines else type(exc).__name__))[:300]
