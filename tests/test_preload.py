"""A run imports its adapters' modules in the background while its prompts are built and its DB opens
(providers/registry.preload): what is preloaded, what is not, and that a failed import still fails where the
adapter is made. Each case runs in a new interpreter, whose modules are not yet imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from helpers import fairsweep_cmd

SERVER = "http://127.0.0.1:9/v1"  # never contacted


def _python(code: str) -> dict:
    """Run `code` in a new interpreter; it prints one JSON object as its last line."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_openai_compatible_model_has_its_adapter_imported_in_a_background_thread():
    seen = _python(f"""
        import json, sys, threading
        from fairsweep.config import ModelSpec
        from fairsweep.providers.registry import preload
        before = "fairsweep.providers.openai_compat" in sys.modules or "aiohttp" in sys.modules
        thread = preload([ModelSpec(name="a", model="sim-model", api_base="{SERVER}"),
                          ModelSpec(name="b", model="other", api_base="{SERVER}")])
        name = thread.name
        thread.join(60)
        print(json.dumps({{"before": before, "thread": name, "main": threading.current_thread().name,
                          "after": ["fairsweep.providers.openai_compat" in sys.modules, "aiohttp" in sys.modules],
                          "litellm": "litellm" in sys.modules}}))
    """)
    assert seen == {"before": False, "thread": "fairsweep-preload", "main": "MainThread", "after": [True, True],
                    "litellm": False}


def test_nothing_is_preloaded_for_ray_batch_or_unroutable_models():
    seen = _python(f"""
        import json, sys
        from fairsweep.config import ModelSpec, SweepConfig
        from fairsweep.providers.registry import preload, preload_for
        sim = ModelSpec(name="a", model="sim-model", api_base="{SERVER}")
        print(json.dumps({{
            "ray": preload_for(SweepConfig(models=(sim,), executor="ray")) is None,
            "batch": preload_for(SweepConfig(models=(ModelSpec(name="b", model="openai/gpt-4o-mini", batch=True),)))
                     is None,
            "unroutable": preload([ModelSpec(name="c", model="no-such-provider-model")]) is None,
            "none": preload([]) is None,
            "imported": "aiohttp" in sys.modules}}))
    """)
    assert seen == {"ray": True, "batch": True, "unroutable": True, "none": True, "imported": False}


def test_an_import_that_fails_in_the_background_fails_again_where_the_adapter_is_made():
    seen = _python(f"""
        import json, sys
        sys.modules["aiohttp"] = None  # `import aiohttp` raises ImportError, as on a broken install
        from fairsweep.config import ModelSpec
        from fairsweep.providers.registry import make_provider, preload
        spec = ModelSpec(name="a", model="sim-model", api_base="{SERVER}")
        preload([spec]).join(60)
        try:
            make_provider(spec)
            error = None
        except ImportError as exc:
            error = "ImportError naming aiohttp" if "aiohttp" in str(exc) else repr(exc)
        print(json.dumps({{"error": error, "half_imported": "fairsweep.providers.openai_compat" in sys.modules}}))
    """)
    assert seen == {"error": "ImportError naming aiohttp", "half_imported": False}


def test_a_dry_run_imports_no_adapter(tmp_path):
    seen = _python(f"""
        import contextlib, io, json, sys
        from fairsweep import cli
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["run", "--model", "sim=sim-model@{SERVER}", "--db", {str(tmp_path / "x.duckdb")!r},
                             "--run", "x", "--limit", "2", "--dry-run"])
        print(json.dumps({{"code": code, "aiohttp": "aiohttp" in sys.modules}}))
    """)
    assert seen == {"code": 0, "aiohttp": False}


def test_a_model_no_adapter_serves_is_still_refused_in_one_line_before_the_db_exists(tmp_path):
    db = tmp_path / "x.duckdb"
    done = subprocess.run(fairsweep_cmd("run", "--model", "m=no-such-provider-model", "--db", str(db),
                                        "--run", "x", "--limit", "1", "--no-progress"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no known provider serves this id" in done.stderr
    assert not db.exists()


def test_a_litellm_model_has_litellm_itself_imported_ahead():
    seen = _python(f"""
        import json, sys
        from fairsweep.config import ModelSpec
        from fairsweep.providers.registry import preload
        before = "litellm" in sys.modules
        preload([ModelSpec(name="c", model="anthropic/claude-haiku-4-5", api_base="{SERVER}")]).join(120)
        print(json.dumps({{"before": before, "after": ["litellm" in sys.modules, "openai" in sys.modules],
                          "aiohttp_adapter": "fairsweep.providers.openai_compat" in sys.modules}}))
    """)
    assert seen == {"before": False, "after": [True, True], "aiohttp_adapter": False}


SLOW_AIOHTTP = '''
import importlib.abc, importlib.util, os, sys, threading, time

class SlowAiohttp(importlib.abc.MetaPathFinder):
    """aiohttp's import in the preload thread, a second late; a file says when it has ended."""

    def find_spec(self, name, path, target=None):
        if name != "aiohttp" or threading.current_thread().name != "fairsweep-preload":
            return None
        time.sleep(1.0)
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            open(os.environ["AIOHTTP_IMPORTED"], "w").close()

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, SlowAiohttp())
'''


def test_a_run_that_stops_before_sending_waits_for_its_adapters_import_before_it_exits(tmp_path):
    """A run refused early (here: its data folder is missing) leaves while the preload may still be importing
    aiohttp. An interpreter exiting beside a thread inside an import crashed at times (SIGSEGV, ~1 run in 5 of a
    refused run): the command waits for the import to end. The import is slowed here to make the race certain."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_AIOHTTP)
    marker = tmp_path / "aiohttp-imported"
    done = subprocess.run(fairsweep_cmd("run", "--model", f"sim=sim-model@{SERVER}", "--db", str(tmp_path / "x.duckdb"),
                                        "--data-dir", str(tmp_path / "missing"), "--no-progress"),
                          env={**os.environ, "PYTHONPATH": str(site), "AIOHTTP_IMPORTED": str(marker)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "missing" in done.stderr, done.stderr
    assert marker.exists()  # the import ended before the process did
