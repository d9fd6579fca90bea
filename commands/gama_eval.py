"""The GAMA-Bench evaluation verbs, under `fairsweep gama` (commands/gama.py adds them):

  fairsweep gama judge [--judge SPEC ...]              judge a finished run's stored responses (add judges later)
  fairsweep gama validation export --out CSV           blinded A/B pairs for annotators (+ a separate key file)
  fairsweep gama validation import --key KEY CSV...    labels in: Fleiss' kappa, judge-vs-majority agreement
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, ConfigError


def add_eval_verbs(verbs, add_common_flags) -> None:
    """`judge` and `validation export|import` on the `gama` verb's subparsers."""
    judge = verbs.add_parser("judge", help="run the judge stage over a run's stored responses")
    add_common_flags(judge)
    judge.add_argument("--judge", action="append", help="judge model (repeatable; replaces [[judges]]), e.g. "
                       "openai/gpt-4o-mini or NAME=MODEL@API_BASE")
    judge.add_argument("--judge-max-tokens", type=int, default=512, help="max_tokens of --judge models (512)")
    judge.add_argument("--no-progress", action="store_true", help="no live progress bar")
    judge.add_argument("--batch", action="store_true", help="send the judges through their provider's batch API")
    judge.set_defaults(handler=cmd_judge)

    validation = verbs.add_parser("validation", help="human validation: export pairs, import labels")
    steps = validation.add_subparsers(dest="validation_command", required=True)
    export = steps.add_parser("export", help="write blinded A/B response pairs as CSV, and a separate key file")
    add_common_flags(export)
    export.add_argument("--out", required=True, help="CSV for the annotators")
    export.add_argument("--key", help="key file (default: OUT with .key.csv); keep it away from annotators")
    export.add_argument("--seed", type=int, default=0, help="seed of the A/B order and of the pair sample")
    export.add_argument("--limit", type=int, help="only N pairs (a seeded random sample)")
    export.add_argument("--target-model", action="append", help="only this target model (repeatable)")
    export.add_argument("--no-mask", action="store_true", help="keep gendered words (not blind!)")
    export.set_defaults(handler=cmd_export)
    imp = steps.add_parser("import", help="read A/B/Tie labels; report Fleiss' kappa and judge-vs-majority")
    add_common_flags(imp)
    imp.add_argument("labels", nargs="+", help="annotated CSV files (annotator = 'annotator' column or file name)")
    imp.add_argument("--key", required=True, help="the key file written by export")
    imp.set_defaults(handler=cmd_import)


def cmd_judge(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.judge import stage
    from ..benchmarks.pipeline import score_benchmarks
    from ..config import model_from_flag, resolve_config, with_batch, with_overrides
    from .console import print_run_summary

    config = resolve_config(args)
    if args.judge:
        judges = tuple(model_from_flag(s, "--judge", max_tokens=args.judge_max_tokens) for s in args.judge)
        config = with_overrides(config, judges=judges)
        config = with_batch(config) if args.batch else config
    if not config.judges:
        raise ConfigError("no judges: add [[judges]] tables to the config or pass --judge MODEL")
    command = "fairsweep " + shlex.join(argv)
    outcome = stage(config, command, not args.no_progress)
    print_run_summary(outcome, command)
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    score_benchmarks(config, ["gama"])
    return EXIT_OK if outcome.complete else EXIT_INCOMPLETE


def cmd_export(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.validation import export_pairs
    from ..config import resolve_config
    from ..storage.db import open_db

    config = resolve_config(args)
    out = Path(args.out)
    key = Path(args.key) if args.key else out.with_suffix(".key.csv")
    conn = open_db(config.db, read_only=True)
    try:
        n = export_pairs(conn, config.run, out, key, seed=args.seed, limit=args.limit, models=args.target_model,
                         mask=not args.no_mask)
    finally:
        conn.close()
    print(f"wrote {n} blinded pairs to {out}; the key is {key} (keep it away from the annotators)")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.gama.validation import import_labels
    from ..config import resolve_config
    from ..storage.db import open_db

    config = resolve_config(args)
    conn = open_db(config.db)
    try:
        result = import_labels(conn, Path(args.key), [Path(p) for p in args.labels])
    finally:
        conn.close()
    print_validation(result)
    return EXIT_OK


def print_validation(result) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..benchmarks.gama.validation import DIMENSIONS

    def fmt(value, pct=False):
        return "—" if value is None else (f"{100 * value:.1f}%" if pct else f"{value:.3f}")

    console = Console(width=200)
    console.print(f"run {result.run}: {result.labels} labels from {len(result.annotators)} annotator(s): "
                  f"{', '.join(result.annotators)}", markup=False, highlight=False)
    kappa = Table(title="Fleiss' kappa (pairs labelled by every annotator)")
    for col in ("dimension", "pairs", "kappa"):
        kappa.add_column(col)
    for dimension in DIMENSIONS:
        n, value = result.kappa.get(dimension, (0, None))
        kappa.add_row(dimension, str(n), fmt(value))
    console.print(kappa)
    judges = Table(title="Judge vs annotator majority (pairs with a strict majority)")
    for col in ("judge", "dimension", "pairs", "agreement"):
        judges.add_column(col)
    for (judge, dimension), (n, share) in sorted(result.judges.items()):
        judges.add_row(judge, dimension, str(n), fmt(share, pct=True))
    console.print(judges)
