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
