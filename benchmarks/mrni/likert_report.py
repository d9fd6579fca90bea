"""`fairsweep report --bench mrni-likert`: per run x model x language, the overall mean, endorsement,
refusal and unparsed rates with coverage, and the mean of each subscale (views in storage/sql/21_*);
with several runs, a side-by-side table; html (benchmarks/report_html.py via `section`) adds the plot.
Every format renders the rows of `fetch`."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from ...errors import ConfigError, DatabaseError
from ...storage.db import open_db
from .. import plots
from ..report_tables import Plot, ReportSection, ReportTable, side_by_side

SUBSCALE_ORDER = ("RE", "AF", "NTSM", "D", "T", "IOS", "SRTMS")  # the MRNI-R order
SUMMARY_COLUMNS = ("run", "model", "language", "points", "n", "answered", "coverage", "mean", "endorsement",
                   "refusal", "unparsed", *SUBSCALE_ORDER)
DETAIL_COLUMNS = ("run", "model", "language", "points", "subscale", "n", "labelled", "answered", "refused",
                  "unparsed", "endorsed", "coverage", "mean_rating", "endorsement_rate", "refusal_rate",
                  "unparsed_rate")
NOTE = ("mean over ratings (1 = strongly disagree); endorsement = share of ratings above the scale midpoint "
        "(>= 5 of 7); refusal, unparsed = shares of labelled answers; coverage = ratings / planned requests; "
        "n/a = zero denominator. Items 10/33 and 11/24 (same text) count under their own subscales.")
_RATES = {"coverage", "endorsement", "refusal", "unparsed", "endorsement_rate", "refusal_rate", "unparsed_rate"}
SIDE_VALUES = ("coverage", "mean", "endorsement", "refusal")


def fetch(db: str, runs: list[str] | None) -> tuple[list[dict], list[dict]]:
    """(overall rows, subscale rows) as dicts, ordered by run, model, language, points."""
    conn = open_db(db, read_only=True)
    where, params = (f"WHERE run IN ({', '.join('?' * len(runs))})", list(runs)) if runs else ("", [])
    order = "ORDER BY run, model, language, points"
    try:
        overall = _dicts(conn.execute(f"SELECT * FROM mrni_likert_overall {where} {order}", params))
        subscales = _dicts(conn.execute(f"SELECT * FROM mrni_likert_subscales {where} {order}, subscale", params))
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no mrni-likert views yet: run `fairsweep score --bench mrni-likert "
                            f"--db {db}` once to add them") from None
    finally:
        conn.close()
    return overall, subscales


def _dicts(cursor) -> list[dict]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, row)) for row in cursor.fetchall()]


def summary_rows(overall: list[dict], subscales: list[dict]) -> list[dict]:
    """One wide row per run x model x language x scale: overall figures and every subscale mean."""
    means = {(r["run"], r["model"], r["language"], r["points"], r["subscale"]): r["mean_rating"] for r in subscales}
    rows = []
    for r in overall:
        key = (r["run"], r["model"], r["language"], r["points"])
        rows.append({"run": r["run"], "model": r["model"], "language": r["language"], "points": r["points"],
                     "n": r["n"], "answered": r["answered"], "coverage": r["coverage"], "mean": r["mean_rating"],
                     "endorsement": r["endorsement_rate"], "refusal": r["refusal_rate"],
                     "unparsed": r["unparsed_rate"], **{s: means.get((*key, s)) for s in SUBSCALE_ORDER}})
    return rows


def fmt_cell(column: str, value) -> str:
    """Rates as percentages, means with two decimals, NULL as n/a."""
    if value is None:
        return "n/a"
    if column in _RATES:
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def to_markdown(rows: list[dict], columns: tuple[str, ...]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt_cell(c.split(":", 1)[0], r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + f"\n\n{NOTE}\n"


def to_csv(rows: list[dict], columns: tuple[str, ...]) -> str:
    """Raw values (rates as fractions, NULL as empty) for further analysis."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def print_table(rows: list[dict], columns: tuple[str, ...] = SUMMARY_COLUMNS,
                title: str = "MRNI-R agreement probe (mrni-likert)") -> None:
    console = Console(width=None if sys.stdout.isatty() else 220)
    table = Table(title=title, caption=NOTE)
    for col in columns:
        table.add_column(col, justify="left" if col in ("run", "model", "language") else "right")
    for row in rows:
        table.add_row(*(fmt_cell(c.split(":", 1)[0], row[c]) for c in columns))
    console.print(table)


