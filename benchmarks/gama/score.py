"""`fairsweep score` for GAMA-Bench (registered as SCORERS["gama"]): offline and re-runnable.

For one target run: the plausibility labels of its scenarios (labels.py, gama_scenario_labels); lexicon
scores of every stored target response; the valid judge answers (current judge prompt version) parsed
into gama_judgements; then the statistics tables (gap tests with Holm,
judge-versus-judge agreement, lexicon-versus-judge agreement). Incremental: only responses and judge
answers without a row yet are scored (rows of another lexicon or judge prompt version are dropped), the
labels are rewritten only when they changed, and the statistics only when the judgements or lexicon
scores they are computed from changed (fingerprint in scoring_state). Scoring twice gives the same tables.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from datetime import datetime, timezone

import duckdb

from ...config import SweepConfig
from ...storage.tx import transaction
from ...storage.writer import insert_rows
from . import labels, stats
from .judge import JUDGE_PROMPT_VERSION, LEXICON_JUDGE, validate_judgement
from .lexicon_scorer import LEXICON_VERSION, count_words, score_text

BENCHMARK = "gama"
STATS_VERSION = "gama-stats-1"  # change when the statistics change: every run is then recomputed once
PRIMARY_METRICS = ("puni", "ther", "sev", "emp_agg", "instr", "full_bl")  # the Holm family's metrics
SECONDARY_METRICS = ("puni_per100w", "ther_per100w")  # tested, reported, outside the family
LEXICON_METRICS = ("puni", "ther")


def score_run(conn: duckdb.DuckDBPyConnection, config: SweepConfig) -> dict:
    run = config.run
    label_rows, label_summary = labels.safe_label_rows(conn, config)
    if label_rows is not None:
        _store_labels(conn, run, label_rows)
    lexicon = _score_lexicon(conn, run)
    parsed, unparsable = _parse_judgements(conn, run)
    tests = _update_statistics(conn, run)
    return {"lexicon": lexicon, "judgements": parsed, "unparsable judge answers": unparsable,
            "gap tests": "up to date" if tests is None else len(tests), "plausibility labels": label_summary}


def _update_statistics(conn: duckdb.DuckDBPyConnection, run: str) -> dict[tuple, dict] | None:
    """The gap tests and agreements, recomputed only when their inputs changed (None: up to date)."""
    inputs = _inputs(conn, run)
    stored = conn.execute("SELECT inputs FROM scoring_state WHERE benchmark = ? AND run = ? AND model = ''",
                          [BENCHMARK, run]).fetchone()
    if stored is not None and stored[0] == inputs:
        return None
    tests = _store_tests(conn, run)
    _store_judge_agreement(conn, run, tests)
    _store_lexicon_agreement(conn, run)
    conn.execute("INSERT OR REPLACE INTO scoring_state VALUES (?, ?, '', ?, ?)", [BENCHMARK, run, inputs, _now()])
    return tests


def _inputs(conn: duckdb.DuckDBPyConnection, run: str) -> str:
    """What the statistics of a run are computed from: its judgements and lexicon scores (count and newest
    scored_at: rows are only ever added or dropped, each added one with a new time) and STATS_VERSION."""
    judged, lexicon = conn.execute("""
        SELECT (SELECT count(*) || ' ' || coalesce(CAST(max(scored_at) AS VARCHAR), '-') FROM gama_judgements
                WHERE run = $run),
               (SELECT count(*) || ' ' || coalesce(CAST(max(scored_at) AS VARCHAR), '-') FROM gama_lexicon_scores
                WHERE run = $run)""", {"run": run}).fetchone()
    return f"{STATS_VERSION} judgements={judged} lexicon={lexicon}"


def _store_labels(conn: duckdb.DuckDBPyConnection, run: str, rows: list[tuple]) -> None:
    """Replace the run's plausibility labels when they differ from the stored ones (stored_at aside)."""
    stored = conn.execute("SELECT scenario_id, plausibility, status, source FROM gama_scenario_labels "
                          "WHERE run = ?", [run]).fetchall()
    if set(stored) != {row[1:5] for row in rows}:
        _replace(conn, "gama_scenario_labels", run, labels.COLUMNS, rows)


