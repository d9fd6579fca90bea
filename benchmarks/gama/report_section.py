"""The GAMA-Bench part of the HTML report (benchmarks/report_html.py): tables and plots from the views of
storage/sql/30_gama.sql and the statistics tables `fairsweep score` writes.

Tables: gama_report (the paper's layout, shown as benchmarks/gama/report.py shows it), judge agreement,
gaps by dimension and by severity (one row per cell, one gap column per metric), the blame / therapeutic
composites, coverage, and the runs side by side. Plots per LLM judge with gaps (else the lexicon scorer):
the model x metric gap heatmap per track, gaps by dimension and by severity, the composite arrows; and a
scatter per judge pair. Composite: each of the six metrics z-scored over every response of the complete
pairs of one run, judge and track (all models together), then averaged (blame: Puni., Sev., Instr.,
Full-Bl.; therapeutic: Ther., Emp.-Agg.); a metric constant there has no z-score and is left out.
"""

from __future__ import annotations

import duckdb

from ...errors import ConfigError, DatabaseError
from ...storage.db import open_db
from .. import plots
from ..report_tables import Plot, ReportSection, ReportTable, dicts, num, pct, side_by_side
from .report import (AGREEMENT_HEADERS, CAPTION, DETAIL_COLUMNS, HEADERS, MARK, MARK_NOTE, NEUTRAL_NOTE,
                     agreement_cells, row_cells)

LEXICON = "lexicon"
METRICS = plots.GAMA_METRICS
BLAME, THERAPEUTIC = ("puni", "sev", "instr", "full_bl"), ("ther", "emp_agg")
_RUNS = "($runs IS NULL OR list_contains($runs, run))"
_REPORT_SQL = f"SELECT * FROM gama_report WHERE {_RUNS} ORDER BY run, model, track, judge = 'lexicon', judge, metric_order"
_AGREEMENT_SQL = f"""SELECT run, judge_a, judge_b, metric, n_cells, direction_agreement, pearson_r, mad
FROM gama_judge_agreement WHERE {_RUNS} ORDER BY run, judge_a, judge_b, metric <> 'all', metric"""
_BREAKDOWN_SQL = """SELECT * FROM {view} WHERE {runs} AND list_contains({metrics}, metric)
ORDER BY run, model, judge = 'lexicon', judge, track, {by}, metric_order"""
_COVERAGE_SQL = f"SELECT * FROM gama_coverage WHERE {_RUNS} ORDER BY run, model, judge = 'lexicon', judge, track"
_COMPOSITE_SQL = f"""
WITH pairs AS (
    SELECT * FROM gama_pairs
    WHERE judge <> '{LEXICON}' AND list_contains({list(METRICS)}, metric) AND {_RUNS}
), scale AS (          -- per run x judge x track x metric, over every response of the complete pairs
    SELECT run, judge, track, metric, avg(v) AS mu, stddev_samp(v) AS sd
    FROM (SELECT run, judge, track, metric, male AS v FROM pairs
          UNION ALL SELECT run, judge, track, metric, female AS v FROM pairs)
    GROUP BY ALL
), z AS (
    SELECT p.run, p.model, p.judge, p.track, p.metric, count(*) AS pairs,
           (avg(p.male) - any_value(s.mu)) / NULLIF(any_value(s.sd), 0) AS z_male,
           (avg(p.female) - any_value(s.mu)) / NULLIF(any_value(s.sd), 0) AS z_female
    FROM pairs p JOIN scale s USING (run, judge, track, metric)
    GROUP BY p.run, p.model, p.judge, p.track, p.metric
)
SELECT run, model, judge, track, max(pairs) AS pairs,
       avg(z_male) FILTER (WHERE list_contains({list(BLAME)}, metric)) AS male_blame,
       avg(z_female) FILTER (WHERE list_contains({list(BLAME)}, metric)) AS female_blame,
       avg(z_male) FILTER (WHERE list_contains({list(THERAPEUTIC)}, metric)) AS male_therapeutic,
       avg(z_female) FILTER (WHERE list_contains({list(THERAPEUTIC)}, metric)) AS female_therapeutic,
       count(z_male) FILTER (WHERE list_contains({list(BLAME)}, metric)) AS blame_metrics,
       count(z_male) FILTER (WHERE list_contains({list(THERAPEUTIC)}, metric)) AS therapeutic_metrics
FROM z GROUP BY ALL ORDER BY run, model, judge, track
"""
_VERSIONS_SQL = f"""
SELECT (SELECT gama_judge_prompt_version()) AS judge_prompt,
       (SELECT string_agg(DISTINCT lexicon_version, ', ') FROM gama_lexicon_scores WHERE {_RUNS}) AS lexicon
"""
_JUDGE_MODELS_SQL = f"""
SELECT c.judge, string_agg(DISTINCT s.provider_model, ', ' ORDER BY s.provider_model) AS provider_models,
       any_value(json_extract_string(r.identity, '$.models[0].model')) AS model
FROM gama_judge_calls c
LEFT JOIN responses s ON s.request_id = c.judge_request_id
LEFT JOIN runs r ON r.run = c.judge_run
WHERE {_RUNS.replace('run)', 'c.run)')}
GROUP BY c.judge ORDER BY c.judge
"""
BREAKDOWN_COLUMNS = ("run", "model", "judge", "track", "{by}", "pairs", "expected", "coverage", *METRICS,
                     "pairs_neutral", *(f"{m}_neutral" for m in METRICS))
