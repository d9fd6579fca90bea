"""`fairsweep view` in headless Chromium: a page that watches a simulated-server run live (stored count and
chart rising between two looks, the pace declared or learned from 429s), then shows the results tables
with the numbers of `fairsweep report --format csv`; DB text is never markup; every request the browser
makes goes to the view's own 127.0.0.1 port. Screenshots: $FAIRSWEEP_VIEW_SHOTS (else the temp dir).

Without /usr/bin/chromium these tests skip, naming `apt-get install -y chromium`; with $CI set they fail.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
from pathlib import Path

from helpers import fairsweep_cmd, wait_for_ok
from view_helpers import browser, chromium, running_view, shots_dir

LIVE_PROBE = """JSON.stringify({
  stored: document.getElementById('stored-total').textContent,
  planned: document.getElementById('planned-total').textContent,
  rate: document.getElementById('rate-total').textContent,
  points: [...document.querySelectorAll('svg.chart')].map(s => +s.dataset.points).reduce((a, b) => a + b, 0),
  cards: [...document.querySelectorAll('.card')].map(c => ({
    model: c.dataset.model, stored: c.querySelector('dd.stored').textContent, rate: c.querySelector('dd.rate').textContent,
    pace: c.querySelector('dd.pace').textContent, http429: c.querySelector('dd.http429').textContent,
    eta: c.querySelector('dd.eta').textContent,
    stopped: c.querySelector('.stopped') ? c.querySelector('.stopped').textContent : null})),
  mode: document.getElementById('mode').textContent, error: document.getElementById('error').textContent})"""
TABLE_PROBE = """JSON.stringify([...document.querySelectorAll('table[data-table="mrni_conditions"]')].map(t => ({
  caption: t.caption ? t.caption.textContent : null,
  rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))})))"""
PROMPTS = 160


def write_config(path: Path, db: Path, steady_url: str, learning_url: str) -> Path:
    """Two models: one paced at a declared 6/s, one with no declared limit against a server that allows 8/s
    (its pace is learned from the 429s): 160 prompts each, ~25 s. A third, misspelt, is stopped at once."""
    path.write_text("\n".join([
        f'db = "{db}"', 'run = "watched"', 'benchmarks = ["mrni"]', "flush_ms = 200", "",
        "[[models]]", 'name = "steady"', 'model = "sim-model"', f'api_base = "{steady_url}"', "rpm = 360",
        "max_concurrency = 4", "timeout_s = 10", "max_cost = 5.0", "",
        "[[models]]", 'name = "learner"', 'model = "sim-model"', f'api_base = "{learning_url}"',
        "max_concurrency = 4", "timeout_s = 10", "",
        "[[models]]", 'name = "typo"', 'model = "sim-modle"', f'api_base = "{steady_url}"', ""]))
    return path


ANSWERED_SUM = """[...document.querySelectorAll('table[data-table="mrni_conditions"] tbody tr')]
  .reduce((n, r) => n + (+r.cells[1].textContent.split(' ')[0] || 0), 0)"""


def write_report(config: Path, out: Path, env: dict) -> list[dict]:
    """`fairsweep report --format csv` into `out`; the rows of its mrni_conditions.csv."""
    done = subprocess.run(fairsweep_cmd("report", "--config", str(config), "--bench", "mrni", "--format", "csv",
                                        "--out", str(out)), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with open(out / "mrni_conditions.csv", newline="") as fh:
        return list(csv.DictReader(fh))


async def looks(view, run: subprocess.Popen, report, shots: Path) -> dict:
    """Two looks at the live panel while the run sends, one after; then the results once they match the
    report written after the run (`report()` -> its mrni_conditions rows)."""
    loop = asyncio.get_running_loop()
    async with browser() as page:
        await page.goto(view.url)
        await page.wait_until("document.querySelectorAll('.card').length === 3 && "
                              "+document.getElementById('stored-total').textContent.replace(/,/g, '') > 10", 60)
        await page.wait_until("document.getElementById('rate-total').textContent !== '–'", 30)
        first = json.loads(await page.eval(LIVE_PROBE))
        await asyncio.sleep(5)
        second = json.loads(await page.eval(LIVE_PROBE))
        assert run.poll() is None, "the run ended before the second look: make it slower"
        await page.screenshot(shots / "view-live-1280x800.png")
        await page.size(420, 900)
        await page.screenshot(shots / "view-live-narrow.png", full_page=True)
        await page.size(1280, 800)
        await page.tab("results")
        await page.wait_until("document.querySelectorAll('table[data-table=\"mrni_conditions\"]').length > 0", 30)
        answered_while_running = await page.eval(ANSWERED_SUM)
        await page.tab("live")
        await loop.run_in_executor(None, run.wait, 180)
        await page.wait_until("document.getElementById('mode').textContent.startsWith('file')", 30)
        await page.wait_until("[...document.querySelectorAll('.card:not([data-model=typo]) dd.eta')]"
                              ".every(d => d.textContent === 'done')", 30)
        final = json.loads(await page.eval(LIVE_PROBE))
        expected = await loop.run_in_executor(None, report)
        await page.tab("results")
        total = sum(int(r["answered"]) for r in expected)
        await page.wait_until(f"{ANSWERED_SUM} === {total}", 30)  # the panel caught up with the last commits
        tables = json.loads(await page.eval(TABLE_PROBE))
        csvs = json.loads(await page.eval("""(async () => JSON.stringify(Object.fromEntries(await Promise.all(
            [...document.querySelectorAll('#bench-mrni p.csv a')].map(async a =>
                [a.textContent, await (await fetch(a.href)).text()])))))()"""))
        await page.screenshot(shots / "view-results-1280x800.png")
        await page.size(420, 900)
        await page.screenshot(shots / "view-results-narrow.png")
        await page.size(1280, 800)
        await page.eval("document.getElementById('plots-mrni').open = true")  # the report's plots, on demand
        images = json.loads(await page.wait_until(
            "(() => { const i = [...document.querySelectorAll('#plots-mrni img')]; return i.length && "
            "i.every(x => x.complete) && JSON.stringify(i.map(x => [x.alt, x.naturalWidth])); })()", 60))
        return {"images": images, "first": first, "second": second, "final": final, "answered_while_running": answered_while_running,
                "expected": expected, "tables": tables, "csvs": csvs, "requests": page.requests,
                "console": page.console}


def test_the_page_watches_a_run_live_then_shows_the_reports_numbers(sim, tmp_path, mrni_dir):
    chromium()
    steady = sim("--latency-ms", "30", "--models", "sim-model")
    learning = sim("--latency-ms", "30", "--rpm", "480", "--window-s", "1",
                   "--no-quota-headers")  # its limit is learned from 429s (with the headers: from them, 0 429s)
    db = tmp_path / "watched.duckdb"
    config = write_config(tmp_path / "c.toml", db, steady.base_url, learning.base_url)
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    run = subprocess.Popen(fairsweep_cmd("run", "--config", str(config), "--limit", str(PROMPTS), "--no-progress"),
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "report"
    try:
        wait_for_ok(steady, 1)
        with running_view("--config", str(config), env=env) as view:
            seen = asyncio.run(looks(view, run, lambda: write_report(config, out, env), shots_dir(tmp_path)))
    finally:
        _, err = run.communicate(timeout=180)
    assert run.returncode == 1, err  # the misspelt model's prompts are missing
    first, second, final = seen["first"], seen["second"], seen["final"]
    count = lambda text: int(text.replace(",", ""))  # noqa: E731
    assert first["mode"].startswith("live") and first["error"] == ""
    assert 0 < count(first["stored"]) < count(second["stored"]) < 2 * PROMPTS, (first, second)
    assert first["planned"] == second["planned"] == f"{3 * PROMPTS}"
    assert 0 < first["points"] < second["points"], (first, second)  # the chart grew
    assert float(first["rate"]) > 0 and float(second["rate"]) > 0
    cards = {c["model"]: c for c in second["cards"]}
    assert cards["steady"]["pace"].startswith("5.94/s (declared 360/min)"), cards  # 6/s x the limiter's 0.99
    assert cards["learner"]["pace"].endswith("(learned)") or "learning" in cards["learner"]["pace"], cards
    assert "model_not_found" in cards["typo"]["stopped"] and "sim-modle" in cards["typo"]["stopped"], cards
    assert cards["steady"]["stopped"] is None and cards["learner"]["stopped"] is None
    final_cards = {c["model"]: c for c in final["cards"]}
    assert final_cards["typo"]["stored"] == f"0 / {PROMPTS}", final_cards
    assert all(final_cards[m]["stored"] == f"{PROMPTS} / {PROMPTS}" for m in ("steady", "learner")), final_cards
    assert count(final_cards["learner"]["http429"]) > 0  # the undeclared limit was found by its 429s

    expected, tables, csvs = seen["expected"], seen["tables"], seen["csvs"]
    assert 0 < seen["answered_while_running"] < sum(int(r["answered"]) for r in expected)  # it updated
    shown = [(t["caption"], row) for t in tables for row in t["rows"]]
    assert len(shown) == len(expected) > 0
    for (caption, cells), row in zip(shown, expected):
        assert f"run {row['run']} · model {row['model']} · {row['language'].upper()}" in caption
        assert cells[0] == row["condition"] and cells[1].split()[0] == row["answered"]
        assert cells[3].split()[0] == ("—" if row["acc_strict"] == "" else f"{float(row['acc_strict']):.3f}")
    assert sorted(csvs) == sorted(f"{p.stem}.csv" for p in out.glob("*.csv"))
    for name, text in csvs.items():
        assert text == (out / name).read_text(), name  # each download = the report's CSV, byte for byte

    assert len(seen["images"]) == 3 and all(width > 0 for _, width in seen["images"]), seen["images"]
    assert seen["requests"] and all(u.startswith(f"{view.base}/") for u in seen["requests"]), seen["requests"]
    assert seen["console"] == [], seen["console"]


XSS_MODEL = '<img src=x onerror="window.pwned=1">'
XSS_RUN = '<script>window.pwned=2</script>'


def test_db_text_is_shown_as_text_never_run_as_markup(sim, tmp_path, mrni_dir):
    chromium()
    server = sim()
    db = tmp_path / "xss.duckdb"
    config = tmp_path / "x.toml"
    config.write_text("\n".join([f'db = "{db}"', f"run = {json.dumps(XSS_RUN)}", 'benchmarks = ["mrni"]', "",
                                 "[[models]]", f"name = {json.dumps(XSS_MODEL)}", 'model = "sim-model"',
                                 f'api_base = "{server.base_url}"', ""]))
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    done = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "12", "--no-progress"), env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr

    async def check(view) -> dict:
        async with browser() as page:
            await page.goto(view.url)
            await page.wait_until("document.querySelectorAll('.card').length === 1", 30)
            await page.tab("results")
            await page.wait_until("document.querySelectorAll('table[data-table]').length > 0", 60)
            return {"seen": json.loads(await page.eval("""JSON.stringify({pwned: window.pwned || null,
                images: document.images.length, scripts: document.scripts.length,
                text: document.body.textContent})""")), "requests": page.requests}

    with running_view("--db", str(db)) as view:
        seen = asyncio.run(check(view))
    page = seen["seen"]
    assert page["pwned"] is None and page["images"] == 0 and page["scripts"] == 1, page  # only /app.js
    assert XSS_MODEL in page["text"] and XSS_RUN in page["text"]
    assert all(u.startswith(f"{view.base}/") for u in seen["requests"]), seen["requests"]