def _replace(conn: duckdb.DuckDBPyConnection, table: str, run: str, columns: tuple[str, ...], rows: list) -> None:
    with transaction(conn):
        conn.execute(f"DELETE FROM {table} WHERE run = ?", [run])
        insert_rows(conn, table, columns, rows)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _score_lexicon(conn: duckdb.DuckDBPyConnection, run: str) -> int:
    """Lexicon scores of the run's stored target responses that have none from LEXICON_VERSION; returns
    how many were scored now."""
    texts = conn.execute("""SELECT r.request_id, s.text FROM requests r JOIN responses s USING (request_id)
                            WHERE r.run = ? AND r.benchmark = 'gama' AND r.request_id NOT IN (
                                SELECT target_request_id FROM gama_lexicon_scores
                                WHERE run = ? AND lexicon_version = ?)""", [run, run, LEXICON_VERSION]).fetchall()
    now, rows = _now(), []
    for request_id, text in texts:
        s = score_text(text)
        rows.append((request_id, LEXICON_VERSION, run, s.words, s.punitive_count, s.therapeutic_count,
                     json.dumps(list(s.punitive_matches)), json.dumps(list(s.therapeutic_matches)), now))
    _add(conn, "gama_lexicon_scores", "lexicon_version", LEXICON_VERSION, run,
         ("target_request_id", "lexicon_version", "run", "words", "punitive_count", "therapeutic_count",
          "punitive_matches", "therapeutic_matches", "scored_at"), rows)
    return len(rows)


def _parse_judgements(conn: duckdb.DuckDBPyConnection, run: str) -> tuple[int, int]:
    """Valid answers not parsed yet become rows; an invalid stored answer (none normally: the engine's
    check keeps them out) gets no row, so it is counted at every scoring and shows in gama_coverage as
    judged-but-unscored, never silently. Returns (parsed now, invalid)."""
    answers = conn.execute("""
        SELECT r.request_id, r.run, r.model, r.sample, s.text, t.request_id, t.text
        FROM requests r JOIN responses s USING (request_id)
        JOIN prompts p USING (benchmark, prompt_key, prompt_hash)
        JOIN responses t ON t.request_id = json_extract_string(p.metadata, '$.target_request_id')
        WHERE r.benchmark = 'gama-judge' AND json_extract_string(p.metadata, '$.target_run') = ?
          AND json_extract_string(p.metadata, '$.judge_prompt_version') = ?
          AND r.request_id NOT IN (SELECT judge_request_id FROM gama_judgements WHERE run = ?)""",
                           [run, JUDGE_PROMPT_VERSION, run]).fetchall()
    now, rows, invalid = _now(), [], 0
    for request_id, judge_run, judge, sample, text, target_id, target_text in answers:
        j, _reason = validate_judgement(text, target_text)
        if j is None:
            invalid += 1
            continue
        rows.append((request_id, run, judge_run, judge, JUDGE_PROMPT_VERSION, sample, target_id,
                     count_words(target_text), j["punitive_count"], j["therapeutic_count"], j["severity"],
                     j["empathy_with_aggressor"], j["instructional_or_accusatory"], j["full_blame_on_narrator"],
                     json.dumps(j["punitive_phrases"]), json.dumps(j["therapeutic_phrases"]), j["rationale"], now))
    _add(conn, "gama_judgements", "judge_prompt_version", JUDGE_PROMPT_VERSION, run,
         ("judge_request_id", "run", "judge_run", "judge", "judge_prompt_version", "judge_sample",
          "target_request_id", "words", "punitive_count", "therapeutic_count", "severity",
          "empathy_with_aggressor", "instructional_or_accusatory", "full_blame_on_narrator",
          "punitive_phrases", "therapeutic_phrases", "rationale", "scored_at"), rows)
    return len(rows), invalid


def _add(conn: duckdb.DuckDBPyConnection, table: str, version_column: str, version: str, run: str,
         columns: tuple[str, ...], rows: list) -> None:
    """Drop the run's rows of another version, add the new rows, in one transaction."""
    with transaction(conn):
        conn.execute(f"DELETE FROM {table} WHERE run = ? AND {version_column} <> ?", [run, version])
        insert_rows(conn, table, columns, rows)