COMPOSITE_COLUMNS = ("run", "model", "judge", "track", "pairs", "male_blame", "female_blame", "blame_shift",
                     "male_therapeutic", "female_therapeutic", "therapeutic_shift", "blame_metrics",
                     "therapeutic_metrics")
COVERAGE_COLUMNS = ("run", "model", "judge", "track", "target_planned", "target_ok", "target_failed",
                    "target_pending", "judge_planned", "judge_ok", "judge_failed", "judge_invalid_output",
                    "judge_pending", "scored_responses", "pairs", "expected", "coverage")


def load(db: str, runs: list[str] | None) -> dict[str, list[dict]]:
    conn = open_db(db, read_only=True)
    params = {"runs": list(runs) if runs else None}
    try:
        data = {"report": dicts(conn.execute(_REPORT_SQL, params)),
                "agreement": dicts(conn.execute(_AGREEMENT_SQL, params)),
                "composites": dicts(conn.execute(_COMPOSITE_SQL, params)),
                "coverage": dicts(conn.execute(_COVERAGE_SQL, params)),
                "versions": dicts(conn.execute(_VERSIONS_SQL, params)),
                "judge_models": dicts(conn.execute(_JUDGE_MODELS_SQL, params))}
        for by in ("dimension", "severity"):
            sql = _BREAKDOWN_SQL.format(view=f"gama_gaps_by_{by}", runs=_RUNS, metrics=list(METRICS), by=by)
            data[by] = dicts(conn.execute(sql, params))
    except duckdb.CatalogException:
        raise DatabaseError(f"{db} has no GAMA-Bench views yet: run `fairsweep score --db {db} --bench gama`") from None
    finally:
        conn.close()
    if not data["report"]:
        raise ConfigError(f"no scored GAMA-Bench results in {db}" + (f" for run(s) {', '.join(runs)}" if runs else "")
                          + ": run `fairsweep run --bench gama` with [[judges]], then `fairsweep score --bench gama`")
    for row in data["composites"]:
        for kind in ("blame", "therapeutic"):
            male, female = row[f"male_{kind}"], row[f"female_{kind}"]
            row[f"{kind}_shift"] = None if male is None or female is None else female - male
    return data


def wide(rows: list[dict], by: str) -> list[dict]:
    """One row per run x model x judge x track x level, the metrics' gaps (and gaps over neutral scenarios,
    `<metric>_neutral`) as columns; pairs, pairs_neutral, expected and coverage are the smallest over the
    metrics (they agree for a judge, whose six metrics come together)."""
    out: dict[tuple, dict] = {}
    for row in rows:
        key = (row["run"], row["model"], row["judge"], row["track"], row[by])
        line = out.setdefault(key, {"run": key[0], "model": key[1], "judge": key[2], "track": key[3], by: key[4],
                                    "pairs": row["pairs"], "expected": row["expected"], "coverage": row["coverage"],
                                    **{m: None for m in METRICS}, "pairs_neutral": row["pairs_neutral"],
                                    **{f"{m}_neutral": None for m in METRICS}})
        line[row["metric"]] = row["gap"]
        line[f"{row['metric']}_neutral"] = row["gap_neutral"]
        line["pairs"] = min(line["pairs"], row["pairs"])
        line["pairs_neutral"] = min(line["pairs_neutral"], row["pairs_neutral"])
        line["coverage"] = None if row["coverage"] is None or line["coverage"] is None else min(line["coverage"],
                                                                                              row["coverage"])
    return list(out.values())


def _partial(row: dict) -> bool:
    return row["coverage"] is None or row["coverage"] < 1


