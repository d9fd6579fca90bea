"""fairsweep: run, plan, score, status, query, export, report, data, gama, batches, bench, view, sim-server.

Every command takes --config sweep.toml and reads the DB and run from it; flags override it.
Exit codes: 0 done, 1 work still missing, 2 a problem you can fix (message says how), 130 interrupted.
The verbs live in commands/ (one module each registers its parsers and handlers); this module builds
the parser from them and runs the chosen handler.
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
    from fairsweep.cli import entry as _entry

    _entry()

import argparse
import importlib
import sys
import traceback
from typing import NoReturn

from . import __version__
from .commands import VERB_MODULES
from .commands import startup
from .commands.flags import add_common_flags
from .errors import EXIT_INTERRUPTED, FairsweepError


def _verb_modules(verb: str | None = None) -> list:
    """The verbs' modules: only the one that registers `verb`, else all of them."""
    names = [name for name, verbs in VERB_MODULES.items() if verb in verbs] or list(VERB_MODULES)
    return [importlib.import_module(name) for name in names]


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser of every verb, each registered by its module in commands/; with `verb`, of that verb's
    module only (a command's start-up does not build the other verbs' parsers: ~5 ms before a run's first
    request)."""
    parser = argparse.ArgumentParser(prog="fairsweep", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"fairsweep {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _verb_modules(verb):
        module.register(sub, add_common_flags)
    return parser


def new_form(argv: list[str]) -> list[str]:
    """argv with an old verb name (a module's ALIASES, e.g. `gama-judge`) in its new form, said on stderr."""
    if argv and any(argv[0] in verbs for verbs in VERB_MODULES.values()):
        return argv
    for module in _verb_modules():
        words = getattr(module, "ALIASES", {}).get(argv[0] if argv else None)
        if words:
            print(f"fairsweep: `{argv[0]}` is now `fairsweep {' '.join(words)}` (the old name still works)",
                  file=sys.stderr)
            return [*words, *argv[1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    argv = new_form(list(sys.argv[1:] if argv is None else argv))
    args, extra = build_parser(argv[0] if argv else None).parse_known_args(argv)
    if extra and not getattr(args, "raw", False):
        build_parser().error(f"unrecognized arguments: {' '.join(extra)}")  # the usage naming every verb
    if not getattr(args, "ends_start_up", False):  # a verb may end its start-up later itself (run)
        startup.done()
    try:
        return args.handler(args, argv)
    except FairsweepError as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"fairsweep: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fairsweep: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def entry() -> None:
    """The `fairsweep` command (and `python -m fairsweep.cli`): main(), then leave."""
    startup.begin()
    leave(main())


def leave(code: int) -> NoReturn:
    """Exit at once when nothing needs the interpreter torn down: its teardown, with DuckDB, numpy and scipy
    loaded, takes ~0.15 s (a tenth of a short command). Only once the output is flushed, no other thread runs,
    no child process is left, Ray (whose shutdown runs at exit) was never loaded and no profiler or tracer
    (cProfile, coverage: they write their data at exit) is on; else an ordinary exit.
    Every file the commands write is closed by then (the journal writes unbuffered)."""
    import os
    import threading

    multiprocessing = sys.modules.get("multiprocessing")
    watched = sys.getprofile() is not None or sys.gettrace() is not None  # a profiler or coverage writes at exit
    if not watched and threading.active_count() == 1 and "ray" not in sys.modules and not (
            multiprocessing and multiprocessing.active_children()):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: the ordinary exit reports it as before
            sys.exit(code)
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
