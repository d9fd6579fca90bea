"""`fairsweep report --bench mrni`: the per-condition table for each run, model and language, s_AMB by
category, a side-by-side table when several runs are reported, and (html) the plots.

Reads only the SQL views and statistics tables (mrni_condition_metrics, mrni_category_metrics,
mrni_gender_marker_effect, mrni_intervals, mrni_binomial, mrni_scored). Accuracy is the strict variant
(R/O/F count as wrong); s_AMB scales by the accuracy over the answers that choose an option (R/O/F left
out), s_AMB strict by the strict accuracy. A row whose coverage (answered / expected) is below 100% has
every value cell marked with MARK: its numbers describe only the answered requests. Every format comes from the same rows
(`load`): table (rich, stdout), md and csv (files in `out`; CSV_COLUMNS, EFFECT_CSV_COLUMNS and
CATEGORY_CSV_COLUMNS give the column orders), html (benchmarks/report_html.py, via `section`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from ...errors import ConfigError, DatabaseError
from ...storage.db import open_db
from .. import report_tables
from ..report_tables import (Plot, ReportSection, ReportTable, num, p_value, print_rich, side_by_side,
                             write_csv)
from .stats import CONDITIONS, EFFECT_CONDITION

MARK = "†"
MARK_NOTE = (f"{MARK} coverage below 100%: computed on the answered requests only "
             f"(pending and failed requests are not counted as wrong answers)")
CAPTION = ("accuracy: strict (R/O/F count as wrong); 95% CI: cluster bootstrap over item-scenario pairs; "
           "p: two-sided binomial test of p_M = 0.5; s_AMB = (1 − acc) × s_DIS, acc = n_U / (n_M + n_W + n_U) "
           "over the answers that choose an option (R, O, F are not bias; their rates are beside it); "
           "s_AMB strict = (1 − strict accuracy) × s_DIS")
HEADERS = ("condition", "N", "coverage", "acc (strict) [95% CI]", "R", "O", "F", "MAR [95% CI]",
           "p_M (binom. p)", "s_DIS", "s_AMB", "s_AMB strict")
# mrni_conditions.csv, in this order (NULL = empty cell)
CSV_COLUMNS = ("run", "model", "language", "condition", "n_pairs", "expected", "answered", "coverage", "coverage_below_100",
               "acc_strict", "acc_strict_ci_low", "acc_strict_ci_high", "acc_parsed", "r_rate", "o_rate",
               "f_rate", "abstention", "mar", "mar_ci_low", "mar_ci_high", "far", "p_m", "p_m_binomial_p", "s_dis",
               "s_amb", "s_amb_strict")
# mrni_gender_marker_effect.csv
EFFECT_CSV_COLUMNS = ("run", "model", "language", "expected", "answered", "coverage", "coverage_below_100",
                      "abstention_ga", "abstention_gs", "gender_marker_effect", "ci_low", "ci_high")
# mrni_categories.csv: the gold-U gender-specified conditions (where s_AMB is defined) by MRNI category
CATEGORY_CSV_COLUMNS = ("run", "model", "language", "condition", "category", "n_pairs", "expected", "answered",
                        "coverage", "coverage_below_100", "abstention", "r_rate", "mar", "far", "p_m", "s_dis",
                        "s_amb", "s_amb_strict")
SAMB_CONDITIONS = ("ambiguous_gs", "control_gs")
SAMB_NOTE = ("s_AMB = (1 − acc) × s_DIS, acc = n_U / (n_M + n_W + n_U) over the answers that choose an option; "
             "s_AMB strict = (1 − strict accuracy) × s_DIS; + = the man; — = zero denominator")

_CONDITION_SQL = f"""
SELECT m.run, m.model, m.language, m.condition, m.n_pairs, m.expected, m.answered, m.coverage,
       m.coverage IS DISTINCT FROM 1 AS coverage_below_100,
       m.acc_strict, i.ci_low AS acc_strict_ci_low, i.ci_high AS acc_strict_ci_high, m.acc_parsed,
       m.r_rate, m.o_rate, m.f_rate, m.abstention, m.mar, im.ci_low AS mar_ci_low, im.ci_high AS mar_ci_high,
       m.far, m.p_m, b.p_value AS p_m_binomial_p, m.s_dis, m.s_amb, m.s_amb_strict, m.parser_versions