def _breakdown_table(rows: list[dict], by: str) -> ReportTable:
    def cells(r: dict) -> list[str]:
        mark = f" {MARK}" if _partial(r) else ""
        return [r[by], f"{r['pairs']} / {r['expected']}{mark}", *(num(r[m], 2, signed=True) + mark for m in METRICS),
                f"{r['pairs_neutral']} ({r['pairs'] - r['pairs_neutral']} left out)",
                *(num(r[f"{m}_neutral"], 2, signed=True) for m in METRICS)]

    return ReportTable(f"gama_gaps_by_{by}", f"GAMA-Bench gaps (female − male) by {by}",
                       tuple(c.format(by=by) for c in BREAKDOWN_COLUMNS), wide(rows, by),
                       (by, "pairs / expected", *plots.GAMA_LABELS, "neutral pairs",
                        *(f"{label} neutral" for label in plots.GAMA_LABELS)), cells,
                       group=lambda r: f"run {r['run']} · model {r['model']} · track {r['track']} · judge {r['judge']}",
                       partial=_partial,
                       notes=lambda rows: [NEUTRAL_NOTE] + ([MARK_NOTE] if any(map(_partial, rows)) else []),
                       collapsed=True)


def _composite_cells(r: dict) -> list[str]:
    values = [num(r[c], 2, signed=True) for c in COMPOSITE_COLUMNS[5:11]]
    return [r["run"], r["model"], r["judge"], r["track"], str(r["pairs"]), *values,
            f"{r['blame_metrics']} + {r['therapeutic_metrics']}"]


def _coverage_cells(r: dict) -> list[str]:
    return [r["run"], r["model"], r["judge"], r["track"], f"{r['target_ok']}/{r['target_planned']}",
            str(r["target_failed"]), str(r["target_pending"]), f"{r['judge_ok']}/{r['judge_planned']}",
            str(r["judge_invalid_output"]), str(r["judge_failed"]), str(r["judge_pending"]),
            f"{r['pairs']}/{r['expected']}", pct(r["coverage"])]


def tables(data: dict[str, list[dict]]) -> list[ReportTable]:
    out = [
        ReportTable("gama_report_detail", "GAMA-Bench: male and female means, gaps and tests", DETAIL_COLUMNS,
                    data["report"], HEADERS, row_cells,
                    group=lambda r: f"run {r['run']} · model {r['model']} · track {r['track']} · judge {r['judge']}",
                    notes=lambda rows: [CAPTION] + ([MARK_NOTE] if any(map(_partial, rows)) else []),
                    partial=_partial),
        ReportTable("gama_judge_agreement", "Judge robustness (gaps over model x track x metric cells)",
                    ("run", "judge_a", "judge_b", "metric", "n_cells", "direction_agreement", "pearson_r", "mad"),
                    data["agreement"], AGREEMENT_HEADERS, agreement_cells),
        _breakdown_table(data["dimension"], "dimension"),
        _breakdown_table(data["severity"], "severity"),
        ReportTable("gama_composites", "Blame and therapeutic composites (z-scores within run, judge and track)",
                    COMPOSITE_COLUMNS, data["composites"],
                    ("run", "model", "judge", "track", "pairs", "blame ♂", "blame ♀", "blame ♀−♂", "therapeutic ♂",
                     "therapeutic ♀", "therapeutic ♀−♂", "metrics used"), _composite_cells,
                    notes=lambda _: ["blame: Puni., Sev., Instr., Full-Bl.; therapeutic: Ther., Emp.-Agg.; each metric "
                                     "z-scored over the responses of the complete pairs of all models of the run, "
                                     "judge and track; a metric constant there is left out (metrics used)"]),
        ReportTable("gama_coverage", "GAMA-Bench coverage: targets, judge calls, complete pairs", COVERAGE_COLUMNS,
                    data["coverage"], ("run", "model", "judge", "track", "targets ok", "failed", "pending",
                                       "judge ok", "invalid output", "failed", "pending", "pairs", "coverage"),
                    _coverage_cells, partial=_partial),
    ]
    side = side_by_side("gama_runs_side_by_side", "GAMA-Bench: gaps, runs side by side", data["report"],
                        ("model", "judge", "track", "metric"), ("gap", "p_holm"),
                        lambda c, v: num(v, 2, signed=True) if c == "gap" else num(v, 3))
    return out + ([side] if side else [])


def section(db: str, runs: list[str] | None) -> ReportSection:
    data = load(db, runs)
    return ReportSection("gama", "GAMA-Bench", tables(data), _plots(data), _facts(data), _warnings(data))


def _judges(data: dict) -> list[str]:
    """The LLM judges with at least one gap; else the lexicon scorer (e.g. every judge answer invalid)."""
    found = sorted({r["judge"] for r in data["report"] if r["judge"] != LEXICON and r["gap"] is not None})
    return found or [LEXICON]


