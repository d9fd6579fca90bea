"""Report plots: one function per plot, each taking rows read from the SQL views and returning PNG bytes.

matplotlib's object API on the Agg canvas (no pyplot, no display, no global figure state); every plot is
drawn under matplotlib's built-in defaults plus STYLE, so the same rows give the same bytes whatever the
user's matplotlibrc says. Missing values (NULL in a view) are left out of a plot or drawn as grey "n/a"
cells, never as 0. Entities are "model" or, when several runs are reported, "run · model" (see `entity`).
"""

from __future__ import annotations

import functools
import io
import math
from typing import Callable, Iterable, Sequence

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

DPI = 110
# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
STYLE = {"font.family": "DejaVu Sans", "font.size": 8.5, "axes.titlesize": 9, "axes.labelsize": 8.5,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
         "legend.fontsize": 8, "legend.frameon": False, "figure.dpi": DPI, "savefig.dpi": DPI,
         "image.cmap": "RdBu_r", "svg.hashsalt": "fairsweep", "path.simplify": False}
NA_COLOUR = "#d9d9d9"
MRNI_CONDITIONS = ("disambiguated_ga", "disambiguated_gs", "ambiguous_ga", "ambiguous_gs", "control_gs")
CONDITION_TICKS = ("disamb.\nga", "disamb.\ngs", "ambig.\nga", "ambig.\ngs", "control\ngs")
GAMA_METRICS = ("puni", "ther", "sev", "emp_agg", "instr", "full_bl")
GAMA_LABELS = ("Puni.", "Ther.", "Sev.", "Emp.-Agg. %", "Instr. %", "Full-Bl. %")


def png_plot(draw: Callable[..., Figure]) -> Callable[..., bytes]:
    """Run a drawing function under the fixed style and return its figure as PNG bytes."""

    @functools.wraps(draw)
    def wrapper(*args, **kwargs) -> bytes:
        with matplotlib.rc_context():
            matplotlib.rcdefaults()
            matplotlib.rcParams.update(STYLE)
            fig = draw(*args, **kwargs)
            FigureCanvasAgg(fig)
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", metadata={"Software": None})  # no version stamp: same bytes
        return buffer.getvalue()

    return wrapper


def entity(row: dict, multi_run: bool) -> str:
    """How a plot names a model: 'model', or 'run · model' when several runs are side by side."""
    return f"{row['run']} · {row['model']}" if multi_run else str(row["model"])


def entities(rows: Iterable[dict]) -> tuple[list[str], bool]:
    """Distinct entities, ordered by model then run, so one model's runs stand next to each other."""
    rows = list(rows)
    multi = len({r["run"] for r in rows}) > 1
    keys = sorted({(str(r["model"]), str(r["run"])) for r in rows})
    return [entity({"model": m, "run": r}, multi) for m, r in keys], multi


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _yerr(estimate, low, high) -> tuple[list[float], list[float]] | None:
    if estimate is None or low is None or high is None:
        return None
    return [max(0.0, estimate - low)], [max(0.0, high - estimate)]


def _empty(message: str) -> Figure:
    fig = _figure(6, 1.2)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


# ------------------------------------------------------------------------------------------ MRNI-BB


@png_plot
def mrni_conditions(rows: Sequence[dict]) -> Figure:
    """Per model and language: strict accuracy and male attribution rate (MAR) in the five conditions,
    with 95% cluster-bootstrap intervals. Rows: the report's condition rows (mrni_condition_metrics with
    acc_strict_ci_*, mar_ci_*). A condition below full coverage gets a † on its tick label."""
    if not rows:
        return _empty("no MRNI-BB rows")
    names, multi = entities(rows)
    languages = sorted({r["language"] for r in rows})
    by_key = {(entity(r, multi), r["language"], r["condition"]): r for r in rows}
    fig = _figure(3.6 * len(languages) + 0.4, 2.5 * len(names) + 0.5)
    axes = fig.subplots(len(names), len(languages), squeeze=False, sharey=True)
    for i, name in enumerate(names):
        for j, language in enumerate(languages):
            ax = axes[i][j]
            ticks = []
            for x, condition in enumerate(MRNI_CONDITIONS):
                row = by_key.get((name, language, condition))
                partial = row is not None and row["coverage_below_100"]
                ticks.append(CONDITION_TICKS[x] + (" †" if partial else ""))
                if row is None:
                    continue
                for offset, key, marker, colour in ((-0.13, "acc_strict", "o", PALETTE[0]),
                                                    (0.13, "mar", "^", PALETTE[1])):
                    if row[key] is None:
                        continue
                    ax.errorbar([x + offset], [row[key]], yerr=_yerr(row[key], row[f"{key}_ci_low"],
                                                                     row[f"{key}_ci_high"]),
                                fmt=marker, color=colour, capsize=3, markersize=5)
            ax.set_xticks(range(len(MRNI_CONDITIONS)), ticks)
            ax.set_xlim(-0.6, len(MRNI_CONDITIONS) - 0.4)
            ax.set_ylim(-0.04, 1.04)
            ax.set_title(f"{name} · {language.upper()}")
    for ax in axes[:, 0]:
        ax.set_ylabel("share of answers")
    handles = [Line2D([], [], marker=m, color=c, linestyle="none") for m, c in (("o", PALETTE[0]), ("^", PALETTE[1]))]
    fig.legend(handles, ["accuracy (strict)", "male attribution rate (MAR)"], loc="outside lower center", ncols=2)
    return fig


