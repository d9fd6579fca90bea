"""Small JSON state files (caches of checks already done): read as {} when missing or damaged, written
atomically (a temp file renamed into place), never fatal: a lost cache only costs the check again. And
where fairsweep keeps its caches."""

from __future__ import annotations

import json
import os
from pathlib import Path


def cache_dir() -> Path:
    """fairsweep's cache folder: $XDG_CACHE_HOME/fairsweep, else ~/.cache/fairsweep."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fairsweep"


def read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: dict) -> None:
    write_cache_file(path, json.dumps(value).encode("utf-8"))


def write_cache_file(path: Path, data: bytes) -> None:
    """Write atomically (readers see the old file or the new one, never half of one); a cache that cannot be
    written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass
