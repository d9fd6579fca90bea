"""The embedded model's native code: a crash before the run stops it cleanly; a crash during it costs
one attempt. Crashes are real signals in real child processes: a stand-in `llama_cpp` package put first
on PYTHONPATH kills its own process the way a miscompiled llama.cpp does."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import fairsweep_cmd, rows

CRASH_ON_LOAD = """
import os, signal
class Llama:
    def __init__(self, **kwargs):
        os.kill(os.getpid(), signal.{signal})
"""
FAIL_ON_LOAD = """
class Llama:
    def __init__(self, **kwargs):
        raise ValueError("Failed to load model from file: not a GGUF")
"""
# Loads, answers the probe's one token, and dies once by SIGSEGV in the middle of the run.
CRASH_ONCE = """
import os, signal
FLAG = {flag!r}
class Llama:
    def __init__(self, **kwargs):
        pass
    def create_completion(self, prompt, **kwargs):
        return {{"choices": [{{"text": "Hi"}}]}}
    def create_chat_completion(self, messages, **kwargs):
        if not os.path.exists(FLAG):
            open(FLAG, "w").close()
            os.kill(os.getpid(), signal.SIGSEGV)
        return {{"choices": [{{"message": {{"content": "The man."}}, "finish_reason": "stop"}}],
                "usage": {{"prompt_tokens": 10, "completion_tokens": 3}}}}
"""


def native_stand_in(tmp_path: Path, source: str) -> dict:
    """An environment whose `import llama_cpp` finds `source`, with a private native-check cache."""
    package = tmp_path / "shim" / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(source))
    path = os.pathsep.join(filter(None, [str(tmp_path / "shim"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def run_local(tmp_path: Path, env: dict, limit: int = 4) -> subprocess.CompletedProcess:
    return subprocess.run(fairsweep_cmd("run", "--model", "local/smollm2", "--limit", str(limit), "--db",
                                        str(tmp_path / "r.duckdb"), "--run", "r", "--no-progress"),
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("signal_name", ["SIGILL", "SIGSEGV", "SIGBUS"])
def test_a_native_crash_stops_the_run_before_anything_is_sent(tmp_path, mrni_dir, signal_name):
    env = native_stand_in(tmp_path, CRASH_ON_LOAD.format(signal=signal_name))
    result = run_local(tmp_path, {**env, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert signal_name in lines[0] and "CMAKE_ARGS=" in lines[0] and "-DGGML_NATIVE=OFF" in lines[0]
    assert "pip install --force-reinstall" in lines[0]
    db = tmp_path / "r.duckdb"
    assert not db.exists() or rows(str(db), "SELECT count(*) FROM attempts") == [(0,)]
    assert not (tmp_path / "cache" / "fairsweep" / "native-check.json").exists(), "a failure must not be cached"


def test_a_model_that_cannot_load_stops_the_run_with_the_reason(tmp_path, mrni_dir):
    env = native_stand_in(tmp_path, FAIL_ON_LOAD)
    result = run_local(tmp_path, {**env, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)})
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and "could not be loaded" in line and "not a GGUF" in line
    assert not (tmp_path / "r.duckdb").exists()


def test_a_crash_during_the_run_costs_one_attempt_not_the_run(tmp_path, mrni_dir):
    env = native_stand_in(tmp_path, CRASH_ONCE.format(flag=str(tmp_path / "crashed")))
    result = run_local(tmp_path, {**env, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}, limit=6)
    assert result.returncode == 0, result.stderr
    db = str(tmp_path / "r.duckdb")
    assert rows(db, "SELECT count(*) FROM responses") == [(6,)]
    crashes = rows(db, "SELECT outcome, error_class, error_message FROM attempts WHERE outcome <> 'ok'")
    assert len(crashes) == 1 and crashes[0][:2] == ("transient", "local_crash") and "SIGSEGV" in crashes[0][2]
    # The probe's success is cached for this build: the next run does not probe again.
    assert (tmp_path / "cache" / "fairsweep" / "native-check.json").exists()