@png_plot
def mrni_gender_marker(effects: Sequence[dict], conditions: Sequence[dict]) -> Figure:
    """Abstention in the ambiguous contexts with gender-agnostic (ga) and gender-specified (gs) labels per
    model and language, with intervals (the conditions' acc_strict CI: abstention = accuracy when the gold
    is 'insufficient information'), and the gender-marker effect ga − gs [95% CI] above each pair."""
    if not effects:
        return _empty("no ambiguous MRNI-BB rows")
    names, multi = entities(effects)
    languages = sorted({r["language"] for r in effects})
    cis = {(entity(r, multi), r["language"], r["condition"]): r for r in conditions}
    by_key = {(entity(r, multi), r["language"]): r for r in effects}
    groups = [(n, lang) for n in names for lang in languages if (n, lang) in by_key]
    fig = _figure(max(4.5, 1.5 * len(groups) + 1.5), 3.6)
    ax = fig.add_subplot()
    for x, key in enumerate(groups):
        effect = by_key[key]
        for offset, marker, colour in ((-0.18, "ga", PALETTE[2]), (0.18, "gs", PALETTE[3])):
            value = effect[f"abstention_{marker}"]
            if value is None:
                continue
            ci = cis.get((*key, f"ambiguous_{marker}"))
            err = _yerr(value, ci["acc_strict_ci_low"], ci["acc_strict_ci_high"]) if ci else None
            ax.bar([x + offset], [value], width=0.34, color=colour, label=f"ambiguous_{marker}" if x == 0 else None)
            ax.text(x + offset + 0.03, value + 0.01, f"{value:.2f}", ha="left", va="bottom", fontsize=7)
            if err:
                ax.errorbar([x + offset], [value], yerr=err, fmt="none", ecolor="#333333", capsize=3)
        if effect["gender_marker_effect"] is not None:
            text = f"Δ {effect['gender_marker_effect']:+.2f}"
            if effect["ci_low"] is not None:
                text += f"\n[{effect['ci_low']:+.2f}, {effect['ci_high']:+.2f}]"
            text += " †" if effect["coverage_below_100"] else ""
            ax.text(x, 1.08, text, ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(range(len(groups)), [f"{n}\n{lang.upper()}" for n, lang in groups])
    ax.set_ylim(0, 1.32)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("abstention (insufficient information)")
    ax.set_title("Gender-marker effect: abstention(ga) − abstention(gs)")
    fig.legend(loc="outside lower center", ncols=2)
    return fig


@png_plot
def mrni_samb_heatmap(rows: Sequence[dict]) -> Figure:
    """s_AMB by MRNI category (rows) and model x language (columns), one panel per gold-U gender-specified
    condition (ambiguous_gs, control_gs); red = biased towards the man, blue = towards the woman. s_AMB is
    the views' column: scaled by the accuracy over the answers that choose an option (refusals left out)."""
    rows = [r for r in rows if r["condition"] in ("ambiguous_gs", "control_gs")]
    if not rows:
        return _empty("no s_AMB rows (ambiguous_gs / control_gs)")
    names, multi = entities(rows)
    languages = sorted({r["language"] for r in rows})
    columns = [(n, lang) for n in names for lang in languages]
    categories = sorted({r["category"] for r in rows})
    conditions = [c for c in ("ambiguous_gs", "control_gs") if any(r["condition"] == c for r in rows)]
    values = {(r["condition"], r["category"], entity(r, multi), r["language"]): r for r in rows}
    fig = _figure(min(16, 2.6 + 1.0 * len(columns) * len(conditions)), 1.2 + 0.42 * len(categories))
    axes = fig.subplots(1, len(conditions), squeeze=False, sharey=True)[0]
    image = None
    for ax, condition in zip(axes, conditions):
        grid = [[_nan(values[(condition, c, *col)]["s_amb"]) if (condition, c, *col) in values else math.nan
                 for col in columns] for c in categories]
        image = _heatmap(ax, grid, vmin=-1, vmax=1, fmt="{:+.2f}")
        ax.set_xticks(range(len(columns)), [f"{n}\n{lang.upper()}" for n, lang in columns])
        ax.set_yticks(range(len(categories)), categories)
        ax.set_title(condition)
    fig.colorbar(image, ax=list(axes), label="s_AMB over chosen options (+1 = always the man)", shrink=0.9)
    return fig


def _heatmap(ax, grid: list[list[float]], *, vmin: float, vmax: float, fmt: str,
             text: list[list[str]] | None = None):
    """A diverging heatmap with each cell's value written in it and NULL cells grey ('n/a')."""
    ax.set_facecolor(NA_COLOUR)
    ax.grid(False)
    image = ax.imshow(grid, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, vmin, vmax), aspect="auto")
    for i, line in enumerate(grid):
        for j, value in enumerate(line):
            label = text[i][j] if text else ("n/a" if math.isnan(value) else fmt.format(value))
            dark = not math.isnan(value) and abs(value) > 0.6 * max(abs(vmin), abs(vmax))
            ax.text(j, i, label, ha="center", va="center", fontsize=7.5, color="white" if dark else "black")
    return image


