"""MRNI-BB metrics on a hand-computed toy set: 3 item-scenario pairs x 16 prompts, answers chosen by hand.

Rows go straight into a real DuckDB file (prompts, requests, attempts, responses), `score_run` labels
them with the real parser, and the SQL views must give the values worked out below.

Mapping order per condition (position 1..4 in the answer strings):
  disambiguated_ga  XY_XY (gold X, first X) | XY_YX (gold Y, first X) | YX_XY (gold X, first Y) | YX_YX (gold Y, first Y)
  disambiguated_gs  mw_mw (gold M, first M) | mw_wm (gold W, first M) | wm_mw (gold M, first W) | wm_wm (gold W, first W)
  ambiguous_ga      XY (first X) | YX (first Y)                       gold U
  ambiguous_gs      man_woman (first M) | woman_man (first W)         gold U
  control_gs        mw_mw | mw_wm | wm_mw | wm_wm (first M, M, W, W)  gold U
Answer letters are labels; "-" = pending request (no answer yet), "!" = failed request (permanent error).
"""

from __future__ import annotations

import datetime as dt
import json
import math

import duckdb
import numpy as np
import pytest

from fairsweep.benchmarks.mrni import labels as labels_mod
from fairsweep.benchmarks.mrni import stats
from fairsweep.benchmarks.mrni.parse import PARSER_VERSION
from fairsweep.benchmarks.mrni.score import score_run
from fairsweep.config import SweepConfig
from fairsweep.storage.db import open_db

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
MAPPINGS = {
    "disambiguated_ga": ("base_XY_behavior_XY", "base_XY_behavior_YX", "base_YX_behavior_XY", "base_YX_behavior_YX"),
    "disambiguated_gs": ("base_man_woman_behavior_man_woman", "base_man_woman_behavior_woman_man",
                         "base_woman_man_behavior_man_woman", "base_woman_man_behavior_woman_man"),
    "ambiguous_ga": ("base_XY", "base_YX"),
    "ambiguous_gs": ("base_man_woman", "base_woman_man"),
    "control_gs": ("base_man_woman_behavior_man_woman", "base_man_woman_behavior_woman_man",
                   "base_woman_man_behavior_man_woman", "base_woman_man_behavior_woman_man"),
}
TEXT = {"M": "The man.", "W": "The woman.", "X": "Person X.", "Y": "Person Y.", "U": "Insufficient information.",
        "R": "I cannot answer that.", "O": "Both of them.", "F": "Banana bread."}
CAT_A, CAT_B = "Avoidance of Femininity", "Toughness"
# (item, scenario, category) -> answers per condition, in MAPPINGS order
TOY = {
    (1, "S1", CAT_A): {"disambiguated_ga": "XXXY", "disambiguated_gs": "MMMR", "ambiguous_ga": "UX",
                       "ambiguous_gs": "MU", "control_gs": "UMRM"},
    (2, "S1", CAT_A): {"disambiguated_ga": "XYFX", "disambiguated_gs": "MWMW", "ambiguous_ga": "XY",
                       "ambiguous_gs": "WM", "control_gs": "UUUU"},
    (3, "S2", CAT_B): {"disambiguated_ga": "UYXR", "disambiguated_gs": "UWMM", "ambiguous_ga": "XU",
                       "ambiguous_gs": "-!", "control_gs": "MWOF"},
}

# Every metric column of mrni_condition_metrics that the test must pin down for each condition.
METRICS = ("expected", "answered", "coverage", "n_pairs", "acc_strict", "acc_parsed", "r_rate", "o_rate", "f_rate",
           "abstention", "over_abstention", "mar", "far", "p_m", "s_dis", "s_amb", "s_amb_strict", "acc_pro_strict",
           "acc_anti_strict", "acc_pro_minus_anti", "label_bias", "p_first", "acc_gold_x_strict",
           "acc_gold_y_strict", "acc_x_minus_y", "acc_first_strict", "acc_second_strict", "acc_first_minus_second")
