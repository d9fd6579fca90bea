"""`fairsweep report --bench gama`: the paper's layout — six metrics x (male, female, gap, p) — for each
run, model, track and judge (the lexicon scorer is the judge 'lexicon', Puni. and Ther. only), plus the
per-100-word counts, then judge robustness. Next to each gap: gap_neutral, the same gap over the
plausibility-neutral scenarios only, with its pairs and the pairs left out.

Reads the SQL views / statistics tables only (gama_report, gama_judge_agreement, gama_lexicon_agreement).
Formats: table (rich, stdout), md / html (a file in `out`), csv (`out`/gama_report.csv with CSV_COLUMNS,
one file per run when several runs are reported, and gama_report_detail.csv with every column).
"""

from __future__ import annotations

import csv
import html
import sys
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from ...errors import ConfigError, DatabaseError
from ...storage.db import open_db
from ..report_tables import num, p_value

CSV_COLUMNS = ("model", "judge", "track", "metric", "male", "female", "gap", "p", "gap_neutral", "pairs",
               "pairs_neutral", "pairs_left_out")
DETAIL_COLUMNS = ("run", "model", "judge", "track", "metric", "male", "female", "gap", "gap_neutral", "p", "p_holm",
                  "statistic", "rank_biserial", "n_nonzero", "method", "pairs", "expected", "coverage",
                  "pairs_neutral", "pairs_left_out")
HEADERS = ("metric", "male", "female", "gap (F−M)", "gap neutral", "p", "p (Holm)", "r_rb", "pairs / expected",
           "neutral pairs")
MARK = "†"
CAPTION = ("gap = mean over scenarios of (female-actor − male-actor); % metrics in percentage points; "
           "p: two-sided Wilcoxon signed-rank (zero differences dropped), Holm over the judge's "
           "model x track x six-metric grid; r_rb: matched-pairs rank-biserial; gap neutral: the same gap over "
           "the scenarios labelled plausibility-neutral only (unlabelled ones count as not neutral), with its "
           "pairs and the pairs left out")
MARK_NOTE = f"{MARK} coverage below 100%: means over the complete pairs only"
NEUTRAL_NOTE = ("neutral: the gap over the scenarios labelled plausibility-neutral only (an unlabelled scenario "
                "counts as not neutral); neutral pairs: their complete pairs, and the pairs left out")

_REPORT_SQL = """
SELECT * FROM gama_report WHERE $runs IS NULL OR list_contains($runs, run)
ORDER BY run, model, track, judge = 'lexicon', judge, metric_order
"""
_AGREEMENT_SQL = """
SELECT run, judge_a, judge_b, metric, n_cells, direction_agreement, pearson_r, mad FROM gama_judge_agreement
WHERE $runs IS NULL OR list_contains($runs, run)
ORDER BY run, judge_a, judge_b, metric <> 'all', metric
"""
_LEXICON_SQL = """
SELECT run, judge, metric, n_responses, pearson_r, mad, lexicon_version FROM gama_lexicon_agreement
WHERE $runs IS NULL OR list_contains($runs, run) ORDER BY run, judge, metric
"""


def report(db: str, runs: list[str] | None, fmt: str, out: str | None) -> None:
    """Print (table) or write (md, html, csv) the GAMA-Bench tables of the given runs (None = all)."""
    if fmt in ("md", "html", "csv") and not out:
        raise ConfigError(f"--format {fmt} writes files: pass --out DIR")
    rows, agreement, lexicon = _load(db, runs)
    if not rows:
        raise ConfigError(f"no scored GAMA-Bench results in {db}" + (f" for run(s) {', '.join(runs)}" if runs else "")
                          + ": run `fairsweep run --bench gama` with [[judges]], then `fairsweep score --bench gama`")
    if fmt == "csv":
        write_csv(Path(out), rows)
    elif fmt in ("md", "html"):
        path = Path(out)
        path.mkdir(parents=True, exist_ok=True)
        target = path / f"gama_report.{fmt}"
        text = markdown(rows, agreement, lexicon) if fmt == "md" else to_html(rows, agreement, lexicon)
        target.write_text(text, encoding="utf-8")
        print(target)
    else:
        print_tables(rows, agreement, lexicon)


def _load(db: str, runs: list[str] | None) -> tuple[list[dict], list[dict], list[dict]]:
    conn = open_db(db, read_only=True)
    try:
        params = {"runs": list(runs) if runs else None}
        return (_dicts(conn.execute(_REPORT_SQL, params)), _dicts(conn.execute(_AGREEMENT_SQL, params)),
                _dicts(conn.execute(_LEXICON_SQL, params)))
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no GAMA-Bench views yet: run `fairsweep score --db {db} --bench gama`"
                            ) from None
    finally:
        conn.close()


def _dicts(cursor) -> list[dict]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, row)) for row in cursor.fetchall()]


def sections(rows: list[dict]) -> dict[tuple, list[dict]]:
    """(run, model, track, judge) -> its metric rows, in report order."""
    out: dict[tuple, list[dict]] = {}
    for row in rows:
        out.setdefault((row["run"], row["model"], row["track"], row["judge"]), []).append(row)
    return out


def _num(value: float | None, signed: bool = False) -> str:
    return num(value, digits=2, signed=signed)


_p = p_value


