"""Report tables shared by the benchmarks' reports: rows read once from the SQL views, rendered as a
terminal table (rich), Markdown, CSV or HTML (benchmarks/report_html.py) from those same rows.

A ReportTable keeps the raw rows (CSV: every value as the view gives it, NULL as an empty cell) and
says how to display them (headers, cells, optional sub-tables and notes). A ReportSection is one
benchmark's part of a report: its tables, plots, header facts and warnings.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.table import Table


def _no_notes(rows: list[dict]) -> list[str]:
    return []


def _never(row: dict) -> bool:
    return False


@dataclass
class ReportTable:
    name: str                                  # CSV file stem, unique within a report
    title: str
    columns: tuple[str, ...]                   # CSV columns, raw values
    rows: list[dict]
    headers: tuple[str, ...]                   # display headers
    cells: Callable[[dict], list[str]]         # display cells of one row
    group: Callable[[dict], str] | None = None  # display one sub-table per distinct value, titled by it
    notes: Callable[[list[dict]], list[str]] = _no_notes  # lines under each (sub-)table
    partial: Callable[[dict], bool] = _never   # a row below full coverage (highlighted)
    collapsed: bool = False                    # HTML: folded (long detail tables)
    key_columns: int = 1                       # leading display columns repeated when a wide table is split
    # Terminal only: the display columns of each printed part (keys included); headers and columns must
    # then align (side_by_side's do), and a row with no value in a part's other columns is left out of it.
    terminal_parts: tuple[tuple[int, ...], ...] = ()

    def groups(self) -> list[tuple[str | None, list[dict]]]:
        """(sub-table title, its rows) in row order; one untitled group when the table is not split."""
        if self.group is None or not self.rows:
            return [(None, self.rows)]
        out: dict[str, list[dict]] = {}
        for row in self.rows:
            out.setdefault(self.group(row), []).append(row)
        return list(out.items())


@dataclass
class Plot:
    name: str          # PNG file stem, unique within a report
    title: str
    caption: str       # what is drawn, from which table
    png: bytes


@dataclass
class ReportSection:
    bench: str
    title: str
    tables: list[ReportTable] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)   # header lines: coverage, versions
    warnings: list[str] = field(default_factory=list)            # incomplete cells, unscored answers


def dicts(cursor) -> list[dict]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, row)) for row in cursor.fetchall()]


def num(value: Any, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def p_value(value: float | None) -> str:
    """A p-value: three decimals, scientific below 0.001."""
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


# ------------------------------------------------------------------------------------------ formats


def csv_text(table: ReportTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([["" if row.get(c) is None else row[c] for c in table.columns] for row in table.rows])
    return buffer.getvalue()


def write_csv(table: ReportTable, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{table.name}.csv"
    path.write_text(csv_text(table), encoding="utf-8")
    return path


def markdown(table: ReportTable) -> str:
    lines = [f"## {table.title}", ""]
    for title, rows in table.groups():
        if title:
            lines += [f"### {title}", ""]
        lines += ["| " + " | ".join(table.headers) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(table.headers) - 1)) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in table.cells(r)) + " |" for r in rows]
        lines += [""] + [f"{note}  " for note in table.notes(rows)] + [""]
    return "\n".join(lines)


# A terminal table wider than this is printed in parts of at most this many columns, each repeating the
# key columns: rich lays out every cell of a table at once, so 200 runs side by side (1,000+ columns)
# took minutes to print and could not be read anyway.
MAX_TERMINAL_COLUMNS = 16


def print_rich(table: ReportTable, console: Console) -> None:
    parts = table.terminal_parts or column_parts(len(table.headers), table.key_columns)
    for title, rows in table.groups():
        cells = [table.cells(row) for row in rows]
        for n, part in enumerate(parts, 1):
            name = f"{table.title} · {title}" if title else table.title
            shown = [(row, line) for row, line in zip(rows, cells) if _in_part(table, row, part)]
            if len(parts) > 1:
                if not shown:
                    continue
                name += f" · part {n} of {len(parts)}"
            grid = Table(title=name)
            for i in part:
                grid.add_column(table.headers[i], justify="left" if i == 0 else "right")
            for row, line in shown:
                grid.add_row(*(line[i] for i in part), style="yellow" if table.partial(row) else None)
            console.print(grid)
        for note in table.notes(rows):
            console.print(note, highlight=False, markup=False)
        console.print()


def _in_part(table: ReportTable, row: dict, part: tuple[int, ...] | list[int]) -> bool:
    if not table.terminal_parts:
        return True
    return any(row.get(table.columns[i]) is not None for i in part[table.key_columns:])


def column_parts(n: int, keys: int, width: int = MAX_TERMINAL_COLUMNS) -> list[list[int]]:
    """Column indices of each part: all of them when n <= width, else the keys plus the next values."""
    if n <= width:
        return [list(range(n))]
    step = max(width - keys, 1)
    return [list(range(keys)) + list(range(i, min(i + step, n))) for i in range(keys, n, step)]


def side_by_side(name: str, title: str, rows: Sequence[dict], keys: tuple[str, ...], values: tuple[str, ...],
                 fmt: Callable[[str, Any], str]) -> ReportTable | None:
    """Multi-run comparison: one row per `keys` (e.g. model, language, condition), and for each value
    column one column per run ("value:run"), runs and rows in the order they come. None with < 2 runs."""
    runs = list(dict.fromkeys(r["run"] for r in rows))
    if len(runs) < 2:
        return None
    wide: dict[tuple, dict] = {}
    for row in rows:
        line = wide.setdefault(tuple(row[k] for k in keys), {k: row[k] for k in keys})
        for value in values:
            line[f"{value}:{row['run']}"] = row[value]
    value_columns = tuple(f"{v}:{run}" for v in values for run in runs)
    ordered = list(wide.values())  # first appearance: the views' order (e.g. conditions in protocol order)
    # In the terminal: a few runs per table, each with only the rows those runs have.
    per_part = max(1, (MAX_TERMINAL_COLUMNS - len(keys)) // len(values))
    parts = tuple(tuple(range(len(keys))) + tuple(len(keys) + v * len(runs) + r for v in range(len(values))
                                                  for r in range(start, min(start + per_part, len(runs))))
                  for start in range(0, len(runs), per_part))
    return ReportTable(
        name=name, title=title, columns=(*keys, *value_columns),
        rows=[{c: line.get(c) for c in (*keys, *value_columns)} for line in ordered],
        headers=(*keys, *(f"{v} · {run}" for v in values for run in runs)), key_columns=len(keys),
        terminal_parts=parts if len(parts) > 1 else (),
        cells=lambda line: [str(line[k]) for k in keys] + [fmt(c.split(":", 1)[0], line[c]) for c in value_columns])
