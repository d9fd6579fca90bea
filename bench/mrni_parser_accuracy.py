"""Accuracy of the MRNI-BB answer parser per family of wordings, on the labelled sets in
tests/data/mrni_parser: written EN/IT answers (corpus.jsonl; rows marked split = heldout were written after
the mrni-parse-2 changes and first measured as they were) and the embedded model's answers labelled by
hand (real_smollm2.jsonl).

    python bench/mrni_parser_accuracy.py [--misses]

Targets: >= 95% overall, no family below 90% (tests/test_mrni_parser_corpus.py asserts them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import parser_corpus as pc  # noqa: E402
from fairsweep.benchmarks.mrni.parse import PARSER_VERSION  # noqa: E402


def heldout(cases: list[pc.Case]) -> list[pc.Case]:
    with open(pc.CORPUS, encoding="utf-8") as fh:
        keys = {(r["text"], r["condition"]) for r in map(json.loads, fh) if r.get("split") == "heldout"}
    return [c for c in cases if (c.text, c.condition) in keys]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every answer the parser gets wrong")
    args = parser.parse_args()
    cases = pc.load_all()
    by_family = pc.accuracy_by_family(cases)
    print(f"parser {PARSER_VERSION}\n\n{'family':24} {'right':>7} {'n':>5} {'accuracy':>9}")
    for family, (right, n) in by_family.items():
        flag = "" if right >= pc.MIN_FAMILY * n else "  < target"
        print(f"{family:24} {right:7d} {n:5d} {right / n:9.1%}{flag}")
    written = [c for c in cases if c.family != pc.REAL_FAMILY]
    for name, subset in (("written", written), ("  of which held out", heldout(written)),
                         (pc.REAL_FAMILY, [c for c in cases if c.family == pc.REAL_FAMILY]), ("overall", cases)):
        wrong = len(pc.misses(subset))
        print(f"{name:24} {len(subset) - wrong:7d} {len(subset):5d} {1 - wrong / len(subset):9.1%}")
    if args.misses:
        for case, got in pc.misses(cases):
            print(f"[{case.family}] {case.language} {case.condition}: want {case.label}, got {got}: {case.text!r}")
    right, total = sum(r for r, _ in by_family.values()), sum(n for _, n in by_family.values())
    ok = right >= pc.MIN_OVERALL * total and all(r >= pc.MIN_FAMILY * n for r, n in by_family.values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
