"""fairsweep command line: run, status, query, export, data, sim-server.

Every command takes --config sweep.toml and reads the DB and run from it; flags override it.
Exit codes: 0 done, 1 work still missing, 2 a problem you can fix (message says how), 130 interrupted.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python cli.py ...` from a checkout
    import importlib.util
    import pathlib
    import sys

    if importlib.util.find_spec("fairsweep") is None:  # not installed: load this directory as the package
        _root = pathlib.Path(__file__).resolve().parent
        _spec = importlib.util.spec_from_file_location("fairsweep", _root / "__init__.py",
                                                       submodule_search_locations=[str(_root)])
        sys.modules["fairsweep"] = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(sys.modules["fairsweep"])
    from fairsweep.cli import main as _main

    sys.exit(_main())

import argparse
import importlib
import shlex
import sys
import traceback

from . import __version__
from .config import SweepConfig, resolve_config
from .errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER, FairsweepError


# Modules that add their own verbs: each has register(subparsers, add_common_flags), and sets
# `handler=function(args, argv) -> exit code` on its parsers. Keep their imports cheap.
PLUGIN_COMMANDS: list[str] = [
    "fairsweep.benchmarks.gama.cli",
    "fairsweep.benchmarks.gama.eval_cli",
    "fairsweep.batch_cli",
    "fairsweep.benchmarks.promptset.cli",
]


def _common(parser: argparse.ArgumentParser, *, runs: bool = False) -> None:
    parser.add_argument("--config", help="sweep TOML file (db, run, benchmarks, [[models]])")
    parser.add_argument("--db", help="DuckDB results file (default from the config, else fairsweep.duckdb)")
    if runs:  # commands that read several runs side by side (report)
        parser.add_argument("--run", action="append", help="run name (repeatable: runs side by side; default: all)")
    else:
        parser.add_argument("--run", help="run name: the same DB and run name resume the same run")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairsweep", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"fairsweep {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run or resume a sweep")
    _common(run)
    run.add_argument("--bench", action="append", help="benchmark to run (repeatable): mrni")
    run.add_argument("--model", action="append", help="model id, e.g. local/smollm2, openai/gpt-4o-mini, "
                     "or NAME=MODEL@API_BASE for an OpenAI-compatible server (repeatable; replaces [[models]])")
    run.add_argument("--limit", type=int, help="only the first N prompts of each benchmark (fixed order)")
    run.add_argument("--sample", type=int, help="a stratified sample of N prompts per benchmark")
    run.add_argument("--seed", type=int, help="seed for --sample (default 0)")
    run.add_argument("--data-dir", help="MRNI-BB data folder (else $FAIRSWEEP_MRNI_DIR, config, fetch cache)")
    run.add_argument("--no-progress", action="store_true", help="no live progress bar")
    run.add_argument("--executor", choices=("local", "ray"),
                     help="local: asyncio in this process (default); ray: workers of a Ray cluster, this "
                          "process stays the only DB writer")
    run.add_argument("--ray-address", help="Ray cluster to join, e.g. HEAD_IP:6379 (implies --executor ray; "
                                           "default: RAY_ADDRESS or a cluster started here with `ray start`)")
    run.add_argument("--dry-run", action="store_true", help="print the plan (requests, tokens, cost, time); send nothing")
    run.add_argument("--batch", action="store_true", help="send every model (and judge) through its provider's "
                     "batch API: about half the price, answers within 24 h (same as batch = true on each entry)")
    run.add_argument("--retry-failed", nargs="*", metavar="CLASS",
                     help="send stored final failures again: all of them, or those of these error classes "
                          "(e.g. context_length invalid_output; see `fairsweep status`)")

    plan = sub.add_parser("plan", help="what a run would send, cost and take, after what the DB already holds")
    _common(plan)
    plan.add_argument("--bench", action="append", help="benchmark(s) (default: the config's)")
    plan.add_argument("--model", action="append", help="model(s), as for run")
    plan.add_argument("--limit", type=int)
    plan.add_argument("--sample", type=int)
    plan.add_argument("--seed", type=int)
    plan.add_argument("--data-dir")
    plan.add_argument("--batch", action="store_true", help="plan every model in batch mode, as `run --batch`")

    status = sub.add_parser("status", help="progress, errors, retries, 429s and tokens per run and model")
    _common(status)

    query = sub.add_parser("query", help="run SQL on the results DB (read-only)")
    _common(query)
    query.add_argument("sql", help="SQL text, e.g. \"SELECT * FROM results LIMIT 5\"")
    query.add_argument("--format", choices=("table", "csv", "json"), default="table")

    export = sub.add_parser("export", help="write a run's tables as Parquet and CSV")
    _common(export)
    export.add_argument("--out", required=True, help="output directory")
    export.add_argument("--format", choices=("parquet", "csv", "both"), default="both")

    data = sub.add_parser("data", help="MRNI-BB data: fetch at the pinned commit, or verify a copy")
    data.add_argument("action", choices=("fetch", "verify"))
    data.add_argument("--data-dir", help="fetch: where to put it (default: the cache); verify: what to check")
    data.add_argument("--base-url", help="fetch from a mirror of the upstream data/ folder")
    data.add_argument("--from", dest="source", help="fetch: install a local copy of the upstream data/ folder "
                                                    "into the cache (verified like a download)")
    data.add_argument("--debug", action="store_true")

    score = sub.add_parser("score", help="(re)score stored responses offline: parse answers, run judges")
    _common(score)
    score.add_argument("--bench", action="append", help="benchmark(s) to score (default: the config's)")

    report = sub.add_parser("report", help="the papers' tables and plots from the SQL views")
    _common(report, runs=True)
    report.add_argument("--bench", action="append",
                        help="benchmark(s) to report: mrni, mrni-likert, gama (repeatable; default: all in the DB)")
    report.add_argument("--format", choices=("table", "md", "csv", "html"), default="table",
                        help="table: terminal; md, csv: files in --out; html: OUT/report.html with plots, "
                             "plus every table as CSV and every plot as PNG")
    report.add_argument("--out", help="output directory (csv, md, html)")
    report.add_argument("--runs", action="append", help="same as --run (repeatable)")

    sim = sub.add_parser("sim-server", help="the simulated OpenAI-compatible provider (tests, demos)",
                         add_help=False)
    sim.add_argument("sim_args", nargs=argparse.REMAINDER)
    for module_name in PLUGIN_COMMANDS:
        importlib.import_module(module_name).register(sub, _common)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sim-server"]:
        from .providers.sim_server import main as sim_main
        return sim_main(argv[1:]) or 0
    args = build_parser().parse_args(argv)
    handler = getattr(args, "handler", None) or COMMANDS[args.command]
    try:
        return handler(args, argv)
    except FairsweepError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"fairsweep: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fairsweep: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    from .benchmarks.pipeline import run_pipeline
    from .benchmarks.registry import load_prompts

    def print_run_summary(outcome) -> None:  # rich is imported after the run, not before its first request
        from .console import print_run_summary as show
        show(outcome, command)

    config = resolve_config(args)
    prompts = load_prompts(config, args.data_dir)
    if args.dry_run:
        return cmd_plan(args, argv, config, prompts)
    command = "fairsweep " + shlex.join(argv)
    outcomes = run_pipeline(config, prompts, command=command, progress=not args.no_progress,
                            report=print_run_summary,
                            retry_failed=retry_classes(args.retry_failed))
    if any(o.interrupted for o in outcomes):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(o.complete for o in outcomes) else EXIT_INCOMPLETE


def retry_classes(flag: list[str] | None) -> tuple[str, ...] | None:
    """--retry-failed: None when not given, () for every final failure, else the error classes named."""
    if flag is None:
        return None
    return tuple(c for value in flag for c in value.split(",") if c)


def cmd_score(args: argparse.Namespace, argv: list[str]) -> int:
    from .benchmarks.pipeline import score_benchmarks

    config = resolve_config(args)
    score_benchmarks(config, [b for v in (args.bench or []) for b in v.split(",")] or config.benchmarks)
    return EXIT_OK


def cmd_report(args: argparse.Namespace, argv: list[str]) -> int:
    """Every benchmark asked for (default: every one with results in the DB) for the runs given (default:
    the config's run, else all runs); html gathers them in one file."""
    from .benchmarks.registry import REPORTERS, resolve
    from .benchmarks.report_html import present_benchmarks, write_html_report

    config = resolve_config(argparse.Namespace(**{**vars(args), "run": None}))  # --run is a list here
    runs = list(dict.fromkeys([*(args.run or []), *(args.runs or [])])) or ([config.run] if args.config else None)
    benches = [b for v in (args.bench or []) for b in v.split(",") if b] or present_benchmarks(config.db, runs)
    if args.format == "html":
        print(write_html_report(config.db, runs, benches, args.out))
        return EXIT_OK
    for name in benches:
        resolve(REPORTERS, name, "report")(config.db, runs, args.format, args.out)
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, argv: list[str], config: SweepConfig | None = None,
             prompts: list | None = None) -> int:
    from .benchmarks.registry import load_prompts
    from .plan import build_plan, print_plan

    config = config or resolve_config(args)
    prompts = prompts if prompts is not None else load_prompts(config, args.data_dir)
    print_plan(config, build_plan(config, prompts))
    return EXIT_OK