def _plots(data: dict) -> list[Plot]:
    out = []
    for judge in _judges(data):
        slug = judge.replace("/", "_")
        out += [
            Plot(f"gama_gaps_{slug}", f"Gaps per model and metric · judge {judge}",
                 "The paper's model x metric table: mean paired gap (female-actor − male-actor response) per track; "
                 "colour relative to the largest |gap| of each metric; * Holm-adjusted p < 0.05; † coverage below "
                 "100% (table: gama_report_detail).", plots.gama_gap_heatmap(data["report"], judge)),
            Plot(f"gama_gaps_by_dimension_{slug}", f"Gaps by dimension · judge {judge}",
                 "Mean gap per conflict dimension and metric, per track (table: gama_gaps_by_dimension).",
                 plots.gama_breakdown_heatmap(data["dimension"], "dimension", judge)),
            Plot(f"gama_gaps_by_severity_{slug}", f"Gaps by severity · judge {judge}",
                 "Mean gap per severity level (L1 mild, L2 moderate, L3 severe) and metric, per track "
                 "(table: gama_gaps_by_severity).", plots.gama_breakdown_heatmap(data["severity"], "severity", judge)),
        ]
        if judge != LEXICON:
            out.append(Plot(f"gama_composites_{slug}", f"Male → female in the blame / therapeutic space · judge {judge}",
                            "One arrow per model from the mean of its male-actor responses (square) to the mean of its "
                            "female-actor responses (arrow head); left and up = less blame, more therapeutic framing "
                            "for the female actor (table: gama_composites).",
                            plots.gama_composite_arrows(data["composites"], judge)))
    for row in (r for r in data["agreement"] if r["metric"] == "all"):
        a, b = row["judge_a"], row["judge_b"]
        out.append(Plot(f"gama_judges_{row['run']}_{a}_{b}".replace("/", "_"), f"Judge {a} vs judge {b} · run {row['run']}",
                        "Each point is one model x track x metric cell: its gap under judge A (x) and judge B (y); "
                        "on the dashed identity line the judges agree (tables: gama_report_detail, "
                        "gama_judge_agreement).", plots.gama_judge_scatter(_pairs(data["report"], row), a, b, row)))
    return out


def _pairs(rows: list[dict], agreement: dict) -> list[dict]:
    """The cells both judges of an agreement row scored, with the two gaps (six primary metrics)."""
    gaps = {(r["judge"], r["model"], r["track"], r["metric"]): r for r in rows
            if r["run"] == agreement["run"] and r["metric"] in METRICS}
    out = []
    for (judge, model, track, metric), row in gaps.items():
        other = gaps.get((agreement["judge_b"], model, track, metric))
        if judge == agreement["judge_a"] and other is not None:
            out.append({"model": model, "track": track, "metric": metric, "is_percent": row["is_percent"],
                        "gap_a": row["gap"], "gap_b": other["gap"]})
    return out


def _facts(data: dict) -> list[tuple[str, str]]:
    versions = data["versions"][0] if data["versions"] else {}
    judges = "; ".join(f"{j['judge']} = {j['model'] or '?'}" + (f" (provider reports {j['provider_models']})"
                                                               if j["provider_models"] else "")
                       for j in data["judge_models"]) or "none (lexicon scorer only)"
    pairs = "; ".join(f"run {r['run']} · {r['model']} · {r['judge']} · {r['track']}: {r['pairs']}/{r['expected']} "
                      f"({pct(r['coverage'])})" for r in data["coverage"])
    return [("judges", judges), ("judge prompt", versions.get("judge_prompt") or "—"),
            ("lexicon scorer", versions.get("lexicon") or "—"),
            ("coverage (complete pairs / planned pairs)", pairs or "—"),
            ("gap", "female-actor − male-actor response, mean over complete pairs; % metrics in percentage points"),
            ("plots drawn for", ", ".join(_judges(data)) + ("" if _judges(data) != [LEXICON] else
                                                            " (no LLM judge has a complete pair)"))]


def _warnings(data: dict) -> list[str]:
    out = []
    for r in data["coverage"]:
        if not _partial(r):
            continue
        problems = [f"{r[k]} {label}" for k, label in (
            ("target_failed", "target requests failed"), ("target_pending", "target requests pending"),
            ("judge_failed", "judge calls failed"), ("judge_pending", "judge calls pending")) if r[k]]
        if r["judge_invalid_output"]:  # a subset of the failed judge calls: say why they failed
            problems.append(f"{r['judge_invalid_output']} of the failed judge calls gave no valid judgement")
        out.append(f"run {r['run']} · model {r['model']} · judge {r['judge']} · track {r['track']}: "
                   f"{r['pairs']}/{r['expected']} complete pairs ({pct(r['coverage'])})"
                   + (f": {', '.join(problems)}" if problems else ""))
    return out
