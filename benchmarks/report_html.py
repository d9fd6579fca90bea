"""`fairsweep report --format html`: one self-contained HTML file (inline CSS, PNGs inlined as data: URIs,
no script, no external asset: it opens from disk, offline) with a section per benchmark, plus every
table as CSV and every plot as PNG beside it.

The header states the runs (with their models and generation parameters), the DB, each benchmark's
coverage, parser and judge versions, and lists a warning for every incomplete cell. Each benchmark
reporter module contributes a ReportSection through `section(db, runs)` (SECTIONS below).
"""

from __future__ import annotations

import base64
import html
import importlib
import json
import struct
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..errors import ConfigError
from ..storage.db import open_db
from .registry import BENCHMARKS
from .report_tables import Plot, ReportSection, ReportTable, dicts, write_csv

# built-in benchmark -> "module:function" returning its ReportSection (the registry's `section` entries); the
# order is the report's order; prompt sets and plugins follow, by name
SECTIONS = {name: b.section for name, b in BENCHMARKS.items() if b.section}
MAX_WARNINGS = 40  # per benchmark in the header; the CSVs and tables hold the rest

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1200px;
padding:1rem 1.5rem 3rem;color:#1b1b1b;line-height:1.4}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #0072B2;padding-bottom:.2rem;margin-top:2.5rem}
h3{margin-top:1.8rem}h4{margin:1.2rem 0 .3rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.8rem 0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.warnings{background:#fff4e5;border-left:4px solid #E69F00;padding:.5rem 1rem;margin:1rem 0}
.warnings li{margin:.15rem 0}.ok{background:#e8f5ee;border-left:4px solid #009E73;padding:.5rem 1rem}
nav ul{columns:2;margin:.3rem 0}
table{border-collapse:collapse;margin:.4rem 0 .3rem;font-size:.85rem;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.2rem 0}
th,td{border:1px solid #d0d0d0;padding:.2rem .45rem;text-align:right;white-space:nowrap}
th{background:#f0f3f7}td:first-child,th:first-child{text-align:left}
tr.partial td{background:#fff8d6}
.note{font-size:.8rem;color:#444;margin:.15rem 0}.csv{font-size:.8rem;margin:.2rem 0 1rem}
.scroll{overflow-x:auto}
figure{margin:1rem 0 1.5rem}figure img{max-width:100%;height:auto;border:1px solid #e3e3e3}
figcaption{font-size:.85rem;color:#333;margin-top:.3rem}
details summary{cursor:pointer;font-weight:600;margin:.6rem 0}
footer{margin-top:3rem;font-size:.8rem;color:#666}
"""


def present_benchmarks(db: str, runs: list[str] | None) -> list[str]:
    """The reportable benchmarks that have requests in the DB (for the runs, when given), report order."""
    conn = open_db(db, read_only=True)
    try:
        found = {r[0] for r in conn.execute(
            "SELECT DISTINCT benchmark FROM requests WHERE $runs IS NULL OR list_contains($runs, run)",
            {"runs": list(runs) if runs else None}).fetchall()}
        others = _other_sections(conn, found - set(SECTIONS))
    finally:
        conn.close()
    benches = [name for name in SECTIONS if name in found] + others
    if not benches:
        raise ConfigError(f"no benchmark results in {db}" + (f" for run(s) {', '.join(runs)}" if runs else "")
                          + ": check --db and --run, or run a benchmark first")
    return benches


def _other_sections(conn, names: set[str]) -> list[str]:
    """Prompt sets (prompts marked `promptset`) and plugins with a section, among the benchmarks found."""
    from .registry import SECTIONS as ROLE, is_builtin_or_plugin
    sets = {r[0] for r in conn.execute("SELECT DISTINCT benchmark FROM prompts WHERE json_exists(metadata, "
                                       "'$.promptset') AND list_contains($1, benchmark)", [sorted(names)]).fetchall()}
    return sorted(n for n in names if n in sets or (is_builtin_or_plugin(n) and n in ROLE))


def load_section(name: str, db: str, runs: list[str] | None) -> ReportSection:
    target = SECTIONS.get(name)
    if target is None:
        from .registry import SECTIONS as ROLE, resolve
        return resolve(ROLE, name, "HTML report")(db, runs)
    if target is None:
        raise ConfigError(f"benchmark {name!r} has no HTML report: choose from {sorted(SECTIONS)}")
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(db, runs)


def write_html_report(db: str, runs: list[str] | None, benches: list[str], out: str | None) -> Path:
    """Write OUT/report.html, and beside it every table as CSV and every plot as PNG; returns the HTML path."""
    if not out:
        raise ConfigError("--format html writes files: pass --out DIR")
    sections = [load_section(name, db, runs) for name in benches]
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for section in sections:
        for table in section.tables:
            write_csv(table, folder)
        for plot in section.plots:
            (folder / f"{plot.name}.png").write_bytes(plot.png)
    path = folder / "report.html"
    path.write_text(render(db, sections, run_facts(db, runs, benches)), encoding="utf-8")
    return path


def run_facts(db: str, runs: list[str] | None, benches: list[str]) -> list[dict]:
    """Per reported run: creation time, fairsweep version, and its models with generation parameters."""
    conn = open_db(db, read_only=True)
    try:
        rows = dicts(conn.execute("""
            SELECT r.run, r.created_at, r.updated_at, r.fairsweep_version, r.identity,
                   (SELECT string_agg(DISTINCT s.provider_model, ', ' ORDER BY s.provider_model)
                    FROM requests q JOIN responses s USING (request_id) WHERE q.run = r.run) AS provider_models
            FROM runs r
            WHERE r.run IN (SELECT run FROM requests WHERE list_contains($benches, benchmark))
              AND ($runs IS NULL OR list_contains($runs, r.run))
            ORDER BY r.run""", {"runs": list(runs) if runs else None, "benches": list(benches)}))
    finally:
        conn.close()
    for row in rows:
        identity = json.loads(row.pop("identity") or "{}")
        row["models"] = [_model_text(m) for m in identity.get("models", [])]
    return rows


def _model_text(model: dict) -> str:
    params = ", ".join(f"{k} {v}" for k, v in sorted((model.get("params") or {}).items()))
    samples = model.get("samples", 1)
    return (f"{model.get('name')} = {model.get('model')} ({params}" + (f", {samples} samples" if samples != 1 else "")
            + ")")


# ------------------------------------------------------------------------------------------- HTML


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M %Z").strip() if isinstance(value, datetime) else str(value or "—")


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return struct.unpack(">II", png[16:24])


def render(db: str, sections: list[ReportSection], facts: list[dict]) -> str:
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>fairsweep report · {_e(', '.join(f['run'] for f in facts) or db)}</title>",
             f"<style>{CSS}</style></head><body>", _header(db, sections, facts, generated)]
    parts += [_section(s) for s in sections]
    parts.append(f"<footer>fairsweep {_e(__version__)} · generated {_e(generated)} from {_e(db)}. Every number "
                 f"is read from the DB's SQL views; the CSV files beside this page hold the same rows.</footer>")
    return "\n".join(parts) + "\n</body></html>\n"


def _header(db: str, sections: list[ReportSection], facts: list[dict], generated: str) -> str:
    items = [("Database", db), ("Generated", f"{generated} by fairsweep {__version__}")]
    for run in facts:
        models = "; ".join(run["models"]) or "—"
        served = f"; provider reports {run['provider_models']}" if run["provider_models"] else ""
        items.append((f"Run {run['run']}", f"created {_when(run['created_at'])}, last session "
                      f"{_when(run['updated_at'])}, fairsweep {run['fairsweep_version']}; models: {models}{served}"))
    for section in sections:
        items += [(f"{section.title} · {label}", value) for label, value in section.facts]
    facts_html = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    warnings = []
    for section in sections:
        shown = section.warnings[:MAX_WARNINGS]
        warnings += [f"{section.title}: {w}" for w in shown]
        if len(section.warnings) > len(shown):
            warnings.append(f"{section.title}: {len(section.warnings) - len(shown)} more incomplete cell(s): "
                            f"see the † rows in the tables")
    if warnings:
        box = ("<section class='warnings' id='warnings'><h2>Warnings</h2><ul>"
               + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul></section>")
    else:
        box = "<p class='ok' id='warnings'>Every cell is complete: no pending, failed or unscored requests.</p>"
    toc = "".join(f"<li><a href='#{_e(s.bench)}'>{_e(s.title)}</a></li>" for s in sections)
    return (f"<header><h1>fairsweep report</h1><dl class='facts'>{facts_html}</dl>{box}"
            f"<nav><ul>{toc}</ul></nav></header>")


def _section(section: ReportSection) -> str:
    parts = [f"<section id='{_e(section.bench)}'><h2>{_e(section.title)}</h2>"]
    if section.plots:
        parts.append("<h3>Plots</h3>")
        parts += [_figure(p) for p in section.plots]
    parts.append("<h3>Tables</h3>")
    parts += [_table(t) for t in section.tables]
    return "\n".join(parts) + "</section>"


def _figure(plot: Plot) -> str:
    width, height = png_size(plot.png)
    data = base64.b64encode(plot.png).decode("ascii")
    return (f"<figure id='fig-{_e(plot.name)}'><img src='data:image/png;base64,{data}' alt='{_e(plot.title)}' "
            f"width='{width}' height='{height}'><figcaption><b>{_e(plot.title)}.</b> {_e(plot.caption)} "
            f"(<a href='{_e(plot.name)}.png'>{_e(plot.name)}.png</a>)</figcaption></figure>")


def _table(table: ReportTable) -> str:
    body = []
    for title, rows in table.groups():
        head = "".join(f"<th scope='col'>{_e(h)}</th>" for h in table.headers)
        lines = "".join(
            ("<tr class='partial'>" if table.partial(r) else "<tr>") + "".join(f"<td>{_e(c)}</td>" for c in table.cells(r))
            + "</tr>" for r in rows)
        caption = f"<caption>{_e(title)}</caption>" if title else ""
        notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in table.notes(rows))
        body.append(f"<div class='scroll'><table data-table='{_e(table.name)}'>{caption}<thead><tr>{head}</tr>"
                    f"</thead><tbody>{lines}</tbody></table></div>{notes}")
    if not table.rows:
        body.append("<p class='note'>No rows for the runs reported.</p>")
    csv_link = f"<p class='csv'>CSV: <a href='{_e(table.name)}.csv'>{_e(table.name)}.csv</a></p>"
    inner = "".join(body) + csv_link
    if table.collapsed:
        return (f"<details id='tbl-{_e(table.name)}'><summary>{_e(table.title)} ({len(table.rows)} rows)</summary>"
                f"{inner}</details>")
    return f"<div id='tbl-{_e(table.name)}'><h4>{_e(table.title)}</h4>{inner}</div>"
