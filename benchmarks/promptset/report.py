"""`fairsweep report --bench NAME` for a prompt set: metrics by group (with intervals), label rates, variant
rates, paired tests and flip rates; terminal (rich), md / csv files, and a section of the HTML report.

Reads only the views of storage/sql/40_promptset.sql and the statistics tables; every format renders the
same ReportTables.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

from ...errors import ConfigError, DatabaseError
from ...storage.db import open_db
from ..report_tables import ReportSection, ReportTable, dicts, num, p_value, write_csv

_WHERE = "benchmark = $name AND ($runs IS NULL OR list_contains($runs, run))"
METRICS_SQL = f"""
SELECT m.run, m.model, m.grp, m.n_items, m.n_clusters, m.expected, m.answered, m.coverage,
       m.accuracy, i.ci_low AS accuracy_ci_low, i.ci_high AS accuracy_ci_high,
       m.refusal_rate, m.hedge_rate, m.unparsed_rate, m.mean_value, m.parser_versions
FROM promptset_metrics m
LEFT JOIN promptset_intervals i ON i.run = m.run AND i.model = m.model AND i.benchmark = m.benchmark
      AND i.grp = m.grp AND i.metric = 'accuracy'
WHERE m.benchmark = $name AND ($runs IS NULL OR list_contains($runs, m.run))
ORDER BY m.run, m.model, m.grp <> '(all)', m.grp"""
CHOICES_SQL = f"""
SELECT c.run, c.model, c.grp, c.choice, c.n, c.answered, c.rate, i.ci_low, i.ci_high
FROM promptset_choice_rates c
LEFT JOIN promptset_intervals i ON i.run = c.run AND i.model = c.model AND i.benchmark = c.benchmark
      AND i.grp = c.grp AND i.metric = 'choice:' || c.choice
WHERE c.benchmark = $name AND ($runs IS NULL OR list_contains($runs, c.run))
ORDER BY c.run, c.model, c.grp <> '(all)', c.grp, c.choice"""
VARIANTS_SQL = f"""
SELECT run, model, grp, variant, expected, answered, coverage, accuracy, refusal_rate, hedge_rate, unparsed_rate,
       mean_value
FROM promptset_variant_metrics WHERE {_WHERE} ORDER BY run, model, grp <> '(all)', grp, variant"""
PAIRED_SQL = f"""
SELECT t.run, t.model, t.grp, t.variant_a, t.variant_b, t.outcome, t.n_pairs, t.mean_a, t.mean_b, t.diff,
       t.ci_low, t.ci_high, t.test, t.n_a_only, t.n_b_only, t.statistic, t.p_value, t.p_holm, f.flip_rate
FROM promptset_paired_tests t
LEFT JOIN promptset_flips f ON f.run = t.run AND f.model = t.model AND f.benchmark = t.benchmark
      AND f.grp = t.grp AND f.variant_a = t.variant_a AND f.variant_b = t.variant_b