@png_plot
def likert_subscales(rows: Sequence[dict], subscales: Sequence[str]) -> Figure:
    """Mean agreement per MRNI-R subscale and overall, one bar per model x language, on the rating scale
    (dashed line: the midpoint). Rows: the mrni-likert summary rows (one subscale column each, 'mean')."""
    if not rows:
        return _empty("no mrni-likert rows")
    names, multi = entities(rows)
    series = [(n, lang) for n in names for lang in sorted({r["language"] for r in rows})]
    by_key = {(entity(r, multi), r["language"]): r for r in rows}
    series = [s for s in series if s in by_key]
    points = max(int(r["points"]) for r in rows)
    columns = [*subscales, "mean"]
    fig = _figure(max(6.0, 0.28 * len(series) * len(columns) + 2), 3.6)
    ax = fig.add_subplot()
    width = 0.8 / len(series)
    for k, key in enumerate(series):
        row = by_key[key]
        xs = [i - 0.4 + width * (k + 0.5) for i in range(len(columns))]
        heights = [_nan(row[c]) - 1 for c in columns]
        ax.bar(xs, heights, width=width * 0.95, bottom=1, color=PALETTE[k % len(PALETTE)],
               label=f"{key[0]} · {key[1].upper()}" + (" †" if (row["coverage"] or 0) < 1 else ""))
        for x, h in zip(xs, heights):
            if math.isnan(h):
                ax.text(x, 1.05, "n/a", ha="center", va="bottom", rotation=90, fontsize=7)
    ax.axhline((points + 1) / 2, color="#555555", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(columns)), [*subscales, "all items"])
    ax.set_ylim(1, points)
    ax.set_yticks(range(1, points + 1))
    ax.set_ylabel(f"mean rating (1 disagree … {points} agree)")
    ax.set_title("MRNI-R agreement probe: mean rating per subscale")
    fig.legend(loc="outside right upper")
    return fig


# ---------------------------------------------------------------------------------------- GAMA-Bench


def _column_scale(grids: Sequence[list[list[float]]], ncols: int) -> list[float]:
    """Per metric column, the largest |gap| over every panel (1 when there is none): one colour scale per
    metric, shared by the tracks, since counts, the 0-4 severity and percentage points differ in size."""
    scale = []
    for j in range(ncols):
        values = [abs(g[i][j]) for g in grids for i in range(len(g)) if not math.isnan(g[i][j])]
        scale.append(max(values) if values and max(values) > 0 else 1.0)
    return scale


