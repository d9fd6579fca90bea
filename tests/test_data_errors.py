"""Damaged data and scenario files: one line naming the file, the line and the fix; exit 2 before any request
is sent and before any DB file exists."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from fairsweep import cli
from fairsweep.benchmarks.gama.schema import BUNDLED_DIR

EXPANDED = "EN/all_conditions/AF_MNRI-BB_en_all.tsv"
COMPACT = "IT/T_MNRI-BB_it.tsv"


def damaged_copy(mrni_dir: Path, dest: Path, rel: str, edit) -> Path:
    """The fixture as symlinks, except `rel`: a real file holding edit(original text)."""
    for source in mrni_dir.rglob("*"):
        target = dest / source.relative_to(mrni_dir)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif source.relative_to(mrni_dir).as_posix() != rel:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
    (dest / rel).write_text(edit((mrni_dir / rel).read_text(encoding="utf-8")), encoding="utf-8")
    return dest


def drop_column(text: str, index: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    for row in csv.reader(io.StringIO(text, newline=""), delimiter="\t"):
        writer.writerow(row[:index] + row[index + 1:])
    return out.getvalue()


def tab_at_end_of(text: str, line: int) -> str:
    lines = text.split("\n")
    lines[line - 1] += "\t"
    return "\n".join(lines)


def first_lines(text: str, n: int) -> str:
    return "".join(text.splitlines(keepends=True)[:n])


CASES = [  # (file, edit, what the message says about the place)
    (EXPANDED, lambda t: t[: len(t) // 2], "line 641: 9 of 11 fields (truncated, or a tab removed)"),
    (EXPANDED, lambda t: first_lines(t, 37), "line 35: the file ends with this row, 12 of 432 (truncated)"),
    (EXPANDED, lambda t: t.replace("The man", "The boy", 1), "line 14: context of MRNI_25_S1_"),
    (EXPANDED, lambda t: drop_column(t, 4), "line 1: column(s) condition missing from the header"),
    (EXPANDED, lambda t: t + "extra\trow\n", "line 1298: 2 of 11 fields"),
    (EXPANDED, lambda t: "", "AF_MNRI-BB_en_all.tsv: checksum mismatch; the file is empty"),
    (COMPACT, lambda t: t.replace("\t", "\t\t", 1), "line 1: column(s) '' in the header are not the release's"),
    (COMPACT, lambda t: tab_at_end_of(t, 2), "line 2: 9 of 8 fields (a tab added)"),
    (COMPACT, lambda t: t.replace("uomo", "uomini", 3), ": the row differs from the release"),
    (COMPACT, lambda t: first_lines(t, 5), "line 5: the file ends with this row, 4 of "),
]


@pytest.mark.parametrize("rel, edit, place", CASES)
def test_a_damaged_mrni_file_is_named_with_its_line_before_anything_is_sent(
        rel, edit, place, mrni_dir, server, tmp_path, monkeypatch, capsys):
    data = damaged_copy(mrni_dir, tmp_path / "data", rel, edit)
    monkeypatch.setenv("FAIRSWEEP_MRNI_DIR", str(data))
    server.reset_stats()
    db = tmp_path / "x.duckdb"
    code = cli.main(["run", "--db", str(db), "--limit", "2", "--no-progress",
                     "--model", f"sim=sim-model@{server.base_url}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("fairsweep: error: MRNI-BB data in ") and err.strip().count("\n") == 0, err
    assert f"{rel}: checksum mismatch; " in err and place in err and "fairsweep data fetch" in err, err
    assert server.stats()["requests"] == 0 and not db.exists()


def test_data_verify_lists_every_damaged_file_with_its_line(mrni_dir, tmp_path, capsys):
    data = damaged_copy(mrni_dir, tmp_path / "data", EXPANDED, lambda t: t[: len(t) // 2])
    (data / "MRNI_items" / "MRNI_IT.tsv").unlink()
    assert cli.main(["data", "verify", "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{data}: {EXPANDED}: checksum mismatch; line 641: 9 of 11 fields" in err
    assert "MRNI_items/MRNI_IT.tsv: missing" in err


@pytest.mark.parametrize("edit, fragment", [
    (lambda lines: lines[:5] + [lines[5][:40]], "line 6: not valid JSON (Unterminated string"),
    (lambda lines: lines[:3] + [lines[3].replace('"track": "intimate"', '"track": "intimat"')] + lines[4:],
     "line 4, field 'track': 'intimat' is not one of intimate, public"),
    (lambda lines: lines[:2] + ["[1, 2]"] + lines[2:], "line 3: must be a JSON object, got list"),
])
def test_a_bad_line_in_a_gama_scenario_file_is_named_before_anything_is_sent(edit, fragment, server, tmp_path,
                                                                              capsys):
    source = sorted(BUNDLED_DIR.glob("intimate_*.jsonl"))[0]
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text("\n".join(edit(source.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
    db = tmp_path / "gama.duckdb"
    config = tmp_path / "gama.toml"
    config.write_text(f'db = "{db}"\nbenchmarks = ["gama"]\ngama_scenarios = "{scenarios}"\n\n[[models]]\n'
                      f'name = "sim"\nmodel = "sim-model"\napi_base = "{server.base_url}"\n', encoding="utf-8")
    server.reset_stats()
    code = cli.main(["run", "--config", str(config), "--limit", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0, err
    assert f"{scenarios}: {fragment}" in err and "fix them and load again" in err, err
    assert server.stats()["requests"] == 0 and not db.exists()
