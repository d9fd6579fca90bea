"""The cyclic garbage collector while a command starts.

A command starts by building what lives as long as it does (modules and classes, the parser, the config, a
run's prompts) and next to no garbage: when a run's prompts are built, ~66,000 objects are tracked and ~1,500
of them unreachable. Collecting meanwhile only scans the same objects again: ~80 collections and ~12 ms of CPU
before a run's first request (3 and ~1 ms with it off). So the `fairsweep` command starts with the collector
off (`begin`), and `done` turns it on when the start-up is over, with what exists then frozen (gc.freeze: never
scanned again).
A command called in-process (tests, a notebook: cli.main) leaves the collector as it is.
"""

from __future__ import annotations

import gc

_starting = False


def begin() -> None:
    """The process is a `fairsweep` command starting: no collection until done()."""
    global _starting
    _starting = True
    gc.disable()


def done() -> None:
    """The start-up is over (a no-op unless begin() ran and done() did not): freeze what exists, collect again."""
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()
