"""`fairsweep gama compile | scenarios | import | check`: the scenario set and its mirrored prompts.

Heavy imports (numpy via similarity) happen inside the handlers: registering the verbs stays cheap.
"""

from __future__ import annotations

import argparse
from collections import Counter

EXIT_OK, EXIT_FAILED = 0, 1


def register(subparsers, add_common_flags) -> None:
    gama = subparsers.add_parser("gama", help="GAMA-Bench scenarios: compile prompts, export, import, check")
    verbs = gama.add_subparsers(dest="gama_command", required=True)

    def verb(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        parser = verbs.add_parser(name, help=help_text)
        add_common_flags(parser)
        parser.set_defaults(handler=handler)
        return parser

    scenarios_help = "scenario file in the schema (default: the config's gama_scenarios, else the bundled set)"
    p = verb("compile", "write the mirrored prompts (two per scenario) as JSONL", cmd_compile)
    p.add_argument("--scenarios", help=scenarios_help)
    p.add_argument("--out", required=True, help="output JSONL file")
    p = verb("scenarios", "export the scenario set in the schema as JSONL", cmd_scenarios)
    p.add_argument("--scenarios", help=scenarios_help)
    p.add_argument("--out", required=True, help="output JSONL file")
    p = verb("import", "validate an external scenario file (e.g. an official release), write it normalised",
             cmd_import)
    p.add_argument("file", help="JSONL file in the scenario schema")
    p.add_argument("--out", required=True, help="output JSONL file")
    p = verb("check", "cell counts, neutrality, form and within-cell similarity; exit 1 if a check fails",
             cmd_check)
    p.add_argument("--scenarios", help=scenarios_help)
    from .build import add_verbs as add_build_verbs  # build, import-screening: the construction pipeline
    add_build_verbs(verb)


def _scenario_source(args: argparse.Namespace) -> str | None:
    if args.scenarios:
        return args.scenarios
    if args.config:
        from ...config import load_config
        return load_config(args.config).gama_scenarios
    return None


def cmd_compile(args: argparse.Namespace, argv: list[str]) -> int:
    from .compile import compile_all, write_prompts_jsonl
    from .schema import load_scenarios, runnable

    scenarios = load_scenarios(_scenario_source(args))
    kept = runnable(scenarios)
    out = write_prompts_jsonl(compile_all(kept), args.out)
    skipped = f" ({len(scenarios) - len(kept)} rejected by review left out)" if len(kept) < len(scenarios) else ""
    print(f"{2 * len(kept)} prompts from {len(kept)} scenarios{skipped} -> {out}")
    return EXIT_OK


def cmd_scenarios(args: argparse.Namespace, argv: list[str]) -> int:
    from .schema import load_scenarios, write_scenarios_jsonl

    scenarios = load_scenarios(_scenario_source(args))
    out = write_scenarios_jsonl(scenarios, args.out)
    print(f"{len(scenarios)} scenarios ({sum(s.review is not None for s in scenarios)} with a review, "
          f"{sum(s.plausibility is not None for s in scenarios)} with a plausibility label) -> {out}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, argv: list[str]) -> int:
    from .schema import cells, load_scenarios, write_scenarios_jsonl

    scenarios = load_scenarios(args.file)  # DataError (exit 2) names file, line and field
    covered = len({s.cell for s in scenarios})
    out = write_scenarios_jsonl(scenarios, args.out)
    print(f"{len(scenarios)} valid scenarios covering {covered}/{len(cells())} cells -> {out}; "
          f"run `fairsweep gama check --scenarios {out}` for the content checks")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, argv: list[str]) -> int:
    from .schema import load_scenarios

    source = _scenario_source(args)
    scenarios = load_scenarios(source)
    results = [_check_cells(scenarios, bundled=source is None), _check_neutrality(scenarios),
               _check_form(scenarios), _check_similarity(scenarios)]
    failed = [name for name, ok in results if not ok]
    print(f"\n{len(scenarios)} scenarios: " + ("all checks passed" if not failed else "FAILED: " + ", ".join(failed)))
    return EXIT_FAILED if failed else EXIT_OK


def _check_cells(scenarios, bundled: bool) -> tuple[str, bool]:
    """Counts per cell (rows track/dimension/severity, columns styles); every cell covered, and for the
    bundled set exactly AUTHORING.md's counts and 1,298 in all."""
    from .schema import BUNDLED_TOTAL, DIMENSIONS, SEVERITIES, STYLES, TRACKS, cells, expected_count

    counts = Counter(s.cell for s in scenarios)
    print(f"{'track/dimension':42} sev " + " ".join(f"{s:>15}" for s in STYLES) + "  total")
    for track in TRACKS:
        for dim in DIMENSIONS[track]:
            for sev in SEVERITIES:
                row = [counts[(track, dim, sev, sty)] for sty in STYLES]
                print(f"{track + '/' + dim:42} {sev:3} " + " ".join(f"{n:>15}" for n in row) + f"  {sum(row):>5}")
    missing = [c for c in cells() if counts[c] == 0]
    wrong = [c for c in cells() if bundled and counts[c] != expected_count(*c[1:])]
    ok = not missing and not wrong and (not bundled or len(scenarios) == BUNDLED_TOTAL)
    print(f"cells: {len(cells()) - len(missing)}/{len(cells())} covered, total {len(scenarios)}"
          + (f"; missing {['/'.join(c) for c in missing]}" if missing else "")
          + (f"; not the AUTHORING.md count: {['/'.join(c) for c in wrong]}" if wrong else "")
          + (" -> ok" if ok else " -> FAIL"))
    return "cells", ok


def _check_neutrality(scenarios) -> tuple[str, bool]:
    """The lexicon on every template outside placeholders, and the mirror diff of every compiled pair."""
    from .compile import mirror_problems
    from .schema import template_problems

    problems = [f"{s.id}: {p}" for s in scenarios for p in template_problems(s.template, s.track)]
    problems += [p for s in scenarios for p in mirror_problems(s)]
    for p in problems[:20]:
        print(f"  {p}")
    print(f"neutrality: {len(scenarios)} templates, {len(problems)} problem(s) (lexicon, placeholders, "
          f"mirror diff of {2 * len(scenarios)} prompts)" + (" -> ok" if not problems else " -> FAIL"))
    return "neutrality", not problems


def _check_form(scenarios) -> tuple[str, bool]:
    from .schema import WORDS_MAX, WORDS_MIN, authoring_problems

    problems = [p for s in scenarios for p in authoring_problems(s)]
    for p in problems[:20]:
        print(f"  {p}")
    print(f"form: {WORDS_MIN}-{WORDS_MAX} words, ends with '?', capitalised placeholders at sentence starts: "
          f"{len(problems)} problem(s)" + (" -> ok" if not problems else " -> FAIL"))
    return "form", not problems


def _check_similarity(scenarios) -> tuple[str, bool]:
    from .similarity import THRESHOLD, max_similarity_per_cell

    print(f"\nmax within-cell similarity (TF-IDF cosine, threshold {THRESHOLD}):")
    worst = max_similarity_per_cell(scenarios)
    for cell in sorted(worst, key=lambda c: -worst[c][0]):
        sim, a, b = worst[cell]
        flag = "NEAR-DUPLICATE" if sim >= THRESHOLD else ""
        print(f"  {'/'.join(cell):62} {sim:.3f}  {a or '-'} {b or '-'} {flag}")
    over = [c for c, (sim, _, _) in worst.items() if sim >= THRESHOLD]
    top = max((v[0] for v in worst.values()), default=0.0)
    print(f"similarity: highest {top:.3f}, {len(over)} cell(s) at or above {THRESHOLD}"
          + (" -> ok" if not over else " -> FAIL"))
    return "similarity", not over
