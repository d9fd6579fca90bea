"""`fairsweep sim-server [options]`: the simulated provider (sim/), for tests and demos. Its options are
the simulator's own: they are passed through unparsed (`raw`)."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK


def register(subparsers, add_common_flags) -> None:
    sim = subparsers.add_parser("sim-server", help="the simulated OpenAI-compatible provider (tests, demos)",
                                add_help=False)
    sim.add_argument("sim_args", nargs=argparse.REMAINDER)
    sim.set_defaults(handler=cmd_sim_server, raw=True)


def cmd_sim_server(args: argparse.Namespace, argv: list[str]) -> int:
    from ..sim.server import main

    return main(argv[argv.index("sim-server") + 1:]) or EXIT_OK