def report(db: str, runs: list[str] | None, fmt: str, out: str | None) -> None:
    """Table to stdout; md or csv to files in `out` (summary, per-subscale detail and, with several runs,
    the runs side by side), else to stdout; html to OUT/report.html."""
    if fmt == "html":
        from ..report_html import write_html_report
        print(write_html_report(db, runs, ["mrni-likert"], out))
        return
    if fmt not in ("table", "md", "csv"):
        raise ConfigError(f"mrni-likert reports as table, md, csv or html, not {fmt!r}: pass --format table|md|csv|html")
    overall, subscales = fetch(db, runs)
    rows = summary_rows(overall, subscales)
    if not rows:
        print(f"no mrni-likert requests in {db}" + (f" for run(s) {', '.join(runs)}" if runs else ""),
              file=sys.stderr)
    side = side_by_side_rows(rows)
    if fmt == "table":
        print_table(rows)
        if side:
            print_table(side.rows, side.columns, side.title)
        return
    render = to_markdown if fmt == "md" else to_csv
    files = [("summary", rows, SUMMARY_COLUMNS), ("subscales", subscales, DETAIL_COLUMNS)]
    files += [("runs_side_by_side", side.rows, side.columns)] if side else []
    if out is None:
        print(render(rows, SUMMARY_COLUMNS), end="")
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    for name, data, columns in files:
        path = Path(out) / f"mrni_likert_{name}.{fmt}"
        path.write_text(render(data, columns), encoding="utf-8")
        print(path)


def side_by_side_rows(rows: list[dict]) -> ReportTable | None:
    return side_by_side("mrni_likert_runs_side_by_side", "mrni-likert: runs side by side", rows,
                        ("model", "language", "points"), SIDE_VALUES, fmt_cell)


def tables(rows: list[dict], subscales: list[dict]) -> list[ReportTable]:
    """Summary (one row per run x model x language x scale), per-subscale detail, runs side by side."""
    out = [ReportTable("mrni_likert_summary", "MRNI-R agreement probe (mrni-likert)", SUMMARY_COLUMNS, rows,
                       SUMMARY_COLUMNS, lambda r: [fmt_cell(c, r[c]) for c in SUMMARY_COLUMNS],
                       notes=lambda _: [NOTE], partial=lambda r: (r["coverage"] or 0) < 1),
           ReportTable("mrni_likert_subscales", "mrni-likert per subscale", DETAIL_COLUMNS, subscales, DETAIL_COLUMNS,
                       lambda r: [fmt_cell(c, r[c]) for c in DETAIL_COLUMNS], partial=lambda r: (r["coverage"] or 0) < 1,
                       collapsed=True)]
    side = side_by_side_rows(rows)
    return out + ([side] if side else [])


_PARSERS_SQL = """SELECT DISTINCT parser_version FROM mrni_likert_scored
WHERE parser_version IS NOT NULL AND ($runs IS NULL OR list_contains($runs, run)) ORDER BY 1"""


def section(db: str, runs: list[str] | None) -> ReportSection:
    """The mrni-likert part of the HTML report."""
    overall, subscales = fetch(db, runs)
    rows = summary_rows(overall, subscales)
    conn = open_db(db, read_only=True)
    try:
        parsers = [r[0] for r in conn.execute(_PARSERS_SQL, {"runs": list(runs) if runs else None}).fetchall()]
    finally:
        conn.close()
    plot = Plot("mrni_likert_subscales", "Agreement with the MRNI-R statements per subscale",
                "Mean rating per subscale and over all 49 items, one bar per model and language; the dashed line is "
                "the scale midpoint (above it: agreement). † in the legend = coverage below 100% "
                "(table: mrni_likert_summary).", plots.likert_subscales(rows, SUBSCALE_ORDER))
    facts = [("coverage (ratings / planned requests)",
              "; ".join(f"run {r['run']} · {r['model']} · {r['language'].upper()}: {r['answered']}/{r['n']} "
                        f"({fmt_cell('coverage', r['coverage'])})" for r in rows) or "—"),
             ("rating parser", ", ".join(parsers) or "— (nothing scored yet)"),
             ("scale", ", ".join(sorted({f"{r['points']} points" for r in rows})) or "—")]
    warnings = [f"run {r['run']} · model {r['model']} · {r['language'].upper()}: coverage {fmt_cell('coverage', r['coverage'])} "
                f"({r['answered']} ratings of {r['n']} planned requests)" for r in rows if (r["coverage"] or 0) < 1]
    return ReportSection("mrni-likert", "MRNI-R agreement probe", tables(rows, subscales), [plot], facts, warnings)
