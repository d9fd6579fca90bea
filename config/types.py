"""The value types of the sweep config: strict (an integer is never a float or a boolean), finite, bounded.

Each type carries `Expect`, the words a config error uses for what was expected, and the README's
config reference shows. pydantic does the validating; this module only declares the rules.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

import annotated_types as at
from pydantic import AllowInfNan, JsonValue, Strict

from ..benchmarks.registry import BENCHMARKS


class Expect(str):
    """What a field expects, in words (pydantic ignores it; problems.py and doc.py read it)."""


def integer(expect: str, **bounds: int) -> object:
    """An integer (not a float, not a boolean) within bounds (ge/gt/le/lt)."""
    return Annotated[int, Strict(), at.Interval(**bounds), Expect(expect)]


def number(expect: str, **bounds: float) -> object:
    """A finite number, integer or float, within bounds. An integer stays an integer: a TOML
    `temperature = 0` must keep the request identity (and so the stored answers) of earlier versions."""
    interval = at.Interval(**bounds)
    finite_float = Annotated[float, Strict(), AllowInfNan(False), interval]
    return Annotated[Union[Annotated[int, Strict(), interval], finite_float], Expect(expect)]


def optional(kind: object, expect: str) -> object:
    """`kind` or left out (None)."""
    return Annotated[Union[kind, None], Expect(expect)]


def text(expect: str = "a non-empty string") -> object:
    """A non-empty string (a number or a boolean is not a string)."""
    return Annotated[str, Strict(), at.MinLen(1), Expect(expect)]


Flag = Annotated[bool, Strict(), Expect("true or false")]
Params = Annotated[dict[str, JsonValue], Expect("a table of JSON values (strings, finite numbers, booleans, "
                                                "arrays, tables), e.g. { top_p = 0.9, seed = 1 }")]
Url = Annotated[str, Strict(), at.Predicate(lambda s: s.startswith(("http://", "https://")) and " " not in s),
                Expect('an http:// or https:// URL, e.g. "http://127.0.0.1:8001/v1"')]
EnvName = Annotated[str, Strict(), at.Predicate(lambda s: s.isidentifier() and s.isascii()),
                    Expect('the NAME of an environment variable (e.g. "OPENAI_API_KEY"), never the key itself')]

LOCAL_MODEL = "local/smollm2"
# a built-in (the registry's), a plugin's (entry-point group fairsweep.benchmarks) or a [[sets]] name: config.py
# checks the name once the sets are known (plugins are looked up only for a name that is neither)
BenchmarkName = Annotated[str, Strict(), at.MinLen(1)]
Benchmarks = Annotated[tuple[BenchmarkName, ...], Expect(f"a non-empty array of {', '.join(BENCHMARKS)}, "
                                                          f"a [[sets]] name or a plugin's benchmark")]
Executor = Annotated[Literal["local", "ray"], Expect('"local" or "ray"')]
Protocol = Annotated[Literal["openai", "litellm"], Expect('"openai" or "litellm"')]


def tables(kind: type, name: str) -> object:
    """An array of tables ([[models]]) whose entries are `kind`."""
    return Annotated[tuple[kind, ...], Expect(f"[[{name}]] tables (an array of tables)")]
