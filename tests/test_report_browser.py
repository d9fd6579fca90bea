"""The HTML report in a real browser: headless Chromium (Debian's package, installed by .ci/run) opens
report.html from disk with no network, driven over the DevTools protocol (aiohttp websocket): no console
error or exception, no request other than file: and data: URLs, every image decoded, the tables there.

Without /usr/bin/chromium the test is skipped with the command that installs it (`apt-get update && apt-get
install -y chromium`), except where CI is set: there (.ci/run installs it) a missing browser fails the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest

from report_data import build_report_db
from fairsweep.cli import main

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         # no network: every host name fails to resolve and any direct connection goes to a closed port
         "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--remote-debugging-port=0"]
PROBE = """JSON.stringify({
  images: [...document.images].map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth,
                                          height: i.naturalHeight, declared: i.getAttribute('width')})),
  tables: [...document.querySelectorAll('table[data-table]')].map(t => t.dataset.table),
  rows: document.querySelectorAll('tbody tr').length,
  scripts: document.scripts.length,
  title: document.title,
  warnings: document.getElementById('warnings') ? document.getElementById('warnings').innerText : null
})"""
TABLES = {"mrni_conditions", "mrni_gender_marker_effect", "mrni_categories", "mrni_runs_side_by_side",
          "mrni_likert_summary", "mrni_likert_subscales", "mrni_likert_runs_side_by_side", "gama_report_detail",
          "gama_judge_agreement", "gama_gaps_by_dimension", "gama_gaps_by_severity", "gama_composites",
          "gama_coverage"}


INSTALL = "apt-get update && apt-get install -y chromium"


def chromium() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        why = f"{CHROMIUM} is missing: install it with `{INSTALL}`"
        if os.environ.get("CI"):
            pytest.fail(f"{why} (.ci/run does this before the tests)")
        pytest.skip(why)
    return CHROMIUM


def open_in_browser(page: Path, timeout: float = 45.0) -> dict:
    """Load `page` in a fresh headless Chromium; return console errors, exceptions, requested URLs and PROBE."""
    profile = tempfile.mkdtemp(prefix="fairsweep-chromium-")
    proc = subprocess.Popen([chromium(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = _devtools_port(Path(profile), proc, timeout)
        return asyncio.run(asyncio.wait_for(_inspect(port, page.resolve().as_uri()), timeout))
    finally:
        stop_chromium(proc, profile)


def stop_chromium(proc: subprocess.Popen, profile: str) -> None:
    """End the browser (killed if it does not stop within 10 s) and remove its profile."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(profile: Path, proc: subprocess.Popen, timeout: float) -> int:
    """Chromium writes the port it chose for --remote-debugging-port=0 into DevToolsActivePort."""
    marker, deadline = profile / "DevToolsActivePort", time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"chromium exited with {proc.returncode} before opening DevTools"
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        time.sleep(0.05)
    raise AssertionError("chromium did not open its DevTools port")


@contextlib.asynccontextmanager
async def devtools(port: int):
    """A DevTools client on the browser's first page, with the events the checks read switched on."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
            target = next(t for t in await resp.json() if t["type"] == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            client = _Client(ws)
            for domain in ("Runtime", "Log", "Network", "Page"):
                await client.call(f"{domain}.enable")
            yield client


async def _inspect(port: int, url: str) -> dict:
    async with devtools(port) as client:
        await client.call("Page.navigate", url=url)
        await client.wait_for("Page.loadEventFired")
        await asyncio.sleep(0.3)  # late console messages, if any
        result = await client.call("Runtime.evaluate", expression=PROBE, returnByValue=True)
        return {"console": client.console, "requests": client.requests,
                "probe": json.loads(result["result"]["value"])}


class _Client:
    """Just enough of the DevTools protocol: calls by id, and the events the checks need."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws, self.next_id = ws, 0
        self.console: list[str] = []
        self.requests: list[str] = []
        self.seen: set[str] = set()

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        while True:
            message = await self._receive()
            if message.get("id") == self.next_id:
                assert "error" not in message, (method, message["error"])
                return message["result"]

    async def wait_for(self, event: str) -> None:
        while event not in self.seen:
            await self._receive()

    async def _receive(self) -> dict:
        message = json.loads((await self.ws.receive()).data)
        method, params = message.get("method"), message.get("params", {})
        if method:
            self.seen.add(method)
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert", "warning"):
            self.console.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.console.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            self.console.append(f"{params['entry']['source']}: {params['entry']['text']}")
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"][:120])
        return message


@pytest.fixture(scope="module")
def report_page(tmp_path_factory, mrni_dir) -> Path:
    built = build_report_db(tmp_path_factory.mktemp("report-db"), mrni_dir)
    out = tmp_path_factory.mktemp("report-html")
    assert main(["report", "--db", built["db"], "--format", "html", "--out", str(out)]) == 0
    return out / "report.html"


def test_report_opens_offline_with_no_console_error_and_every_image_loaded(report_page):
    seen = open_in_browser(report_page)
    probe = seen["probe"]
    assert seen["console"] == []
    assert all(u.startswith(("file:", "data:")) for u in seen["requests"]), seen["requests"]
    assert probe["scripts"] == 0  # the report needs no script
    pngs = sorted(report_page.parent.glob("*.png"))
    assert len(probe["images"]) == len(pngs) >= 14
    for image in probe["images"]:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
        assert str(image["width"]) == image["declared"], image  # decoded at the size the page declares
    assert set(probe["tables"]) == TABLES
    assert probe["rows"] > 100
    assert "run B · model sim · IT: coverage below 100%" in probe["warnings"]
    assert probe["title"].startswith("fairsweep report · A, B")


def test_the_browser_check_catches_a_broken_page(tmp_path):
    """The same check on a page with a console error, a missing image and an outside request must complain."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>broken</title></head><body>"
                    "<img src='missing.png' alt='missing'><img src='https://example.com/x.png' alt='remote'>"
                    "<script>console.error('boom')</script><table data-table='t'><tbody><tr><td>1</td></tr>"
                    "</tbody></table></body></html>", encoding="utf-8")
    seen = open_in_browser(page)
    assert any("boom" in line for line in seen["console"]), seen["console"]
    assert any(not i["width"] for i in seen["probe"]["images"])
    assert any(u.startswith("https://example.com") for u in seen["requests"])
    assert seen["probe"]["tables"] == ["t"]


def test_a_missing_browser_skips_with_the_install_command_and_fails_under_ci(monkeypatch):
    monkeypatch.setitem(globals(), "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="install it with `apt-get update && apt-get install -y chromium`"):
        chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        chromium()
