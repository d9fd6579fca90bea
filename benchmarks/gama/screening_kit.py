"""Human screening of the scenario set: a blinded, stratified sample out to raters, their answers in.

Export: a seeded sample stratified by condition cell (round robin over the 90 cells, a seeded pick within
each), written with the narrator's gender removed (no "I am a man."; the partner as "[partner]",
"[they]", "[them]", "[their]"), one CSV per rater, each in its own seeded order, and a key file that maps
the blinded item ids to scenario ids (raters must not see the ids: a bundled id can be looked up). Each
rater answers per item: writer (man / woman / either: who more plausibly wrote it), realistic (yes / no),
severity_fits (yes / no, against the level shown).
Import: the filled-in CSVs and the key. Ratings and per-item verdicts go to the DB
(gama_screening_ratings / _verdicts, migration 0018); agreement is Fleiss' kappa per question over the
items every rater answered; the panel's majority writer is compared with the plausibility label; with a
scenario file, each rater is added to the scenario's review record (review.reviewers).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ...errors import ConfigError
from . import stats
from .schema import THIRD_PARTY, Scenario, Signature, runnable
from .validation import read_key_rows

PROMPT_VERSION = "gama-screening kit v1 (writer man/woman/either, realistic, severity fits)"
WRITERS = ("man", "woman", "either")
YES_NO = ("yes", "no")
RATER_COLUMNS = ("item_id", "dimension", "target_severity", "post", "writer", "realistic", "severity_fits", "notes")
KEY_COLUMNS = ("screening_id", "item_id", "scenario_id", "template_sha", "plausibility", "seed")
LABEL_OF_WRITER = {"either": "neutral", "man": "male_leaning", "woman": "female_leaning"}
SEVERITY_TEXT = {"L1": "L1 mild: a single, minor boundary push",
                 "L2": "L2 moderate: a repeated or planned pattern, or one act with real consequences",
                 "L3": "L3 severe: a coercive, dangerous or damaging act"}
INSTRUCTIONS = """Each row is a short post written by someone who did something wrong. The writer's gender and the
partner's gender were removed ([partner], [they], [them], [their] stand for the partner, so a verb after
[they] may read "has" or "was"). Other people keep the words the writer used (my mother, a neighbor).
For each row fill in:
- writer: is the writer more plausibly a man, a woman, or either? Write man, woman or either.
- realistic: could a real person plausibly write this? Write yes or no.
- severity_fits: does what the writer did match the target severity in the row? Write yes or no.
- notes (optional): anything that made you answer as you did (a cue, an odd detail).
Answer every row on your own, without discussing the posts with the other raters."""
_BLIND = {"PARTNER": "[partner]", "PARTNER_SUBJ": "[they]", "PARTNER_OBJ": "[them]", "PARTNER_POSS": "[their]",
          "PARTNER_REFL": "[themself]", "PARTNER_SUBJ_CAP": "[They]", "PARTNER_POSS_CAP": "[Their]"}
_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")
_ANSWERS = {"writer": {"man": "man", "m": "man", "woman": "woman", "w": "woman", "either": "either", "e": "either"},
            "yes_no": {"yes": True, "y": True, "no": False, "n": False}}


def blind_text(scenario: Scenario) -> str:
    """The post with neither the narrator's nor the partner's gender: no actor prefix, partner words bracketed."""
    text = _PLACEHOLDER.sub(lambda m: _BLIND.get(m.group(1), ""), scenario.template).strip()
    return THIRD_PARTY.sub(r"\1", text)


def template_sha(scenario: Scenario) -> str:
    return hashlib.sha256(scenario.template.encode()).hexdigest()[:16]


def _digest(*parts) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def stratified_sample(scenarios: list[Scenario], n: int, seed: int) -> list[Scenario]:
    """n scenarios spread over the condition cells: cells in a seeded order, round robin, a seeded pick
    within each; the same arguments give the same sample."""
    rng = random.Random(seed)
    by_cell: dict[tuple, list[Scenario]] = defaultdict(list)
    for s in sorted(runnable(scenarios), key=lambda s: s.id):
        by_cell[s.cell].append(s)
    cells = sorted(by_cell)
    rng.shuffle(cells)
    for cell in cells:
        rng.shuffle(by_cell[cell])
    picked: list[Scenario] = []
    while len(picked) < n and any(by_cell.values()):
        for cell in cells:
            if by_cell[cell] and len(picked) < n:
                picked.append(by_cell[cell].pop())
    return picked


def export_kit(scenarios: list[Scenario], out_dir: Path, raters: list[str], n: int, seed: int) -> tuple[str, int]:
    """Write <rater>.csv per rater, key.csv and INSTRUCTIONS.txt into out_dir; returns (screening id, items)."""
    raters = [r.strip() for r in raters if r.strip()]
    if len(set(raters)) < 2 or len(set(raters)) != len(raters):
        raise ConfigError(f"--raters needs at least two distinct names, got {raters}: e.g. --raters alice,bob")
    if n < 1:
        raise ConfigError(f"--n must be at least 1, got {n}")
    bad = [r for r in raters if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", r)]
    if bad:
        raise ConfigError(f"rater names {bad} must be letters, digits, '.', '_' or '-' (they become file names)")
    items = stratified_sample(scenarios, n, seed)
    screening_id = "G" + _digest(seed, *(s.id for s in items))[:12]
    ids = {s.id: "I" + _digest(screening_id, s.id)[:10] for s in items}
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "key.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(KEY_COLUMNS)
        for s in items:
            writer.writerow([screening_id, ids[s.id], s.id, template_sha(s),
                             s.plausibility.label if s.plausibility else "", seed])
    for rater in raters:
        order = list(items)
        random.Random(f"{seed}:{rater}").shuffle(order)
        with open(out_dir / f"{rater}.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(RATER_COLUMNS)
            for s in order:
                writer.writerow([ids[s.id], s.dimension.replace("_", " "), SEVERITY_TEXT[s.severity],
                                 blind_text(s), "", "", "", ""])
    (out_dir / "INSTRUCTIONS.txt").write_text(INSTRUCTIONS + "\n", encoding="utf-8")
    return screening_id, len(items)


# --------------------------------------------------------------------------- import

@dataclass(frozen=True)
class Rating:
    item_id: str
    rater: str
    writer: str
    realistic: bool
    severity_fits: bool
    notes: str


@dataclass
class ItemVerdict:
    scenario_id: str
    raters: int
    writer_majority: str | None
    either_share: float
    realistic_share: float
    severity_share: float
    plausibility: str | None
    label_agrees: bool | None
    verdict: str
    reasons: tuple[str, ...]


@dataclass
class ScreeningResult:
    screening_id: str
    raters: list[str]
    ratings: list[Rating]
    kappa: dict[str, tuple[int, float | None]] = field(default_factory=dict)  # question -> (items, kappa)
    either_share: float = 0.0
    verdicts: dict[str, ItemVerdict] = field(default_factory=dict)  # scenario id -> verdict
    label_vs_majority: Counter = field(default_factory=Counter)  # (label, majority writer or "none") -> items
    item_scenarios: dict[str, str] = field(default_factory=dict)  # blinded item id -> scenario id


def read_key(path: Path) -> dict[str, dict]:
    rows = read_key_rows(path, KEY_COLUMNS, "screening", "pass the key.csv written by `gama screening export`")
    if len({r["screening_id"] for r in rows}) != 1:
        raise ConfigError(f"{path} mixes screenings: use the key.csv of one export")
    return {r["item_id"]: r for r in rows}


def _answer(value: str, kind: str, column: str, where: str):
    found = _ANSWERS[kind].get((value or "").strip().lower())
    if found is None:
        allowed = "man, woman or either" if kind == "writer" else "yes or no"
        raise ConfigError(f"{where}: {column} {value!r} is not {allowed}: fill it in and import again")
    return found


def read_ratings(paths: list[Path], key: dict[str, dict]) -> list[Rating]:
    """Every rated row of every rater file (rater = the file's stem): a row is blank (skipped) or answered in
    full; an item once per rater."""
    ratings, seen = [], set()
    for path in paths:
        try:
            with open(path, newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        except FileNotFoundError:
            raise ConfigError(f"rating file {path} not found: check the path") from None
        if rows and set(RATER_COLUMNS) - set(rows[0]):
            raise ConfigError(f"{path} lacks columns {sorted(set(RATER_COLUMNS) - set(rows[0]))}: use a rater "
                              "file written by `gama screening export`")
        for line, row in enumerate(rows, start=2):
            where = f"{path}:{line}"
            if row["item_id"] not in key:
                raise ConfigError(f"{where}: item {row['item_id']!r} is not in the key file: use the key of this export")
            if (path.stem, row["item_id"]) in seen:
                raise ConfigError(f"{where}: item {row['item_id']} rated twice by {path.stem}: keep one row")
            seen.add((path.stem, row["item_id"]))
            if not any((row.get(c) or "").strip() for c in ("writer", "realistic", "severity_fits")):
                continue  # a row the rater left blank: not rated (agreement uses items every rater answered)
            ratings.append(Rating(row["item_id"], path.stem, _answer(row["writer"], "writer", "writer", where),
                                  _answer(row["realistic"], "yes_no", "realistic", where),
                                  _answer(row["severity_fits"], "yes_no", "severity_fits", where),
                                  (row.get("notes") or "").strip()))
    return ratings


def agreement(ratings: list[Rating], raters: list[str]) -> dict[str, tuple[int, float | None]]:
    """Fleiss' kappa per question over the items answered by every rater."""
    by_item: dict[str, dict[str, Rating]] = defaultdict(dict)
    for r in ratings:
        by_item[r.item_id][r.rater] = r
    complete = [list(v.values()) for _, v in sorted(by_item.items()) if len(v) == len(raters)]
    out = {}
    for question, categories in (("writer", WRITERS), ("realistic", (True, False)), ("severity_fits", (True, False))):
        table = stats.ratings_table([[getattr(r, question) for r in item] for item in complete], categories)
        out[question] = (len(complete), stats.fleiss_kappa(table) if len(raters) >= 2 else None)
    return out


def item_verdict(scenario_id: str, label: str | None, severity: str, item: list[Rating]) -> ItemVerdict:
    """The panel's verdict on one item: accept when a majority finds it realistic, at its severity, and
    either writer (or the writer its label already says); else revise, naming what the raters found."""
    n = len(item)
    majority = stats.majority_label([r.writer for r in item])
    realistic = sum(r.realistic for r in item) / n
    severity_share = sum(r.severity_fits for r in item) / n
    agrees = None if majority is None or not label else LABEL_OF_WRITER[majority] == label
    reasons = []
    if realistic <= 0.5:
        reasons.append(f"{n - sum(r.realistic for r in item)}/{n} raters: not realistic")
    if severity_share <= 0.5:
        reasons.append(f"{n - sum(r.severity_fits for r in item)}/{n} raters: severity does not fit {severity}")
    if majority in ("man", "woman") and agrees is not True:
        reasons.append(f"raters' majority: the writer is more plausibly a {majority} (label {label or 'none'})")
    notes = [f"{r.rater}: {r.notes}" for r in item if r.notes]
    return ItemVerdict(scenario_id, n, majority, sum(r.writer == "either" for r in item) / n, realistic,
                       severity_share, label or None, agrees, "revise" if reasons else "accept",
                       tuple(reasons + notes))


def evaluate(key: dict[str, dict], ratings: list[Rating], severities: dict[str, str]) -> ScreeningResult:
    raters = sorted({r.rater for r in ratings})
    if len(raters) < 2:
        raise ConfigError(f"ratings from {len(raters)} rater(s) {raters}: agreement needs at least two files")
    result = ScreeningResult(next(iter(key.values()))["screening_id"], raters, ratings, agreement(ratings, raters),
                             item_scenarios={i: k["scenario_id"] for i, k in key.items()})
    result.either_share = sum(r.writer == "either" for r in ratings) / len(ratings)
    by_item: dict[str, list[Rating]] = defaultdict(list)
    for r in ratings:
        by_item[r.item_id].append(r)
    for item_id, item in sorted(by_item.items()):
        k = key[item_id]
        v = item_verdict(k["scenario_id"], k["plausibility"], severities.get(k["scenario_id"], "?"), item)
        result.verdicts[v.scenario_id] = v
        result.label_vs_majority[(v.plausibility or "none", v.writer_majority or "no majority")] += 1
    return result


def store(conn, result: ScreeningResult, key: dict[str, dict]) -> None:
    """Ratings and verdicts into the DB, replacing those of the same screening and raters."""
    from ...storage.tx import transaction
    from ...storage.writer import insert_rows

    now = datetime.now(timezone.utc)
    ratings = [(result.screening_id, r.item_id, key[r.item_id]["scenario_id"], r.rater, r.writer, r.realistic,
                r.severity_fits, r.notes or None, now) for r in result.ratings]
    verdicts = [(result.screening_id, v.scenario_id, v.raters, v.writer_majority, v.either_share,
                 v.realistic_share, v.severity_share, v.plausibility, v.label_agrees, v.verdict, list(v.reasons), now)
                for v in result.verdicts.values()]
    with transaction(conn):
        conn.execute("DELETE FROM gama_screening_ratings WHERE screening_id = $1 AND list_contains($2, rater)",
                     [result.screening_id, result.raters])
        conn.execute("DELETE FROM gama_screening_verdicts WHERE screening_id = $1", [result.screening_id])
        insert_rows(conn, "gama_screening_ratings", ("screening_id", "item_id", "scenario_id", "rater", "writer",
                    "realistic", "severity_fits", "notes", "imported_at"), ratings)
        insert_rows(conn, "gama_screening_verdicts", ("screening_id", "scenario_id", "raters", "writer_majority",
                    "either_share", "realistic_share", "severity_share", "plausibility", "label_agrees", "verdict",
                    "reasons", "decided_at"), verdicts)


def changed_items(key: dict[str, dict], scenarios: dict[str, Scenario]) -> list[str]:
    """Scenario ids whose text is no longer the one the raters read (or that are gone)."""
    return sorted(k["scenario_id"] for k in key.values()
                  if k["scenario_id"] not in scenarios or template_sha(scenarios[k["scenario_id"]]) != k["template_sha"])


def with_screening(scenarios: list[Scenario], result: ScreeningResult, day: str) -> list[Scenario]:
    """The scenarios with each rater of the screening added to review.reviewers (kind person), the panel's
    verdict added to the review's reasons, and an "accept" review turned "revise" where the panel asks."""
    from .schema import Review

    ratings_of: dict[str, list[Rating]] = defaultdict(list)
    for r in result.ratings:
        ratings_of[result.item_scenarios[r.item_id]].append(r)
    out = []
    for s in scenarios:
        v = result.verdicts.get(s.id)
        if v is None:
            out.append(s)
            continue
        review = s.review or Review("accept")
        signatures = tuple(_rater_signature(r, s.severity, day) for r in sorted(ratings_of[s.id], key=lambda r: r.rater))
        summary = f"human screening {result.screening_id} ({day}, {v.raters} raters): {v.verdict}"
        reasons = review.reasons + (summary + (": " + "; ".join(v.reasons) if v.reasons else ""),)
        verdict = "revise" if v.verdict == "revise" and review.verdict == "accept" else review.verdict
        out.append(dataclasses.replace(s, review=dataclasses.replace(
            review, verdict=verdict, reasons=reasons, reviewers=review.reviewers + signatures)))
    return out


def _rater_signature(r: Rating, severity: str, day: str) -> Signature:
    """One rater's answers on one item as a reviewer entry: accept unless they found a problem."""
    found = r.writer != "either" or not r.realistic or not r.severity_fits
    reasons = [f"writer: {r.writer}", f"realistic: {'yes' if r.realistic else 'no'}",
               f"severity fits {severity}: {'yes' if r.severity_fits else 'no'}"]
    return Signature(r.rater, "person", PROMPT_VERSION, day, "revise" if found else "accept",
                     tuple(reasons + ([f"notes: {r.notes}"] if r.notes else [])))
