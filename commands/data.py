"""`fairsweep data fetch | verify | ensure`: the MRNI-BB data at the pinned commit."""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_OK, EXIT_USER


def register(subparsers, add_common_flags) -> None:
    data = subparsers.add_parser("data", help="MRNI-BB data: fetch at the pinned commit, verify a copy, or ensure "
                                              "one is there (verify, else install --from, else download)")
    data.add_argument("action", choices=("fetch", "verify", "ensure"))
    data.add_argument("--data-dir", help="fetch: where to put it (default: the cache); verify: what to check")
    data.add_argument("--base-url", help="fetch from a mirror of the upstream data/ folder")
    data.add_argument("--from", dest="source", help="fetch, ensure: install a local copy of the upstream data/ "
                                                    "folder into the cache (verified like a download); ensure "
                                                    "downloads when there is no such folder")
    data.add_argument("--debug", action="store_true")
    data.set_defaults(handler=cmd_data)


def cmd_data(args: argparse.Namespace, argv: list[str]) -> int:
    from pathlib import Path

    from ..benchmarks.mrni import data

    if args.action == "ensure":
        dest, done = data.ensure(Path(args.source) if args.source else None, args.base_url)
        print(f"MRNI-BB data in {dest}: {done}")
        return EXIT_OK
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
