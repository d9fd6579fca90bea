"""The config's pydantic classes are built without pydantic's plugins.

Building a pydantic class looks its plugins up once per process: a scan of the entry points of every installed
distribution (~4 ms with this project's ~130; more in a large environment), before a run's first request. An
observability plugin has nothing to watch in fairsweep's own config, so its classes are built with plugins off
(PYDANTIC_DISABLE_PLUGINS, pydantic's switch) and the variable is restored at once: classes built later (e.g.
litellm's) see the user's plugins as before.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

SWITCH = "PYDANTIC_DISABLE_PLUGINS"


@contextlib.contextmanager
def without_pydantic_plugins() -> Iterator[None]:
    before = os.environ.get(SWITCH)
    os.environ[SWITCH] = "__all__"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = before