def _gap_panels(fig: Figure, panels: list[tuple[str, list[str], list[list[float]], list[list[str]]]],
                vertical: bool) -> None:
    grids = [p[2] for p in panels]
    scale = _column_scale(grids, len(GAMA_METRICS))
    axes = fig.subplots(len(panels) if vertical else 1, 1 if vertical else len(panels), squeeze=False).ravel()
    image = None
    for ax, (title, labels, grid, text) in zip(axes, panels):
        scaled = [[v / scale[j] for j, v in enumerate(line)] for line in grid]
        image = _heatmap(ax, scaled, vmin=-1, vmax=1, fmt="", text=text)
        ax.set_xticks(range(len(GAMA_LABELS)), GAMA_LABELS)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_title(title)
    fig.colorbar(image, ax=list(axes), shrink=0.9, label="gap ÷ max |gap| of the metric")


def _gap_text(row: dict | None) -> tuple[float, str]:
    if row is None or row["gap"] is None:
        return math.nan, "n/a"
    star = "*" if row.get("p_holm") is not None and row["p_holm"] < 0.05 else ""
    mark = " †" if row["coverage"] is None or row["coverage"] < 1 else ""
    return float(row["gap"]), f"{row['gap']:+.2f}{star}{mark}"


@png_plot
def gama_gap_heatmap(rows: Sequence[dict], judge: str) -> Figure:
    """The paper's model x metric gap table (female − male) as a diverging heatmap, one panel per track,
    for one judge. Rows: gama_report. * = Holm-adjusted p < 0.05; † = coverage below 100%."""
    rows = [r for r in rows if r["judge"] == judge and r["metric"] in GAMA_METRICS]
    if not rows:
        return _empty(f"no GAMA-Bench gaps for judge {judge}")
    names, multi = entities(rows)
    by_key = {(r["track"], entity(r, multi), r["metric"]): r for r in rows}
    panels = []
    for track in sorted({r["track"] for r in rows}):
        cells = [[_gap_text(by_key.get((track, n, m))) for m in GAMA_METRICS] for n in names]
        panels.append((f"{track} · judge {judge}", names, [[c[0] for c in line] for line in cells],
                       [[c[1] for c in line] for line in cells]))
    fig = _figure(4.6 * len(panels) + 1.2, 1.3 + 0.45 * len(names))
    _gap_panels(fig, panels, vertical=False)
    return fig


@png_plot
def gama_breakdown_heatmap(rows: Sequence[dict], by: str, judge: str) -> Figure:
    """Gaps (female − male) by `by` ('dimension' or 'severity') x metric, one panel per track, one judge.
    Rows: gama_gaps_by_dimension / gama_gaps_by_severity."""
    rows = [r for r in rows if r["judge"] == judge and r["metric"] in GAMA_METRICS]
    if not rows:
        return _empty(f"no GAMA-Bench gaps by {by} for judge {judge}")
    names, multi = entities(rows)
    by_key = {(r["track"], entity(r, multi), r[by], r["metric"]): r for r in rows}
    panels = []
    for track in sorted({r["track"] for r in rows}):
        levels = sorted({r[by] for r in rows if r["track"] == track})
        ylabels = [(n, level) for n in names for level in levels]
        cells = [[_gap_text(by_key.get((track, n, level, m))) for m in GAMA_METRICS] for n, level in ylabels]
        labels = [level if len(names) == 1 else f"{n} · {level}" for n, level in ylabels]
        panels.append((f"{track} · by {by} · judge {judge}", labels, [[c[0] for c in line] for line in cells],
                       [[c[1] for c in line] for line in cells]))
    height = 1.0 + sum(0.36 * len(p[1]) + 0.6 for p in panels)
    fig = _figure(8.2, height)
    _gap_panels(fig, panels, vertical=True)
    return fig


