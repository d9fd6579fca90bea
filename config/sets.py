"""One `[[sets]]` table of the config: a prompt-set file, the name it runs under, how its answers are parsed.

Part of the config (pydantic and config/types only): `import fairsweep.config` must stay cheap.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from .types import Expect, Flag, number, optional, text
from ..errors import ConfigError
from typing import Annotated

PARSERS = ("choice", "letter", "option_text", "exact", "regex", "number", "json")
Parser = Annotated[Literal[PARSERS], Expect(", ".join(f'"{p}"' for p in PARSERS))]
SetName = Annotated[str, Expect("a name of letters, digits, '-', '_' or '.'")]


@dataclass(frozen=True, config=ConfigDict(extra="forbid", allow_inf_nan=False))
class SetSpec:
    """A prompt set: `name` is what `benchmarks = [...]` and the results call it."""

    name: text("a name of letters, digits, '-', '_' or '.'") = Field(
        description="the benchmark name of this set (in `benchmarks` and the results)")
    path: text("a file path (.jsonl, .csv or .parquet)") = Field(
        description="the set's file; a relative path is resolved against the config file's folder")
    parser: Parser = Field("choice", description="how answers are read: choice (letter or option text), letter, "
                                                 "option_text, exact, regex, number, json")
    pattern: optional(text("a regular expression"), "a regular expression, or leave the key out") = Field(
        None, description="regex parser: the answer is group 1 of the first match (else the whole match)")
    field: optional(text("a JSON key or dotted path"), "a JSON key, or leave the key out") = Field(
        None, description="json parser: the key (dotted path) of the answer in the JSON the model returns")
    show_choices: Flag = Field(True, description="append the lettered choices and an answer instruction to each "
                                                 "prompt that has choices")
    tolerance: optional(number("a number >= 0 (not nan or inf)", ge=0), "a number >= 0, or leave the key out") = Field(
        None, description="number parser: |answer - target| <= tolerance counts as correct (default: exact)")

    def parser_options(self) -> dict[str, Any]:
        """What decides how an answer is read (part of the run identity and of each prompt)."""
        return {"parser": self.parser, "pattern": self.pattern, "field": self.field, "tolerance": self.tolerance,
                "show_choices": self.show_choices}


SET_ADAPTER = TypeAdapter(SetSpec)
_HASHES: dict[tuple[str, int, int], str] = {}


def content_hash(path: str) -> str:
    """sha256 of the set's file (cached by path, size and mtime): part of the run identity."""
    try:
        stat = os.stat(path)
    except OSError:
        raise ConfigError(f"prompt set file {path} not found: check the path in [[sets]]") from None
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def resolve_paths(sets: Any, base: Path) -> Any:
    """[[sets]] tables with relative paths made absolute against the config file's folder."""
    if not isinstance(sets, list):
        return sets
    out = []
    for table in sets:
        if isinstance(table, dict) and isinstance(table.get("path"), str) and table["path"]:
            table = {**table, "path": str((base / os.path.expanduser(table["path"])).resolve())}
        out.append(table)
    return out


def validate_tables(sets: Any) -> tuple[list[SetSpec], list[tuple[str, ValidationError | str]]]:
    """Each [[sets]] table validated on its own: (specs, [(label, error)])."""
    import re
    specs, errors = [], []
    if not isinstance(sets, (list, tuple)):
        return specs, [("sets", "must be [[sets]] tables (an array of tables)")]
    for index, table in enumerate(sets):
        name = table.get("name") if isinstance(table, dict) else getattr(table, "name", None)
        label = f"[[sets]] #{index + 1}" + (f' "{name}"' if isinstance(name, str) and name else "")
        try:
            spec = table if isinstance(table, SetSpec) else SET_ADAPTER.validate_python(table)
        except ValidationError as exc:
            errors.append((label, exc))
            continue
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec.name):
            errors.append((label, f"name {spec.name!r}: use letters, digits, '-', '_' or '.'"))
        elif spec.parser == "regex" and spec.pattern is None:
            errors.append((label, 'parser = "regex" needs pattern = "..." (group 1 is the answer)'))
        elif spec.parser == "json" and spec.field is None:
            errors.append((label, 'parser = "json" needs field = "..." (the key of the answer)'))
        elif spec.pattern is not None and _bad_regex(spec.pattern):
            errors.append((label, f"pattern {spec.pattern!r} is not a valid regular expression "
                                  f"({_bad_regex(spec.pattern)})"))
        else:
            specs.append(spec)
    return specs, errors


def _bad_regex(pattern: str) -> str | None:
    import re
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    return None
