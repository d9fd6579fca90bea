"""`fairsweep status`, `query`, `export` and `report`: reading what a DB holds."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK


def register(subparsers, add_common_flags) -> None:
    status = subparsers.add_parser("status", help="progress, errors, retries, 429s and tokens per run and model")
    add_common_flags(status)
    status.set_defaults(handler=cmd_status)

    query = subparsers.add_parser("query", help="run SQL on the results DB (read-only)")
    add_common_flags(query)
    query.add_argument("sql", help="SQL text, e.g. \"SELECT * FROM results LIMIT 5\"")
    query.add_argument("--format", choices=("table", "csv", "json"), default="table")
    query.set_defaults(handler=cmd_query)

    export = subparsers.add_parser("export", help="write a run's tables as Parquet and CSV")
    add_common_flags(export)
    export.add_argument("--out", required=True, help="output directory")
    export.add_argument("--format", choices=("parquet", "csv", "both"), default="both")
    export.set_defaults(handler=cmd_export)

    report = subparsers.add_parser("report", help="the papers' tables and plots from the SQL views")
    add_common_flags(report, runs=True)
    report.add_argument("--bench", action="append",
                        help="benchmark(s) to report: mrni, mrni-likert, gama (repeatable; default: all in the DB)")
    report.add_argument("--format", choices=("table", "md", "csv", "html"), default="table",
                        help="table: terminal; md, csv: files in --out; html: OUT/report.html with plots, "
                             "plus every table as CSV and every plot as PNG")
    report.add_argument("--out", help="output directory (csv, md, html)")
    report.add_argument("--runs", action="append", help="same as --run (repeatable)")
    report.set_defaults(handler=cmd_report)


def _one_run(args: argparse.Namespace, config) -> str | None:
    """The run a reading verb is about: the config's (or --run's) when either is given, else every run."""
    return config.run if (args.run or args.config) else None


def cmd_status(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config
    from .console import print_status

    config = resolve_config(args)
    print_status(config.db, _one_run(args, config))
    return EXIT_OK


def cmd_query(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config
    from .console import run_query

    config = resolve_config(args)
    run_query(config.db, args.sql, args.format)
    return EXIT_OK


def cmd_export(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config
    from ..storage.export import export_run

    config = resolve_config(args)
    for path in export_run(config.db, _one_run(args, config), args.out, args.format):
        print(path)
    return EXIT_OK


def cmd_report(args: argparse.Namespace, argv: list[str]) -> int:
    """Every benchmark asked for (default: every one with results in the DB) for the runs given (default:
    the config's run, else all runs); html gathers them in one file."""
    from ..benchmarks.registry import REPORTERS, resolve
    from ..benchmarks.report_html import present_benchmarks, write_html_report
    from ..config import resolve_config

    config = resolve_config(argparse.Namespace(**{**vars(args), "run": None}))  # --run is a list here
    runs = list(dict.fromkeys([*(args.run or []), *(args.runs or [])])) or ([config.run] if args.config else None)
    benches = [b for v in (args.bench or []) for b in v.split(",") if b] or present_benchmarks(config.db, runs)
    if args.format == "html":
        print(write_html_report(config.db, runs, benches, args.out))
        return EXIT_OK
    for name in benches:
        resolve(REPORTERS, name, "report")(config.db, runs, args.format, args.out)
    return EXIT_OK
