"""The `fairsweep` command starts with the cyclic garbage collector off and does its work with it on, with what
the start-up built frozen (commands/startup.py); a command called in-process leaves the collector alone."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys

from fairsweep import cli
from fairsweep.sim.probe import at_first_request

# The command as installed (cli.entry), with a probe at the start of what it calls: is the collector on, and how
# many objects are frozen?
PROBED = r"""
import gc, sys
from fairsweep import cli
from fairsweep.benchmarks import pipeline, sampling
from fairsweep.commands import results

def probe(name, real):
    def call(*args, **kwargs):
        print(f"{name}: on={gc.isenabled()} frozen={gc.get_freeze_count()}", file=sys.stderr, flush=True)
        return real(*args, **kwargs)
    return call

sampling.load_prompts = probe("prompts", sampling.load_prompts)
pipeline.run_pipeline = probe("run", pipeline.run_pipeline)
results.cmd_status = probe("status", results.cmd_status)
sys.argv = ["fairsweep", *sys.argv[1:]]
cli.entry()
"""


def probed(*args: str, env: dict | None = None) -> dict[str, tuple[bool, int]]:
    done = subprocess.run([sys.executable, "-c", PROBED, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    return {name: (on == "True", int(frozen))
            for name, on, frozen in re.findall(r"^(\w+): on=(\w+) frozen=(\d+)$", done.stderr, re.M)}


def test_a_run_builds_its_prompts_with_the_collector_off_and_sends_with_it_on(server, tmp_path, mrni_dir):
    seen = probed("run", "--model", f"sim=sim-model@{server.base_url}", "--limit", "1", "--no-progress",
                  "--db", str(tmp_path / "r.duckdb"), env={"FAIRSWEEP_MRNI_DIR": str(mrni_dir)})
    assert seen["prompts"] == (False, 0)
    on, frozen = seen["run"]
    assert on and frozen > 10_000  # the modules, the parser, the config and the prompts: never scanned again


def test_any_other_command_works_with_the_collector_on(tmp_path):
    on, frozen = probed("status", "--db", str(tmp_path / "none.duckdb"))["status"]
    assert on and frozen > 10_000


def test_a_command_called_in_process_leaves_the_collector_as_it_was(tmp_path):
    frozen = gc.get_freeze_count()
    assert cli.main(["status", "--db", str(tmp_path / "none.duckdb")]) == 2
    assert gc.isenabled() and gc.get_freeze_count() == frozen


# What a run has done when its first request leaves: recorded there by a probe in the child (sim/probe.py).
RECORD = """
import json
from fairsweep.providers import pricing
loader = sys.modules.get("pydantic.plugin._loader")
state = {"modules": sorted(sys.modules), "prices_read": pricing.price_map.cache_info().currsize,
         "plugins_scanned": loader is not None and loader._plugins is not None}
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump(state, out)
"""


def test_before_its_first_request_a_run_does_only_what_sending_needs(server, tmp_path, mrni_dir):
    """No other verb's parser, no price map (routing reads its own small cache), no scan of pydantic plugins, no
    TOML reader for a run named by flags, no batch or data-check modules, and no more than its first prompts."""
    import json

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(at_first_request(RECORD))
    out = tmp_path / "state.json"
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), "PROBE_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "fairsweep.cli", "run", "--model", f"sim=sim-model@{server.base_url}",
                           "--db", str(tmp_path / "r.duckdb"), "--no-progress"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0 and out.exists(), done.stderr
    state = json.loads(out.read_text())
    modules = set(state["modules"])
    assert "fairsweep.commands.run" in modules and "fairsweep.lazy_prompts" in modules
    assert not modules & {"fairsweep.commands.results", "fairsweep.commands.gama", "fairsweep.commands.view",
                          "difflib", "tomllib", "fairsweep.storage.batches", "fairsweep.benchmarks.mrni.data_check",
                          "numpy", "rich"}
    assert state["prices_read"] == 0 and not state["plugins_scanned"]
