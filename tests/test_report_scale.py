"""Many runs side by side in the terminal: printed a few runs per table, each with only the rows those runs
have, every value still shown once; two runs stay one table. (The CSV, Markdown and HTML tables are not
split.)"""

from __future__ import annotations

import io
import re

from rich.console import Console

from fairsweep.benchmarks.report_tables import MAX_TERMINAL_COLUMNS, column_parts, print_rich, side_by_side


def rows(runs: int, shared: bool) -> list[dict]:
    """Per run one model (shared: the same model in every run), two conditions, two values."""
    return [{"run": f"run{r:02d}", "model": "m" if shared else f"m{r:02d}", "condition": c,
             "acc": round(r / 100 + (0.5 if c == "b" else 0), 3), "mar": None if c == "a" else r / 1000}
            for r in range(runs) for c in ("a", "b")]


def printed(table) -> str:
    out = io.StringIO()
    print_rich(table, Console(file=out, width=400))
    return out.getvalue()


def test_forty_runs_side_by_side_are_printed_a_few_runs_per_table_with_only_their_rows():
    table = side_by_side("t", "runs side by side", rows(40, shared=False), ("model", "condition"), ("acc", "mar"),
                         lambda column, value: "—" if value is None else f"{value:.3f}")
    assert len(table.columns) == 2 + 2 * 40 and len(table.rows) == 80  # the CSV keeps every column and row
    text = printed(table)
    parts = re.findall(r"runs side by side · part (\d+) of (\d+)", text)
    per_part = (MAX_TERMINAL_COLUMNS - 2) // 2
    assert len(parts) == -(-40 // per_part) and {p[1] for p in parts} == {str(len(parts))}
    for r in range(40):  # every value once, every model row only in its own run's table
        assert text.count(f"{r / 100:.3f}") >= 1 and text.count(f"m{r:02d} ") == 2
    header = next(line for line in text.splitlines() if "acc · run00" in line)
    assert header.count("┃") == MAX_TERMINAL_COLUMNS + 1  # keys + 7 runs x 2 values: 16 columns


def test_two_runs_side_by_side_stay_one_table_with_every_row():
    table = side_by_side("t", "runs side by side", rows(2, shared=True), ("model", "condition"), ("acc", "mar"),
                         lambda column, value: "—" if value is None else f"{value:.3f}")
    text = printed(table)
    assert "part" not in text and text.count("runs side by side") == 1
    assert "acc · run00" in text and "mar · run01" in text


def test_a_wide_table_is_cut_into_parts_that_repeat_its_keys():
    assert column_parts(5, 1, width=8) == [[0, 1, 2, 3, 4]]
    assert column_parts(20, 2, width=8) == [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 8, 9, 10, 11, 12, 13],
                                            [0, 1, 14, 15, 16, 17, 18, 19]]
