"""Data derived from files (the MRNI-BB prompts' parts, the reduced price map), kept in fairsweep's cache folder
under the files' stamps (the file's device and inode, size, modification time): read back in a few ms where
deriving it costs tens, before a run's first request. A changed stamp, a damaged or unreadable cache, or a
cache folder that cannot be written only cost the derivation again; a derivation that raises is not cached."""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path
from typing import Callable, TypeVar

from . import __version__
from .jsonfile import cache_dir, write_cache_file

T = TypeVar("T")
# marshal's format changes between Python versions: a cache written by another Python is derived again
FORMAT = (1, marshal.version, tuple(sys.version_info[:2]))


def derived(name: str, sources: list[Path], derive: Callable[[], T], recipe: object = None) -> T:
    """derive(), or the value it gave for these sources as they are now (marshal-able values only). `recipe`
    (marshal-able, e.g. the fields kept) names how the value is derived: another recipe, or another fairsweep
    version, derives again."""
    key = (FORMAT, __version__, recipe, stamps(sources))
    path = cache_dir() / f"{name}.marshal"
    if key[-1] is not None:
        try:
            stored = marshal.loads(path.read_bytes())
            if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
                return stored[1]
        except (OSError, EOFError, ValueError, TypeError):
            pass
    value = derive()
    if key[-1] is not None:
        try:
            write_cache_file(path, marshal.dumps((key, value)))
        except ValueError:  # a value marshal cannot write: used, not cached
            pass
    return value


def stamps(paths: list[Path]) -> tuple | None:
    """Each file's file_stamp; None when one cannot be read (nothing is cached then)."""
    try:
        return tuple(file_stamp(p) for p in paths)
    except OSError:
        return None


def file_stamp(path: Path) -> str:
    """A file as it is now: its device and inode (the file itself, whichever path or link leads to it), size and
    modification time (OSError when it cannot be read). One stat call: ~15x cheaper than resolving the path."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
