"""Where an MRNI-BB file differs from the pinned release: the line, in words a user can act on.

Checksums say *that* a file changed; this says *where*: an empty file, a missing column, a row with too few
or too many fields (a truncated file, a removed or added tab), and, for the expanded files, the first row
whose fields differ from what the intact compact file expands to (expand.py reproduces the release).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator

from .expand import EXPANDED_FIELDS, expand_row

COMPACT_FIELDS = ("Category", "MRNI-item", "Scenario", "Base", "Disambiguated", "Ambiguous", "Control", "Question")
ITEM_FIELDS = ("id", "text", "categoria", "secondary_cat")
_EDITED = (None, "the contents differ (edited by hand?)")


def expected_columns(rel: str) -> tuple[str, ...]:
    if rel.startswith("MRNI_items/"):
        return ITEM_FIELDS
    return EXPANDED_FIELDS if "/all_conditions/" in rel else COMPACT_FIELDS


def rows_with_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(first physical line, fields) of every record, header included; quoted fields may span lines."""
    csv.field_size_limit(1 << 24)
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        start = 1
        for fields in reader:
            yield start, fields
            start = reader.line_num + 1


def locate(data_dir: Path, rel: str, damaged: set[str] | dict) -> tuple[int | None, str]:
    """(line or None, what is wrong there) for the first place `rel` departs from the release. `damaged`:
    the files known not to match their checksums (an expanded file is compared with its compact file's
    expansion only when that one is intact)."""
    path = data_dir / rel
    try:
        records = list(rows_with_lines(path))
    except UnicodeDecodeError:
        return None, "not UTF-8 text (the file is damaged or not the release's)"
    except csv.Error as exc:
        return None, f"not a readable TSV ({exc})"
    if not records:
        return None, "the file is empty"
    (_, header), body = records[0], records[1:]
    missing = [c for c in expected_columns(rel) if c not in header]
    if missing:
        return 1, f"column(s) {', '.join(missing)} missing from the header"
    extra = [c for c in header if c not in expected_columns(rel)]
    if extra:
        return 1, f"column(s) {', '.join(map(repr, extra))} in the header are not the release's (a tab added?)"
    for line, fields in body:
        if not fields:
            return line, "an empty line the release does not have"
        if len(fields) != len(header):
            how = "truncated, or a tab removed" if len(fields) < len(header) else "a tab added"
            return line, f"{len(fields)} of {len(header)} fields ({how})"
    if "/all_conditions/" in rel:
        pair = _compact_of(rel)
        if pair not in damaged and (data_dir / pair).is_file():
            return _first_difference(_read(data_dir / pair), _dicts(header, body), rel) or _EDITED
    elif not rel.startswith("MRNI_items/"):
        pair = _expanded_of(rel)
        if pair not in damaged and (data_dir / pair).is_file():
            return _first_difference(_dicts(header, body), _read(data_dir / pair), rel) or _EDITED
    return _EDITED


def _compact_of(rel: str) -> str:
    """EN/all_conditions/AF_MNRI-BB_en_all.tsv -> EN/AF_MNRI-BB_en.tsv"""
    return f"{rel.split('/', 1)[0]}/{Path(rel).name.replace('_all.tsv', '.tsv')}"


def _expanded_of(rel: str) -> str:
    """EN/AF_MNRI-BB_en.tsv -> EN/all_conditions/AF_MNRI-BB_en_all.tsv"""
    return f"{rel.split('/', 1)[0]}/all_conditions/{Path(rel).name.replace('.tsv', '_all.tsv')}"


Rows = list[tuple[int, dict[str, str]]]  # (first line, row) of a TSV's records


def _dicts(header: list[str], body: list[tuple[int, list[str]]]) -> Rows:
    return [(line, dict(zip(header, fields))) for line, fields in body]


def _read(path: Path) -> Rows:
    records = list(rows_with_lines(path))
    return _dicts(records[0][1], records[1:]) if records else []


def _first_difference(compact: Rows, expanded: Rows, rel: str) -> tuple[int | None, str] | None:
    """Expand the compact rows and walk them beside the expanded file's rows; the first departure, on a
    line of `rel` (the damaged one of the two). None when they agree."""
    language, in_compact = rel.split("/", 1)[0].lower(), "/all_conditions/" not in rel
    wanted: Rows = []  # (compact line, the expanded row it should give)
    for line, row in compact:
        try:
            wanted += [(line, want) for want in expand_row(row, language)]
        except (KeyError, ValueError, IndexError, AttributeError) as exc:
            return line, f"the row does not expand ({type(exc).__name__}: {str(exc)[:60]})"
    for (compact_line, want), (expanded_line, got) in zip(wanted, expanded):
        changed = [f for f in EXPANDED_FIELDS if got.get(f) != want[f]]
        if changed:
            return ((compact_line, "the row differs from the release") if in_compact else
                    (expanded_line, f"{', '.join(changed)} of {want['instance_id']} differ(s) from the release"))
    if len(wanted) == len(expanded):
        return None
    ours, theirs = (wanted, expanded) if in_compact else (expanded, wanted)  # the damaged side first
    if len(ours) > len(theirs):
        return ours[len(theirs)][0], "a row the release does not have"
    damaged, per_row = (compact, 16) if in_compact else (expanded, 1)  # a compact row expands to 16
    return ((damaged[-1][0] if damaged else 1),
            f"the file ends with this row, {len(damaged)} of {len(theirs) // per_row} (truncated)")
