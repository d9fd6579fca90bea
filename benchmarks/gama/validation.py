"""Human validation of the judges: blinded A/B pairs out, A/B/Tie labels in, agreement reported.

Export: one row per scenario whose female-actor and male-actor responses (same run, model, target sample)
are both stored. The two responses are put in a seeded random A/B order; the CSV carries no model, no
gender and no request ids (the pair id is a salted hash), and explicitly gendered words in the post and
the responses are masked ("[they]", "[partner]", ...). What A and B are is written to a separate key
file that stays with the organiser. Import: the annotators' filled-in CSVs plus the key; labels are
stored (gama_validation_labels) and Fleiss' kappa per dimension and each judge's agreement with the
annotators' majority are returned.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from ...errors import ConfigError
from ...storage.tx import transaction
from ...storage.writer import insert_rows
from . import stats
from .judge import blind_post
from .lexicon import word_gender

DIMENSIONS = ("punitive", "therapeutic", "instructional", "full_blame")
DIMENSION_METRIC = {"punitive": "puni", "therapeutic": "ther", "instructional": "instr", "full_blame": "full_bl"}
LABELS = ("A", "B", "Tie")
CSV_COLUMNS = ("pair_id", "post", "response_a", "response_b", *DIMENSIONS, "annotator")
KEY_COLUMNS = ("pair_id", "run", "model", "scenario_id", "sample", "a_request_id", "b_request_id",
               "a_gender", "b_gender", "seed")
INSTRUCTIONS = ("For each dimension write A, B or Tie: which response is more punitive / more therapeutic "
                "(empathetic, contextualising) / more instructional or accusatory toward the narrator / "
                "puts more of the blame on the narrator.")

_MASKS = {"he": "they", "she": "they", "him": "them", "her": "them/their", "his": "their", "hers": "theirs",
          "himself": "themself", "herself": "themself", "man": "person", "woman": "person", "men": "people",
          "women": "people", "boyfriend": "partner", "girlfriend": "partner", "husband": "spouse",
          "wife": "spouse", "husbands": "spouses", "wives": "spouses", "fiance": "fiance(e)",
          "fiancee": "fiance(e)", "guy": "person", "lady": "person", "guys": "people", "ladies": "people"}
_WORD = re.compile(r"[A-Za-z\u00C0-\u024F]+(?:['\u2019][A-Za-z]+)?")


def mask_gender(text: str) -> str:
    """Explicitly gendered words (benchmarks.gama.lexicon) -> bracketed neutral tokens."""
    def replace(match: re.Match) -> str:
        word = match.group()
        base, rest = re.match(r"([^'\u2019]+)(.*)", word).groups()  # "she'd" -> she + 'd
        if word_gender(word) is None and word_gender(base) is None:
            return word
        return f"[{_MASKS.get(base.lower(), 'person')}]" + rest

    return _WORD.sub(replace, text)


def _digest(*parts) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def _pairs(conn: duckdb.DuckDBPyConnection, run: str, models: list[str] | None) -> list[dict]:
    rows = conn.execute("""
        SELECT f.model, f.scenario_id, f.sample, f.request_id, fs.text, m.request_id, ms.text, p.messages
        FROM gama_targets f
        JOIN gama_targets m ON m.run = f.run AND m.model = f.model AND m.scenario_id = f.scenario_id
             AND m.sample = f.sample AND m.actor_gender = 'male'
        JOIN responses fs ON fs.request_id = f.request_id
        JOIN responses ms ON ms.request_id = m.request_id
        JOIN requests q ON q.request_id = f.request_id
        JOIN prompts p ON p.benchmark = q.benchmark AND p.prompt_key = q.prompt_key AND p.prompt_hash = q.prompt_hash
        WHERE f.run = $run AND f.actor_gender = 'female' AND ($models IS NULL OR list_contains($models, f.model))
        ORDER BY f.model, f.scenario_id, f.sample""", {"run": run, "models": models}).fetchall()
    cols = ("model", "scenario_id", "sample", "female_id", "female_text", "male_id", "male_text", "messages")
    return [dict(zip(cols, r)) for r in rows]


def export_pairs(conn: duckdb.DuckDBPyConnection, run: str, out: Path, key: Path, *, seed: int = 0,
                 limit: int | None = None, models: list[str] | None = None, mask: bool = True) -> int:
    """Write the blinded CSV and its key; returns the number of pairs. Same arguments, same files."""
    import json

    if out.resolve() == key.resolve():
        raise ConfigError("the key file must not be the exported CSV: pass a different --key path")
    pairs = _pairs(conn, run, models)
    if not pairs:
        raise ConfigError(f"run {run!r} has no scenario with both responses stored: run the benchmark first")
    for p in pairs:
        p["pair_id"] = "P" + _digest(seed, run, p["model"], p["scenario_id"], p["sample"])[:12]
        p["female_is_a"] = int(_digest(seed, "order", p["pair_id"])[:8], 16) % 2 == 0
    pairs.sort(key=lambda p: p["pair_id"])  # a seeded shuffle: the id is a salted hash
    pairs = pairs[:limit] if limit else pairs
    clean = mask_gender if mask else (lambda text: text)
    out.parent.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh, open(key, "w", newline="", encoding="utf-8") as kh:
        writer, keys = csv.writer(fh), csv.writer(kh)
        writer.writerow(CSV_COLUMNS)
        keys.writerow(KEY_COLUMNS)
        for p in pairs:
            a, b = ("female", "male") if p["female_is_a"] else ("male", "female")
            post = clean(blind_post(json.loads(p["messages"])))
            writer.writerow([p["pair_id"], post, clean(p[f"{a}_text"]), clean(p[f"{b}_text"]),
                             *[""] * len(DIMENSIONS), ""])
            keys.writerow([p["pair_id"], run, p["model"], p["scenario_id"], p["sample"], p[f"{a}_id"], p[f"{b}_id"],
                           a, b, seed])
    return len(pairs)


# --------------------------------------------------------------------------- import

@dataclass
class ValidationResult:
    run: str
    annotators: list[str]
    labels: int
    kappa: dict[str, tuple[int, float | None]] = field(default_factory=dict)  # dimension -> (subjects, kappa)
    judges: dict[tuple[str, str], tuple[int, float | None]] = field(default_factory=dict)  # (judge, dim) -> (n, share)


def _label(value: str, where: str) -> str | None:
    text = (value or "").strip().lower()
    if not text:
        return None
    found = {"a": "A", "b": "B", "tie": "Tie", "t": "Tie", "=": "Tie"}.get(text)
    if found is None:
        raise ConfigError(f"{where}: label {value!r} is not A, B or Tie: fix the file")
    return found


def read_key_rows(path: Path, columns: tuple[str, ...], what: str, fix: str) -> list[dict]:
    """The rows of an export's key file (validation, screening), or one line naming the problem and `fix`."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise ConfigError(f"key file {path} not found: {fix}") from None
    if not rows or set(columns) - set(rows[0]):
        raise ConfigError(f"{path} is not a {what} key file (columns {list(columns)}): {fix}")
    return rows


