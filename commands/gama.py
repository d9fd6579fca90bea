"""`fairsweep gama ...`: every GAMA-Bench verb, in one place.

  compile | scenarios | import | check         the scenario set and its mirrored prompts
  build | import-screening | review           constructing and reviewing a scenario set (engine runs)
  judge | validation export | validation import   judging a run's answers, human validation (gama_eval.py)
  screening export | screening import         human screening of the scenarios by raters (gama_screening.py)

The old top-level names `gama-judge`, `gama-validation` and `gama-screening` still work (ALIASES: cli.py rewrites them and
says the new form). Heavy imports (numpy via similarity) happen inside the handlers: registering the verbs
stays cheap.
"""

from __future__ import annotations

import argparse
import importlib

from ..errors import EXIT_CHECK_FAILED, EXIT_OK
from .gama_eval import add_eval_verbs
from .gama_screening import add_screening_verbs

# old verb -> the words that replace it
ALIASES = {"gama-judge": ("gama", "judge"), "gama-validation": ("gama", "validation"),
           "gama-screening": ("gama", "screening")}


def register(subparsers, add_common_flags) -> None:
    gama = subparsers.add_parser("gama", help="GAMA-Bench: scenarios (compile, export, import, check, build, "
                                              "review), the judge stage, human validation")
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
    p = verb("check", "cell counts, neutrality, form, review and plausibility coverage, near-duplicates within "
                      "cells and across the set, formula statistics; exit 1 if a check fails", cmd_check)
    p.add_argument("--scenarios", help=scenarios_help)
    add_build_verbs(verb)
    add_review_verb(verb)
    add_eval_verbs(verbs, add_common_flags)
    add_screening_verbs(verbs, add_common_flags)


def lazy(target: str):
    """A handler ("module:function") imported only when its verb runs: registering stays cheap."""
    def handler(args: argparse.Namespace, argv: list[str]) -> int:
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)(args, argv)
    return handler


def add_build_verbs(verb) -> None:
    """`gama build` and `gama import-screening` (verb = register's helper: name, help, handler -> parser)."""
    p = verb("build", "construction pipeline: seeds -> generate -> cross-model review -> rewrite -> "
                      "near-duplicate removal -> screening export -> scenarios.jsonl (resumable)",
             lazy("fairsweep.benchmarks.gama.build:cmd_build"))
    p.add_argument("--per-cell", type=int, default=1, help="condition seeds per cell (default 1; the paper's "
                   "set has 14-15 scenarios per cell after filtering)")
    p.add_argument("--cells", help="only cells matching these comma-separated globs over "
                   "track/dimension/severity/style, e.g. 'intimate/financial_control/*/*,*/L3/plain'")
    p.add_argument("--similarity", choices=("embedding", "tfidf"), default="embedding",
                   help="near-duplicate measure: SmolLM2 embeddings (default) or TF-IDF (no model)")
    p.add_argument("--out", required=True, help="output folder: scenarios.jsonl, screening.csv, build_log.jsonl")
    p.add_argument("--no-progress", action="store_true", help="no live progress bar")
    p = verb("import-screening", "apply the verdicts (accept/reject, notes) of a filled-in screening.csv",
             lazy("fairsweep.benchmarks.gama.build:cmd_import_screening"))
    p.add_argument("file", help="the screening CSV written by `gama build`, verdict and notes filled in")
    p.add_argument("--scenarios", help="scenario file to update (default: scenarios.jsonl beside FILE)")
    p.add_argument("--out", help="where to write the result (default: the --scenarios file, updated in place)")


def add_review_verb(verb) -> None:
    """`gama review` (verb = register's helper: name, help, handler -> parser)."""
    p = verb("review", "review every scenario (realism, neutrality, severity and style fit, plausibility) with "
                       "the configured model(s) as engine runs (resumable); write the set with review and "
                       "plausibility filled in", lazy("fairsweep.benchmarks.gama.review_run:cmd_review"))
    p.add_argument("--scenarios", help="scenario file in the schema (default: the config's gama_scenarios, else "
                   "the bundled set)")
    p.add_argument("--out", required=True, help="output JSONL file: the scenarios with review and plausibility")
    p.add_argument("--reviewer", action="append", help="only this reviewer (repeatable; default: every [[judges]] "
                   "entry, else every [[models]] entry)")
    p.add_argument("--no-progress", action="store_true", help="no live progress bar")


def _scenario_source(args: argparse.Namespace) -> str | None:
    if args.scenarios:
        return args.scenarios
    if args.config:
        from ..config import load_config
        return load_config(args.config).gama_scenarios
    return None


def cmd_compile(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.compile import compile_all, write_prompts_jsonl
    from ..benchmarks.gama.schema import load_scenarios, runnable

    scenarios = load_scenarios(_scenario_source(args))
    kept = runnable(scenarios)
    out = write_prompts_jsonl(compile_all(kept), args.out)
    skipped = f" ({len(scenarios) - len(kept)} rejected by review left out)" if len(kept) < len(scenarios) else ""
    print(f"{2 * len(kept)} prompts from {len(kept)} scenarios{skipped} -> {out}")
    return EXIT_OK


def cmd_scenarios(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.schema import load_scenarios, write_scenarios_jsonl

    scenarios = load_scenarios(_scenario_source(args))
    out = write_scenarios_jsonl(scenarios, args.out)
    print(f"{len(scenarios)} scenarios ({sum(s.review is not None for s in scenarios)} with a review, "
          f"{sum(s.plausibility is not None for s in scenarios)} with a plausibility label) -> {out}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.schema import cells, load_scenarios, write_scenarios_jsonl

    scenarios = load_scenarios(args.file)  # DataError (exit 2) names file, line and field
    covered = len({s.cell for s in scenarios})
    out = write_scenarios_jsonl(scenarios, args.out)
    print(f"{len(scenarios)} valid scenarios covering {covered}/{len(cells())} cells -> {out}; "
          f"run `fairsweep gama check --scenarios {out}` for the content checks")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.checks import run_checks
    from ..benchmarks.gama.schema import load_scenarios

    source = _scenario_source(args)
    scenarios = load_scenarios(source)
    failed = run_checks(scenarios, bundled=source is None)
    print(f"\n{len(scenarios)} scenarios: " + ("all checks passed" if not failed else "FAILED: " + ", ".join(failed)))
    return EXIT_CHECK_FAILED if failed else EXIT_OK
