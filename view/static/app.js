// fairsweep view: polls the JSON endpoints of this process and draws the live panel and the results.
// Every text from the DB goes through textContent (never innerHTML): model names, run names and table
// cells are data, not markup. Every request goes to this page's own origin.
"use strict";

const LIVE_MS = 2000, RESULTS_MS = 5000, RUNS_MS = 5000, SVG = "http://www.w3.org/2000/svg";
const state = {runs: [], selected: null, lastResults: "", timers: {}};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v; else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

function query(extra) {
  const params = new URLSearchParams(extra || {});
  for (const run of selectedRuns()) params.append("run", run);
  return params.toString();
}

async function api(path) {
  const response = await fetch(path, {credentials: "same-origin", cache: "no-store"});
  if (response.status === 403) throw new Error("forbidden: open the URL that `fairsweep view` printed (it carries the token)");
  const body = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
  if (!response.ok || body.error) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function showError(error) {
  const box = document.getElementById("error");
  box.hidden = !error;
  box.textContent = error ? String(error.message || error) : "";
}

// ------------------------------------------------------------------------------------------ runs

function selectedRuns() {
  return state.runs.map(r => r.run).filter(r => state.selected.has(r));
}

async function loadRuns() {
  const data = await api("/api/runs");
  document.getElementById("db").textContent = data.db;
  const names = data.runs.map(r => r.run);
  const known = new Set(state.runs.map(r => r.run));
  if (state.selected === null) {  // the run asked for, else the newest few that are not judge stages
    const main = names.filter(n => !n.includes("/judge/"));
    state.selected = new Set(data.first && names.includes(data.first) ? [data.first] : (main.length ? main : names).slice(0, 4));
  }
  for (const name of names)  // a run started while the page is open
    if (!known.has(name) && state.runs.length && !name.includes("/judge/")) state.selected.add(name);
  const changed = names.join("\n") !== state.runs.map(r => r.run).join("\n");
  state.runs = data.runs;
  if (changed) drawRunPicker();
  const mode = document.getElementById("mode");
  const live = data.runs.some(r => r.live);
  mode.textContent = live ? "live: a run is writing this DB" : "file (read-only)";
  mode.className = "badge " + (live ? "live" : "file");
  return changed;
}

function drawRunPicker() {
  const box = document.getElementById("runs");
  box.replaceChildren(el("legend", {}, "Runs"));
  for (const run of state.runs) {
    const input = el("input", {type: "checkbox", value: run.run, checked: state.selected.has(run.run)});
    input.addEventListener("change", () => {
      if (input.checked) state.selected.add(run.run); else state.selected.delete(run.run);
      state.lastResults = "";
      refreshNow();
    });
    box.append(el("label", {title: `created ${run.created_at}, last session ${run.updated_at}`}, input, " ", run.run));
  }
  if (!state.runs.length) box.append(el("span", {class: "muted"}, "no runs in this DB yet"));
}

// ------------------------------------------------------------------------------------------ live

const fmt = {
  n: v => v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US"),
  rate: v => v === null || v === undefined ? "–" : `${Number(v).toFixed(2)}/s`,
  usd: v => v === null || v === undefined ? "–" : `$${Number(v).toFixed(4)}`,
  eta(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.round(seconds);
    return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m`
                     : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  },
};

function pace(m) {
  if (m.pace !== null && m.pace !== undefined)
    return m.declared_rpm ? `${fmt.rate(m.pace)} (declared ${m.declared_rpm}/min)` : `${fmt.rate(m.pace)} (learned)`;
  if (m.declared_rpm) return `declared ${m.declared_rpm}/min`;
  return m.sending ? "unpaced (learning from 429s)" : "undeclared (learned while a run sends)";
}

function meanRate(m, history) {
  if (!history || !history.series[m.model]) return null;
  const span = history.t1 - history.t0;
  return span >= 1 ? m.done / span : null;  // a sub-second burst has no meaningful rate
}

function modelCard(m, run, color) {
  const settled = m.done + m.failed;
  const share = m.total ? Math.min(100, 100 * settled / m.total) : 0;
  const bar = el("span", {});
  bar.style.width = `${share.toFixed(1)}%`;  // CSSOM, allowed by the page's CSP (no inline style attribute)
  const failures = Object.entries(m.failures || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  const rate = m.rate !== null && m.rate !== undefined ? fmt.rate(m.rate) :
               (meanRate(m, run.history) === null ? "–" : `${fmt.rate(meanRate(m, run.history))} (mean)`);
  const eta = m.eta_s !== null && m.eta_s !== undefined ? fmt.eta(m.eta_s) : (m.pending ? "–" : "done");
  const cap = m.max_cost !== null && m.max_cost !== undefined ? ` of ${fmt.usd(m.max_cost)} cap` : "";
  const facts = [
    ["stored / planned", `${fmt.n(m.done)} / ${fmt.n(m.total)}`, "stored"],
    ["answers/s", rate, "rate"], ["ETA", eta, "eta"], ["pending", fmt.n(m.pending), "pending"],
    ["retries", fmt.n(m.retries), "retries"], ["final failures", failures ? `${fmt.n(m.failed)}: ${failures}` : fmt.n(m.failed), "failed"],
    ["429s", fmt.n(m.http_429), "http429"], ["pace", pace(m), "pace"],
    ["spent", `${m.cost_usd === null ? "unknown" : fmt.usd(m.cost_usd)}${cap}`, "spent"],
    ["tokens in / out", `${fmt.n(m.prompt_tokens || 0)} / ${fmt.n(m.completion_tokens || 0)}`, "tokens"],
    ["batches in flight", fmt.n(m.batches_in_flight), "batches"],
  ];
  return el("article", {class: "card", "data-run": run.run, "data-model": m.model},
    el("h3", {}, el("i", {class: `swatch ${color}`}), m.model, m.stopped ? " · stopped" : (m.sending ? " · sending" : "")),
    el("div", {class: "bar", role: "progressbar", "aria-valuenow": share.toFixed(1), "aria-valuemin": 0,
               "aria-valuemax": 100}, bar),
    el("dl", {}, facts.map(([k, v, cls]) => [el("dt", {}, k), el("dd", {class: cls}, v)])),
    m.stopped ? el("p", {class: "stopped"}, "stopped: ", m.stopped) : null);
}

function chart(run, colors) {
  const h = run.history, W = 820, H = 230, L = 46, R = 26, T = 12, B = 30;
  const box = svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img",
                          "aria-label": `answers per second over time, run ${run.run}`});
  if (!h) {
    const t = svg("text", {x: L, y: H / 2}); t.textContent = "no answers stored yet"; box.append(t);
    box.dataset.points = "0";
    return box;
  }
  // While the run sends, the newest bucket is still filling: left out (it would read as a drop or a spike).
  const filling = Math.floor((h.t1 - h.t0) / h.width);
  const series = Object.entries(h.series).map(([model, pts]) => {
    const newest = Math.max(...pts.map(p => p[0])), last = run.live ? Math.min(newest, filling - 1) : newest;
    const counts = new Map(pts.map(p => [p[0], p[1]]));
    const out = [];
    for (let b = 0; b <= last; b++) {
      const start = b * h.width, dur = Math.max(1, Math.min(h.width, h.t1 - h.t0 - start));
      out.push([start + h.width / 2, (counts.get(b) || 0) / (!run.live && b === last ? Math.max(dur, h.width / 2) : h.width)]);
    }
    return [model, out];
  });
  const xmax = Math.max(h.width, h.t1 - h.t0 + h.width / 2);
  const ymax = Math.max(1, ...series.flatMap(([, pts]) => pts.map(p => p[1]))) * 1.1;
  const x = v => L + (W - L - R) * v / xmax, y = v => H - B - (H - T - B) * v / ymax;
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4;
    box.append(svg("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid"}));
    const t = svg("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}); t.textContent = v.toFixed(v < 10 ? 1 : 0);
    box.append(t);
  }
  for (let i = 0; i <= 4; i++) {
    const v = xmax * i / 4, t = svg("text", {x: x(v), y: H - 10, "text-anchor": "middle"});
    t.textContent = xmax < 120 ? `${v.toFixed(v < 10 ? 1 : 0)} s` : fmt.eta(v); box.append(t);
  }
  box.append(svg("line", {x1: L, x2: L, y1: T, y2: H - B, class: "axis"}),
             svg("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis"}));
  let points = 0;
  for (const [model, pts] of series) {
    points += pts.length;
    const d = pts.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join("");
    const path = svg("path", {d, class: colors.get(model)});
    path.dataset.model = model;
    path.append(Object.assign(svg("title", {}), {textContent: model}));
    box.append(path);
    if (pts.length < 40) for (const p of pts)  // a dot per bucket, so that a one-bucket series shows
      box.append(svg("circle", {cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3, class: `dot ${colors.get(model)}`}));
  }
  box.dataset.points = String(points);
  return box;
}

function drawLive(data) {
  const host = document.getElementById("live-runs");
  let stored = 0, planned = 0, rate = 0, rated = false;
  const blocks = data.runs.map(run => {
    const colors = new Map(run.models.map((m, i) => [m.model, `c${i % 8}`]));
    for (const m of run.models) {
      stored += m.done; planned += m.total;
      if (m.rate !== null && m.rate !== undefined) { rate += m.rate; rated = true; }
    }
    const runCap = run.max_cost !== null && run.max_cost !== undefined ? ` of ${fmt.usd(run.max_cost)} run cap` : "";
    return el("section", {class: "run", "data-run": run.run},
      el("h2", {}, `run ${run.run}`, run.live ? " · running" : ""),
      el("p", {class: "muted"}, run.spent === null ? `spend unknown (no known price)${runCap}` : `spent ${fmt.usd(run.spent)}${runCap}`,
         run.batches.length ? ` · ${run.batches.length} batch(es) in flight` : ""),
      el("div", {class: "run-body"},
        el("figure", {class: "rates"}, chart(run, colors),
          el("ul", {class: "legend"}, run.models.map(m => el("li", {}, el("i", {class: colors.get(m.model)}), m.model))),
          el("figcaption", {class: "muted"}, "answers stored per second since the run's first answer (from the DB's timestamps)")),
        el("div", {class: "cards"}, run.models.map(m => modelCard(m, run, colors.get(m.model))))));
  });
  host.replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "select a run")]));
  document.getElementById("stored-total").textContent = fmt.n(stored);
  document.getElementById("planned-total").textContent = fmt.n(planned);
  document.getElementById("rate-total").textContent = rated ? rate.toFixed(2) : "–";
}

// --------------------------------------------------------------------------------------- results

function resultTable(bench, table) {
  const href = `/api/csv?${query({bench, table: table.name})}`;
  const parts = table.groups.map(group => {
    const head = el("thead", {}, el("tr", {}, table.headers.map(h => el("th", {scope: "col"}, h))));
    const body = el("tbody", {}, group.rows.map((cells, i) =>
      el("tr", {class: group.partial[i] ? "partial" : null}, cells.map(c => el("td", {}, c)))));
    return [el("div", {class: "scroll"}, el("table", {"data-table": table.name},
              group.title ? el("caption", {}, group.title) : null, head, body)),
            group.notes.map(n => el("p", {class: "note"}, n))];
  });
  if (!table.rows) parts.push(el("p", {class: "note"}, "No rows for the runs selected."));
  const csv = el("p", {class: "csv"}, "CSV: ", el("a", {href, download: `${table.name}.csv`}, `${table.name}.csv`));
  if (table.collapsed)
    return el("details", {id: `tbl-${table.name}`}, el("summary", {}, `${table.title} (${table.rows} rows)`), parts, csv);
  return el("div", {id: `tbl-${table.name}`}, el("h3", {}, table.title), parts, csv);
}

function plotsBox(bench) {
  // The report's plots, drawn by the server (matplotlib) only when asked: opening the box fetches them.
  const box = el("details", {id: `plots-${bench}`, class: "plots"}, el("summary", {}, "Plots"));
  box.addEventListener("toggle", async () => {
    if (!box.open || box.dataset.loaded) return;
    box.dataset.loaded = "1";
    const list = el("div", {}, el("p", {class: "muted"}, "drawing…"));
    box.append(list);
    try {
      const data = await api(`/api/plots?${query({bench})}`);
      list.replaceChildren(...(data.plots.length ? data.plots.map(p => el("figure", {id: `fig-${p.name}`},
        el("img", {src: `/api/plot.png?${query({bench, name: p.name})}`, alt: p.title}),
        el("figcaption", {}, el("b", {}, `${p.title}. `), p.caption))) : [el("p", {class: "muted"}, "no plots yet")]));
    } catch (error) {
      list.replaceChildren(el("p", {class: "note"}, String(error.message || error)));
    }
  });
  return box;
}

function drawResults(data) {
  const open = new Set([...document.querySelectorAll("details[open]")].map(d => d.id));
  const blocks = data.sections.map(section => el("section", {id: `bench-${section.bench}`, "data-bench": section.bench},
    el("h2", {}, section.title),
    section.message ? el("p", {class: "note"}, section.message) : null,
    section.tables.length ? plotsBox(section.bench) : null,
    section.tables.map(t => resultTable(section.bench, t))));
  const host = document.getElementById("result-sections");
  host.replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "no benchmark results for the runs selected yet")]));
  for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }  // plots redrawn too
}

// ----------------------------------------------------------------------------------------- loops

async function tick(name, fn, every) {
  clearTimeout(state.timers[name]);
  try {
    await fn();
    showError(null);
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    showError(error);
  }
  state.timers[name] = setTimeout(() => tick(name, fn, every), every);
}

async function live() {
  if (!selectedRuns().length) return drawLive({runs: []});
  drawLive(await api(`/api/live?${query()}`));
}

async function resultsNow() {
  if (!selectedRuns().length) return drawResults({sections: []});
  const data = await api(`/api/results?${query()}`);
  const text = JSON.stringify(data);
  if (text !== state.lastResults) { state.lastResults = text; drawResults(data); }  // keeps scroll and open tables
}

function refreshNow() {
  tick("live", live, LIVE_MS);
  tick("results", resultsNow, RESULTS_MS);
}

function showTab() {
  const tab = location.hash === "#results" ? "results" : "live";
  for (const name of ["live", "results"]) {
    document.getElementById(name).hidden = name !== tab;
    document.getElementById(`tab-${name}`).classList.toggle("on", name === tab);
  }
}

window.addEventListener("hashchange", showTab);
document.addEventListener("DOMContentLoaded", async () => {
  showTab();
  try { await loadRuns(); } catch (error) { showError(error); }
  tick("runs", async () => { if (await loadRuns()) refreshNow(); }, RUNS_MS);
  if (state.selected !== null) refreshNow();
});
