"""Flags shared by the verbs, defined once: the DB/run/config flags of every verb, and the selection flags
(which benchmarks, models and prompts) of the verbs that plan or send."""

from __future__ import annotations

import argparse


def add_common_flags(parser: argparse.ArgumentParser, *, runs: bool = False) -> None:
    """--config, --db, --run (several with runs=True: verbs that read runs side by side), --debug."""
    parser.add_argument("--config", help="sweep TOML file (db, run, benchmarks, [[models]])")
    parser.add_argument("--db", help="DuckDB results file (default from the config, else fairsweep.duckdb)")
    if runs:
        parser.add_argument("--run", action="append", help="run name (repeatable: runs side by side; default: all)")
    else:
        parser.add_argument("--run", help="run name: the same DB and run name resume the same run")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """What a run plans: --bench, --model, --limit, --sample, --seed, --data-dir (config.resolve_config
    reads them; each replaces the config's value)."""
    parser.add_argument("--bench", action="append", help="benchmark to run (repeatable; default: the config's)")
    parser.add_argument("--model", action="append", help="model id, e.g. local/smollm2, openai/gpt-4o-mini, "
                        "or NAME=MODEL@API_BASE for an OpenAI-compatible server (repeatable; replaces [[models]])")
    parser.add_argument("--limit", type=int, help="only the first N prompts of each benchmark (fixed order)")
    parser.add_argument("--sample", type=int, help="a stratified sample of N prompts per benchmark")
    parser.add_argument("--seed", type=int, help="seed for --sample (default 0)")
    parser.add_argument("--data-dir", help="MRNI-BB data folder (else $FAIRSWEEP_MRNI_DIR, config, fetch cache)")