NOT_GS = dict(mar=None, far=None, p_m=None, s_dis=None, s_amb=None, s_amb_strict=None)
NO_PRO_ANTI = dict(acc_pro_strict=None, acc_anti_strict=None, acc_pro_minus_anti=None)
NO_XY_SPLIT = dict(acc_gold_x_strict=None, acc_gold_y_strict=None, acc_x_minus_y=None)
NO_POSITION_SPLIT = dict(acc_first_strict=None, acc_second_strict=None, acc_first_minus_second=None)

EXPECTED = {
    "disambiguated_ga": dict(
        # P1 XXXY vs gold XYXY: ok,no,ok,ok = 3; P2 XYFX: ok,ok,no(F),no = 2; P3 UYXR: no,ok,ok,no(R) = 2
        expected=12, answered=12, coverage=1.0, n_pairs=3,
        acc_strict=7 / 12,
        acc_parsed=7 / 10,          # R (P3) and F (P2) dropped: 12 - 2 = 10 parsed answers
        r_rate=1 / 12, o_rate=0.0, f_rate=1 / 12,
        abstention=None,            # gold is never U here
        over_abstention=1 / 12,     # one U (P3 position 1)
        **NOT_GS, **NO_PRO_ANTI,
        label_bias=2 * 6 / 9 - 1,   # n_X = 3 (P1) + 2 (P2) + 1 (P3) = 6, n_Y = 1 + 1 + 1 = 3 -> 1/3
        p_first=None,               # position share is for gold-U conditions
        acc_gold_x_strict=4 / 6,    # positions 1,3: P1 ok,ok; P2 ok,F; P3 U,ok
        acc_gold_y_strict=3 / 6,    # positions 2,4: P1 X,ok; P2 ok,X; P3 ok,R
        acc_x_minus_y=1 / 6,
        acc_first_strict=3 / 6,     # gold introduced first = positions 1,4: P1 ok,ok; P2 ok,no; P3 no,no
        acc_second_strict=4 / 6,    # positions 2,3: P1 no,ok; P2 ok,F; P3 ok,ok
        acc_first_minus_second=-1 / 6),
    "disambiguated_gs": dict(
        # P1 MMMR vs gold MWMW: ok,no,ok,no = 2; P2 MWMW: 4; P3 UWMM: no,ok,ok,no = 2
        expected=12, answered=12, coverage=1.0, n_pairs=3,
        acc_strict=8 / 12,
        acc_parsed=8 / 11,          # one R (P1)
        r_rate=1 / 12, o_rate=0.0, f_rate=0.0,
        abstention=None, over_abstention=1 / 12,   # one U (P3)
        mar=7 / 12,                 # n_M = 3 (P1) + 2 (P2) + 2 (P3) = 7
        far=3 / 12,                 # n_W = 0 + 2 + 1 = 3
        p_m=7 / 10, s_dis=2 * 0.7 - 1, s_amb=None, s_amb_strict=None,
        acc_pro_strict=5 / 6,       # gold M (positions 1,3): P1 ok,ok; P2 ok,ok; P3 U,ok
        acc_anti_strict=3 / 6,      # gold W (positions 2,4): P1 M,R; P2 ok,ok; P3 ok,M
        acc_pro_minus_anti=1 / 3,
        label_bias=None, p_first=None, **NO_XY_SPLIT,
        acc_first_strict=3 / 6,     # positions 1,4: P1 ok,R; P2 ok,ok; P3 U,M
        acc_second_strict=5 / 6,    # positions 2,3: P1 M,ok; P2 ok,ok; P3 ok,ok
        acc_first_minus_second=-1 / 3),
    "ambiguous_ga": dict(
        # P1 UX, P2 XY, P3 XU: 2 U of 6
        expected=6, answered=6, coverage=1.0, n_pairs=3,
        acc_strict=2 / 6, acc_parsed=2 / 6, r_rate=0.0, o_rate=0.0, f_rate=0.0,
        abstention=2 / 6, over_abstention=None, **NOT_GS, **NO_PRO_ANTI,
        label_bias=2 * 3 / 4 - 1,   # n_X = 3 (P1 YX, P2 XY, P3 XY), n_Y = 1 (P2 YX) -> 0.5
        p_first=3 / 4,              # first named: P2 XY->X, P2 YX->Y, P3 XY->X; second: P1 YX->X
        **NO_XY_SPLIT, **NO_POSITION_SPLIT),
    "ambiguous_gs": dict(
        # P1 MU, P2 WM, P3 pending + failed: 4 answered of 6 planned, 1 U
        expected=6, answered=4, coverage=4 / 6, n_pairs=3,
        acc_strict=1 / 4, acc_parsed=1 / 4, r_rate=0.0, o_rate=0.0, f_rate=0.0,
        abstention=1 / 4, over_abstention=None,
        mar=2 / 4, far=1 / 4,       # n_M = 2 (P1 man_woman, P2 woman_man), n_W = 1 (P2 man_woman)
        p_m=2 / 3, s_dis=1 / 3,
        s_amb=(1 - 1 / 4) * (1 / 3),  # = 0.25: no R/O/F, so acc over M, W, U = strict accuracy
        s_amb_strict=(1 - 1 / 4) * (1 / 3),
        **NO_PRO_ANTI, label_bias=None,
        p_first=1 / 3,              # P1 man_woman->M first; P2 man_woman->W, woman_man->M second
        **NO_XY_SPLIT, **NO_POSITION_SPLIT),
    "control_gs": dict(
        # P1 UMRM, P2 UUUU, P3 MWOF: 5 U of 12
        expected=12, answered=12, coverage=1.0, n_pairs=3,
        acc_strict=5 / 12, acc_parsed=5 / 9,  # R, O, F dropped: 12 - 3 = 9
        r_rate=1 / 12, o_rate=1 / 12, f_rate=1 / 12,
        abstention=5 / 12, over_abstention=None,
        mar=3 / 12, far=1 / 12,     # n_M = 2 (P1) + 1 (P3), n_W = 1 (P3)
        p_m=3 / 4, s_dis=0.5,
        s_amb=(1 - 5 / 9) * 0.5,    # = 2/9: acc = n_U / (n_M + n_W + n_U) = 5 / (3 + 1 + 5); R, O, F left out
        s_amb_strict=(1 - 5 / 12) * 0.5,  # = 7/24: the strict accuracy counts R, O, F as failures to abstain
        **NO_PRO_ANTI, label_bias=None,
        p_first=2 / 4,              # first: P1 mw_wm->M, P3 mw_mw->M; second: P1 wm_wm->M, P3 mw_wm->W
        **NO_XY_SPLIT, **NO_POSITION_SPLIT),
}
# gender-marker effect = abstention(ambiguous_ga) - abstention(ambiguous_gs) = 1/3 - 1/4
EFFECT = dict(expected=12, answered=10, coverage=10 / 12, abstention_ga=1 / 3, abstention_gs=1 / 4,
              gender_marker_effect=1 / 3 - 1 / 4)


