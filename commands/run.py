"""`fairsweep run`, `plan` and `score`: send a sweep (or say what it would send), and score it offline."""

from __future__ import annotations

import argparse
import contextlib
import gc
import shlex

from ..errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK
from . import startup
from .flags import add_selection_flags


def register(subparsers, add_common_flags) -> None:
    run = subparsers.add_parser("run", help="run or resume a sweep")
    add_common_flags(run)
    add_selection_flags(run)
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
    run.set_defaults(handler=cmd_run, ends_start_up=True)  # startup.done() once its prompts are built

    plan = subparsers.add_parser("plan", help="what a run would send, cost and take, after what the DB already holds")
    add_common_flags(plan)
    add_selection_flags(plan)
    plan.add_argument("--batch", action="store_true", help="plan every model in batch mode, as `run --batch`")
    plan.set_defaults(handler=cmd_plan)

    score = subparsers.add_parser("score", help="(re)score stored responses offline: parse answers, run judges")
    add_common_flags(score)
    score.add_argument("--bench", action="append", help="benchmark(s) to score (default: the config's)")
    score.set_defaults(handler=cmd_score)


@contextlib.contextmanager
def fewer_collections(young: int = 20_000):
    """The cyclic GC runs after `young` net allocations instead of 700 while a run goes on: nearly every object
    of a request is freed by its reference count, so the default thresholds only re-scan live objects (measured:
    a 5-model, 23,520-answer run spent ~0.6 s of CPU in ~500 collections; at 20,000: 10, 0.07 s, same RSS).
    Building the 4,704 MRNI-BB prompts, after the imports, took 83 ms with the defaults and 34 ms with these."""
    before = gc.get_threshold()
    gc.set_threshold(young, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def cmd_run(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.pipeline import run_pipeline
    from ..benchmarks.sampling import load_prompts
    from ..config import resolve_config

    def print_run_summary(outcome) -> None:  # rich is imported after the run, not before its first request
        from .console import print_run_summary as show
        show(outcome, command)

    with fewer_collections():  # the prompts too: built in bulk, they met a full collection (~40 ms)
        config = resolve_config(args)
        if args.dry_run:
            prompts = load_prompts(config, args.data_dir)
            startup.done()
            return cmd_plan(args, argv, config, prompts)
        from ..providers.registry import preload_for
        preload = preload_for(config)  # the adapters' modules load while the prompts are built and the DB opens
        try:
            prompts = load_prompts(config, args.data_dir)
            startup.done()  # the engine's modules and the prompts are built: what the run sends is new from here
            command = "fairsweep " + shlex.join(argv)
            outcomes = run_pipeline(config, prompts, command=command, progress=not args.no_progress,
                                    report=print_run_summary, retry_failed=retry_classes(args.retry_failed))
        finally:
            if preload is not None:  # a run that stops early (a refused run, bad data) leaves with the import
                preload.join()      # still going; the interpreter's exit beside it crashed (SIGSEGV, ~1 in 5)
    if any(o.interrupted for o in outcomes):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(o.complete for o in outcomes) else EXIT_INCOMPLETE


def retry_classes(flag: list[str] | None) -> tuple[str, ...] | None:
    """--retry-failed: None when not given, () for every final failure, else the error classes named."""
    if flag is None:
        return None
    return tuple(c for value in flag for c in value.split(",") if c)


def cmd_plan(args: argparse.Namespace, argv: list[str], config=None, prompts: list | None = None) -> int:
    from ..benchmarks.sampling import load_prompts
    from ..config import resolve_config
    from .plan import build_plan, print_plan

    config = config or resolve_config(args)
    prompts = prompts if prompts is not None else load_prompts(config, args.data_dir)
    print_plan(config, build_plan(config, prompts))
    return EXIT_OK


def cmd_score(args: argparse.Namespace, argv: list[str]) -> int:
    from ..benchmarks.pipeline import score_benchmarks
    from ..config import resolve_config

    config = resolve_config(args)
    score_benchmarks(config, [b for v in (args.bench or []) for b in v.split(",")] or config.benchmarks)
    return EXIT_OK
