"""Config problems in words: pydantic's errors and the checks that span fields, one line per problem.

A line names the table (`[[models]] #2 "gpt-mini"`), the key, what the key must be and the value given;
unknown keys get a "did you mean". Values are shown TOML-style and redacted (a pasted key never echoes).
"""

from __future__ import annotations

import datetime
import json
import math
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .types import LOCAL_MODEL, Expect
from ..errors import ConfigError, redact

NESTED = ("models", "judges")  # arrays of tables whose entries are model settings
UNNAMED = "?"  # the name sweep.py gives a table without a usable model id (that error is reported instead)


@dataclass(frozen=True)
class Problem:
    where: str  # '[[models]] #2 "gpt-mini"', 'top level', or '' when the source says it all
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.text}" if self.where else self.text


def raise_problems(problems: list[Problem], source: str) -> None:
    """Nothing, or one ConfigError holding every problem (one line each)."""
    unique = list(dict.fromkeys(problems))
    if len(unique) == 1:
        where, text = unique[0].where, unique[0].text
        raise ConfigError(f"{source}, {where}: {text}" if where else f"{source}: {text}")
    if unique:
        raise ConfigError(f"{source}: {len(unique)} problems (fix them; nothing was run):"
                          + "".join(f"\n  {p}" for p in unique))


