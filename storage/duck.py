"""duckdb for the storage modules, imported at its first use rather than with them.

A new run's first requests leave before its DB is open (engine/opening.py): DuckDB's import (~35 ms of the
GIL) then happens beside them instead of before them. The storage modules take `duckdb` from here; any use
of it (a call, an exception class in an `except`, an isinstance) imports the real module once.
"""

from __future__ import annotations

import importlib
from typing import Any


class _Duckdb:
    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("duckdb"), name)
        setattr(self, name, value)  # the next lookup of this name is an attribute like any other
        return value


duckdb: Any = _Duckdb()
