"""A prompt-set file -> validated items, one per row; every problem one line naming the row and the column.

JSONL is read line by line (so a problem names its line), CSV and Parquet through DuckDB (CSV as text: a
list cell is a JSON array, e.g. `["yes", "no"]`). Row numbers count data rows from 1 (a CSV's header is not
a row); a JSONL row is its line number.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import DataError

BASE_COLUMNS = ("id", "prompt", "messages", "system", "choices", "answer", "target", "group", "pair", "variant")
MAX_SHOWN = 20  # problems listed in the error; the count says how many more
CHOICE_PARSERS = frozenset({"choice", "letter", "option_text"})


@dataclass(frozen=True)
class Item:
    """One row: what is asked, what counts as right, how it is grouped and paired."""

    id: str
    row: int
    messages: tuple[dict, ...]
    choices: tuple[str, ...] | None = None
    answer: int | None = None  # index into choices
    target: str | float | None = None
    groups: tuple[str, ...] = ()
    pair: str | None = None
    variant: str | None = None
    meta: dict = field(default_factory=dict)


class Problems:
    """Collects one line per problem: `wino.jsonl row 3, column answer: ...: fix ...`."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines = path, []

    def add(self, row: int | None, column: str | None, text: str) -> None:
        where = ", ".join(p for p in ((f"row {row}" if row else ""), (f"column {column}" if column else "")) if p)
        self.lines.append(f"{where}: {text}" if where else text)

    def raise_any(self) -> None:
        if not self.lines:
            return
        shown = self.lines[:MAX_SHOWN]
        more = f"\n  ... and {len(self.lines) - MAX_SHOWN} more" if len(self.lines) > MAX_SHOWN else ""
        if len(self.lines) == 1:
            raise DataError(f"prompt set {self.path}, {shown[0]} (nothing was sent)")
        raise DataError(f"prompt set {self.path}: {len(self.lines)} problems (fix them; nothing was sent):"
                        + "".join(f"\n  {line}" for line in shown) + more)


def read_rows(path: Path, problems: Problems) -> list[tuple[int, dict]]:
    """(row number, raw row) of a .jsonl, .csv or .parquet file."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise DataError(f"prompt set file {path} not found: check path in [[sets]]")
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl_rows(path, problems)
    if suffix not in (".csv", ".parquet"):
        raise DataError(f"prompt set file {path}: unknown format {suffix or '(no suffix)'}: use .jsonl, .csv "
                        f"or .parquet")
    import duckdb
    reader = ("read_csv(?, all_varchar = true, header = true)" if suffix == ".csv" else "read_parquet(?)")
    try:
        cursor = duckdb.connect(":memory:").execute(f"SELECT * FROM {reader}", [str(path)])
        names = [d[0] for d in cursor.description]
        json_columns = {d[0] for d in cursor.description if str(d[1]) == "JSON"}  # mixed types in one column
        rows = [{k: (json.loads(v) if k in json_columns and isinstance(v, str) else v)
                 for k, v in zip(names, values)} for values in cursor.fetchall()]
    except duckdb.Error as exc:
        raise DataError(f"prompt set file {path} cannot be read as {suffix[1:]} ({str(exc).splitlines()[0]}): "
                        f"fix the file") from None
    if suffix == ".csv":  # an empty CSV cell is a missing value
        rows = [{k: (None if v == "" else v) for k, v in row.items()} for row in rows]
    return list(enumerate(rows, start=1))


def _jsonl_rows(path: Path, problems: Problems) -> list[tuple[int, dict]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataError(f"prompt set file {path} is not UTF-8 text: save it as UTF-8") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(number, None, f"not valid JSON ({exc.msg} at char {exc.pos}): fix the line")
            continue
        if not isinstance(row, dict):
            problems.add(number, None, "must be a JSON object ({\"id\": ..., \"prompt\": ...})")
            continue
        rows.append((number, row))
    return rows


def is_group_column(name: str) -> bool:
    return name == "group" or name.startswith("group_")


def check_columns(rows: list[tuple[int, dict]], problems: Problems) -> None:
    """Every column is a known one, a group_* one or a meta_* one; id and a prompt are there."""
    seen: dict[str, int] = {}
    for number, row in rows:
        for name in row:
            seen.setdefault(name, number)
    for name, number in seen.items():
        if name in BASE_COLUMNS or is_group_column(name) or name.startswith("meta_"):
            continue
        guess = difflib.get_close_matches(name, BASE_COLUMNS, n=1)
        hint = f'did you mean "{guess[0]}"? ' if guess else ""
        problems.add(number, name, f"unknown column: {hint}(known: {', '.join(BASE_COLUMNS)}, group_*; "
                                   f"prefix a column with meta_ to keep it as metadata)")


def _decoded(value: Any) -> Any:
    """A CSV cell holding a JSON array or object, decoded; anything else as it is."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _text(value: Any) -> str | None:
    """An id / pair / variant / group label as text (a whole number is fine), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer()):
        return str(int(value))
    return value if isinstance(value, str) and value.strip() else None


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", tuple: "a list", bool: "a boolean", str: "text",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
