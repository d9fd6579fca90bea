"""Prompt-set uncertainty: cluster-bootstrap intervals (clusters: pairs where there are pairs, else items) and
exact paired tests between the variants of the pairs, written back as tables (promptset_intervals,
promptset_paired_tests) beside the SQL views' point estimates.

The bootstrap is MRNI-BB's (benchmarks/mrni/stats.py: multinomial cluster weights, one matrix product per
resample set, percentile intervals); McNemar's exact test is its binomial test of 1/2 on the discordant
pairs; a numeric outcome (or a binary one averaged over several samples) gets GAMA-Bench's exact Wilcoxon
signed-rank test; Holm adjusts within each run x model x set x group.
"""

from __future__ import annotations

import zlib
from datetime import datetime, timezone

import duckdb
import numpy as np

from ...storage.tx import transaction
from ..mrni.stats import LEVEL, binomial_p_half, percentile_interval, resample_totals

N_BOOT = 1000
SEED = 20261


def rng_for(seed: int, *names: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(names).encode())])


def mcnemar_exact_p(n_a_only: int, n_b_only: int) -> float | None:
    """Two-sided exact McNemar p: the binomial(n_a_only + n_b_only, 1/2) test of the discordant pairs."""
    n = n_a_only + n_b_only
    return binomial_p_half(n_a_only, n) if n else None


def cluster_rows(conn, run: str, name: str) -> dict[tuple[str, str], list[tuple]]:
    """(model, grp) -> [(cluster, answered, gold answered, correct, label)] counts per cluster and label."""
    rows = conn.execute("""
        SELECT model, grp, cluster, code, count(*), count(*) FILTER (WHERE has_gold),
               count(*) FILTER (WHERE correct)
        FROM promptset_grouped WHERE run = $run AND benchmark = $name AND answered
        GROUP BY ALL ORDER BY ALL""", {"run": run, "name": name}).fetchall()
    out: dict[tuple[str, str], list[tuple]] = {}
    for model, grp, *rest in rows:
        out.setdefault((model, grp), []).append(tuple(rest))
    return out


def interval_rows(run: str, name: str, model: str, grp: str, rows: list[tuple], n_boot: int, seed: int) -> list:
    """Accuracy and every label's rate with its percentile interval over cluster resamples."""
    clusters = sorted({r[0] for r in rows})
    labels = sorted({r[1] for r in rows})
    ci, li = {c: i for i, c in enumerate(clusters)}, {lab: i for i, lab in enumerate(labels)}
    counts = np.zeros((len(clusters), 1, 3 + len(labels)))  # answered, gold answered, correct, per label
    for cluster, label, n, gold, correct in rows:
        counts[ci[cluster], 0, :3] += (n, gold, correct)
        counts[ci[cluster], 0, 3 + li[label]] += n
    boot = resample_totals(counts, n_boot, rng_for(seed, run, name, model, grp))[:, 0, :]
    total = counts.sum(axis=0)[0]
    metrics = {"accuracy": (2, 1)} if total[1] > 0 else {}
    metrics.update({f"choice:{label}": (3 + li[label], 0) for label in labels})
    out = []
    for metric, (num, den) in metrics.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(boot[:, den] > 0, boot[:, num] / np.where(boot[:, den] > 0, boot[:, den], 1), np.nan)
        low, high, n_valid = percentile_interval(values)
        out.append((run, model, name, grp, metric, float(total[num] / total[den]), low, high, LEVEL,
                    len(clusters), n_boot, n_valid, seed))
    return out


def pair_outcomes(conn, run: str, name: str) -> dict[tuple, dict]:
    """(model, grp, variant_a, variant_b) -> {pair: [(label_a, label_b, correct_a, correct_b, value_a, value_b)]}."""
    rows = conn.execute("""
        SELECT model, grp, variant_a, variant_b, pair, label_a, label_b, correct_a, correct_b, value_a, value_b,
               kind_a, kind_b
        FROM promptset_pair_cells WHERE run = $run AND benchmark = $name ORDER BY ALL""",
                        {"run": run, "name": name}).fetchall()
    out: dict[tuple, dict] = {}
    for model, grp, va, vb, pair, *cell in rows:
        out.setdefault((model, grp, va, vb), {}).setdefault(pair, []).append(tuple(cell))
    return out