@png_plot
def gama_composite_arrows(rows: Sequence[dict], judge: str) -> Figure:
    """Per track, one arrow per model from the male-actor to the female-actor mean in the (blame,
    therapeutic) composite space (z-scores within run, judge and track). Rows: the composites table."""
    rows = [r for r in rows if r["judge"] == judge]
    if not rows:
        return _empty(f"no GAMA-Bench composites for judge {judge}")
    names, multi = entities(rows)
    tracks = sorted({r["track"] for r in rows})
    fig = _figure(4.4 * len(tracks) + 1.6, 4.0)
    axes = fig.subplots(1, len(tracks), squeeze=False)[0]
    legend: dict[str, object] = {}
    for ax, track in zip(axes, tracks):
        xs, ys = [0.0], [0.0]
        for k, name in enumerate(names):
            row = next((r for r in rows if r["track"] == track and entity(r, multi) == name), None)
            keys = ("male_blame", "male_therapeutic", "female_blame", "female_therapeutic")
            if row is None or any(row[key] is None for key in keys):
                continue
            x0, y0, x1, y1 = (float(row[key]) for key in keys)
            colour = PALETTE[k % len(PALETTE)]
            ax.plot([x0], [y0], marker="s", color=colour, markersize=5)
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.6, "shrinkA": 0, "shrinkB": 0})
            if name not in legend:
                legend[name] = ax.plot([], [], color=colour)[0]
            xs += [x0, x1]
            ys += [y0, y1]
        pad_x, pad_y = 0.15 * (max(xs) - min(xs)) + 0.1, 0.15 * (max(ys) - min(ys)) + 0.1
        ax.set_xlim(min(xs) - pad_x, max(xs) + pad_x)
        ax.set_ylim(min(ys) - pad_y, max(ys) + pad_y)
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.axvline(0, color="#999999", linewidth=0.8)
        ax.set_xlabel("blame composite (z): Puni., Sev., Instr., Full-Bl.")
        ax.set_ylabel("therapeutic composite (z): Ther., Emp.-Agg.")
        ax.set_title(f"{track} · judge {judge}: ■ male actor → female actor")
    fig.legend(list(legend.values()), list(legend), loc="outside right upper")
    return fig


@png_plot
def gama_judge_scatter(points: Sequence[dict], judge_a: str, judge_b: str, agreement: dict | None) -> Figure:
    """Judge A's gap against judge B's over the model x track x metric cells, with the identity line;
    counts and severity in one panel, the % metrics (percentage points) in the other. Points: dicts with
    track, metric, is_percent, gap_a, gap_b (from gama_report); agreement: the gama_judge_agreement row."""
    points = [p for p in points if p["gap_a"] is not None and p["gap_b"] is not None]
    if not points:
        return _empty(f"no common cells for {judge_a} and {judge_b}")
    panels = [(label, [p for p in points if bool(p["is_percent"]) == pct])
              for label, pct in (("counts and severity", False), ("% metrics (percentage points)", True))]
    panels = [p for p in panels if p[1]]
    fig = _figure(4.0 * len(panels) + 1.8, 3.9)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    metrics = [m for m in GAMA_METRICS if any(p["metric"] == m for p in points)]
    for ax, (label, subset) in zip(axes, panels):
        values = [p["gap_a"] for p in subset] + [p["gap_b"] for p in subset] + [0.0]
        low, high = min(values), max(values)
        pad = 0.08 * (high - low) + 0.05
        ax.plot([low - pad, high + pad], [low - pad, high + pad], color="#777777", linestyle="--", linewidth=1)
        for p in subset:
            colour = PALETTE[metrics.index(p["metric"]) % len(PALETTE)] if p["metric"] in metrics else "#333333"
            ax.plot([p["gap_a"]], [p["gap_b"]], marker="o" if p["track"] == "intimate" else "^", color=colour,
                    linestyle="none", markersize=6, alpha=0.85)
        ax.set_xlim(low - pad, high + pad)
        ax.set_ylim(low - pad, high + pad)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(f"gap, judge {judge_a}")
        ax.set_ylabel(f"gap, judge {judge_b}")
        ax.set_title(label)
    for m in metrics:
        axes[0].plot([], [], marker="o", linestyle="none", color=PALETTE[metrics.index(m) % len(PALETTE)],
                     label=GAMA_LABELS[GAMA_METRICS.index(m)])
    for track, marker in (("intimate", "o"), ("public", "^")):
        axes[0].plot([], [], marker=marker, linestyle="none", color="#333333", label=f"track {track}")
    fig.legend(loc="outside right upper")
    if agreement:
        fig.suptitle(f"{judge_a} vs {judge_b}: {agreement_text(agreement)}")
    return fig


def agreement_text(row: dict) -> str:
    direction = "n/a" if row["direction_agreement"] is None else f"{100 * row['direction_agreement']:.1f}%"
    r = "n/a" if row["pearson_r"] is None else f"{row['pearson_r']:.3f}"
    mad = "n/a" if row["mad"] is None else f"{row['mad']:.2f}"
    return f"{row['n_cells']} cells, direction agreement {direction}, Pearson r {r}, MAD {mad}"