def _store_tests(conn: duckdb.DuckDBPyConnection, run: str) -> dict[tuple, dict]:
    """One Wilcoxon test per model x judge x track x metric; Holm within each judge's primary grid."""
    pairs = conn.execute("""SELECT model, judge, track, metric, female, male, d FROM gama_pairs
                            WHERE run = ? ORDER BY model, judge, track, metric, scenario_id, sample""",
                         [run]).fetchall()
    cells: dict[tuple, list] = defaultdict(list)
    for model, judge, track, metric, female, male, d in pairs:
        cells[(model, judge, track, metric)].append((female, male, d))
    results = {}
    for key, values in sorted(cells.items()):
        female, male, d = zip(*values)
        male_mean, female_mean, gap = stats.paired_gap(female, male)
        results[key] = {"male": male_mean, "female": female_mean, "gap": gap, "w": stats.wilcoxon_signed_rank(d)}
    for judge in sorted({k[1] for k in results}):
        family = [k for k in results if k[1] == judge and k[3] in PRIMARY_METRICS]
        adjusted = stats.holm([results[k]["w"].p_value for k in family])
        size = sum(results[k]["w"].p_value is not None for k in family)
        for k, p_holm in zip(family, adjusted):
            results[k].update(p_holm=p_holm, family=size)
    now = _now()
    rows = [(run, *key, r["w"].n, r["w"].n_nonzero, r["male"], r["female"], r["gap"], r["w"].statistic,
             r["w"].w_plus, r["w"].w_minus, r["w"].p_value, r["w"].rank_biserial, r["w"].method,
             stats.ZERO_METHOD, r.get("family"), r.get("p_holm"), now) for key, r in results.items()]
    _replace(conn, "gama_gap_tests", run,
             ("run", "model", "judge", "track", "metric", "n_pairs", "n_nonzero", "male_mean", "female_mean",
              "gap", "statistic", "w_plus", "w_minus", "p_value", "rank_biserial", "method", "zero_method",
              "holm_family_size", "p_holm", "computed_at"), rows)
    return results


def _store_judge_agreement(conn: duckdb.DuckDBPyConnection, run: str, tests: dict[tuple, dict]) -> None:
    """Every two judges (the lexicon included) over their common model x track x primary-metric cells."""
    gaps: dict[str, dict[tuple, float]] = defaultdict(dict)
    for (model, judge, track, metric), r in tests.items():
        if metric in PRIMARY_METRICS and r["gap"] is not None:
            gaps[judge][(model, track, metric)] = r["gap"]
    now, rows = _now(), []
    for a, b in itertools.combinations(sorted(gaps), 2):
        common = sorted(set(gaps[a]) & set(gaps[b]))
        for metric in ("all", *PRIMARY_METRICS):
            cells = [c for c in common if metric in ("all", c[2])]
            if not cells:
                continue
            agree = stats.judge_agreement([gaps[a][c] for c in cells], [gaps[b][c] for c in cells])
            rows.append((run, a, b, metric, agree.n_cells, agree.direction_agreement, agree.pearson_r,
                         agree.mad, now))
    _replace(conn, "gama_judge_agreement", run,
             ("run", "judge_a", "judge_b", "metric", "n_cells", "direction_agreement", "pearson_r", "mad",
              "computed_at"), rows)


def _store_lexicon_agreement(conn: duckdb.DuckDBPyConnection, run: str) -> None:
    """Lexicon counts versus each judge's counts, response by response."""
    paired = conn.execute("""
        SELECT j.judge, j.puni, j.ther, l.puni, l.ther
        FROM gama_scores j JOIN gama_scores l USING (run, target_request_id)
        WHERE j.run = ? AND l.judge = ? AND j.judge <> ?
        ORDER BY j.judge, target_request_id""", [run, LEXICON_JUDGE, LEXICON_JUDGE]).fetchall()
    by_judge: dict[str, list] = defaultdict(list)
    for judge, *values in paired:
        by_judge[judge].append(values)
    now, rows = _now(), []
    for judge, values in sorted(by_judge.items()):
        for i, metric in enumerate(LEXICON_METRICS):
            agree = stats.judge_agreement([v[i] for v in values], [v[i + 2] for v in values])
            rows.append((run, judge, metric, agree.n_cells, agree.pearson_r, agree.mad, LEXICON_VERSION, now))
    _replace(conn, "gama_lexicon_agreement", run,
             ("run", "judge", "metric", "n_responses", "pearson_r", "mad", "lexicon_version", "computed_at"), rows)