def show(value: Any, limit: int = 60) -> str:
    """A value as it would read in TOML (true, nan, "text", [1, 2]), shortened and redacted."""
    if isinstance(value, bool):
        out = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        out = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    elif isinstance(value, (list, tuple)):
        out = "[" + ", ".join(show(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        out = "{ " + ", ".join(f"{k} = {show(v, limit)}" for k, v in value.items()) + " }" if value else "{}"
    elif isinstance(value, (datetime.date, datetime.time)):
        out = value.isoformat()
    elif isinstance(value, str):
        out = json.dumps(value, ensure_ascii=False)
    else:
        out = repr(value)
    out = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in redact(out))  # one line, always
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _fields(schema: type) -> list[str]:
    return list(schema.__pydantic_fields__)


def expect_of(schema: type, key: str) -> str | None:
    info = schema.__pydantic_fields__.get(key)
    found = [m for m in (info.metadata if info else []) if isinstance(m, Expect)]
    return found[-1] if found else None


def _choices(schema: type, key: str) -> tuple[str, ...]:
    """The allowed values of an enumerated field (a Literal anywhere in its type), else ()."""
    stack = [schema.__pydantic_fields__[key].annotation] if key in schema.__pydantic_fields__ else []
    while stack:
        kind = stack.pop()
        if typing.get_origin(kind) is typing.Literal:
            return typing.get_args(kind)
        stack += [a for a in typing.get_args(kind) if not isinstance(a, (str, int, float))]
    return ()


def _entry_value(entry: Any, key: str) -> Any:
    return entry.get(key) if isinstance(entry, dict) else getattr(entry, key, None)


def table_label(kind: str, index: int, entry: Any) -> str:
    name = _entry_value(entry, "name") or _entry_value(entry, "model")
    named = isinstance(name, str) and name != UNNAMED
    return f"[[{kind}]] #{index + 1}" + (f' "{show(name, 40)[1:-1]}"' if named else "")


def _unknown(key: str, schema: type, other: type | None, nested: bool) -> str:
    if key == "api_key":
        return ("api_key: never put a key in a config; put it in an environment variable and name that "
                "variable in api_key_env")
    if other is not None and key in _fields(other):
        home = "a top-level setting: put it above the first [[models]] table" if nested else \
            "a [[models]] setting: put it in each [[models]] (or [[judges]]) table"
        return f"{show(key)} is {home}"
    guess = _closest(key, _fields(schema))
    hint = f" (did you mean {show(guess)}?)" if guess else f"; allowed: {', '.join(_fields(schema))}"
    return f"unknown key {show(key)}{hint}"


def _closest(word: str, choices) -> str | None:
    """The choice close to `word`, if any (difflib is imported only when a config has a problem to word)."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1)
    return found[0] if found else None


def _must(key: str, value: Any, schema: type, error: dict, flags: dict[str, str] | None) -> str:
    """`rpm must be a positive number (not nan or inf), or leave the key out, got nan`; a flag by its name."""
    name = flags.get(key, key) if flags else key
    expect = expect_of(schema, key) or error["msg"].lower()
    if name != key:  # a flag: there is no key to leave out
        expect = expect.replace(", or leave the key out", "")
    shown = "(hidden)" if key == "api_key_env" else show(value)
    choices = _choices(schema, key)
    if error["type"] == "literal_error" and isinstance(error["input"], str) and choices:
        guess = _closest(error["input"], choices)
        noun = {"benchmarks": "benchmark", "executor": "executor"}.get(key, "value")
        return (f"{name}: unknown {noun} {show(error['input'])}" + (f" (did you mean {show(guess)}?)" if guess
                else "") + f"; choose from {', '.join(choices)}")
    return f"{name} must be {expect}, got {shown}"


def validation_problems(exc: ValidationError, data: dict[str, Any], flags: dict[str, str] | None = None, *,
                        schema: type, table: type | None = None, top_label: str = "top level") -> list[Problem]:
    """pydantic's errors for `data` (validated as `schema`; entries of NESTED arrays as `table`), one per key."""
    problems: list[Problem] = []
    seen: set[tuple[str, Any]] = set()
    for error in exc.errors():
        loc, owner, other, entry, where = error["loc"], schema, table, data, top_label
        if table is not None and len(loc) >= 2 and loc[0] in NESTED and isinstance(loc[1], int):
            items = data.get(loc[0])
            entry = items[loc[1]] if isinstance(items, (list, tuple)) and loc[1] < len(items) else None
            owner, other, where, loc = table, schema, table_label(loc[0], loc[1], entry), loc[2:]
        key = loc[0] if loc else None
        if (where, key) in seen:
            continue  # a union reports once per member: one line per key is enough
        seen.add((where, key))
        if key is None:
            text = f"must be a table of settings (model = ..., rpm = ...), got {show(entry)}"
        elif error["type"] == "unexpected_keyword_argument":
            text = _unknown(str(key), owner, other, owner is table and table is not None)
        elif error["type"] in ("missing", "missing_argument"):
            text = f"'{key}' is required" + (f' (e.g. model = "{LOCAL_MODEL}")' if key == "model" else "")
        else:
            text = _must(str(key), _entry_value(entry, key), owner, error, flags)
        problems.append(Problem(where, text))
    return problems


def _names(data: dict[str, Any]) -> list[str]:
    entries = [e for key in NESTED if isinstance(data.get(key), (list, tuple)) for e in data[key]]
    names = [_entry_value(e, "name") for e in entries if isinstance(e, dict) or hasattr(e, "name")]
    return [n for n in names if isinstance(n, str) and n != UNNAMED]


def cross_problems(data: dict[str, Any], flags: dict[str, str] | None = None, where: str = "top level"
                   ) -> list[Problem]:
    """The checks that span keys, on raw or validated values alike (types are the schema's job)."""
    flag = (lambda key: flags.get(key, key)) if flags else (lambda key: key)
    problems = []
    names = _names(data)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(Problem(where, f"model name(s) {', '.join(map(show, dupes))} used twice: give "
                                             f"each [[models]] and [[judges]] table a distinct name"))
    if isinstance(data.get("models"), (list, tuple)) and not data["models"]:
        problems.append(Problem(where, f'no [[models]]: add one (model = "{LOCAL_MODEL}" needs no key)'))
    if data.get("limit") is not None and data.get("sample") is not None:
        problems.append(Problem(where, f"use either {flag('limit')} or {flag('sample')}, not both"))
    benchmarks = data.get("benchmarks")
    if isinstance(benchmarks, (list, tuple)) and all(isinstance(b, str) for b in benchmarks) \
            and len(set(benchmarks)) < len(benchmarks):
        problems.append(Problem(where, f"{flag('benchmarks')} names a benchmark twice, got {show(benchmarks)}"))
    return problems + shared_key_problems(data)


KEY_LIMITS = ("rpm", "tpm", "max_concurrency")


def shared_key_problems(data: dict[str, Any]) -> list[Problem]:
    """Entries that share a provider key (limit_key, else their name) share one limiter: their limits
    must agree, or which one applied would depend on their order."""
    first: dict[str, tuple[str, Any]] = {}
    problems = []
    names = _names(data)
    for kind in NESTED:
        entries = data.get(kind)
        for index, entry in enumerate(entries if isinstance(entries, (list, tuple)) else ()):
            if not (isinstance(entry, dict) or hasattr(entry, "name")):
                continue
            key = _entry_value(entry, "limit_key") or _entry_value(entry, "name")
            if not isinstance(key, str) or key == UNNAMED or (names.count(key) > 1 and
                                                              not _entry_value(entry, "limit_key")):
                continue  # a name used twice is its own problem
            label = table_label(kind, index, entry)
            if key not in first:
                first[key] = (label, entry)
                continue
            other_label, other = first[key]
            for limit in KEY_LIMITS:
                mine, theirs = _entry_value(entry, limit), _entry_value(other, limit)
                if mine != theirs:
                    problems.append(Problem(label, f"shares limit_key {show(key)} with {other_label} but sets {limit} "
                                                   f"{show(mine)}, not {show(theirs)}: give every entry of one key "
                                                   f"the same rpm, tpm and max_concurrency"))
    return problems
