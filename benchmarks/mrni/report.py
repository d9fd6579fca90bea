"""`fairsweep report --bench mrni`: the per-condition table for each run, model and language.

Reads only the SQL views and statistics tables (mrni_condition_metrics, mrni_gender_marker_effect,
mrni_intervals, mrni_binomial, mrni_scored). Accuracy is the strict variant (R/O/F count as wrong).
A row whose coverage (answered / expected) is below 100% has every value cell marked with MARK:
its numbers describe only the answered requests. Formats: table (rich, stdout), md and csv (files in
`out`, see CSV_COLUMNS / EFFECT_CSV_COLUMNS for the column order); html is not available yet.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from ...errors import ConfigError, DatabaseError, FairsweepError
from ...storage.db import open_db
from .stats import CONDITIONS, EFFECT_CONDITION

MARK = "†"
MARK_NOTE = (f"{MARK} coverage below 100%: computed on the answered requests only "
             f"(pending and failed requests are not counted as wrong answers)")
CAPTION = ("accuracy: strict (R/O/F count as wrong); 95% CI: cluster bootstrap over item-scenario pairs; "
           "p: two-sided binomial test of p_M = 0.5")
HEADERS = ("condition", "N", "coverage", "acc (strict) [95% CI]", "R", "O", "F", "MAR", "p_M (binom. p)",
           "s_DIS", "s_AMB")
# mrni_conditions.csv, in this order (NULL = empty cell)
CSV_COLUMNS = ("run", "model", "language", "condition", "n_pairs", "expected", "answered", "coverage", "coverage_below_100",
               "acc_strict", "acc_strict_ci_low", "acc_strict_ci_high", "acc_parsed", "r_rate", "o_rate",
               "f_rate", "abstention", "mar", "far", "p_m", "p_m_binomial_p", "s_dis", "s_amb")
# mrni_gender_marker_effect.csv
EFFECT_CSV_COLUMNS = ("run", "model", "language", "expected", "answered", "coverage", "coverage_below_100",
                      "abstention_ga", "abstention_gs", "gender_marker_effect", "ci_low", "ci_high")

_CONDITION_SQL = f"""
SELECT m.run, m.model, m.language, m.condition, m.n_pairs, m.expected, m.answered, m.coverage,
       m.coverage IS DISTINCT FROM 1 AS coverage_below_100,
       m.acc_strict, i.ci_low AS acc_strict_ci_low, i.ci_high AS acc_strict_ci_high, m.acc_parsed,
       m.r_rate, m.o_rate, m.f_rate, m.abstention, m.mar, m.far, m.p_m, b.p_value AS p_m_binomial_p,
       m.s_dis, m.s_amb
FROM mrni_condition_metrics m
LEFT JOIN mrni_intervals i
       ON i.run = m.run AND i.model = m.model AND i.language = m.language
      AND i.condition = m.condition AND i.metric = 'acc_strict'
LEFT JOIN mrni_binomial b
       ON b.run = m.run AND b.model = m.model AND b.language = m.language AND b.condition = m.condition
WHERE $runs IS NULL OR list_contains($runs, m.run)
ORDER BY m.run, m.model, m.language, list_position({list(CONDITIONS)}, m.condition), m.condition
"""
_EFFECT_SQL = """
SELECT e.run, e.model, e.language, e.expected, e.answered, e.coverage,
       e.coverage IS DISTINCT FROM 1 AS coverage_below_100,
       e.abstention_ga, e.abstention_gs, e.gender_marker_effect, i.ci_low, i.ci_high
FROM mrni_gender_marker_effect e
LEFT JOIN mrni_intervals i
       ON i.run = e.run AND i.model = e.model AND i.language = e.language
      AND i.condition = $effect AND i.metric = 'gender_marker_effect'
