"""A benchmark's prompts built a chunk at a time, when first read.

A run reads its prompts a plan step at a time (engine/plan_stream.py), so a loader that returns LazyPrompts
lets the first request wait for the first chunk rather than for every prompt: the 4,704 MRNI-BB prompts took
~20 ms of the start-up to build from the cache, their first chunk takes ~1 ms. Everything a list of prompts
offers for reading (len, index, slice, iteration, equality) works the same; a slice is a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Callable

from .records import Prompt


class LazyPrompts(Sequence):
    """`keys[i]` is prompt i's key (all of them `benchmark`'s); `build(c)` builds chunk c: prompts
    c * chunk_size up to the next chunk, in order. A chunk is built once, on first read."""

    def __init__(self, benchmark: str, keys: Sequence[str], chunk_size: int, build: Callable[[int], list[Prompt]]):
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.benchmark, self._keys, self._size, self._build = benchmark, keys, chunk_size, build
        self._chunks: list[list[Prompt] | None] = [None] * -(-len(keys) // chunk_size)

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            out: list[Prompt] = []
            while start < stop:
                chunk, offset = divmod(start, self._size)
                part = self._chunk(chunk)[offset:offset + stop - start]
                out.extend(part)
                start += len(part)
            return out
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("prompt index out of range")
        chunk, offset = divmod(index, self._size)
        return self._chunk(chunk)[offset]

    def __iter__(self) -> Iterator[Prompt]:
        for chunk in range(len(self._chunks)):
            yield from self._chunk(chunk)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyPrompts, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def identities(self) -> Iterator[tuple[str, str]]:
        """(benchmark, key) of every prompt, without building any."""
        return ((self.benchmark, key) for key in self._keys)

    def clear(self) -> None:
        """Drop every prompt (built or not), as list.clear() does."""
        self._keys, self._chunks = (), []

    def _chunk(self, chunk: int) -> list[Prompt]:
        built = self._chunks[chunk]
        if built is None:
            built = self._chunks[chunk] = self._build(chunk)
            if len(built) != min(self._size, len(self) - chunk * self._size):
                raise ValueError(f"chunk {chunk} of {self.benchmark!r} has {len(built)} prompts, not "
                                 f"{min(self._size, len(self) - chunk * self._size)}")
        return built


def identities(prompts: Iterable[Prompt]) -> Iterator[tuple[str, str]]:
    """(benchmark, key) of every prompt; a LazyPrompts builds none for it."""
    if isinstance(prompts, LazyPrompts):
        return prompts.identities()
    return ((p.benchmark, p.key) for p in prompts)
