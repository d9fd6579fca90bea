"""derived(): a value derived from files, cached under their stamps, derived again whenever in doubt."""

from __future__ import annotations

import marshal
import os

import pytest

from fairsweep.derived import derived


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "fairsweep"


class Counting:
    """A derivation that counts its calls and returns the source's text."""

    def __init__(self, source):
        self.source, self.calls = source, 0

    def __call__(self):
        self.calls += 1
        return {"text": self.source.read_text()}


def test_a_value_is_derived_once_then_read_back_until_a_source_changes(tmp_path):
    source = tmp_path / "a.tsv"
    source.write_text("one")
    derive = Counting(source)
    assert derived("x", [source], derive) == {"text": "one"}
    assert derived("x", [source], derive) == {"text": "one"}
    assert derive.calls == 1

    source.write_text("two, longer")
    assert derived("x", [source], derive) == {"text": "two, longer"}
    assert derive.calls == 2
    os.utime(source, ns=(1, 1))  # same size, other modification time
    assert derived("x", [source], derive) == {"text": "two, longer"}
    assert derive.calls == 3


def test_another_recipe_derives_again(tmp_path):
    source = tmp_path / "a.tsv"
    source.write_text("one")
    derive = Counting(source)
    derived("x", [source], derive, recipe=("a", "b"))
    derived("x", [source], derive, recipe=("a", "b"))
    assert derive.calls == 1
    derived("x", [source], derive, recipe=("a", "b", "c"))
    assert derive.calls == 2


def test_a_cache_for_other_files_is_not_used(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("aaa")
    b.write_text("bbb")
    assert derived("x", [a], Counting(a)) == {"text": "aaa"}
    assert derived("x", [b], Counting(b)) == {"text": "bbb"}


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", marshal.dumps([1, 2]), marshal.dumps((1, 2, 3)),
                                    marshal.dumps({"a": 1})[:-2]])
def test_a_damaged_cache_is_derived_again_and_mended(tmp_path, cache_home, damage):
    source = tmp_path / "a.tsv"
    source.write_text("one")
    derived("x", [source], Counting(source))
    (cache_home / "x.marshal").write_bytes(damage)
    derive = Counting(source)
    assert derived("x", [source], derive) == {"text": "one"}
    assert derived("x", [source], derive) == {"text": "one"}
    assert derive.calls == 1


def test_a_cache_folder_that_cannot_be_written_costs_only_the_derivation(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    source = tmp_path / "a.tsv"
    source.write_text("one")
    derive = Counting(source)
    assert derived("x", [source], derive) == derived("x", [source], derive) == {"text": "one"}
    assert derive.calls == 2


def test_a_missing_source_or_a_failed_derivation_is_never_cached(tmp_path, cache_home):
    missing = tmp_path / "missing"
    assert derived("x", [missing], lambda: "derived") == "derived"
    assert not (cache_home / "x.marshal").exists()

    source = tmp_path / "a"
    source.write_text("one")

    def fail():
        raise ValueError("cannot derive")

    with pytest.raises(ValueError):
        derived("x", [source], fail)
    assert derived("x", [source], lambda: "second") == "second"
