"""Simulated OpenAI-compatible chat-completions provider (aiohttp.web), which also speaks the Anthropic
Messages API on /v1/messages (sim/anthropic.py): one server can serve both.

Used by tests, benchmarks and demos: deterministic answers, configurable
latency and concurrency, fixed-window rate limits with several retry-hint
styles, seeded fault injection and cheap live statistics.

Run it with ``python -m fairsweep.sim.server --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from aiohttp import web

from .anthropic import add_anthropic_routes
from .batches import add_batch_routes
from .chat import add_openai_routes
from .state import FAULT_KINDS, LISTENING_PREFIX, RETRY_AFTER_FORMATS, STATE_KEY, SimConfig, SimState, load_answers

_LISTENING_RE = re.compile(re.escape(LISTENING_PREFIX) + r"(http://\S+/v1)\s*$")


def build_app(config: SimConfig) -> web.Application:
    """Create the aiohttp application for ``config`` (loads the answers file)."""
    if config.retry_after_format not in RETRY_AFTER_FORMATS:
        raise ValueError(f"retry_after_format must be one of {RETRY_AFTER_FORMATS}")
    if config.window_s <= 0:
        raise ValueError("window_s must be > 0")
    app = web.Application()
    app[STATE_KEY] = SimState(config, load_answers(config.answers))
    add_openai_routes(app)
    add_anthropic_routes(app, app[STATE_KEY])
    add_batch_routes(app, app[STATE_KEY])
    return app


# --------------------------------------------------------------------------- CLI

def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"probability must be in [0, 1], got {text}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairsweep sim-server",
                                description="Simulated OpenAI-compatible chat-completions provider.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001, help="0 picks a free port")
    p.add_argument("--model-version", default=None, help="model name reported in responses")
    p.add_argument("--fingerprint", default="fp_sim_1", help="system_fingerprint in responses")
    p.add_argument("--seed", type=int, default=0, help="seed of the built-in answers")
    p.add_argument("--answers", default=None, metavar="FILE", help="answers JSON file")
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--latency-jitter-ms", type=float, default=0.0)
    p.add_argument("--max-concurrency", type=int, default=0, help="0 = unlimited")
    p.add_argument("--rpm", type=int, default=0, help="requests per minute, 0 = unlimited")
    p.add_argument("--tpm", type=int, default=0, help="tokens per minute, 0 = unlimited")
    p.add_argument("--window-s", type=float, default=60.0, help="rate-limit window length")
    p.add_argument("--retry-after-format", choices=RETRY_AFTER_FORMATS, default="seconds")
    p.add_argument("--no-quota-headers", dest="quota_headers", action="store_false",
                   help="answers carry no x-ratelimit-limit/remaining headers (a provider that does not say)")
    p.add_argument("--fault-seed", type=int, default=1)
    for kind in FAULT_KINDS:
        p.add_argument(f"--fault-{kind.replace('_', '-')}", dest=f"fault_{kind}", type=_probability,
                       default=0.0, metavar="P")
    p.add_argument("--hang-s", type=float, default=30.0)
    p.add_argument("--api-key", default=None)
    p.add_argument("--models", default="", help="comma-separated list of accepted models")
    p.add_argument("--context-limit", type=int, default=0, help="max prompt tokens, 0 = unlimited")
    p.add_argument("--batch-duration-s", type=float, default=2.0, help="batch APIs: seconds a batch takes")
    p.add_argument("--batch-error", type=_probability, default=0.0, metavar="P",
                   help="batch APIs: probability that a request errors (a server error)")
    p.add_argument("--batch-expire-first", type=int, default=0, metavar="N",
                   help="batch APIs: the first N batches expire halfway through")
    return p


def parse_args(argv: list[str] | None = None) -> SimConfig:
    """Parse CLI options into a SimConfig."""
    ns = vars(_build_parser().parse_args(argv))
    ns["models"] = tuple(m.strip() for m in ns["models"].split(",") if m.strip())
    return SimConfig(**ns)


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(config: SimConfig) -> None:
    """Serve until SIGINT/SIGTERM, printing the listening line once bound."""
    runner = web.AppRunner(build_app(config), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"{LISTENING_PREFIX}http://{_display_host(config.host)}:{port}/v1", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``fairsweep sim-server [options]``."""
    config = parse_args(argv)
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:  # SIGINT before the handlers were installed
        pass
    return 0


# --------------------------------------------------------------------------- subprocess helper

class SimServerProcess:
    """Run the sim server in a subprocess: ``with SimServerProcess(["--rpm", "60"]) as sim: ...``."""

    def __init__(self, args: list[str] | None = None, startup_timeout: float = 30.0):
        self.args = list(args or [])
        self.startup_timeout = startup_timeout
        self.base_url: str | None = None
        self.proc: subprocess.Popen | None = None
        self._stderr = None
        self._pump: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        """Server root (base_url without the trailing /v1)."""
        assert self.base_url is not None, "server not started"
        return self.base_url[: -len("/v1")]

    def __enter__(self) -> "SimServerProcess":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        cmd = [sys.executable, "-m", "fairsweep.sim.server", "--port", "0", *self.args]
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: it can never fill up and block
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL, text=True)
        lines: queue.Queue = queue.Queue()
        self._pump = threading.Thread(target=self._pump_stdout, args=(self.proc.stdout, lines), daemon=True)
        self._pump.start()
        try:
            self.base_url = self._wait_listening(lines)
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _pump_stdout(stream, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _wait_listening(self, lines: queue.Queue) -> str:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"sim server did not report listening within {self.startup_timeout}s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"sim server exited early:\n{self._stderr_text()}")
            match = _LISTENING_RE.match(line)
            if match:
                return match.group(1)

    def _stderr_text(self) -> str:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stop(self) -> None:
        """Terminate the server (kill if it does not stop within 5 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._pump is not None:
            self._pump.join(timeout=2)  # EOF follows process exit; join before closing the pipe
        pump_done = self._pump is None or not self._pump.is_alive()
        if self.proc is not None and self.proc.stdout is not None and pump_done:
            self.proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _call(self, method: str, path: str) -> dict:
        req = urllib.request.Request(self.root_url + path, method=method,
                                     data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict:
        """GET /stats."""
        return self._call("GET", "/stats")

    def reset_stats(self) -> dict:
        """POST /stats/reset."""
        return self._call("POST", "/stats/reset")


if __name__ == "__main__":
    sys.exit(main())
