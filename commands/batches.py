"""`fairsweep batches [list]` and `fairsweep batches cancel`: the provider batches of a run (batch mode).

`list` reads the DB; `cancel` asks the provider to cancel every batch of the run (and of its judge runs)
still in flight, waits until each has ended, and stores the answers that arrived before the cancel; the
other requests stay pending, and the run's own command sends them again.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from ..errors import EXIT_INTERRUPTED, EXIT_OK


def register(subparsers, add_common_flags) -> None:
    batches = subparsers.add_parser("batches", help="provider batches of a run (batch mode): list, or cancel")
    add_common_flags(batches)
    batches.add_argument("action", nargs="?", choices=("list", "cancel"), default="list",
                         help="list (default): every batch of the run; cancel: cancel those still in flight")
    batches.add_argument("--all", action="store_true", help="list: every run in the DB")
    batches.set_defaults(handler=cmd_batches)


def cmd_batches(args: argparse.Namespace, argv: list[str]) -> int:
    from ..config import resolve_config

    config = resolve_config(args)
    if args.action == "cancel":
        return cancel(config, "fairsweep " + shlex.join(argv))
    from .console import _out, batches_table
    from ..storage.batches import batch_rows, has_batches_table
    from ..storage.db import open_db

    conn = open_db(config.db, read_only=True)
    try:
        found = batch_rows(conn, None if args.all else config.run) if has_batches_table(conn) else []
    finally:
        conn.close()
    _out.print(batches_table(found, f"batches ({config.db})") if found else "no batches")
    return EXIT_OK


def cancel(config, command: str) -> int:
    """Cancel the run's live batches, wait for them to end, store what they answered."""
    from ..engine.batch import cancel_batches

    cancelled, interrupted = cancel_batches(config, command)
    print(f"{cancelled} batch(es) cancelled; their unanswered requests are pending: the run's command sends "
          f"them again", file=sys.stderr)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK
