"""A run collects cyclic garbage less often (commands/run.py), and the process's thresholds come back after it."""

import gc

import pytest

from fairsweep.commands.run import fewer_collections


def test_fewer_collections_while_running_and_the_thresholds_restored_after():
    before = gc.get_threshold()
    with fewer_collections(12_345):
        assert gc.get_threshold() == (12_345, 20, 100)
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before


def test_a_run_builds_its_prompts_under_the_raised_thresholds_too(monkeypatch, tmp_path, mrni_dir):
    import fairsweep.benchmarks.sampling as sampling
    from fairsweep.cli import main

    seen, real = [], sampling.load_prompts

    def load_prompts(config, data_dir=None):
        seen.append(gc.get_threshold()[0])
        return real(config, data_dir)

    monkeypatch.setattr(sampling, "load_prompts", load_prompts)
    before = gc.get_threshold()
    code = main(["run", "--dry-run", "--model", "sim=sim-model@http://127.0.0.1:9/v1", "--limit", "2",
                 "--db", str(tmp_path / "x.duckdb"), "--data-dir", str(mrni_dir)])
    assert code == 0 and seen == [20_000]
    assert gc.get_threshold() == before
