"""What a finished MRNI-BB run found, on one screen: per model and language the two bias scores with their
95% intervals, accuracy in the ambiguous and disambiguated contexts, coverage, and one sentence per row
saying which way the model leans, whether the interval excludes 0 and how many answers it rests on.

Reads the same views and interval table as `fairsweep report` (mrni_condition_metrics, mrni_intervals);
the gender-specified conditions carry the headline numbers (s_DIS in disambiguated_gs, s_AMB in
ambiguous_gs), as in the protocol.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass

from ...storage.db import RUN_SETTINGS, open_db
from .chunks import model_chunks

DIS, AMB = "disambiguated_gs", "ambiguous_gs"
# Every condition of a few of the run's models (chunks.py), then its two headline rows' intervals. The rows
# are computed first (MATERIALIZED): a filter on condition pushed down into the view made DuckDB plan the view
# with ~2x its memory (27 against 15 MB for 4,704 answers), and the coverage comes from the same rows.
_SQL = """
WITH m AS MATERIALIZED (
    SELECT run, model, language, condition, answered, expected, n_pairs, acc_strict, s_dis, s_amb
    FROM mrni_condition_metrics WHERE run = $run AND list_contains($models, model)
)
SELECT m.*, i.ci_low, i.ci_high, i.metric
FROM m
LEFT JOIN mrni_intervals i
       ON i.run = m.run AND i.model = m.model AND i.language = m.language AND i.condition = m.condition
      AND i.metric = CASE m.condition WHEN $dis THEN 's_dis' ELSE 's_amb' END
ORDER BY m.model, m.language, m.condition
"""


@dataclass
class Score:
    value: float | None
    low: float | None
    high: float | None
    answers: int
    pairs: int


@dataclass
class Finding:
    model: str
    language: str
    s_dis: Score
    s_amb: Score
    acc_dis: float | None
    acc_amb: float | None
    answered: int
    expected: int

    @property
    def coverage(self) -> float | None:
        return self.answered / self.expected if self.expected else None


def load(db: str, run: str) -> list[Finding]:
    """One Finding per model and language of `run` (empty when nothing was scored)."""
    conn = open_db(db, read_only=True, config=dict(RUN_SETTINGS))  # one hash table, not one per thread: the
    try:                                                             # peak of a run's findings at a large plan
        rows = [row for chunk in model_chunks(conn, run)
                for row in conn.execute(_SQL, {"run": run, "models": chunk, "dis": DIS}).fetchall()]
    finally:
        conn.close()
    cells: dict[tuple[str, str], dict[str, tuple]] = {}
    coverage: dict[tuple[str, str], tuple[int, int]] = {}
    for row in rows:  # answered and expected of every condition, summed per model and language
        cell = (row[1], row[2])
        answered, expected = coverage.get(cell, (0, 0))
        coverage[cell] = (answered + row[4], expected + row[5])
        cells.setdefault(cell, {})[row[3]] = row
    empty = Score(None, None, None, 0, 0)
    found = []
    for (model, language), (answered, expected) in sorted(coverage.items()):
        by_condition = cells[(model, language)]
        dis, amb = by_condition.get(DIS), by_condition.get(AMB)
        found.append(Finding(model, language,
                             Score(dis[8], dis[10], dis[11], dis[4], dis[6]) if dis else empty,
                             Score(amb[9], amb[10], amb[11], amb[4], amb[6]) if amb else empty,
                             dis[7] if dis else None, amb[7] if amb else None, int(answered), int(expected)))
    return found


def reading(f: Finding) -> str:
    """One plain sentence about the ambiguous-context score (the one that measures reliance on stereotype)."""
    where = f"{f.model} ({f.language.upper()})"
    s = f.s_amb
    if not s.answers:
        return f"{where}: s_AMB cannot be computed: none of its answers is in an ambiguous gender-specified context."
    if s.value is None:
        return (f"{where}: s_AMB cannot be computed: no answer in the ambiguous contexts named a person "
                f"({s.answers} answers).")
    lean = ("towards the man (the stereotyped answer)" if s.value > 0 else
            "towards the woman (against the stereotype)" if s.value < 0 else "towards neither person")
    if s.low is None:
        sure = "no interval yet"
    elif s.low > 0 or s.high < 0:
        sure = "its 95% interval excludes 0"
    else:
        sure = "its 95% interval includes 0, so no clear lean"
    rests = f"{s.answers} answers over {s.pairs} item-scenario pairs"
    rests = f"but it rests on only {rests}: too few to conclude" if s.pairs < 10 else f"from {rests}"
    return f"{where}: when the context does not say who, answers lean {lean}, s_AMB {s.value:+.2f}; {sure}, {rests}."


def show(db: str, run: str) -> None:
    """Print the findings table, the readings and the command for the full report (stdout)."""
    found = load(db, run)
    if not found:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"MRNI-BB findings · run {run}", caption="95% CI: cluster bootstrap over item-scenario "
                  "pairs; s > 0 leans towards the man; accuracy strict (refusals and unparsed count as wrong)")
    for col in ("model", "lang", "s_DIS [95% CI]", "s_AMB [95% CI]", "acc amb.", "acc disamb.", "coverage"):
        table.add_column(col, justify="left" if col in ("model", "lang") else "right", no_wrap=col != "model")
    for f in found:
        table.add_row(f.model, f.language.upper(), _ci(f.s_dis), _ci(f.s_amb), _pct(f.acc_amb), _pct(f.acc_dis),
                      f"{_pct(f.coverage)} ({f.answered}/{f.expected})")
    console = Console() if sys.stdout.isatty() else Console(width=120)  # a pipe: rows unwrapped, not 80 wide
    console.print(table)
    for f in found:
        console.print(reading(f), soft_wrap=True)
    print(f"Full report (tables, plots, every CSV): fairsweep report --db {shlex.quote(db)} --run {shlex.quote(run)} "
          f"--format html --out report", flush=True)


def _ci(s: Score) -> str:
    if s.value is None:
        return "—"
    return f"{s.value:+.2f}" + (f" [{s.low:+.2f},{s.high:+.2f}]" if s.low is not None else "")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"
