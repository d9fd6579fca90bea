"""`fairsweep view`: a local web page that watches a sweep live and shows its results as they arrive.

Binds 127.0.0.1 (a free port unless --port); another --host only with --allow-remote, and the token is
required either way. Reads the DB through the live run writing it, else the file read-only; never writes.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_INTERRUPTED, EXIT_OK


def register(subparsers, add_common_flags) -> None:
    view = subparsers.add_parser("view", help="a local web page: a sweep live, and its results as they arrive")
    add_common_flags(view)
    view.add_argument("--host", default="127.0.0.1",
                      help="address to listen on (default 127.0.0.1; any other needs --allow-remote)")
    view.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    view.add_argument("--allow-remote", action="store_true",
                      help="let --host be an address other machines can reach (the token is still required; "
                           "the traffic is plain HTTP)")
    view.set_defaults(handler=cmd_view)


def cmd_view(args: argparse.Namespace, argv: list[str]) -> int:
    import asyncio

    from ..config import resolve_config
    from ..view.security import is_loopback, new_token
    from ..view.server import ViewError, bind, serve

    if not 0 <= args.port <= 65535:
        raise ViewError(f"--port {args.port} is not a port: pass 1-65535, or 0 for a free one")
    if not is_loopback(args.host) and not args.allow_remote:
        raise ViewError(f"--host {args.host} is reachable from other machines: pass --allow-remote to mean it, "
                        f"or leave --host out (127.0.0.1)")
    config = resolve_config(args)
    _check_db(config.db)
    token = new_token()
    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host

    def announce() -> None:
        print(f"fairsweep view of {config.db}: http://{shown}:{port}/?token={token}", flush=True)
        print("(read-only; Ctrl-C stops it)", file=sys.stderr, flush=True)

    try:
        asyncio.run(serve(str(config.db), sock, token, check_host=is_loopback(args.host), announce=announce,
                          run=config.run if (args.run or args.config) else None))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK


def _check_db(db: str) -> None:
    from pathlib import Path

    from ..errors import DatabaseError
    if not Path(db).is_file():
        raise DatabaseError(f"database {db} does not exist: check --db or --config, or start a run first")