def row_cells(row: dict) -> list[str]:
    partial = row["coverage"] is None or row["coverage"] < 1
    cover = f"{row['pairs']} / {row['expected']}" + (f" {MARK}" if partial else "")
    return [row["label"], _num(row["male"]), _num(row["female"]), _num(row["gap"], signed=True),
            _num(row["gap_neutral"], signed=True), _p(row["p"]), _p(row["p_holm"]),
            _num(row["rank_biserial"], signed=True), cover, neutral_cell(row)]


def neutral_cell(row: dict) -> str:
    """The neutral pairs and the pairs left out of gap neutral."""
    return f"{row['pairs_neutral']} ({row['pairs_left_out']} left out)"


def _title(key: tuple) -> str:
    run, model, track, judge = key
    return f"GAMA-Bench · run {run} · model {model} · track {track} · judge {judge}"


def agreement_cells(row: dict) -> list[str]:
    direction = "—" if row["direction_agreement"] is None else f"{100 * row['direction_agreement']:.1f}%"
    return [row["run"], f"{row['judge_a']} vs {row['judge_b']}", row["metric"], str(row["n_cells"]), direction,
            _num(row["pearson_r"]), _num(row["mad"])]


AGREEMENT_HEADERS = ("run", "judges", "metric", "cells", "direction agreement", "Pearson r", "MAD")
LEXICON_HEADERS = ("run", "judge", "metric", "responses", "Pearson r (counts)", "MAD (counts)", "lexicon")
ROBUSTNESS_TITLE = "Judge robustness (gaps over model x track x metric cells)"
LEXICON_TITLE = "Lexicon scorer vs judge (counts, response by response)"


def lexicon_cells(row: dict) -> list[str]:
    return [row["run"], row["judge"], row["metric"], str(row["n_responses"]), _num(row["pearson_r"]),
            _num(row["mad"]), row["lexicon_version"]]


def extra_tables(agreement: list[dict], lexicon: list[dict]) -> list[tuple[str, tuple, list[list[str]]]]:
    """(title, headers, rows) of the robustness tables that have rows."""
    tables = [(ROBUSTNESS_TITLE, AGREEMENT_HEADERS, [agreement_cells(r) for r in agreement]),
              (LEXICON_TITLE, LEXICON_HEADERS, [lexicon_cells(r) for r in lexicon])]
    return [t for t in tables if t[2]]


def print_tables(rows: list[dict], agreement: list[dict], lexicon: list[dict]) -> None:
    console = Console(width=None if sys.stdout.isatty() else 200)
    for key, metric_rows in sections(rows).items():
        table = Table(title=_title(key))
        for i, header in enumerate(HEADERS):
            table.add_column(header, justify="left" if i == 0 else "right")
        for row in metric_rows:
            table.add_row(*row_cells(row))
        console.print(table)
    console.print(CAPTION, highlight=False, markup=False)
    console.print(MARK_NOTE, highlight=False, markup=False)
    for title, headers, body in extra_tables(agreement, lexicon):
        table = Table(title=title)
        for header in headers:
            table.add_column(header)
        for cells in body:
            table.add_row(*cells)
        console.print(table)


def _md_table(headers, body) -> list[str]:
    return (["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
            + ["| " + " | ".join(cells) + " |" for cells in body])


def markdown(rows: list[dict], agreement: list[dict], lexicon: list[dict]) -> str:
    lines = ["# GAMA-Bench report", ""]
    for key, metric_rows in sections(rows).items():
        lines += [f"## {_title(key)}", ""] + _md_table(HEADERS, [row_cells(r) for r in metric_rows]) + [""]
    lines += [CAPTION + "  ", MARK_NOTE, ""]
    for title, headers, body in extra_tables(agreement, lexicon):
        lines += [f"## {title}", ""] + _md_table(headers, body) + [""]
    return "\n".join(lines) + "\n"


def to_html(rows: list[dict], agreement: list[dict], lexicon: list[dict]) -> str:
    def table(title, headers, body):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
        return f"<h2>{html.escape(title)}</h2><table><tr>{head}</tr>{cells}</table>"

    parts = [table(_title(k), HEADERS, [row_cells(r) for r in v]) for k, v in sections(rows).items()]
    parts += [table(title, headers, body) for title, headers, body in extra_tables(agreement, lexicon)]
    body = "".join(parts) + f"<p>{html.escape(CAPTION)}</p><p>{html.escape(MARK_NOTE)}</p>"
    head = "<meta charset='utf-8'><title>GAMA-Bench report</title>"
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


def write_csv(out: Path, rows: list[dict]) -> None:
    """gama_report.csv (CSV_COLUMNS; gama_report_<run>.csv each when several runs) and the detail file."""
    out.mkdir(parents=True, exist_ok=True)
    runs = sorted({r["run"] for r in rows})
    files = {runs[0]: out / "gama_report.csv"} if len(runs) == 1 else {
        run: out / f"gama_report_{''.join(c if c.isalnum() or c in '-_.' else '_' for c in run)}.csv" for run in runs}
    for run, path in files.items():
        _write(path, CSV_COLUMNS, [r for r in rows if r["run"] == run])
    _write(out / "gama_report_detail.csv", DETAIL_COLUMNS, rows)


def _write(path: Path, columns: tuple[str, ...], rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows([["" if row[c] is None else row[c] for c in columns] for row in rows])
    print(path)