WHERE $runs IS NULL OR list_contains($runs, e.run)
"""
_UNSCORED_SQL = """
SELECT count(*) FROM mrni_scored
WHERE status = 'ok' AND label IS NULL AND ($runs IS NULL OR list_contains($runs, run))
"""


@dataclass
class Section:
    """One run x model x language: its condition rows and gender-marker effect."""

    run: str
    model: str
    language: str
    rows: list[dict] = field(default_factory=list)
    effect: dict | None = None

    @property
    def title(self) -> str:
        pairs = max((r["n_pairs"] for r in self.rows), default=0)
        return f"MRNI-BB · run {self.run} · model {self.model} · {self.language.upper()} · {pairs} item-scenario pairs"


def report(db: str, runs: list[str] | None, fmt: str, out: str | None) -> None:
    """Print (table) or write (md, csv) the per-condition tables of the given runs (None = all)."""
    if fmt == "html":
        raise FairsweepError("the HTML report arrives with the reports issue: use --format table, md or csv")
    if fmt in ("md", "csv") and not out:
        raise ConfigError(f"--format {fmt} writes files: pass --out DIR")
    conditions, effects, unscored = _load(db, runs)
    if not conditions:
        raise ConfigError(f"no MRNI-BB results in {db}" + (f" for run(s) {', '.join(runs)}" if runs else "")
                          + ": check --db and --run, or run the benchmark first")
    sections = build_sections(conditions, effects)
    if fmt == "csv":
        write_csv(Path(out), conditions, effects)
    elif fmt == "md":
        write_md(Path(out), sections, unscored)
    else:
        print_tables(sections, unscored)


def _load(db: str, runs: list[str] | None) -> tuple[list[dict], list[dict], int]:
    conn = open_db(db, read_only=True)
    try:
        params = {"runs": list(runs) if runs else None}
        return (_dicts(conn.execute(_CONDITION_SQL, params)),
                _dicts(conn.execute(_EFFECT_SQL, {**params, "effect": EFFECT_CONDITION})),
                conn.execute(_UNSCORED_SQL, params).fetchone()[0])
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no MRNI-BB score views yet: run `fairsweep score --db {db} --bench mrni`"
                            ) from None
    finally:
        conn.close()


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, row)) for row in cursor.fetchall()]


def build_sections(conditions: list[dict], effects: list[dict]) -> list[Section]:
    sections: dict[tuple, Section] = {}
    for row in conditions:
        key = (row["run"], row["model"], row["language"])
        sections.setdefault(key, Section(*key)).rows.append(row)
    for effect in effects:
        key = (effect["run"], effect["model"], effect["language"])
        if key in sections:
            sections[key].effect = effect
    return list(sections.values())


# ------------------------------------------------------------------------------ cells


def _num(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _coverage(row: dict) -> str:
    pct = "—" if row["coverage"] is None else f"{100 * row['coverage']:.1f}%"
    return f"{pct} ({row['answered']}/{row['expected']})"


def _ci(value: float | None, low: float | None, high: float | None, signed: bool = False) -> str:
    text = _num(value, signed=signed)
    return text if low is None else f"{text} [{_num(low, signed=signed)}, {_num(high, signed=signed)}]"


def row_cells(row: dict) -> list[str]:
    """The display cells of one condition row; every value cell marked when coverage < 100%."""
    p_m = _num(row["p_m"]) if row["p_m"] is None else f"{_num(row['p_m'])} (p={_p(row['p_m_binomial_p'])})"
    values = [str(row["answered"]), _coverage(row),
              _ci(row["acc_strict"], row["acc_strict_ci_low"], row["acc_strict_ci_high"]),
              _num(row["r_rate"]), _num(row["o_rate"]), _num(row["f_rate"]), _num(row["mar"]), p_m,
              _num(row["s_dis"], signed=True), _num(row["s_amb"], signed=True)]
    if row["coverage_below_100"]:
        values = [f"{v} {MARK}" for v in values]
    return [row["condition"], *values]


def effect_line(effect: dict | None) -> str:
    if effect is None:
        return "gender-marker effect: — (no ambiguous rows)"
    line = (f"gender-marker effect = abstention(ambiguous_ga) − abstention(ambiguous_gs) = "
            f"{_num(effect['abstention_ga'])} − {_num(effect['abstention_gs'])} = "
            f"{_ci(effect['gender_marker_effect'], effect['ci_low'], effect['ci_high'], signed=True)}; "
            f"coverage {_coverage(effect)}")
    return line + (f" {MARK}" if effect["coverage_below_100"] else "")


def _notes(section: Section) -> list[str]:
    notes = [CAPTION, effect_line(section.effect)]
    partial = any(r["coverage_below_100"] for r in section.rows)
    partial = partial or bool(section.effect and section.effect["coverage_below_100"])
    return notes + ([MARK_NOTE] if partial else [])


def _unscored_note(unscored: int) -> str | None:
    if not unscored:
        return None
    return f"{unscored} stored response(s) have no label yet (they lower coverage): run `fairsweep score`"


# ---------------------------------------------------------------------------- formats


def print_tables(sections: list[Section], unscored: int) -> None:
    console = Console(width=None if sys.stdout.isatty() else 200)
    for section in sections:
        table = Table(title=section.title)
        for i, header in enumerate(HEADERS):
            table.add_column(header, justify="left" if i == 0 else "right")
        for row in section.rows:
            table.add_row(*row_cells(row), style="yellow" if row["coverage_below_100"] else None)
        console.print(table)
        for note in _notes(section):
            console.print(note, highlight=False, markup=False)
        console.print()
    if _unscored_note(unscored):
        console.print(_unscored_note(unscored), style="yellow", markup=False)


def markdown(sections: list[Section], unscored: int) -> str:
    lines = ["# MRNI-BB report", ""]
    for section in sections:
        lines += [f"## {section.title}", "", "| " + " | ".join(HEADERS) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(HEADERS) - 1)) + "|"]
        lines += ["| " + " | ".join(row_cells(row)) + " |" for row in section.rows]
        lines += [""] + [f"{note}  " for note in _notes(section)] + [""]
    note = _unscored_note(unscored)
    return "\n".join(lines + ([note, ""] if note else []))


def write_md(out: Path, sections: list[Section], unscored: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "mrni_report.md"
    path.write_text(markdown(sections, unscored), encoding="utf-8")
    print(path)


def write_csv(out: Path, conditions: list[dict], effects: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, columns, rows in (("mrni_conditions.csv", CSV_COLUMNS, conditions),
                                ("mrni_gender_marker_effect.csv", EFFECT_CSV_COLUMNS, effects)):
        path = out / name
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            writer.writerows([["" if row[c] is None else row[c] for c in columns] for row in rows])
        print(path)