def cmd_status(args: argparse.Namespace, argv: list[str]) -> int:
    from .console import print_status
    config = resolve_config(args)
    print_status(config.db, config.run if (args.run or args.config) else None)
    return EXIT_OK


def cmd_query(args: argparse.Namespace, argv: list[str]) -> int:
    from .console import run_query
    config = resolve_config(args)
    run_query(config.db, args.sql, args.format)
    return EXIT_OK


def cmd_export(args: argparse.Namespace, argv: list[str]) -> int:
    from .storage.export import export_run
    config = resolve_config(args)
    for path in export_run(config.db, config.run if (args.run or args.config) else None, args.out, args.format):
        print(path)
    return EXIT_OK


def cmd_data(args: argparse.Namespace, argv: list[str]) -> int:
    from pathlib import Path

    from .benchmarks.mrni import data

    if args.action == "fetch":
        dest = data.fetch(Path(args.data_dir) if args.data_dir else None, args.base_url,
                          source_dir=Path(args.source) if args.source else None)
        print(f"MRNI-BB data verified and stored in {dest}")
        return EXIT_OK
    target = data.resolve_data_dir(args.data_dir)
    problems = data.verify(target)
    for problem in problems:
        print(f"{target}: {problem}", file=sys.stderr)
    if problems:
        print(f"fairsweep: error: {len(problems)} file(s) differ from the pinned release: "
              f"run `fairsweep data fetch`", file=sys.stderr)
        return EXIT_USER
    print(f"MRNI-BB data in {target}: all {len(data.pinned()['sha256'])} files match the pinned commit")
    return EXIT_OK


COMMANDS = {"run": cmd_run, "status": cmd_status, "query": cmd_query, "export": cmd_export, "data": cmd_data,
            "score": cmd_score, "report": cmd_report, "plan": cmd_plan}


if __name__ == "__main__":
    sys.exit(main())
