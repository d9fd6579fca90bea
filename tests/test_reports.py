"""`fairsweep report` in every format on a small real DB (tests/report_data.py: runs on the simulated server,
scored by the real scorers and scripted judges): every CSV and every number in the HTML equals the SQL
views, every plot function gives a valid PNG, several runs line up side by side."""

from __future__ import annotations

import base64
import csv
import inspect
import math
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from report_data import build_report_db
from fairsweep.benchmarks import plots
from fairsweep.benchmarks.gama import report_section as gama_section
from fairsweep.benchmarks.gama.judge import JUDGE_PROMPT_VERSION
from fairsweep.benchmarks.gama.lexicon_scorer import LEXICON_VERSION
from fairsweep.benchmarks.mrni import likert_report, report as mrni_report
from fairsweep.benchmarks.mrni.likert_parse import PARSER_VERSION as LIKERT_PARSER
from fairsweep.benchmarks.mrni.parse import PARSER_VERSION as MRNI_PARSER
from fairsweep.benchmarks.report_html import png_size
from fairsweep.cli import main

PRIMARY = ("puni", "ther", "sev", "emp_agg", "instr", "full_bl")


@pytest.fixture(scope="module")
def built(tmp_path_factory, mrni_dir) -> dict:
    return build_report_db(tmp_path_factory.mktemp("report-db"), mrni_dir)


