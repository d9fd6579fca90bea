"""`fairsweep view` in tests: the server as a subprocess (its printed URL parsed), and a headless Chromium
session over the DevTools protocol (the approach of test_report_browser.py) that records every request
the page makes and takes screenshots."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import fairsweep_cmd
from test_report_browser import FLAGS, _devtools_port, chromium, devtools, stop_chromium

# The report test's flags, but the page is served on 127.0.0.1: no dead proxy (Chromium would send the
# page's own requests there too), and every host name but the view's address fails to resolve.
VIEW_FLAGS = [f for f in FLAGS if not f.startswith(("--proxy-server", "--host-resolver-rules"))] + [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-proxy-server"]


@dataclass
class View:
    proc: subprocess.Popen
    url: str      # as printed, with the token
    base: str     # http://127.0.0.1:PORT
    token: str
    port: int


@contextlib.contextmanager
def running_view(*args: str, env: dict | None = None, timeout: float = 60):
    """`fairsweep view ARGS` until the block ends; yields its View once it printed its URL."""
    proc = subprocess.Popen(fairsweep_cmd("view", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        line = _first_line(proc, timeout)
        found = re.search(r"(http://([^/]+):(\d+))/\?token=(\S+)", line)
        assert found, line
        yield View(proc, found.group(0), found.group(1), found.group(4), int(found.group(3)))
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError("fairsweep view printed no URL")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"fairsweep view exited {proc.wait()}: {proc.stderr.read()}")
    return line


class Browser:
    """One headless Chromium page: navigate, evaluate, wait for a condition, screenshot."""

    def __init__(self, client):  # test_report_browser._Client
        self.client = client

    @property
    def requests(self) -> list[str]:
        return self.client.requests

    @property
    def console(self) -> list[str]:
        return self.client.console

    async def goto(self, url: str, timeout: float = 30.0) -> None:
        """Load a document (a change of #fragment only is `tab`: it fires no load event)."""
        self.client.seen.discard("Page.loadEventFired")
        await self.client.call("Page.navigate", url=url)
        await asyncio.wait_for(self.client.wait_for("Page.loadEventFired"), timeout)

    async def tab(self, name: str) -> None:
        await self.eval(f"location.hash = {json.dumps('#' + name)}")

    async def eval(self, expression: str):
        result = await self.client.call("Runtime.evaluate", expression=expression, returnByValue=True,
                                        awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    async def wait_until(self, expression: str, timeout: float = 30.0, every: float = 0.25):
        deadline = time.monotonic() + timeout
        while True:
            value = await self.eval(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"the page never showed: {expression}"
            await asyncio.sleep(every)

    async def size(self, width: int, height: int) -> None:
        await self.client.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                               deviceScaleFactor=1, mobile=width < 700)

    async def screenshot(self, path: Path, full_page: bool = False) -> Path:
        await asyncio.sleep(0.3)  # a frame after the last DOM change
        shot = await self.client.call("Page.captureScreenshot", format="png", captureBeyondViewport=full_page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextlib.asynccontextmanager
async def browser(timeout: float = 45.0):
    profile = tempfile.mkdtemp(prefix="fairsweep-view-chromium-")
    proc = subprocess.Popen([chromium(), *VIEW_FLAGS, "--window-size=1280,800", f"--user-data-dir={profile}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = await asyncio.get_running_loop().run_in_executor(None, _devtools_port, Path(profile), proc, timeout)
        async with devtools(port) as client:
            page = Browser(client)
            await page.size(1280, 800)
            yield page
    finally:
        stop_chromium(proc, profile)


def shots_dir(tmp_path: Path) -> Path:
    """Where screenshots go: $FAIRSWEEP_VIEW_SHOTS (e.g. /work/logs), else the test's temp dir."""
    return Path(os.environ.get("FAIRSWEEP_VIEW_SHOTS") or tmp_path)


def as_json(value) -> str:
    return json.dumps(value)