def outcome_arrays(pairs: dict[str, list[tuple]]) -> dict[str, tuple[np.ndarray, np.ndarray, bool]]:
    """outcome -> (a, b, binary), one value per pair (the mean over its samples where the outcome is defined
    for both variants): correct (items with a gold), choice:<letter>, value (both answers numbers)."""
    cells = [c for cs in pairs.values() for c in cs]
    chosen = sorted({lab for c in cells for lab, kind in ((c[0], c[6]), (c[1], c[7])) if kind == "choice"})
    extract = {"correct": lambda c: None if c[2] is None or c[3] is None else (float(c[2]), float(c[3]))}
    for label in chosen:
        extract[f"choice:{label}"] = lambda c, label=label: (float(c[0] == label), float(c[1] == label))
    extract["value"] = lambda c: None if c[4] is None or c[5] is None else (c[4], c[5])
    out = {}
    for outcome, get in extract.items():
        per_pair = []
        for cs in pairs.values():
            defined = [v for v in map(get, cs) if v is not None]
            if defined:
                per_pair.append(np.array(defined, dtype=float).mean(axis=0))
        if not per_pair:
            continue
        a, b = np.array([p[0] for p in per_pair]), np.array([p[1] for p in per_pair])
        binary = outcome != "value" and bool(np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all())
        out[outcome] = (a, b, binary)
    return out


def paired_row(a: np.ndarray, b: np.ndarray, binary: bool, n_boot: int, rng: np.random.Generator) -> dict:
    """Means, the paired difference with its pair-bootstrap interval, and the exact test."""
    from ..gama.stats import wilcoxon_signed_rank  # scipy: only when there are pairs to test
    n = len(a)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)
    low, high, _ = percentile_interval(weights @ (b - a) / n)
    row = {"n_pairs": n, "mean_a": float(a.mean()), "mean_b": float(b.mean()), "diff": float((b - a).mean()),
           "ci_low": low, "ci_high": high, "n_a_only": None, "n_b_only": None, "statistic": None}
    if binary:
        n_a, n_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        row.update(test="mcnemar_exact", n_a_only=n_a, n_b_only=n_b, p_value=mcnemar_exact_p(n_a, n_b))
    else:
        w = wilcoxon_signed_rank(b - a)
        row.update(test=f"wilcoxon_{w.method}" if w.method else None, statistic=w.statistic, p_value=w.p_value)
    return row


def paired_rows(run: str, name: str, cells: dict[tuple, dict], n_boot: int, seed: int) -> list[tuple]:
    """Every (model, grp, contrast, outcome) test, Holm-adjusted within (model, grp)."""
    from ..gama.stats import holm
    by_family: dict[tuple, list[tuple]] = {}
    for (model, grp, va, vb), pairs in cells.items():
        for outcome, (a, b, binary) in outcome_arrays(pairs).items():
            row = paired_row(a, b, binary, n_boot, rng_for(seed, run, name, model, grp, va, vb, outcome))
            by_family.setdefault((model, grp), []).append((va, vb, outcome, row))
    out, now = [], datetime.now(timezone.utc)
    for (model, grp), tests in by_family.items():
        adjusted = holm([t[3]["p_value"] for t in tests])
        for (va, vb, outcome, r), p_holm in zip(tests, adjusted):
            out.append((run, model, name, grp, outcome, va, vb, r["n_pairs"], r["mean_a"], r["mean_b"], r["diff"],
                        r["ci_low"], r["ci_high"], r["test"], r["n_a_only"], r["n_b_only"], r["statistic"],
                        r["p_value"], p_holm, n_boot, seed, now))
    return out


def update_statistics(conn: duckdb.DuckDBPyConnection, run: str, name: str, n_boot: int = N_BOOT,
                      seed: int = SEED) -> dict:
    """Recompute the set's interval and paired-test tables for the run (replacing its rows)."""
    intervals = [(*r, datetime.now(timezone.utc)) for (model, grp), rows in cluster_rows(conn, run, name).items()
                 for r in interval_rows(run, name, model, grp, rows, n_boot, seed)]
    tests = paired_rows(run, name, pair_outcomes(conn, run, name), n_boot, seed)
    with transaction(conn):
        conn.execute("DELETE FROM promptset_intervals WHERE run = ? AND benchmark = ?", [run, name])
        conn.execute("DELETE FROM promptset_paired_tests WHERE run = ? AND benchmark = ?", [run, name])
        if intervals:
            conn.executemany("INSERT INTO promptset_intervals VALUES (" + ", ".join("?" * 14) + ")", intervals)
        if tests:
            conn.executemany("INSERT INTO promptset_paired_tests VALUES (" + ", ".join("?" * 22) + ")", tests)
    return {"intervals": len(intervals), "paired tests": len(tests)}