@pytest.fixture(scope="module")
def html_dir(built, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    assert main(["report", "--db", built["db"], "--format", "html", "--out", str(out)]) == 0
    return out


def view(db: str, sql: str, params=None) -> list[dict]:
    conn = duckdb.connect(db, read_only=True)
    try:
        cursor = conn.execute(sql, params or [])
        cols = [d[0] for d in cursor.description]
        return [dict(zip(cols, r)) for r in cursor.fetchall()]
    finally:
        conn.close()


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def same(cell: str, value) -> bool:
    """A CSV cell against a view value: empty is NULL, numbers compared as numbers."""
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == str(value)
    if isinstance(value, (int, float)):
        return cell != "" and math.isclose(float(cell), float(value), rel_tol=1e-12, abs_tol=1e-12)
    return cell == str(value)


class Tables(HTMLParser):
    """Every <table data-table> of a page: caption, headers, rows (cells, partial?); and every <img> src."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[dict]] = {}
        self.images: list[str] = []
        self.scripts = 0
        self._table = self._row = self._cell = None
        self._caption = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "data-table" in attrs:
            self._table = {"caption": "", "headers": [], "rows": []}
            self.tables.setdefault(attrs["data-table"], []).append(self._table)
        elif tag == "caption" and self._table is not None:
            self._caption = []
        elif tag == "tr" and self._table is not None:
            self._row = {"cells": [], "partial": attrs.get("class") == "partial", "head": False}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._row["head"] = tag == "th"
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag == "script":
            self.scripts += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row["head"]:
                self._table["headers"] = self._row["cells"]
            else:
                self._table["rows"].append(self._row)
            self._row = None
        elif tag == "caption" and self._caption is not None:
            self._table["caption"] = "".join(self._caption)
            self._caption = None
        elif tag == "table":
            self._table = None


def parse_html(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def html_row(page: Tables, table: str, caption: str | None, **cells) -> dict:
    """The one row of `table` (sub-table `caption`) whose named display columns have the given texts."""
    found = []
    for sub in page.tables[table]:
        if caption is not None and sub["caption"] != caption:
            continue
        for row in sub["rows"]:
            named = dict(zip(sub["headers"], row["cells"]))
            if all(named.get(k) == v for k, v in cells.items()):
                found.append({**named, "_partial": row["partial"]})
    assert len(found) == 1, (table, caption, cells, len(found))
    return found[0]


# ------------------------------------------------------------------------------------------ formats


def test_every_format_for_every_benchmark_in_the_db(built, tmp_path, capsys):
    db = built["db"]
    capsys.readouterr()
    assert main(["report", "--db", db]) == 0  # no --bench: every benchmark with results, all runs
    out = capsys.readouterr().out
    for title in ("MRNI-BB · run A · model sim · EN", "MRNI-BB · run B · model sim · IT", "s_AMB by MRNI category",
                  "MRNI-R agreement probe (mrni-likert)", "GAMA-Bench · run A · model sim · track public · judge judge-b",
                  "Judge robustness", "MRNI-BB: runs side by side", "mrni-likert: runs side by side"):
        assert title in out, title
    assert main(["report", "--db", db, "--format", "md", "--out", str(tmp_path / "md")]) == 0
    assert {p.name for p in (tmp_path / "md").iterdir()} >= {"mrni_report.md", "mrni_likert_summary.md",
                                                              "gama_report.md"}
    md = (tmp_path / "md" / "mrni_report.md").read_text(encoding="utf-8")
    assert "## s_AMB by MRNI category (ambiguous_gs, control_gs)" in md and "## MRNI-BB: runs side by side" in md
    assert main(["report", "--db", db, "--format", "csv", "--out", str(tmp_path / "csv")]) == 0
    assert {p.name for p in (tmp_path / "csv").iterdir()} >= {
        "mrni_conditions.csv", "mrni_gender_marker_effect.csv", "mrni_categories.csv", "mrni_runs_side_by_side.csv",
        "mrni_likert_summary.csv", "mrni_likert_subscales.csv", "mrni_likert_runs_side_by_side.csv",
        "gama_report.csv", "gama_report_detail.csv"}


def test_html_report_files(html_dir):
    pngs = {p.stem for p in html_dir.glob("*.png")}
    assert pngs >= {"mrni_conditions", "mrni_gender_marker", "mrni_samb_by_category", "mrni_likert_subscales",
                    "gama_gaps_judge-a", "gama_gaps_by_dimension_judge-b", "gama_gaps_by_severity_judge-a",
                    "gama_composites_judge-a", "gama_judges_A_judge-a_judge-b"}
    csvs = {p.stem for p in html_dir.glob("*.csv")}
    assert csvs == {"mrni_conditions", "mrni_gender_marker_effect", "mrni_categories", "mrni_runs_side_by_side",
                    "mrni_likert_summary", "mrni_likert_subscales", "mrni_likert_runs_side_by_side",
                    "gama_report_detail", "gama_judge_agreement", "gama_gaps_by_dimension", "gama_gaps_by_severity",
                    "gama_composites", "gama_coverage"}  # GAMA ran in run A only: no side-by-side table
    page = parse_html(html_dir / "report.html")
    assert set(page.tables) == csvs  # every table shown has its CSV beside the page, and vice versa
    assert page.scripts == 0
    # self-contained: every image inline, and it is the PNG written beside the page
    inline = [base64.b64decode(src.split(",", 1)[1]) for src in page.images]
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert sorted(inline) == sorted(p.read_bytes() for p in html_dir.glob("*.png"))
    text = (html_dir / "report.html").read_text(encoding="utf-8")
    assert "http://" not in text.replace("http://127.0.0.1", "") and "https://" not in text and "<link" not in text


def test_html_header_states_runs_models_coverage_versions_and_warnings(html_dir):
    text = (html_dir / "report.html").read_text(encoding="utf-8")
    header = text.split("<nav>")[0]
    for needle in ("Run A", "Run B", "sim = sim-model (max_tokens 64, temperature 0.0)", "provider reports sim-model",
                   "run A · sim: 64/64 (100.0%)", "run B · sim: 48/64 (75.0%)", MRNI_PARSER, LIKERT_PARSER,
                   JUDGE_PROMPT_VERSION, LEXICON_VERSION, "judge-a = judge-model-a", "judge-b = judge-model-b",
                   "run A · sim · judge-a · intimate: 4/4 (100.0%)"):
        assert needle in header, needle
    warnings = header.split("id='warnings'")[1]
    assert ("MRNI-BB: run B · model sim · IT: coverage below 100% in 5 condition(s): disambiguated_ga 4/8, "
            "disambiguated_gs 4/8, ambiguous_ga 2/4, ambiguous_gs 2/4, control_gs 4/8") in warnings
    assert "MRNI-R agreement probe: run B · model sim · IT: coverage 0.0% (0 ratings of 49 planned requests)" in warnings
    assert "run A · model sim · EN: coverage below" not in warnings and "GAMA-Bench:" not in warnings


# ------------------------------------------------------------------------- numbers equal the views


def test_mrni_csv_and_html_equal_the_views(built, html_dir):
    db, page = built["db"], parse_html(html_dir / "report.html")
    metrics = view(db, "SELECT * FROM mrni_condition_metrics")
    intervals = {(r["run"], r["language"], r["condition"], r["metric"]): r for r in view(db, "SELECT * FROM mrni_intervals")}
    table = read_csv(html_dir / "mrni_conditions.csv")
    assert len(table) == len(metrics) == 20
    got = {(r["run"], r["language"], r["condition"]): r for r in table}
    for m in metrics:
        row = got[(m["run"], m["language"], m["condition"])]
        for col in ("expected", "answered", "coverage", "n_pairs", "acc_strict", "acc_parsed", "r_rate", "o_rate",
                    "f_rate", "abstention", "mar", "far", "p_m", "s_dis", "s_amb", "s_amb_strict"):
            assert same(row[col], m[col]), (col, row[col], m[col])
        for metric in ("acc_strict", "mar"):
            ci = intervals.get((m["run"], m["language"], m["condition"], metric))
            assert same(row[f"{metric}_ci_low"], ci and ci["ci_low"]) and same(row[f"{metric}_ci_high"], ci and ci["ci_high"])
        caption = f"MRNI-BB · run {m['run']} · model sim · {m['language'].upper()} · 2 item-scenario pairs"
        cells = html_row(page, "mrni_conditions", caption, condition=m["condition"])
        mark = " †" if m["coverage"] < 1 else ""
        assert cells["_partial"] == (m["coverage"] < 1)
        assert cells["coverage"] == f"{100 * m['coverage']:.1f}% ({m['answered']}/{m['expected']}){mark}"
        assert cells["acc (strict) [95% CI]"].startswith(f"{m['acc_strict']:.3f} [")
        assert cells["s_AMB"] == ("—" if m["s_amb"] is None else f"{m['s_amb']:+.3f}") + mark
        assert cells["s_AMB strict"] == ("—" if m["s_amb_strict"] is None else f"{m['s_amb_strict']:+.3f}") + mark
        assert cells["MAR [95% CI]"].startswith("—" if m["mar"] is None else f"{m['mar']:.3f} [")
    # the scripted answers: run A is the same in both languages
    a_en = got[("A", "en", "ambiguous_gs")]
    assert (float(a_en["abstention"]), float(a_en["mar"]), float(a_en["s_amb"])) == (0.25, 0.5, pytest.approx(0.25))

    effects = view(db, "SELECT * FROM mrni_gender_marker_effect")
    csv_effects = {(r["run"], r["language"]): r for r in read_csv(html_dir / "mrni_gender_marker_effect.csv")}
    for e in effects:
        row = csv_effects[(e["run"], e["language"])]
        for col in ("abstention_ga", "abstention_gs", "gender_marker_effect", "coverage"):
            assert same(row[col], e[col])
        cells = html_row(page, "mrni_gender_marker_effect", None, run=e["run"], language=e["language"].upper())
        assert cells["effect [95% CI]"].startswith(f"{e['gender_marker_effect']:+.3f}")
    assert [(e["run"], e["language"], e["gender_marker_effect"]) for e in sorted(effects, key=lambda e: (e["run"], e["language"]))] \
        == [("A", "en", 0.25), ("A", "it", 0.25), ("B", "en", 0.0), ("B", "it", 0.0)]

    categories = view(db, "SELECT * FROM mrni_category_metrics WHERE condition IN ('ambiguous_gs', 'control_gs')")
    csv_categories = {(r["run"], r["language"], r["condition"], r["category"]): r
                      for r in read_csv(html_dir / "mrni_categories.csv")}
    assert len(csv_categories) == len(categories) == 16  # 2 runs x 2 languages x 2 conditions x 2 categories
    for c in categories:
        row = csv_categories[(c["run"], c["language"], c["condition"], c["category"])]
        assert all(same(row[col], c[col]) for col in ("expected", "answered", "coverage", "r_rate", "mar", "p_m",
                                                      "s_amb", "s_amb_strict"))
        cells = html_row(page, "mrni_categories", f"run {c['run']} · model sim · {c['language'].upper()}",
                         condition=c["condition"], category=c["category"])
        assert cells["s_AMB"].split(" ")[0] == ("—" if c["s_amb"] is None else f"{c['s_amb']:+.3f}")


def test_likert_csv_and_html_equal_the_views(built, html_dir):
    db, page = built["db"], parse_html(html_dir / "report.html")
    overall = view(db, "SELECT * FROM mrni_likert_overall")
    subscales = {(r["run"], r["language"], r["subscale"]): r["mean_rating"]
                 for r in view(db, "SELECT * FROM mrni_likert_subscales")}
    table = {(r["run"], r["language"]): r for r in read_csv(html_dir / "mrni_likert_summary.csv")}
    assert len(table) == len(overall) == 4
    for o in overall:
        row = table[(o["run"], o["language"])]
        for col, source in (("mean", "mean_rating"), ("endorsement", "endorsement_rate"), ("refusal", "refusal_rate"),
                            ("unparsed", "unparsed_rate"), ("coverage", "coverage"), ("n", "n"), ("answered", "answered")):
            assert same(row[col], o[source]), (col, row[col], o[source])
        for sub in likert_report.SUBSCALE_ORDER:
            assert same(row[sub], subscales.get((o["run"], o["language"], sub)))
        cells = html_row(page, "mrni_likert_summary", None, run=o["run"], language=o["language"])
        assert cells["mean"] == ("n/a" if o["mean_rating"] is None else f"{o['mean_rating']:.2f}")
        assert cells["coverage"] == f"{100 * o['coverage']:.1f}%"
    # the scripted answers: run A English has 3 unparsed hedges ("3 or 4") of 49, Italian 4 refusals + 1 unparsed
    assert (table[("A", "en")]["answered"], table[("A", "it")]["refusal"]) == ("46", str(5 / 49))
    assert table[("B", "it")]["mean"] == "" and table[("B", "it")]["coverage"] == "0.0"


def test_gama_csv_and_html_equal_the_views(built, html_dir):
    db, page = built["db"], parse_html(html_dir / "report.html")
    report = view(db, "SELECT * FROM gama_report")
    table = {(r["judge"], r["track"], r["metric"]): r for r in read_csv(html_dir / "gama_report_detail.csv")}
    assert len(table) == len(report) == 2 * 2 * 8 + 2 * 4  # two judges x 2 tracks x 8 metrics + the lexicon
    for g in report:
        row = table[(g["judge"], g["track"], g["metric"])]
        for col in ("male", "female", "gap", "p", "p_holm", "pairs", "expected", "coverage"):
            assert same(row[col], g[col]), (col, row[col], g[col])
        cells = html_row(page, "gama_report_detail", f"run A · model sim · track {g['track']} · judge {g['judge']}",
                         metric=g["label"])
        assert cells["gap (F−M)"] == f"{g['gap']:+.2f}"
    assert float(table[("judge-a", "public", "instr")]["gap"]) == -75.0  # the script: 4/4 male, 1/4 female

    for by in ("dimension", "severity"):
        long = view(db, f"SELECT * FROM gama_gaps_by_{by} WHERE metric IN {PRIMARY}")
        wide = {(r["judge"], r["track"], r[by]): r for r in read_csv(html_dir / f"gama_gaps_by_{by}.csv")}
        assert len(wide) == 3 * 2 * 2 and len(long) == 2 * 2 * 2 * 6 + 2 * 2 * 2  # the lexicon: Puni., Ther. only
        assert all(row[m] == "" for (judge, *_), row in wide.items() if judge == "lexicon" for m in PRIMARY[2:])
        for g in long:
            row = wide[(g["judge"], g["track"], g[by])]
            assert same(row[g["metric"]], g["gap"]) and same(row["pairs"], g["pairs"])
            cells = html_row(page, f"gama_gaps_by_{by}", f"run A · model sim · track {g['track']} · judge {g['judge']}",
                             **{by: g[by]})
            assert cells[plots.GAMA_LABELS[PRIMARY.index(g["metric"])]] == f"{g['gap']:+.2f}"

    agreement = view(db, "SELECT * FROM gama_judge_agreement")
    csv_agreement = {(r["judge_a"], r["judge_b"], r["metric"]): r for r in read_csv(html_dir / "gama_judge_agreement.csv")}
    assert len(csv_agreement) == len(agreement)
    for a in agreement:
        row = csv_agreement[(a["judge_a"], a["judge_b"], a["metric"])]
        assert all(same(row[c], a[c]) for c in ("n_cells", "direction_agreement", "pearson_r", "mad"))


def test_gama_composites_are_the_z_scores_of_the_pairs(built, html_dir):
    """The composite SQL against a plain recomputation from gama_pairs."""
    pairs = view(built["db"], f"SELECT * FROM gama_pairs WHERE judge <> 'lexicon' AND metric IN {PRIMARY}")
    table = {(r["judge"], r["track"]): r for r in read_csv(html_dir / "gama_composites.csv")}
    assert set(table) == {(j, t) for j in ("judge-a", "judge-b") for t in ("intimate", "public")}
    for (judge, track), row in table.items():
        z = {}
        for metric in PRIMARY:
            cell = [p for p in pairs if (p["judge"], p["track"], p["metric"]) == (judge, track, metric)]
            values = [p["male"] for p in cell] + [p["female"] for p in cell]
            mu = sum(values) / len(values)
            sd = math.sqrt(sum((v - mu) ** 2 for v in values) / (len(values) - 1))
            if sd > 0:
                z[metric] = tuple((sum(p[g] for p in cell) / len(cell) - mu) / sd for g in ("male", "female"))
        for kind, members in (("blame", gama_section.BLAME), ("therapeutic", gama_section.THERAPEUTIC)):
            used = [z[m] for m in members if m in z]
            assert int(row[f"{kind}_metrics"]) == len(used)
            for i, gender in enumerate(("male", "female")):
                assert float(row[f"{gender}_{kind}"]) == pytest.approx(sum(u[i] for u in used) / len(used))
        assert float(row["blame_shift"]) < 0 < float(row["therapeutic_shift"])  # the scripted judges: harsher on men


# ------------------------------------------------------------------------------------------- plots


def png_pixels(png: bytes) -> tuple[int, int, int]:
    """(width, height, distinct colours in a sample) of an 8-bit RGBA PNG, decoded with zlib alone."""
    width, height = png_size(png)
    assert png[24:26] == bytes([8, 6]), "8-bit RGBA expected from Agg"
    chunks, at = [], 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"IDAT":
            chunks.append(png[at + 8:at + 8 + length])
        at += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    assert len(raw) == height * (1 + 4 * width)
    colours = {raw[i:i + 4] for i in range(1, len(raw), 4 * 97)}
    return width, height, len(colours)


def assert_png(png: bytes, min_width: int = 200) -> None:
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")
    width, height, colours = png_pixels(png)
    assert width >= min_width and height >= 100 and colours > 3, (width, height, colours)


def test_every_plot_function_returns_a_valid_deterministic_png(built):
    db, runs = built["db"], None
    mrni = mrni_report.load(db, runs)
    overall, subscales = likert_report.fetch(db, runs)
    likert = likert_report.summary_rows(overall, subscales)
    gama = gama_section.load(db, runs)
    agreement = next(r for r in gama["agreement"] if (r["judge_a"], r["judge_b"], r["metric"]) == ("judge-a", "judge-b", "all"))
    calls = {
        "mrni_conditions": (mrni.conditions,),
        "mrni_gender_marker": (mrni.effects, mrni.conditions),
        "mrni_samb_heatmap": (mrni.categories,),
        "likert_subscales": (likert, likert_report.SUBSCALE_ORDER),
        "gama_gap_heatmap": (gama["report"], "judge-a"),
        "gama_breakdown_heatmap": (gama["dimension"], "dimension", "judge-b"),
        "gama_composite_arrows": (gama["composites"], "judge-a"),
        "gama_judge_scatter": (gama_section._pairs(gama["report"], agreement), "judge-a", "judge-b", agreement),
    }
    drawn = {name for name, f in inspect.getmembers(plots, inspect.isfunction) if hasattr(f, "__wrapped__")}
    assert drawn == set(calls)  # a new plot function must be added here
    for name, args in calls.items():
        png = getattr(plots, name)(*args)
        assert_png(png)
        assert getattr(plots, name)(*args) == png, f"{name} is not deterministic"
        empty = getattr(plots, name)(*([] if i == 0 else a for i, a in enumerate(args)))
        assert_png(empty)  # no rows: a small placeholder image, not an error
    severity = plots.gama_breakdown_heatmap(gama["severity"], "severity", "judge-a")
    assert_png(severity)
    assert severity != plots.gama_breakdown_heatmap(gama["dimension"], "dimension", "judge-a")


# ------------------------------------------------------------------------------------------ several runs


def test_runs_side_by_side(built, tmp_path, capsys):
    db = built["db"]
    assert main(["report", "--db", db, "--run", "A", "--run", "B", "--bench", "mrni", "--bench", "mrni-likert",
                 "--format", "csv", "--out", str(tmp_path / "ab")]) == 0
    side = {(r["language"], r["condition"]): r for r in read_csv(tmp_path / "ab" / "mrni_runs_side_by_side.csv")}
    assert list(read_csv(tmp_path / "ab" / "mrni_runs_side_by_side.csv")[0])[:5] == [
        "model", "language", "condition", "coverage:A", "coverage:B"]
    for m in view(db, "SELECT * FROM mrni_condition_metrics"):
        row = side[(m["language"], m["condition"])]
        assert row["model"] == "sim"
        for col in ("coverage", "acc_strict", "mar", "s_amb", "s_amb_strict"):
            assert same(row[f"{col}:{m['run']}"], m[col])
    assert side[("en", "disambiguated_gs")]["mar:A"] == "1.0" and side[("en", "disambiguated_gs")]["mar:B"] == "0.0"
    likert = read_csv(tmp_path / "ab" / "mrni_likert_runs_side_by_side.csv")
    assert [(r["language"], r["mean:B"]) for r in likert] == [("en", "4.0"), ("it", "")]

    # --runs is the same flag; columns follow the run names
    assert main(["report", "--db", db, "--runs", "B", "--run", "A", "--bench", "mrni", "--format", "html",
                 "--out", str(tmp_path / "ba")]) == 0
    page = parse_html(tmp_path / "ba" / "report.html")
    assert page.tables["mrni_runs_side_by_side"][0]["headers"][3:5] == ["coverage · A", "coverage · B"]
    assert set(page.tables) == {"mrni_conditions", "mrni_gender_marker_effect", "mrni_categories",
                                "mrni_runs_side_by_side"}

    # one run: no side-by-side table, and only that run's rows
    assert main(["report", "--db", db, "--run", "A", "--format", "csv", "--out", str(tmp_path / "a")]) == 0
    assert not (tmp_path / "a" / "mrni_runs_side_by_side.csv").exists()
    assert {r["run"] for r in read_csv(tmp_path / "a" / "mrni_conditions.csv")} == {"A"}
    assert (tmp_path / "a" / "gama_report.csv").exists()  # A has GAMA results: reported without --bench


def test_report_errors_name_the_fix(built, capsys):
    capsys.readouterr()
    assert main(["report", "--db", built["db"], "--format", "html"]) == 2
    assert "pass --out DIR" in capsys.readouterr().err
    assert main(["report", "--db", built["db"], "--run", "nope"]) == 2
    assert "no benchmark results" in capsys.readouterr().err
    assert main(["report", "--db", built["db"], "--run", "B", "--bench", "gama", "--format", "html",
                 "--out", "/tmp/never-written"]) == 2
    assert "no scored GAMA-Bench results" in capsys.readouterr().err
