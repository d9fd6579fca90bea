"""Accuracy of the MRNI-BB answer parser per family of wordings, on the labelled sets in
tests/data/mrni_parser: written EN/IT answers (corpus.jsonl; rows marked split = heldout were written after
the mrni-parse-2 changes and first measured as they were), the answers written for issue 28 before the parser
handled them (heldout_28.jsonl, with their prompt's context; rows marked split = second / third were written
after the mrni-parse-3 changes, at commits 3384ce2 / e0d668c, and first measured as they were), and the
embedded model's answers labelled by hand (real_smollm2.jsonl; real_smollm2_r28.jsonl).

    python bench/mrni_parser_accuracy.py [--before REV] [--misses]

--before REV adds a column with the parser of git revision REV (its benchmarks/mrni/parse.py, run on the same
answers; a parser that takes no context is given none), e.g. --before 9cc6d51 for mrni-parse-2.
Targets: >= 95% overall, no family below 90% (tests/test_mrni_parser_corpus.py asserts them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import parser_corpus as pc  # noqa: E402
from fairsweep.benchmarks.mrni.parse import PARSER_VERSION, parse_answer  # noqa: E402


def split(cases: list[pc.Case], path: Path = pc.CORPUS, name: str = "heldout") -> list[pc.Case]:
    """The cases whose row in `path` is marked split = name."""
    with open(path, encoding="utf-8") as fh:
        keys = {(r["text"], r["condition"]) for r in map(json.loads, fh) if r.get("split") == name}
    return [c for c in cases if (c.text, c.condition) in keys]


def parser_at(rev: str) -> tuple[str, Callable]:
    """(version, parse_answer) of the parser at git revision `rev`: its benchmarks/mrni/parse.py and, where it
    has one, its describe.py, loaded as a package of their own (they import only the stdlib and each other)."""
    package = types.ModuleType(f"mrni_parser_{rev}")
    package.__path__ = []
    sys.modules[package.__name__] = package
    for name in ("describe", "parse"):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:benchmarks/mrni/{name}.py"],
                               capture_output=True, text=True)
        if shown.returncode != 0:
            if name == "parse":
                print(f"bench: no benchmarks/mrni/parse.py at {rev!r} ({shown.stderr.strip()}); give a commit of "
                      "this repository, e.g. 9cc6d51", file=sys.stderr)
                raise SystemExit(2)
            continue
        module = types.ModuleType(f"{package.__name__}.{name}")
        module.__package__ = package.__name__
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(shown.stdout, f"{rev}:benchmarks/mrni/{name}.py", "exec"), module.__dict__)
        setattr(package, name, module)
    return package.parse.PARSER_VERSION, package.parse.parse_answer


def subsets(cases: list[pc.Case]) -> list[tuple[str, list[pc.Case]]]:
    """Named groups of families: each file, the corpus' held-out rows, all."""
    reals = (pc.REAL_FAMILY, pc.REAL_28_FAMILY)
    new = {c.family for c in pc.load(pc.HELDOUT_28)}
    written = [c for c in cases if c.family not in reals and c.family not in new]
    issue28 = [c for c in cases if c.family in new]
    return [("written (corpus.jsonl)", written), ("  of which held out", split(written)),
            ("issue 28 (heldout_28)", issue28),
            ("  2nd batch, written after 3384ce2", split(issue28, pc.HELDOUT_28, "second")),
            ("  3rd batch, written after e0d668c", split(issue28, pc.HELDOUT_28, "third")),
            ("real, both samples", [c for c in cases if c.family in reals]), ("overall", cases)]


def row(name: str, subset: list[pc.Case], parsers: list[Callable]) -> str:
    cells = []
    for parse in parsers:
        right = len(subset) - len(pc.misses(subset, parse))
        cells.append(f"{right:5d} {right / len(subset):7.1%}")
    return f"{name:34} {len(subset):5d} " + " ".join(cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="add a column with the parser of this git revision")
    parser.add_argument("--misses", action="store_true", help="list every answer the parser gets wrong")
    args = parser.parse_args()
    cases = pc.load_all()
    parsers, names = [parse_answer], [PARSER_VERSION]
    if args.before:
        version, old = parser_at(args.before)
        parsers, names = [old, parse_answer], [f"{version} ({args.before})", PARSER_VERSION]
    print("parser columns: right, accuracy -- " + " | ".join(names) + "\n")
    print(f"{'family':34} {'n':>5} " + " ".join(f"{'right':>5} {'acc':>7}" for _ in parsers))
    by_family = pc.accuracy_by_family(cases)
    for family in by_family:
        line = row(family, [c for c in cases if c.family == family], parsers)
        right, n = by_family[family]
        print(line + ("" if right >= pc.MIN_FAMILY * n else "  < target"))
    print()
    for name, subset in subsets(cases):
        print(row(name, subset, parsers))
    if args.misses:
        for case, got in pc.misses(cases):
            print(f"[{case.family}] {case.language} {case.condition}: want {case.label}, got {got}: {case.text!r}")
    right, total = sum(r for r, _ in by_family.values()), sum(n for _, n in by_family.values())
    ok = right >= pc.MIN_OVERALL * total and all(r >= pc.MIN_FAMILY * n for r, n in by_family.values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
