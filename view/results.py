"""The results panel: each benchmark's report tables for the selected runs, built by the same code as
`fairsweep report` (so a cell here and a row of `report --format csv` come from the same ReportTable),
as display cells (JSON) and as CSV. Read only.
"""

from __future__ import annotations

import importlib

from ..benchmarks.report_html import SECTIONS
from ..benchmarks.report_tables import ReportTable, csv_text
from ..errors import FairsweepError

# benchmark -> "module:function(db, runs) -> list[ReportTable]"; every benchmark of the HTML report
TABLES = {
    "mrni": "fairsweep.view.results:mrni_tables",
    "mrni-likert": "fairsweep.view.results:likert_tables",
    "gama": "fairsweep.view.results:gama_tables",
}
TITLES = {"mrni": "MRNI-BB", "mrni-likert": "MRNI-BB Likert (mrni-likert)", "gama": "GAMA-Bench"}


def mrni_tables(db: str, runs: list[str] | None) -> list[ReportTable]:
    from ..benchmarks.mrni import report
    return report.tables(report.load(db, runs))


def likert_tables(db: str, runs: list[str] | None) -> list[ReportTable]:
    from ..benchmarks.mrni import likert_report
    overall, subscales = likert_report.fetch(db, runs)
    return likert_report.tables(likert_report.summary_rows(overall, subscales), subscales)


def gama_tables(db: str, runs: list[str] | None) -> list[ReportTable]:
    from ..benchmarks.gama import report_section
    return report_section.tables(report_section.load(db, runs))


def bench_tables(bench: str, db: str, runs: list[str] | None) -> list[ReportTable]:
    target = TABLES.get(bench)
    if target is None:
        raise KeyError(bench)
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(db, runs)


def present(db: str, runs: list[str]) -> list[str]:
    """The benchmarks with requests for these runs, in the report's order."""
    from ..benchmarks.report_html import present_benchmarks
    try:
        return present_benchmarks(db, runs)
    except FairsweepError:
        return []


def sections(db: str, runs: list[str]) -> list[dict]:
    """Per benchmark: its tables as display cells, or the one line saying why there are none yet."""
    out = []
    for bench in present(db, runs):
        try:
            tables = [table_json(t) for t in bench_tables(bench, db, runs)]
            out.append({"bench": bench, "title": TITLES.get(bench, bench), "tables": tables})
        except FairsweepError as exc:  # e.g. nothing labelled yet, or scores not computed
            out.append({"bench": bench, "title": TITLES.get(bench, bench), "tables": [], "message": str(exc)})
    return out


def table_json(table: ReportTable) -> dict:
    groups = [{"title": title, "rows": [[str(c) for c in table.cells(r)] for r in rows],
               "partial": [bool(table.partial(r)) for r in rows], "notes": list(table.notes(rows))}
              for title, rows in table.groups()] if table.rows else []
    return {"name": table.name, "title": table.title, "headers": list(table.headers), "groups": groups,
            "rows": len(table.rows), "collapsed": table.collapsed}


def table_csv(bench: str, name: str, db: str, runs: list[str]) -> str | None:
    """One table's CSV, exactly as `fairsweep report --format csv|html` writes it (None: no such table)."""
    if bench not in SECTIONS or bench not in TABLES:
        return None
    for table in bench_tables(bench, db, runs):
        if table.name == name:
            return csv_text(table)
    return None


def plots(bench: str, db: str, runs: list[str]) -> list:
    """The HTML report's plots of one benchmark (its section, drawn by matplotlib: seconds, not ms)."""
    from ..benchmarks.report_html import load_section
    if bench not in SECTIONS:
        return []
    try:
        return load_section(bench, db, runs).plots
    except FairsweepError:
        return []
