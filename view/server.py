"""The `fairsweep view` web server (aiohttp): the page, its script and style, and the JSON and CSV
endpoints it polls. Fixed routes only (no path from a URL ever reaches the file system), GET only, every
request checked by view/security.py. DB reads run in a thread; with no live run they open the file
read-only only when it changed since the last read (a view left open must not keep a run from starting:
DuckDB lets no writer in while a reader holds the file)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from importlib import resources
from aiohttp import web

from ..errors import ConfigError, DatabaseError, FairsweepError
from ..storage.live import socket_path
from . import live_data, results
from .security import guard

STATIC = {"/": ("page.html", "text/html"), "/app.js": ("app.js", "text/javascript"),
          "/style.css": ("style.css", "text/css")}


READER = web.AppKey("reader", "Reader")
FIRST_RUN = web.AppKey("first_run", object)
READS = web.AppKey("reads", ThreadPoolExecutor)


class ViewError(ConfigError):
    """The view cannot start as asked (a port in use, a host not allowed)."""


class Reader:
    """DB reads for the endpoints, memoised while the file is unchanged and no run writes it."""

    def __init__(self, db: str):
        self.db = db
        self._memo: dict[tuple, tuple[object, object, float]] = {}
        self._lock = threading.Lock()

    def _signature(self):
        if socket_path(self.db).exists():  # a run serves reads: they cost the file nothing, ask every time
            return None
        stats = [os.stat(p) for p in (self.db, f"{self.db}.wal") if os.path.exists(p)]
        return tuple((s.st_mtime_ns, s.st_size) for s in stats)

    def read(self, key: tuple, fn, live_ttl_s: float = 0.0):
        """fn(), or its last value while the file is unchanged (or, during a live run, for `live_ttl_s`)."""
        signature = self._signature()
        now = time.monotonic()
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None and (hit[0] == signature if signature is not None else now - hit[2] < live_ttl_s):
                return hit[1]
        try:
            value = fn()
        except DatabaseError:
            if hit is None or not os.path.exists(self.db):
                raise
            return hit[1]  # between two phases of a run the file is locked for a moment: keep the last numbers
        with self._lock:
            if len(self._memo) > 256:
                self._memo.clear()
            self._memo[key] = (signature, value, now)
        return value


def build_app(db: str, token: str, port: int, *, check_host: bool = True, run: str | None = None) -> web.Application:
    """`run`: the run the page selects first (else the newest few that are not judge stages)."""
    app = web.Application(middlewares=[guard(token, port, check_host)])
    reader = Reader(db)
    app[READER], app[FIRST_RUN] = reader, run
    # One read at a time: DuckDB shares one instance per file within a process, and a page's polls are few.
    app[READS] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fairsweep-view-read")
    app.on_cleanup.append(_stop_reads)
    for path in STATIC:
        app.router.add_get(path, _static)
    app.router.add_get("/api/runs", _runs)
    app.router.add_get("/api/live", _live)
    app.router.add_get("/api/results", _results)
    app.router.add_get("/api/csv", _csv)
    app.router.add_get("/api/plots", _plots)
    app.router.add_get("/api/plot.png", _plot)
    return app


async def _stop_reads(app: web.Application) -> None:
    app[READS].shutdown(wait=False, cancel_futures=True)


async def _static(request: web.Request) -> web.Response:
    name, kind = STATIC[request.path]
    body = resources.files("fairsweep.view").joinpath("static", name).read_bytes()
    return web.Response(body=body, content_type=kind, charset="utf-8")


async def _in_thread(request: web.Request, key: tuple, fn, live_ttl_s: float = 0.0):
    reader: Reader = request.app[READER]
    return await asyncio.get_running_loop().run_in_executor(request.app[READS], reader.read, key, fn, live_ttl_s)


def _selected(request: web.Request) -> list[str]:
    return list(dict.fromkeys(v for v in request.query.getall("run", []) if v))


async def _json(request: web.Request, key: tuple, fn) -> web.Response:
    try:
        return web.json_response(await _in_thread(request, key, fn), dumps=_dumps)
    except FairsweepError as exc:
        return web.json_response({"error": str(exc)}, status=503)


async def _runs(request: web.Request) -> web.Response:
    db = request.app[READER].db
    first = request.app[FIRST_RUN]
    return await _json(request, ("runs",), lambda: {"db": db, "runs": live_data.run_names(db), "first": first})


async def _live(request: web.Request) -> web.Response:
    db, runs = request.app[READER].db, _selected(request)
    return await _json(request, ("live", *runs), partial(live_data.snapshot, db, runs))


async def _results(request: web.Request) -> web.Response:
    db, runs = request.app[READER].db, _selected(request)
    return await _json(request, ("results", *runs), lambda: {"sections": results.sections(db, runs)})


async def _csv(request: web.Request) -> web.Response:
    db, runs = request.app[READER].db, _selected(request)
    bench, name = request.query.get("bench", ""), request.query.get("table", "")
    try:
        text = await _in_thread(request, ("csv", bench, name, *runs), partial(results.table_csv, bench, name, db, runs))
    except FairsweepError as exc:
        return web.Response(status=503, text=f"{exc}\n")
    if text is None:
        return web.Response(status=404, text="no such table\n")
    safe = "".join(c for c in name if c.isalnum() or c in "_-") or "table"
    return web.Response(text=text, content_type="text/csv", charset="utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{safe}.csv"'})


PLOT_TTL_S = 20.0  # during a live run, a benchmark's plots are redrawn at most this often (matplotlib is slow)


async def _section_plots(request: web.Request) -> list:
    db, runs, bench = request.app[READER].db, _selected(request), request.query.get("bench", "")
    return await _in_thread(request, ("plots", bench, *runs), partial(results.plots, bench, db, runs), PLOT_TTL_S)


async def _plots(request: web.Request) -> web.Response:
    """The names, titles and captions of a benchmark's plots (the images: /api/plot.png)."""
    try:
        found = await _section_plots(request)
    except FairsweepError as exc:
        return web.json_response({"error": str(exc)}, status=503)
    return web.json_response({"plots": [{"name": p.name, "title": p.title, "caption": p.caption} for p in found]})


async def _plot(request: web.Request) -> web.Response:
    try:
        found = await _section_plots(request)
    except FairsweepError as exc:
        return web.Response(status=503, text=f"{exc}\n")
    png = next((p.png for p in found if p.name == request.query.get("name")), None)
    if png is None:
        return web.Response(status=404, text="no such plot\n")
    return web.Response(body=png, content_type="image/png")


def _dumps(value) -> str:
    return json.dumps(_finite(value), default=str, allow_nan=False)


def _finite(value):
    """NaN and infinities as null: JSON has no word for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on exactly `host` (port 0: one the OS picks); bound before the app is built,
    so the Host check knows the real port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ViewError(f"cannot listen on {host}:{port} ({exc.strerror}): pass another --port, or 0 for a free one"
                        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve(db: str, sock: socket.socket, token: str, *, check_host: bool, announce,
                run: str | None = None) -> None:
    """Serve on `sock` until cancelled; `announce()` once listening (prints the URL)."""
    port = sock.getsockname()[1]
    runner = web.AppRunner(build_app(db, token, port, check_host=check_host, run=run), access_log=None)
    await runner.setup()
    try:
        await web.SockSite(runner, sock).start()
        announce()
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
