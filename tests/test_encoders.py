"""The encoders built once (records.canonical_json, the journal's lines) give the text json.dumps gave: request
ids, cache keys and journal lines of earlier versions stay byte-identical."""

import json
from datetime import datetime, timezone

from fairsweep.records import AttemptRow, DriftRow, ResponseRow, canonical_json
from fairsweep.storage.journal import CODES, decode, encode

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def test_canonical_json_is_sorted_compact_unescaped_json():
    values = ["mrni", "è \"q\" \n", 3, 0.5, None, True, [1, "x"], {"b": 1, "a": {"d": [None], "c": "ü"}},
              {"temperature": 0.0, "max_tokens": 64, "seed": 7}]
    for value in values:
        assert canonical_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_journal_lines_are_the_lines_of_before_and_read_back():
    rows = [AttemptRow("a" * 32, "b" * 32, "c" * 32, 1, NOW, 41.5, "ok", None, None, None, None, 120, 30),
            ResponseRow("b" * 32, "a" * 32, "The man è \"x\"\n", "stop", 120, 30, 0.0001, "sim", None, 41.5, NOW),
            DriftRow("run", "m", "b" * 32, "fingerprint", None, "fp_2", NOW)]
    for row in rows:
        before = [v.isoformat() if isinstance(v, datetime) else v for v in row]
        assert encode(row) == (json.dumps([CODES[type(row)], *before], separators=(",", ":")) + "\n").encode()
        assert decode(encode(row)) == row
