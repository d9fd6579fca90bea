"""[[sets]] in the config: names known to `benchmarks`, paths against the config's folder, per-table errors,
the set's content hash in the run identity; `import fairsweep.config` scans no installed package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fairsweep.config import SweepConfig, load_config, parse_config
from fairsweep.errors import ConfigError


def write(tmp_path, text: str):
    (tmp_path / "sub").mkdir(exist_ok=True)
    (tmp_path / "sub" / "s.jsonl").write_text('{"id": 1, "prompt": "hi", "target": "x"}\n')
    path = tmp_path / "sub" / "c.toml"
    path.write_text(text)
    return path


def test_a_set_name_is_a_benchmark_and_its_path_is_the_configs_folders(tmp_path):
    config = load_config(write(tmp_path, 'benchmarks = ["mine", "mrni"]\n[[sets]]\nname = "mine"\npath = "s.jsonl"\n'
                                         'parser = "exact"\n'))
    assert config.benchmarks == ("mine", "mrni")
    assert config.prompt_set("mine").path == str((tmp_path / "sub" / "s.jsonl").resolve())
    assert config.identity()["sets"][0]["sha256"] and config.identity()["sets"][0]["parser"] == "exact"


def test_an_unknown_benchmark_names_the_sets_too():
    with pytest.raises(ConfigError, match='unknown benchmark "mien" \\(did you mean "mine"\\?\\)'):
        parse_config({"benchmarks": ["mien"], "sets": [{"name": "mine", "path": "/x.jsonl"}]}, "c.toml")
    with pytest.raises(ConfigError, match='unknown benchmark "gamma" \\(did you mean "gama"\\?\\)'):
        parse_config({"benchmarks": ["gamma"]}, "c.toml")


@pytest.mark.parametrize("table,words", [
    ({"name": "s", "path": "/x.jsonl", "parser": "guess"}, '[[sets]] #1 "s": parser: unknown value "guess"'),
    ({"name": "s", "path": "/x.jsonl", "parsr": "exact"}, 'unknown key "parsr" (did you mean "parser"?)'),
    ({"name": "s", "path": "/x.jsonl", "parser": "regex"}, 'parser = "regex" needs pattern'),
    ({"name": "s", "path": "/x.jsonl", "parser": "json"}, 'parser = "json" needs field'),
    ({"name": "s", "path": "/x.jsonl", "parser": "regex", "pattern": "("}, "not a valid regular expression"),
    ({"name": "s s", "path": "/x.jsonl"}, "use letters, digits"),
    ({"path": "/x.jsonl"}, "'name' is required"),
])
def test_a_bad_sets_table_is_one_line_naming_it(table, words):
    with pytest.raises(ConfigError) as caught:
        parse_config({"benchmarks": ["mrni"], "sets": [table]}, "c.toml")
    assert words in str(caught.value) and "[[sets]] #1" in str(caught.value)


def test_a_set_cannot_take_a_built_in_name():
    with pytest.raises(ConfigError, match="is a built-in benchmark"):
        parse_config({"benchmarks": ["gama"], "sets": [{"name": "gama", "path": "/x.jsonl"}]}, "c.toml")


def test_a_changed_file_changes_the_identity(tmp_path):
    config = load_config(write(tmp_path, 'benchmarks = ["mine"]\n[[sets]]\nname = "mine"\npath = "s.jsonl"\n'))
    before = config.identity_hash()
    (tmp_path / "sub" / "s.jsonl").write_text('{"id": 1, "prompt": "hello", "target": "x"}\n')
    assert config.identity_hash() != before
    assert SweepConfig().identity_hash() == SweepConfig().identity_hash()  # no set chosen: no file read


def test_importing_the_config_reads_no_entry_points():
    code = ("import importlib.metadata as m, sys\ncalls = []\norig = m.entry_points\n"
            "m.entry_points = lambda *a, **k: calls.append(k.get('group')) or orig(*a, **k)\n"
            "import fairsweep.config as c\nc.parse_config({'benchmarks': ['mrni', 'gama']})\n"
            "assert 'fairsweep.benchmarks' not in calls, calls\nassert 'fairsweep.benchmarks.promptset.rows' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_limit_and_sample_keep_pairs_whole(tmp_path):
    from fairsweep.benchmarks.sampling import load_prompts
    from fairsweep.benchmarks.promptset.examples.make_vignettes import rows as vignette_rows
    import json
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(r) + "\n" for r in vignette_rows()))
    (tmp_path / "c.toml").write_text('benchmarks = ["v"]\n[[sets]]\nname = "v"\npath = "v.jsonl"\n')
    config = load_config(tmp_path / "c.toml")
    import dataclasses
    for field, n in (("limit", 3), ("sample", 7)):
        prompts = load_prompts(dataclasses.replace(config, **{field: n}))
        pairs = [p.metadata["promptset"]["pair"] for p in prompts]
        assert all(pairs.count(x) == 2 for x in pairs) and len(prompts) >= n, (field, pairs)


def test_a_broken_plugin_is_one_error_naming_it(monkeypatch):
    from importlib.metadata import EntryPoint

    from fairsweep.benchmarks import registry
    broken = {"broken": EntryPoint("broken", "no_such_module_here:BENCH", registry.ENTRY_POINT_GROUP),
              "wrong": EntryPoint("wrong", "json:JSONDecoder", registry.ENTRY_POINT_GROUP),
              "raises": EntryPoint("raises", "json:dumps", registry.ENTRY_POINT_GROUP)}
    monkeypatch.setattr(registry, "plugin_entry_points", lambda: broken)
    registry.plugin.cache_clear()
    try:
        assert parse_config({"benchmarks": ["broken"]}).benchmarks == ("broken",)  # known by name, not loaded
        with pytest.raises(ConfigError, match="plugin benchmark 'broken' .* cannot be loaded .*ModuleNotFoundError"):
            registry.resolve(registry.LOADERS, "broken", "load prompts")
        with pytest.raises(ConfigError, match="is not a fairsweep.benchmarks.registry.Benchmark"):
            registry.resolve(registry.LOADERS, "wrong", "load prompts")
        with pytest.raises(ConfigError, match="plugin benchmark 'raises' .* cannot be loaded .*TypeError"):
            registry.resolve(registry.SCORERS, "raises", "score")
    finally:
        registry.plugin.cache_clear()
