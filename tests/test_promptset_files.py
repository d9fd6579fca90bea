"""Bad prompt-set files: `fairsweep run` exits 2 with one line per problem naming the row and the column, sends
nothing and leaves no DB behind; good files in each format load."""

from __future__ import annotations

import json
import subprocess

import duckdb
import pytest

from fairsweep.benchmarks.promptset.rows import load_items
from fairsweep.errors import DataError

from helpers import fairsweep_cmd

OK = {"id": "1", "prompt": "Who?", "choices": ["a", "b"], "answer": "a", "pair": "p1", "variant": "x"}
OK2 = {**OK, "id": "2", "variant": "y"}
BAD = [  # (rows, row named, column named, words of the problem)
    ([OK, {**OK2, "id": "1"}], 2, "id", "duplicate id"),
    ([OK, OK2, {**OK, "id": "3", "pair": "p2"}], 3, "pair", "missing variant"),
    ([OK, {**OK2, "choices": ["a", "c"]}], 2, "choices", "choices differ"),
    ([OK, {**OK2, "answer": "z"}], 2, "answer", "not among the choices"),
    ([OK, {**OK2, "answer": 2}], 2, "answer", "not among the choices"),
    ([OK, {k: v for k, v in OK2.items() if k != "prompt"}], 2, "prompt", "missing"),
    ([OK, {**OK2, "answr": "a"}], 2, "answr", 'unknown column: did you mean "answer"'),
    ([OK, {**OK2, "choices": 5}], 2, "choices", "must be a list"),
    ([OK, {**OK2, "prompt": ["x"]}], 2, "prompt", "must be text"),
    ([OK, {**OK2, "group": {"a": 1}}], 2, "group", "must be text or a list"),
    ([OK, OK2, {"id": "9", "prompt": "x", "choices": ["a", "b"], "pair": "p9"}], 3, "variant", "go together"),
    ([OK, {**OK2, "variant": "x"}], 2, "variant", "twice"),
    ([OK, OK2, {"id": "3", "prompt": "x"}], 3, "choices", 'parser "choice" needs choices'),
    ([OK, {**OK2, "messages": [{"role": "user", "content": "hi"}]}], 2, "messages", "not both"),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def run_set(folder, name="bad.jsonl"):
    (folder / "c.toml").write_text(f'db = "out.duckdb"\nbenchmarks = ["s"]\n[[sets]]\nname = "s"\npath = "{name}"\n'
                                   f'[[models]]\nname = "m"\nmodel = "m"\napi_base = "http://127.0.0.1:9/v1"\n')
    return subprocess.run(fairsweep_cmd("run", "--config", "c.toml", "--no-progress"), cwd=folder,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("rows,row,column,words", BAD)
def test_a_bad_row_exits_2_naming_row_and_column(tmp_path, rows, row, column, words):
    write_jsonl(tmp_path / "bad.jsonl", rows)
    done = run_set(tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"row {row}, column {column}:" in lines[0] and words in lines[0] and "nothing was sent" in lines[0]
    assert not (tmp_path / "out.duckdb").exists()


def test_every_problem_of_a_file_is_listed_one_per_line(tmp_path):
    write_jsonl(tmp_path / "bad.jsonl", [OK, {**OK2, "id": "1"}, {**OK, "id": "3", "answer": "q", "pair": "p3"}])
    done = run_set(tmp_path)
    assert done.returncode == 2
    assert "2 problems" in done.stderr and "row 2, column id" in done.stderr and "row 3, column answer" in done.stderr


def test_csv_and_parquet_problems_name_their_row(tmp_path):
    (tmp_path / "bad.csv").write_text('id,prompt,choices,answer\n1,Q?,"[""a"",""b""]",a\n2,Q2,"[""a"",""b""]",3\n')
    done = run_set(tmp_path, "bad.csv")
    assert done.returncode == 2 and "row 2, column answer" in done.stderr
    duckdb.sql(f"COPY (SELECT '1' AS id, 'Q' AS prompt UNION ALL SELECT '1', 'R') TO '{tmp_path / 'bad.parquet'}'")
    done = run_set(tmp_path, "bad.parquet")
    assert done.returncode == 2 and "row 2, column id: duplicate id" in done.stderr


def test_an_unreadable_file_and_a_missing_one(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prompt": "x"}\n{oops\n')
    done = run_set(tmp_path)
    assert done.returncode == 2 and "row 2: not valid JSON" in done.stderr
    done = run_set(tmp_path, "nowhere.jsonl")
    assert done.returncode == 2 and "not found" in done.stderr
    (tmp_path / "x.txt").write_text("hi")
    done = run_set(tmp_path, "x.txt")
    assert done.returncode == 2 and "use .jsonl, .csv or .parquet" in done.stderr


def test_good_files_in_three_formats_give_the_same_items(tmp_path):
    rows = [OK, OK2, {"id": "3", "prompt": "Q3", "choices": ["a", "b"], "answer": 1, "group": ["g1", "g2"],
                      "group_lang": "en", "meta_note": "kept"}]
    write_jsonl(tmp_path / "s.jsonl", rows)
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM read_json_auto('{tmp_path / 's.jsonl'}')) TO '{tmp_path / 's.parquet'}'")
    (tmp_path / "s.csv").write_text(
        'id,prompt,choices,answer,pair,variant,group,group_lang,meta_note\n'
        '1,Who?,"[""a"",""b""]",a,p1,x,,,\n2,Who?,"[""a"",""b""]",a,p1,y,,,\n'
        '3,Q3,"[""a"",""b""]",1,,,"[""g1"",""g2""]",en,kept\n')
    loaded = [load_items(tmp_path / f"s.{ext}", "choice") for ext in ("jsonl", "parquet", "csv")]
    for items in loaded:
        assert [(i.id, i.choices, i.answer, i.pair, i.variant) for i in items] == [
            ("1", ("a", "b"), 0, "p1", "x"), ("2", ("a", "b"), 0, "p1", "y"), ("3", ("a", "b"), 1, None, None)]
        assert items[2].groups == ("g1", "g2", "lang=en") and items[2].meta == {"note": "kept"}


def test_targets_and_messages(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", [
        {"id": "a", "messages": [{"role": "user", "content": "2+2?"}], "system": "Be brief.", "target": 4},
        {"id": "b", "prompt": "3+3?", "target": "6"}])
    items = load_items(tmp_path / "t.jsonl", "number")
    assert items[0].messages == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"})
    assert items[0].target == 4 and items[1].target == "6"
    write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x", "target": "four"}])
    with pytest.raises(DataError, match="row 1, column target: 'four' is not a number"):
        load_items(tmp_path / "t.jsonl", "number")