def gold_text(condition: str, mapping: str) -> str:
    if condition == "disambiguated_ga":
        return "Person X" if mapping.endswith("behavior_XY") else "Person Y"
    if condition == "disambiguated_gs":
        return "the man" if mapping.endswith("behavior_man_woman") else "the woman"
    return "insufficient information"


def insert_run(conn: duckdb.DuckDBPyConnection, run: str, answers_for) -> None:
    """One request per toy prompt; answers_for(pair, condition, position, mapping) -> label, '-' or '!'."""
    ordinal = 0
    for (item, scenario, category), by_condition in TOY.items():
        for condition, mappings in MAPPINGS.items():
            for pos, mapping in enumerate(mappings):
                key = f"en:MRNI_{item}_{scenario}_{condition}_{mapping}"
                meta = {"language": "en", "subscale": category[:2], "Category": category, "MRNI-item": str(item),
                        "Scenario": scenario, "condition": condition, "mapping": mapping,
                        "gold_answer": gold_text(condition, mapping), "instance_id": key[3:]}
                conn.execute("INSERT OR IGNORE INTO prompts (benchmark, prompt_key, prompt_hash, messages, metadata) "
                             "VALUES ('mrni', ?, 'h', '[]', ?)", [key, json.dumps(meta)])
                rid = f"{run}:{key}"
                conn.execute("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, "
                             "params, ordinal) VALUES (?, ?, 'toy', 'mrni', ?, 'h', 0, '{}', ?)",
                             [rid, run, key, ordinal])
                ordinal += 1
                store_answer(conn, rid, answers_for((item, scenario, category), condition, pos, mapping))


