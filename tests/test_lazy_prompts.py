"""Prompts built a chunk at a time when first read (lazy_prompts.py): a list for every reader, with only the chunks
read ever built; the MRNI-BB prompts come that way, and a run's selection and checks build none it does not send."""

from __future__ import annotations

import pytest

from fairsweep.benchmarks.mrni.prompts import CHUNK, build_prompts
from fairsweep.benchmarks.sampling import first_units
from fairsweep.engine.work import check_unique
from fairsweep.errors import DataError
from fairsweep.lazy_prompts import LazyPrompts, identities
from fairsweep.records import Prompt


def lazy(n: int, size: int, built: list[int] | None = None, keys: list[str] | None = None) -> LazyPrompts:
    keys = keys or [f"k{i}" for i in range(n)]

    def build(chunk: int) -> list[Prompt]:
        if built is not None:
            built.append(chunk)
        return [Prompt("b", keys[i], ({"role": "user", "content": f"prompt {i}"},), {"i": i})
                for i in range(chunk * size, min(n, (chunk + 1) * size))]

    return LazyPrompts("b", keys, size, build)


def test_it_reads_as_the_list_of_its_prompts_and_builds_each_chunk_once():
    built: list[int] = []
    prompts = lazy(10, 4, built)
    whole = lazy(10, 4)[:]
    assert len(prompts) == 10 and built == []
    assert prompts[5].key == "k5" and built == [1]
    assert prompts[-1].key == "k9" and prompts[-10].key == "k0" and built == [1, 2, 0]
    assert [p.key for p in prompts[3:9]] == [f"k{i}" for i in range(3, 9)]
    assert [p.key for p in prompts[::3]] == ["k0", "k3", "k6", "k9"] and prompts[8:3] == []
    assert [p.key for p in prompts] == [p.key for p in whole] and prompts == whole and whole == prompts
    assert built == [1, 2, 0]  # every later read came from the chunks already built
    assert prompts[4] is prompts[4]
    with pytest.raises(IndexError):
        prompts[10]
    prompts.clear()
    assert len(prompts) == 0 and list(prompts) == []


def test_identities_and_the_duplicate_check_build_nothing_unless_two_keys_meet():
    built: list[int] = []
    prompts = lazy(600, 256, built)
    assert list(identities(prompts))[:2] == [("b", "k0"), ("b", "k1")]
    check_unique(prompts)
    assert built == []
    repeated = lazy(600, 256, built, keys=[f"k{i}" for i in range(599)] + ["k3"])  # another prompt, the same key
    check_unique(repeated)
    assert sorted(built) == [0, 2]  # the two prompts with that key are hashed: they differ, so both stay
    same = LazyPrompts("b", ["a", "a"], 1, lambda c: [Prompt("b", "a", ({"role": "user", "content": "x"},), {})])
    with pytest.raises(DataError, match="gives prompt 'a' twice"):
        check_unique(same)


def test_a_chunk_of_the_wrong_size_is_refused():
    wrong = LazyPrompts("b", ["a", "b"], 2, lambda c: [Prompt("b", "a", ({"role": "user", "content": "x"},), {})])
    with pytest.raises(ValueError, match="chunk 0 of 'b' has 1 prompts, not 2"):
        wrong[0]


def test_the_mrni_prompts_are_built_a_chunk_at_a_time_and_a_limited_run_reads_one(mrni_dir):
    prompts = build_prompts(mrni_dir)
    assert isinstance(prompts, LazyPrompts) and len(prompts) == 4704
    assert sum(c is not None for c in prompts._chunks) == 0
    check_unique(prompts)
    assert [p.key for p in first_units(prompts, 3)] == [p.key for p in build_prompts(mrni_dir)[:3]]
    assert sum(c is not None for c in prompts._chunks) == 1
    everything = list(prompts)
    assert len(everything) == 4704 and len({p.key for p in everything}) == 4704
    assert [p.key for p in everything[CHUNK - 1:CHUNK + 1]] == [p.key for p in prompts[CHUNK - 1:CHUNK + 1]]