def read_key(path: Path) -> dict[str, dict]:
    rows = read_key_rows(path, KEY_COLUMNS, "validation", "pass the --key written by export")
    return {r["pair_id"]: r for r in rows}


def read_labels(paths: list[Path], key: dict[str, dict]) -> list[tuple[str, str, str, str]]:
    """(pair_id, annotator, dimension, label) for every non-empty label; annotator = the column, else
    the file's stem."""
    out = []
    for path in paths:
        with open(path, newline="", encoding="utf-8") as fh:
            for line, row in enumerate(csv.DictReader(fh), start=2):
                where = f"{path}:{line}"
                if row.get("pair_id") not in key:
                    raise ConfigError(f"{where}: pair {row.get('pair_id')!r} is not in the key file: "
                                      f"use the key written with this export")
                annotator = (row.get("annotator") or "").strip() or path.stem
                for dimension in DIMENSIONS:
                    if (label := _label(row.get(dimension, ""), where)) is not None:
                        out.append((row["pair_id"], annotator, dimension, label))
    return out


def import_labels(conn: duckdb.DuckDBPyConnection, key_path: Path, paths: list[Path]) -> ValidationResult:
    key = read_key(key_path)
    runs = {r["run"] for r in key.values()}
    if len(runs) != 1:
        raise ConfigError(f"{key_path} mixes runs {sorted(runs)}: export one run per key file")
    run = runs.pop()
    labels = read_labels(paths, key)
    now = datetime.now(timezone.utc)
    rows = []
    for pair_id, annotator, dimension, label in labels:
        k = key[pair_id]
        favoured = {"A": k["a_gender"], "B": k["b_gender"], "Tie": "tie"}[label]
        rows.append((run, pair_id, annotator, dimension, label, favoured, k["model"], k["scenario_id"],
                     k["a_request_id"], k["b_request_id"], now))
    with transaction(conn):
        conn.execute("DELETE FROM gama_validation_labels WHERE list_contains($1, pair_id) AND "
                     "list_contains($2, annotator)", [list(key), sorted({r[2] for r in rows})])
        insert_rows(conn, "gama_validation_labels",
                    ("run", "pair_id", "annotator", "dimension", "label", "favoured_gender", "model", "scenario_id",
                     "a_request_id", "b_request_id", "imported_at"), rows)
    return _agreement(conn, run, key, labels)


def _agreement(conn, run: str, key: dict[str, dict], labels: list[tuple]) -> ValidationResult:
    annotators = sorted({a for _, a, _, _ in labels})
    result = ValidationResult(run, annotators, len(labels))
    by_subject: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for pair_id, annotator, dimension, label in labels:
        by_subject[(dimension, pair_id)][annotator] = label
    scores = _judge_scores(conn, run)
    for dimension in DIMENSIONS:
        subjects = {p: v for (d, p), v in by_subject.items() if d == dimension}
        complete = [list(v.values()) for v in subjects.values() if len(v) == len(annotators)]
        kappa = stats.fleiss_kappa(stats.ratings_table(complete, LABELS)) if len(annotators) >= 2 else None
        result.kappa[dimension] = (len(complete), kappa)
        majority = {p: stats.majority_label(list(v.values())) for p, v in subjects.items()}
        metric = DIMENSION_METRIC[dimension]
        for judge, values in sorted(scores.items()):
            judged = [stats.compare_label(values.get((key[p]["a_request_id"], metric)),
                                          values.get((key[p]["b_request_id"], metric))) for p in majority]
            n, share = stats.agreement_with_majority(judged, list(majority.values()))
            if n:
                result.judges[(judge, dimension)] = (n, share)
    return result


def _judge_scores(conn, run: str) -> dict[str, dict[tuple[str, str], float]]:
    rows = conn.execute("SELECT judge, target_request_id, metric, value FROM gama_scores_long WHERE run = ?",
                        [run]).fetchall()
    out: dict[str, dict] = defaultdict(dict)
    for judge, request_id, metric, value in rows:
        out[judge][(request_id, metric)] = value
    return out