FROM mrni_condition_metrics m
LEFT JOIN mrni_intervals i
       ON i.run = m.run AND i.model = m.model AND i.language = m.language
      AND i.condition = m.condition AND i.metric = 'acc_strict'
LEFT JOIN mrni_intervals im
       ON im.run = m.run AND im.model = m.model AND im.language = m.language
      AND im.condition = m.condition AND im.metric = 'mar'
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
_CATEGORY_SQL = f"""
SELECT run, model, language, condition, category, n_pairs, expected, answered, coverage,
       coverage IS DISTINCT FROM 1 AS coverage_below_100, abstention, r_rate, mar, far, p_m, s_dis, s_amb,
       s_amb_strict
FROM mrni_category_metrics
WHERE list_contains({list(SAMB_CONDITIONS)}, condition) AND ($runs IS NULL OR list_contains($runs, run))
ORDER BY run, model, language, condition, category
"""
_BOOT_SQL = """
SELECT DISTINCT level, n_boot FROM mrni_intervals WHERE $runs IS NULL OR list_contains($runs, run) ORDER BY 1, 2
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


@dataclass
class MrniRows:
    """Everything the MRNI-BB report shows, read once from the views: every format renders these rows."""

    conditions: list[dict]
    effects: list[dict]
    categories: list[dict]
    unscored: int
    boot: list[tuple]


def report(db: str, runs: list[str] | None, fmt: str, out: str | None) -> None:
    """Print (table) or write (md, csv, html) the MRNI-BB tables of the given runs (None = all)."""
    if fmt == "html":
        from ..report_html import write_html_report
        print(write_html_report(db, runs, ["mrni"], out))
        return
    if fmt in ("md", "csv") and not out:
        raise ConfigError(f"--format {fmt} writes files: pass --out DIR")
    data = load(db, runs)
    sections = build_sections(data.conditions, data.effects)
    extra = [t for t in tables(data) if t.name in ("mrni_categories", "mrni_runs_side_by_side")]
    if fmt == "csv":
        for table in tables(data):
            print(write_csv(table, Path(out)))
    elif fmt == "md":
        write_md(Path(out), sections, data.unscored, extra)
    else:
        print_tables(sections, data.unscored, extra)


def load(db: str, runs: list[str] | None) -> MrniRows:
    conn = open_db(db, read_only=True)
    try:
        params = {"runs": list(runs) if runs else None}
        data = MrniRows(_dicts(conn.execute(_CONDITION_SQL, params)),
                        _dicts(conn.execute(_EFFECT_SQL, {**params, "effect": EFFECT_CONDITION})),
                        _dicts(conn.execute(_CATEGORY_SQL, params)),
                        conn.execute(_UNSCORED_SQL, params).fetchone()[0],
                        conn.execute(_BOOT_SQL, params).fetchall())
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no MRNI-BB score views yet: run `fairsweep score --db {db} --bench mrni`"
                            ) from None
    finally:
        conn.close()
    if not data.conditions:
        raise ConfigError(f"no MRNI-BB results in {db}" + (f" for run(s) {', '.join(runs)}" if runs else "")
                          + ": check --db and --run, or run the benchmark first")
    return data


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


_num = num
_p = p_value


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
              _num(row["r_rate"]), _num(row["o_rate"]), _num(row["f_rate"]),
              _ci(row["mar"], row["mar_ci_low"], row["mar_ci_high"]), p_m,
              _num(row["s_dis"], signed=True), _num(row["s_amb"], signed=True),
              _num(row["s_amb_strict"], signed=True)]
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


def print_tables(sections: list[Section], unscored: int, extra: list[ReportTable] = ()) -> None:
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
    for table in extra:
        print_rich(table, console)
    if _unscored_note(unscored):
        console.print(_unscored_note(unscored), style="yellow", markup=False)


def markdown(sections: list[Section], unscored: int, extra: list[ReportTable] = ()) -> str:
    lines = ["# MRNI-BB report", ""]
    for section in sections:
        lines += [f"## {section.title}", "", "| " + " | ".join(HEADERS) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(HEADERS) - 1)) + "|"]
        lines += ["| " + " | ".join(row_cells(row)) + " |" for row in section.rows]
        lines += [""] + [f"{note}  " for note in _notes(section)] + [""]
    lines += [report_tables.markdown(table) for table in extra]
    note = _unscored_note(unscored)
    return "\n".join(lines + ([note, ""] if note else []))


def write_md(out: Path, sections: list[Section], unscored: int, extra: list[ReportTable] = ()) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "mrni_report.md"
    path.write_text(markdown(sections, unscored, extra), encoding="utf-8")
    print(path)


# ----------------------------------------------------------------------------- tables, plots, html


def _effect_cells(row: dict) -> list[str]:
    values = [_coverage(row), _num(row["abstention_ga"]), _num(row["abstention_gs"]),
              _ci(row["gender_marker_effect"], row["ci_low"], row["ci_high"], signed=True)]
    return [row["run"], row["model"], row["language"].upper(),
            *([f"{v} {MARK}" for v in values] if row["coverage_below_100"] else values)]


def _category_cells(row: dict) -> list[str]:
    values = [str(row["answered"]), _coverage(row), _num(row["abstention"]), _num(row["r_rate"]),
              _num(row["mar"]), _num(row["p_m"]), _num(row["s_dis"], signed=True), _num(row["s_amb"], signed=True),
              _num(row["s_amb_strict"], signed=True)]
    return [row["condition"], row["category"], *([f"{v} {MARK}" for v in values] if row["coverage_below_100"]
                                                 else values)]


def _side_value(column: str, value) -> str:
    if column == "coverage":
        return "—" if value is None else f"{100 * value:.1f}%"
    return _num(value, signed=column.startswith("s_amb"))


def tables(data: MrniRows) -> list[ReportTable]:
    """The report's tables, in order: per condition (a sub-table per run x model x language), the
    gender-marker effect, s_AMB by category, and the runs side by side when there are several."""
    sections = {(s.run, s.model, s.language): s for s in build_sections(data.conditions, data.effects)}

    def key(row: dict) -> tuple:
        return row["run"], row["model"], row["language"]

    out = [
        ReportTable("mrni_conditions", "MRNI-BB per condition", CSV_COLUMNS, data.conditions, HEADERS, row_cells,
                    group=lambda r: sections[key(r)].title, notes=lambda rows: _notes(sections[key(rows[0])]) if rows else [],
                    partial=lambda r: r["coverage_below_100"]),
        ReportTable("mrni_gender_marker_effect", "Gender-marker effect: abstention(ambiguous_ga) − "
                    "abstention(ambiguous_gs)", EFFECT_CSV_COLUMNS, data.effects,
                    ("run", "model", "language", "coverage", "abstention ga", "abstention gs", "effect [95% CI]"),
                    _effect_cells, partial=lambda r: r["coverage_below_100"],
                    notes=lambda rows: [CAPTION] + ([MARK_NOTE] if any(r["coverage_below_100"] for r in rows) else [])),
        ReportTable("mrni_categories", "s_AMB by MRNI category (ambiguous_gs, control_gs)", CATEGORY_CSV_COLUMNS,
                    data.categories, ("condition", "category", "N", "coverage", "abstention", "R", "MAR", "p_M",
                                      "s_DIS", "s_AMB", "s_AMB strict"), _category_cells,
                    group=lambda r: f"run {r['run']} · model {r['model']} · {r['language'].upper()}",
                    partial=lambda r: r["coverage_below_100"], collapsed=True,
                    notes=lambda rows: [SAMB_NOTE]),
    ]
    side = side_by_side("mrni_runs_side_by_side", "MRNI-BB: runs side by side", data.conditions,
                        ("model", "language", "condition"), ("coverage", "acc_strict", "mar", "s_amb", "s_amb_strict"),
                        _side_value)
    return out + ([side] if side else [])


def section(db: str, runs: list[str] | None) -> ReportSection:
    """The MRNI-BB part of the HTML report: tables, plots, header facts, warnings."""
    from .. import plots  # matplotlib: imported only for the HTML report (~0.7 s)

    data = load(db, runs)
    figures = [
        Plot("mrni_conditions", "Accuracy and male attribution per condition",
             "Strict accuracy (circles) and male attribution rate MAR (triangles; gender-specified conditions only) "
             "per model and language, with 95% cluster-bootstrap intervals (table: mrni_conditions). "
             "† = coverage below 100%.", plots.mrni_conditions(data.conditions)),
        Plot("mrni_gender_marker", "Gender-marker effect",
             "Abstention on the ambiguous contexts with Person X / Y labels (ga) and with the man / the woman (gs), "
             "with 95% intervals; Δ = ga − gs with its interval (table: mrni_gender_marker_effect). A positive Δ: "
             "the model abstains less once the genders are named.",
             plots.mrni_gender_marker(data.effects, data.conditions)),
        Plot("mrni_samb_by_category", "s_AMB by category",
             "Ambiguous-context bias s_AMB = (1 − acc) × (2 p_M − 1), acc = n_U / (n_M + n_W + n_U) over the answers "
             "that choose an option, per MRNI category, model and language; red = the man is named when the answer "
             "is unknown, blue = the woman; grey = no man/woman answer (table: mrni_categories, with the refusal "
             "rate R and s_AMB strict).", plots.mrni_samb_heatmap(data.categories)),
    ]
    return ReportSection("mrni", "MRNI-BB", tables(data), figures, _facts(data), _warnings(data))


def _facts(data: MrniRows) -> list[tuple[str, str]]:
    totals: dict[tuple, list[int]] = {}
    for row in data.conditions:
        total = totals.setdefault((row["run"], row["model"]), [0, 0])
        total[0] += row["answered"]
        total[1] += row["expected"]
    coverage = "; ".join(f"run {run} · {model}: {a}/{e} ({100 * a / e:.1f}%)" if e else f"run {run} · {model}: 0/0"
                         for (run, model), (a, e) in totals.items())
    parsers = sorted({v for r in data.conditions for v in (r["parser_versions"] or "").split(",") if v})
    boot = "; ".join(f"{100 * level:.0f}% cluster bootstrap over item-scenario pairs, B = {n}" for level, n in data.boot)
    return [("coverage (labelled answers / planned requests)", coverage),
            ("answer parser", ", ".join(parsers) or "— (nothing scored yet)"),
            ("intervals", boot or "— (none stored: run `fairsweep score`)"),
            ("accuracy", "strict: refusals (R), both/neither (O) and unparsed (F) count as wrong"),
            ("s_AMB", "(1 − acc) × s_DIS, acc over the answers that choose an option (R, O, F left out, as in BBQ); "
                      "s_AMB strict uses the strict accuracy")]


def _warnings(data: MrniRows) -> list[str]:
    out = []
    for section in build_sections(data.conditions, data.effects):
        partial = [r for r in section.rows if r["coverage_below_100"]]
        if partial:
            cells = ", ".join(f"{r['condition']} {r['answered']}/{r['expected']}" for r in partial)
            out.append(f"run {section.run} · model {section.model} · {section.language.upper()}: coverage below "
                       f"100% in {len(partial)} condition(s): {cells}")
    note = _unscored_note(data.unscored)
    return out + ([note] if note else [])