WHERE t.benchmark = $name AND ($runs IS NULL OR list_contains($runs, t.run))
ORDER BY t.run, t.model, t.grp <> '(all)', t.grp, t.variant_b, t.outcome"""


def _ci(value, low, high) -> str:
    return num(value) if low is None else f"{num(value)} [{num(low)}, {num(high)}]"


def _cov(row: dict) -> str:
    return f"{num(row['coverage'])} ({row['answered']}/{row['expected']})"


def _cell(row: dict) -> str:
    return f"run {row['run']} · model {row['model']}"


def load_tables(db: str, runs: list[str] | None, name: str) -> list[ReportTable]:
    conn = open_db(db, read_only=True)
    params = {"runs": list(runs) if runs else None, "name": name}
    try:
        metrics, choices, variants, paired = (dicts(conn.execute(sql, params)) for sql in
                                              (METRICS_SQL, CHOICES_SQL, VARIANTS_SQL, PAIRED_SQL))
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no prompt-set views: open it with this version (`fairsweep score`)") from None
    finally:
        conn.close()
    if not metrics:
        raise ConfigError(f"no results of prompt set {name!r} in {db}" + (f" for run(s) {', '.join(runs)}" if runs
                          else "") + ": check --db, --run and --bench")
    partial = lambda r: r.get("coverage") is not None and r["coverage"] < 1  # noqa: E731
    tables = [
        ReportTable(f"{name}_metrics", f"{name}: accuracy and answer kinds by group", tuple(metrics[0]), metrics,
                    ("group", "items", "coverage", "accuracy [95% CI]", "refusal", "hedge", "unparsed", "mean value"),
                    lambda r: [r["grp"], str(r["n_items"]), _cov(r),
                               _ci(r["accuracy"], r["accuracy_ci_low"], r["accuracy_ci_high"]),
                               num(r["refusal_rate"]), num(r["hedge_rate"]), num(r["unparsed_rate"]),
                               num(r["mean_value"])], group=_cell, partial=partial),
        ReportTable(f"{name}_choices", f"{name}: share of answers per label", tuple(choices[0]) if choices else
                    ("run",), choices, ("group", "label", "n", "rate [95% CI]"),
                    lambda r: [r["grp"], r["choice"], str(r["n"]), _ci(r["rate"], r["ci_low"], r["ci_high"])],
                    group=_cell, collapsed=True)]
    if variants:
        tables.append(ReportTable(
            f"{name}_variants", f"{name}: by variant", tuple(variants[0]), variants,
            ("group", "variant", "coverage", "accuracy", "refusal", "hedge", "unparsed", "mean value"),
            lambda r: [r["grp"], r["variant"], _cov(r), num(r["accuracy"]), num(r["refusal_rate"]),
                       num(r["hedge_rate"]), num(r["unparsed_rate"]), num(r["mean_value"])],
            group=_cell, partial=partial))
    if paired:
        tables.append(ReportTable(
            f"{name}_paired", f"{name}: paired differences between variants (b − a)", tuple(paired[0]), paired,
            ("group", "a → b", "outcome", "pairs", "a", "b", "diff [95% CI]", "test", "p", "p (Holm)", "flip rate"),
            lambda r: [r["grp"], f"{r['variant_a']} → {r['variant_b']}", r["outcome"], str(r["n_pairs"]),
                       num(r["mean_a"]), num(r["mean_b"]), _ci(r["diff"], r["ci_low"], r["ci_high"]),
                       r["test"] or "—", p_value(r["p_value"]), p_value(r["p_holm"]), num(r["flip_rate"])],
            group=_cell,
            notes=lambda rows: ["McNemar: exact binomial test of the discordant pairs; Wilcoxon: exact signed-rank "
                                "(GAMA-Bench's); CI: bootstrap over pairs; Holm within run × model × group"]))
    return tables


def report(name: str, db: str, runs: list[str] | None, fmt: str, out: str | None) -> None:
    if fmt == "html":
        from ..report_html import write_html_report
        print(write_html_report(db, runs, [name], out))
        return
    if fmt in ("md", "csv") and not out:
        raise ConfigError(f"--format {fmt} writes files: pass --out DIR")
    tables = load_tables(db, runs, name)
    if fmt == "csv":
        for table in tables:
            print(write_csv(table, Path(out)))
    elif fmt == "md":
        from ..report_tables import markdown
        Path(out).mkdir(parents=True, exist_ok=True)
        target = Path(out) / f"{name}.md"
        target.write_text("\n\n".join(markdown(t) for t in tables) + "\n", encoding="utf-8")
        print(target)
    else:
        from rich.console import Console
        from ..report_tables import print_rich
        console = Console(file=sys.stdout, width=160)
        for table in tables:
            print_rich(table, console)


def section(name: str, db: str, runs: list[str] | None) -> ReportSection:
    tables = load_tables(db, runs, name)
    metrics = tables[0].rows
    warnings = [f"run {r['run']} · model {r['model']} · {r['grp']}: coverage {num(r['coverage'])} "
                f"({r['answered']}/{r['expected']})" for r in metrics if r["coverage"] is not None and r["coverage"] < 1]
    versions = sorted({v for r in metrics for v in (r["parser_versions"] or "").split(",") if v})
    return ReportSection(name, f"Prompt set {name}", tables, [],
                         [("parser", ", ".join(versions) or "—")], warnings)
