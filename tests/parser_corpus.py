"""The MRNI-BB parser's labelled answer sets (tests/data/mrni_parser) and accuracy per family.

corpus.jsonl: written answers, one family per kind of wording (family, language, condition, label, text).
real_smollm2.jsonl: answers of the embedded model (local/smollm2) to a stratified sample of MRNI-BB prompts,
labelled by hand with a reason (prompt_key, language, condition, options, text, label, reason); their family
is REAL. Shared by tests/test_mrni_parser_corpus.py and bench/mrni_parser_accuracy.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fairsweep.benchmarks.mrni.parse import parse_answer

DATA = Path(__file__).resolve().parent / "data" / "mrni_parser"
CORPUS, REAL = DATA / "corpus.jsonl", DATA / "real_smollm2.jsonl"
REAL_FAMILY = "real (local/smollm2)"
MIN_OVERALL, MIN_FAMILY = 0.95, 0.90  # targets of the issue


@dataclass(frozen=True)
class Case:
    family: str
    language: str
    condition: str
    text: str
    label: str


def load(path: Path = CORPUS, family: str | None = None) -> list[Case]:
    """The labelled answers of one file (family from the rows, or the one given)."""
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [Case(family or r["family"], r["language"], r["condition"], r["text"], r["label"]) for r in rows]


def load_all() -> list[Case]:
    return load(CORPUS) + load(REAL, REAL_FAMILY)


def misses(cases: list[Case]) -> list[tuple[Case, str]]:
    """(case, parser label) for every case the parser labels differently from the hand label."""
    out = []
    for case in cases:
        got = parse_answer(case.text, case.language, case.condition).label
        if got != case.label:
            out.append((case, got))
    return out


def accuracy_by_family(cases: list[Case]) -> dict[str, tuple[int, int]]:
    """family -> (correct, total), in order of first appearance."""
    wrong: dict[str, int] = {}
    for case, _ in misses(cases):
        wrong[case.family] = wrong.get(case.family, 0) + 1
    totals: dict[str, int] = {}
    for case in cases:
        totals[case.family] = totals.get(case.family, 0) + 1
    return {f: (n - wrong.get(f, 0), n) for f, n in totals.items()}
