"""The MRNI-BB parser's labelled answer sets (tests/data/mrni_parser) and accuracy per family.

corpus.jsonl: written answers, one family per kind of wording (family, language, condition, label, text).
heldout_28.jsonl: answers written for issue 28 before the parser handled them (refusals worded as declining,
options referred to by their role in the context, an option named and then withdrawn as undecidable, and near
misses of each that must keep their label), with their prompt's context and options.
real_smollm2.jsonl: answers of the embedded model (local/smollm2) to a stratified sample of MRNI-BB prompts,
labelled by hand with a reason (prompt_key, language, condition, options, text, label, reason); their family
is REAL. real_smollm2_r28.jsonl: another sample (seed 28), with each prompt's context, labelled the same way.
Shared by tests/test_mrni_parser_corpus.py and bench/mrni_parser_accuracy.py.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fairsweep.benchmarks.mrni.parse import parse_answer

DATA = Path(__file__).resolve().parent / "data" / "mrni_parser"
CORPUS, REAL = DATA / "corpus.jsonl", DATA / "real_smollm2.jsonl"
HELDOUT_28, REAL_28 = DATA / "heldout_28.jsonl", DATA / "real_smollm2_r28.jsonl"
REAL_FAMILY = "real (local/smollm2)"
REAL_28_FAMILY = "real, seed 28 (smollm2)"
MIN_OVERALL, MIN_FAMILY = 0.95, 0.90  # targets of the issue


@dataclass(frozen=True)
class Case:
    family: str
    language: str
    condition: str
    text: str
    label: str
    context: str | None = None
    options: tuple[str, ...] | None = None


def load(path: Path = CORPUS, family: str | None = None) -> list[Case]:
    """The labelled answers of one file (family from the rows, or the one given)."""
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [Case(family or r["family"], r["language"], r["condition"], r["text"], r["label"], r.get("context"),
                 tuple(r["options"]) if r.get("options") else None) for r in rows]


def load_all() -> list[Case]:
    sets = [load(CORPUS), load(HELDOUT_28), load(REAL, REAL_FAMILY)]
    if REAL_28.exists():
        sets.append(load(REAL_28, REAL_28_FAMILY))
    return [case for cases in sets for case in cases]


def label_with(parse: Callable, case: Case) -> str:
    """The label `parse` gives the case, passing context and options to a parser that takes them (an older
    parser version, loaded by the bench for its before column, takes neither)."""
    accepted = inspect.signature(parse).parameters
    extra = {k: v for k, v in (("context", case.context), ("options", case.options)) if k in accepted}
    return parse(case.text, case.language, case.condition, **extra).label


def misses(cases: list[Case], parse: Callable = parse_answer) -> list[tuple[Case, str]]:
    """(case, parser label) for every case the parser labels differently from the hand label."""
    out = []
    for case in cases:
        got = label_with(parse, case)
        if got != case.label:
            out.append((case, got))
    return out


def accuracy_by_family(cases: list[Case], parse: Callable = parse_answer) -> dict[str, tuple[int, int]]:
    """family -> (correct, total), in order of first appearance."""
    wrong: dict[str, int] = {}
    for case, _ in misses(cases, parse):
        wrong[case.family] = wrong.get(case.family, 0) + 1
    totals: dict[str, int] = {}
    for case in cases:
        totals[case.family] = totals.get(case.family, 0) + 1
    return {f: (n - wrong.get(f, 0), n) for f, n in totals.items()}