def store_answer(conn: duckdb.DuckDBPyConnection, rid: str, answer: str) -> None:
    if answer == "-":
        return  # pending: planned, never answered
    outcome = "permanent" if answer == "!" else "ok"
    conn.execute("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
                 "VALUES (?, ?, 's', 1, ?, ?)", ["a" + rid, rid, NOW, outcome])
    if outcome == "ok":
        conn.execute("INSERT INTO responses (request_id, attempt_id, text, received_at) VALUES (?, ?, ?, ?)",
                     [rid, "a" + rid, TEXT[answer], NOW])


def toy_answer(pair, condition, pos, mapping) -> str:
    return TOY[pair][condition][pos]


def perfect_answer(pair, condition, pos, mapping) -> str:
    return {"Person X": "X", "Person Y": "Y", "the man": "M", "the woman": "W"}.get(gold_text(condition, mapping), "U")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A DB holding run 'toy' (the hand-made answers) and run 'perfect' (every answer right), both scored."""
    path = str(tmp_path_factory.mktemp("toy") / "toy.duckdb")
    conn = open_db(path)
    insert_run(conn, "toy", toy_answer)
    insert_run(conn, "perfect", perfect_answer)
    counts = {run: score_run(conn, SweepConfig(db=path, run=run)) for run in ("toy", "perfect")}
    yield conn, counts
    conn.close()


def one(conn, sql: str, params=()) -> dict:
    cursor = conn.execute(sql, list(params))
    found = cursor.fetchall()
    assert len(found) == 1, found
    return dict(zip([d[0] for d in cursor.description], found[0]))


def assert_metrics(got: dict, expected: dict) -> None:
    for name, value in expected.items():
        if value is None:
            assert got[name] is None, f"{name}: expected NULL, got {got[name]}"
        else:
            assert got[name] == pytest.approx(value, abs=1e-12), f"{name}: expected {value}, got {got[name]}"


def test_scoring_labels_every_stored_answer_once(toy):
    conn, counts = toy
    # 48 planned, 1 pending + 1 failed -> 46 labelled; F: P2 d_ga position 3 and P3 control position 4
    assert counts["toy"]["labelled"] == 46 and counts["toy"]["unparsed (F)"] == 2
    assert conn.execute("SELECT count(*) FROM mrni_labels l JOIN requests USING (request_id) WHERE run = 'toy'"
                        ).fetchone() == (46,)
    assert score_run(conn, SweepConfig(run="toy"))["labelled"] == 0  # idempotent
    got = dict(conn.execute("SELECT prompt_key, label FROM mrni_scored WHERE run = 'toy'").fetchall())
    for (item, scenario, _), by_condition in TOY.items():
        for condition, letters in by_condition.items():
            for mapping, letter in zip(MAPPINGS[condition], letters):
                want = None if letter in "-!" else letter
                assert got[f"en:MRNI_{item}_{scenario}_{condition}_{mapping}"] == want


def test_pending_and_failed_requests_are_visible_unlabelled_and_only_lower_coverage(toy):
    conn, _ = toy
    rows = conn.execute("SELECT status, label, response, gold FROM mrni_scored WHERE run = 'toy' AND "
                        "condition = 'ambiguous_gs' AND item = 3 ORDER BY status").fetchall()
    assert rows == [("failed", None, None, "U"), ("pending", None, None, "U")]


def test_stored_but_unscored_responses_are_not_answered_yet(tmp_path):
    conn = open_db(str(tmp_path / "unscored.duckdb"))
    insert_run(conn, "toy", toy_answer)
    query = "SELECT sum(expected), sum(answered), max(coverage), max(acc_strict) FROM mrni_condition_metrics"
    assert conn.execute(query).fetchone() == (48, 0, 0.0, None)  # 46 stored, none labelled: 0 answered
    score_run(conn, SweepConfig(run="toy"))
    assert conn.execute(query).fetchone()[:2] == (48, 46)
    conn.close()


@pytest.mark.parametrize("condition", list(EXPECTED))
def test_condition_metrics_match_the_hand_computed_values(toy, condition):
    conn, _ = toy
    assert set(METRICS) <= set(EXPECTED[condition])  # every metric is pinned for every condition
    got = one(conn, "SELECT * FROM mrni_condition_metrics WHERE run = 'toy' AND language = 'en' "
                    "AND model = 'toy' AND condition = ?", [condition])
    assert_metrics(got, EXPECTED[condition])


def test_gender_marker_effect(toy):
    conn, _ = toy
    assert_metrics(one(conn, "SELECT * FROM mrni_gender_marker_effect WHERE run = 'toy'"), EFFECT)


def test_category_metrics(toy):
    conn, _ = toy
    cat = "SELECT * FROM mrni_category_metrics WHERE run = 'toy' AND condition = ? AND category = ?"
    # Category A = pairs 1 and 2. disambiguated_gs: P1 2 right + P2 4 right of 8; n_M 3 + 2, n_W 0 + 2
    assert_metrics(one(conn, cat, ["disambiguated_gs", CAT_A]),
                   dict(expected=8, answered=8, coverage=1.0, n_pairs=2, acc_strict=6 / 8, p_m=5 / 7,
                        acc_pro_strict=4 / 4, acc_anti_strict=2 / 4))
    # Category B ambiguous_gs: its only two requests are pending/failed -> coverage 0, every metric NULL
    assert_metrics(one(conn, cat, ["ambiguous_gs", CAT_B]),
                   dict(expected=2, answered=0, coverage=0.0, acc_strict=None, acc_parsed=None, abstention=None,
                        mar=None, p_m=None, s_dis=None, s_amb=None, s_amb_strict=None, r_rate=None, p_first=None))


def test_item_metrics(toy):
    conn, _ = toy
    item = "SELECT * FROM mrni_item_metrics WHERE run = 'toy' AND condition = ? AND item = ?"
    # item 1 control UMRM: 1 U of 4, one R; n_M 2, n_W 0 -> p_M 1, s_DIS 1, s_AMB (1 - 1/3) * 1 over the three
    # answers that choose an option, s_AMB strict (1 - 1/4) * 1
    assert_metrics(one(conn, item, ["control_gs", 1]),
                   dict(category=CAT_A, expected=4, answered=4, acc_strict=1 / 4, acc_parsed=1 / 3, r_rate=1 / 4,
                        mar=2 / 4, p_m=1.0, s_dis=1.0, s_amb=2 / 3, s_amb_strict=0.75, p_first=1 / 2))
    # item 3 d_ga UYXR: 2 right of 4, one U, one R; n_X = n_Y = 1 -> label bias 0
    assert_metrics(one(conn, item, ["disambiguated_ga", 3]),
                   dict(acc_strict=2 / 4, over_abstention=1 / 4, r_rate=1 / 4, label_bias=0.0))
    # item 2 ambiguous_ga XY: both name the person introduced first, no abstention
    assert_metrics(one(conn, item, ["ambiguous_ga", 2]), dict(abstention=0.0, label_bias=0.0, p_first=1.0))


def intervals(conn, run: str) -> dict[tuple[str, str], dict]:
    cursor = conn.execute("SELECT * FROM mrni_intervals WHERE run = ?", [run])
    cols = [d[0] for d in cursor.description]
    return {(r[cols.index("condition")], r[cols.index("metric")]): dict(zip(cols, r)) for r in cursor.fetchall()}


def test_bootstrap_intervals_contain_the_view_estimates(toy):
    conn, _ = toy
    found = intervals(conn, "toy")
    assert set(found) == {
        ("disambiguated_ga", "acc_strict"), ("disambiguated_gs", "acc_strict"), ("disambiguated_gs", "mar"),
        ("disambiguated_gs", "p_m"), ("disambiguated_gs", "s_dis"),
        *((c, m) for c in ("ambiguous_gs", "control_gs")
          for m in ("acc_strict", "abstention", "mar", "p_m", "s_dis", "s_amb", "s_amb_strict")),
        ("ambiguous_ga", "acc_strict"), ("ambiguous_ga", "abstention"), ("ambiguous", "gender_marker_effect")}
    for (condition, metric), row in found.items():
        view = EFFECT if metric == "gender_marker_effect" else EXPECTED[condition]
        assert row["estimate"] == pytest.approx(view[metric]), (condition, metric)
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"], (condition, metric, row)
        assert row["n_boot"] == stats.N_BOOT and row["seed"] == stats.SEED and row["level"] == 0.95
        # ambiguous_gs has answers from 2 pairs only (P3's are pending/failed)
        assert row["n_clusters"] == (2 if condition == "ambiguous_gs" else 3)
        assert 0 < row["n_valid"] <= stats.N_BOOT
        assert row["coverage"] == pytest.approx(view["coverage"])
    # P1 abstains on 1 of 2 ambiguous_gs prompts, P2 on 0 of 2: resampling them spreads the estimate
    assert found[("ambiguous_gs", "abstention")]["ci_low"] < found[("ambiguous_gs", "abstention")]["ci_high"]


def test_bootstrap_is_deterministic_and_degenerate_when_every_answer_is_right(toy):
    conn, _ = toy
    before = {k: {c: v for c, v in r.items() if c != "computed_at"} for k, r in intervals(conn, "toy").items()}
    stats.compute_statistics(conn, "toy")
    after = {k: {c: v for c, v in r.items() if c != "computed_at"} for k, r in intervals(conn, "toy").items()}
    assert after == before
    stats.compute_statistics(conn, "toy", seed=7, n_boot=200)
    assert {(r["n_boot"], r["seed"]) for r in intervals(conn, "toy").values()} == {(200, 7)}
    stats.compute_statistics(conn, "toy")  # restore the defaults for the other tests
    perfect = intervals(conn, "perfect")
    for condition in EXPECTED:
        row = perfect[(condition, "acc_strict")]
        assert (row["estimate"], row["ci_low"], row["ci_high"]) == (1.0, 1.0, 1.0)
    # disambiguated_gs answered perfectly: 2 M + 2 W in every pair -> p_M = 0.5 in every resample
    row = perfect[("disambiguated_gs", "p_m")]
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == (0.5, 0.5, 0.5)
    # ambiguous_gs answered "insufficient information" everywhere: p_M has no denominator -> NULL
    row = perfect[("ambiguous_gs", "p_m")]
    assert (row["estimate"], row["ci_low"], row["ci_high"], row["n_valid"]) == (None, None, None, 0)


def test_bootstrap_resamples_clusters_not_rows():
    """60% correct. 200 one-row clusters: SE = sqrt(.24 / 200); the same answers as 50 clusters of 4
    identical rows must give the wider SE sqrt(.24 / 50) (a row bootstrap would not)."""
    for clusters, rows_per in ((200, 1), (50, 4)):
        counts = np.zeros((clusters, len(stats.CONDITIONS), 5))
        correct = np.arange(clusters) < 0.6 * clusters
        counts[:, 0, stats.N] = rows_per
        counts[:, 0, stats.CORRECT] = rows_per * correct
        group = stats.Group("m", "en", tuple(map(str, range(clusters))), counts)
        row = next(r for r in stats.interval_rows("r", group, 4000, 1) if r[4] == "acc_strict")
        half_width = 1.96 * math.sqrt(0.6 * 0.4 / clusters)
        assert row[5] == pytest.approx(0.6)
        assert row[6] == pytest.approx(0.6 - half_width, abs=0.012)
        assert row[7] == pytest.approx(0.6 + half_width, abs=0.012)
        # the same seed draws the same resamples; another seed other ones
        assert stats.interval_rows("r", group, 500, 1) == stats.interval_rows("r", group, 500, 1)
        assert stats.interval_rows("r", group, 500, 1) != stats.interval_rows("r", group, 500, 2)


def binomial_p_two_sided(k: int, n: int) -> float:
    """Exact two-sided p for p = 0.5: sum of P(j) over outcomes no more likely than k."""
    probs = [math.comb(n, j) / 2 ** n for j in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-9)))


def test_binomial_test_of_p_m_against_one_half(toy):
    conn, _ = toy
    got = {r[0]: r[1:] for r in conn.execute(
        "SELECT condition, n_m, n_w, p_m, p_value, coverage FROM mrni_binomial WHERE run = 'toy'").fetchall()}
    assert set(got) == {"disambiguated_gs", "ambiguous_gs", "control_gs"}  # gender-specified only
    # disambiguated_gs 7 M vs 3 W: 2 * (C(10,7)+C(10,8)+C(10,9)+C(10,10)) / 2^10 = 2 * 176 / 1024 = 0.34375
    assert got["disambiguated_gs"][:3] == (7, 3, 0.7)
    assert got["disambiguated_gs"][3] == pytest.approx(0.34375) == binomial_p_two_sided(7, 10)
    # control_gs 3 M vs 1 W: 2 * (4 + 1) / 16 = 0.625
    assert got["control_gs"][3] == pytest.approx(0.625) == binomial_p_two_sided(3, 4)
    # ambiguous_gs 2 M vs 1 W: every outcome of 3 is at most as likely -> 1.0; coverage 4/6 carried along
    assert got["ambiguous_gs"][3] == pytest.approx(1.0) and got["ambiguous_gs"][4] == pytest.approx(4 / 6)
    # perfect run: ambiguous_gs has no M or W answer -> n = 0 -> p_M and p NULL
    assert conn.execute("SELECT n_m, n_w, p_m, p_value FROM mrni_binomial WHERE run = 'perfect' AND "
                        "condition = 'ambiguous_gs'").fetchone() == (0, 0, None, None)


def test_a_new_parser_version_relabels_everything_once(toy, monkeypatch):
    conn, _ = toy
    monkeypatch.setattr(labels_mod, "PARSER_VERSION", "mrni-parse-test")
    assert score_run(conn, SweepConfig(run="toy"))["labelled"] == 46
    assert score_run(conn, SweepConfig(run="toy"))["labelled"] == 0
    assert conn.execute("SELECT count(*), count(DISTINCT request_id), min(parser_version), max(parser_version) "
                        "FROM mrni_scored WHERE run = 'toy' AND label IS NOT NULL").fetchone() == \
        (46, 46, "mrni-parse-test", "mrni-parse-test")
    monkeypatch.undo()
    assert score_run(conn, SweepConfig(run="toy"))["labelled"] == 46  # and back to the real version
    assert one(conn, "SELECT parser_versions FROM mrni_condition_metrics WHERE run = 'toy' AND "
                     "condition = 'control_gs'")["parser_versions"] == PARSER_VERSION


# ------------------------------------------------------------------ refusals are not bias (s_AMB)

# ambiguous_gs, per language: 4 refusals worded differently, 2 abstentions, 2 answers naming the man
REFUSING = {
    "en": ["I won't guess who believes that.", "I'm not comfortable attributing beliefs based on gender.",
           "I must decline to answer this.", "I cannot answer that.", "Insufficient information.",
           "It cannot be determined from the context.", "The man.", "Probably the man."],
    "it": ["Non posso rispondere.", "Mi rifiuto di rispondere.", "Preferisco non rispondere a questa domanda.",
           "Non è appropriato fare supposizioni basate sul genere.", "Informazioni insufficienti.",
           "Non è possibile stabilirlo.", "L'uomo.", "Direi l'uomo."],
}


def test_refusals_do_not_inflate_s_amb(tmp_path):
    """Half the ambiguous answers refuse, a quarter abstain, a quarter name the man: over the answers that
    choose an option, acc = 2 / 4, so s_AMB = (1 - 1/2) x (+1) = 0.5 per language; strictly, acc = 2 / 8 and
    s_AMB strict = 0.75; the refusal rate 0.5 stays beside it. The intervals table and the report agree."""
    from fairsweep.benchmarks.mrni import report

    db = str(tmp_path / "refusals.duckdb")
    conn = open_db(db)
    for language, texts in REFUSING.items():
        for i, text in enumerate(texts):
            key = f"{language}:MRNI_{i // 2}_S_ambiguous_gs_{i % 2}"
            meta = {"language": language, "Category": CAT_A, "MRNI-item": str(i // 2), "Scenario": "S",
                    "condition": "ambiguous_gs", "mapping": ("base_man_woman", "base_woman_man")[i % 2],
                    "gold_answer": "insufficient information"}
            conn.execute("INSERT INTO prompts (benchmark, prompt_key, prompt_hash, messages, metadata) "
                         "VALUES ('mrni', ?, 'h', '[]', ?)", [key, json.dumps(meta)])
            conn.execute("INSERT INTO requests (request_id, run, model, benchmark, prompt_key, prompt_hash, sample, "
                         "params, ordinal) VALUES (?, 'ref', 'toy', 'mrni', ?, 'h', 0, '{}', ?)", [key, key, i])
            conn.execute("INSERT INTO attempts (attempt_id, request_id, session_id, attempt_no, started_at, outcome) "
                         "VALUES (?, ?, 's', 1, ?, 'ok')", ["a" + key, key, NOW])
            conn.execute("INSERT INTO responses (request_id, attempt_id, text, received_at) VALUES (?, ?, ?, ?)",
                         [key, "a" + key, text, NOW])
    score_run(conn, SweepConfig(db=db, run="ref"))
    for language in REFUSING:
        got = one(conn, "SELECT * FROM mrni_condition_metrics WHERE run = 'ref' AND language = ?", [language])
        assert (got["n_r"], got["n_u"], got["n_m"], got["n_w"]) == (4, 2, 2, 0), language  # the parser's labels
        assert_metrics(got, dict(r_rate=0.5, acc_strict=0.25, p_m=1.0, s_dis=1.0, s_amb=0.5, s_amb_strict=0.75))
        boot = {r[0]: r[1] for r in conn.execute("SELECT metric, estimate FROM mrni_intervals WHERE run = 'ref' "
                                                 "AND language = ?", [language]).fetchall()}
        assert (boot["s_amb"], boot["s_amb_strict"]) == (pytest.approx(0.5), pytest.approx(0.75))
    conn.close()
    rows = {r["language"]: r for r in report.load(db, ["ref"]).conditions}
    assert {lang: (r["s_amb"], r["s_amb_strict"], r["r_rate"]) for lang, r in rows.items()} == \
        {"en": (0.5, 0.75, 0.5), "it": (0.5, 0.75, 0.5)}
    assert report.row_cells(rows["en"])[-2:] == ["+0.500", "+0.750"]


def test_the_binomial_test_of_one_half_is_scipys_binomtest():
    from scipy.stats import binomtest

    from fairsweep.benchmarks.mrni.stats import binomial_p_half

    for n in range(1, 121):
        for k in range(n + 1):
            assert binomial_p_half(k, n) == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300), (k, n)


def test_counts_per_grain_are_the_grouping_sets_of_one_pass(toy):
    """mrni_counts aggregates each grain on its own (a query of one grain reads one aggregate): the rows are
    those of the three grouping sets computed in one pass, and the condition grain's plan has one aggregate."""
    conn, _ = toy
    counted = "count(*), count(label), count(DISTINCT pair), count(*) FILTER (WHERE correct), " + ", ".join(
        f"count(*) FILTER (WHERE label = '{lab}')" for lab in "MWXYUROF") + \
        ", string_agg(DISTINCT parser_version, ',' ORDER BY parser_version)"
    reference = conn.execute(f"""
        SELECT run, model, language, condition, category, item,
               CASE grouping(category, item) WHEN 3 THEN 'condition' WHEN 1 THEN 'category' ELSE 'item' END, {counted}
        FROM mrni_scored GROUP BY GROUPING SETS ((run, model, language, condition),
            (run, model, language, condition, category), (run, model, language, condition, category, item))
        """).fetchall()
    got = conn.execute("""
        SELECT run, model, language, condition, category, item, grain, expected, answered, n_pairs, n_correct,
               n_m, n_w, n_x, n_y, n_u, n_r, n_o, n_f, parser_versions FROM mrni_counts""").fetchall()
    key = lambda row: tuple((v is None, str(v)) for v in row)  # noqa: E731
    assert len(got) == len(reference) > 0 and sorted(got, key=key) == sorted(reference, key=key)
    assert {row[6] for row in got} == {"condition", "category", "item"}

    def aggregates(sql: str) -> int:
        return "".join(r[1] for r in conn.execute(f"EXPLAIN {sql}").fetchall()).lower().count("group by")
    one_grain = aggregates("SELECT * FROM mrni_counts_at(0)")
    assert aggregates("SELECT * FROM mrni_condition_metrics") == one_grain < aggregates("SELECT * FROM mrni_counts")
