"""Raw rows -> Items: each row's fields checked (types, prompt, choices, gold answer), then the set as a whole
(unique ids, complete pairs with the same choices, what the parser needs)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from .items import (CHOICE_PARSERS, Item, Problems, _decoded, _text, _type_name, check_columns, is_group_column,
                    read_rows)

ROLES = ("system", "user", "assistant")


def load_items(path: str | Path, parser: str) -> list[Item]:
    """The set's items in file order, or a DataError listing every problem (one line each)."""
    path = Path(path)
    problems = Problems(path)
    rows = read_rows(path, problems)
    if not rows and not problems.lines:
        problems.add(None, None, "has no rows: add one item per line")
    check_columns(rows, problems)
    items = [item for number, row in rows if (item := parse_row(number, row, problems)) is not None]
    check_set(items, parser, problems, pairs=not problems.lines)  # a bad row would make its pair look incomplete
    problems.raise_any()
    return items


def parse_row(number: int, row: dict, problems: Problems) -> Item | None:
    """One row's fields, or None (with its problems added)."""
    before = len(problems.lines)
    add = lambda column, text: problems.add(number, column, text)  # noqa: E731
    item_id = _text(row.get("id"))
    if item_id is None:
        add("id", "missing or not text/whole number: give every row a unique id")
    messages = _messages(row, add)
    choices = _choices(_decoded(row.get("choices")), add)
    answer = _answer(row.get("answer"), choices, add, bad_choices=row.get("choices") is not None)
    target = _target(row.get("target"), choices, add)
    groups = _groups(row, add)
    pair, variant = _text(row.get("pair")), _text(row.get("variant"))
    for column in ("pair", "variant"):
        if row.get(column) is not None and _text(row.get(column)) is None:
            add(column, f"must be text, got {_type_name(row.get(column))}")
    if (row.get("pair") is None) != (row.get("variant") is None):
        add("variant" if row.get("variant") is None else "pair", "pair and variant go together: give both or neither")
    if len(problems.lines) > before:
        return None
    meta = {k[5:]: v for k, v in row.items() if k.startswith("meta_") and _jsonable(v)}
    return Item(item_id, number, messages, choices, answer, target, groups, pair, variant, meta)


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, dict))


def _messages(row: dict, add) -> tuple[dict, ...]:
    prompt, messages, system = row.get("prompt"), _decoded(row.get("messages")), row.get("system")
    if prompt is not None and messages is not None:
        add("messages", "give prompt or messages, not both")
        return ()
    if system is not None and (not isinstance(system, str) or not system.strip()):
        add("system", f"must be non-empty text, got {_type_name(system)}")
        return ()
    head = ({"role": "system", "content": system},) if system else ()
    if messages is None:
        if not isinstance(prompt, str) or not prompt.strip():
            add("prompt", "missing or empty: give the prompt text (or a messages list)" if prompt is None or
                isinstance(prompt, str) else f"must be text, got {_type_name(prompt)}")
            return ()
        return (*head, {"role": "user", "content": prompt})
    if not isinstance(messages, list) or not messages:
        add("messages", f"must be a non-empty list of {{role, content}}, got {_type_name(messages)}")
        return ()
    out = []
    for i, m in enumerate(messages, start=1):
        if not (isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)):
            add("messages", f"message {i} must be {{\"role\": system|user|assistant, \"content\": text}}")
            return ()
        out.append({"role": m["role"], "content": m["content"]})
    if out[-1]["role"] != "user":
        add("messages", "the last message must be the user's (the model answers it)")
        return ()
    return (*head, *out)


def _choices(value: Any, add) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(c, str) and c.strip() for c in value):
        add("choices", f"must be a list of at least 2 non-empty texts (in CSV a JSON array), got {_type_name(value)}")
        return None
    if len({c.strip().lower() for c in value}) < len(value):
        add("choices", "two choices are the same text: make every option distinct")
        return None
    return tuple(value)


def _answer(value: Any, choices: tuple[str, ...] | None, add, bad_choices: bool = False) -> int | None:
    """The gold option as an index into choices (an integer counts from 0, a text must be one of them)."""
    if value is None:
        return None
    if choices is None:
        if not bad_choices:
            add("answer", "a gold answer needs choices (for a free answer use target)")
        return None
    if isinstance(value, str) and value in choices:
        return choices.index(value)
    index = value if isinstance(value, int) and not isinstance(value, bool) else (
        int(value) if isinstance(value, str) and value.strip().isdigit() else None)
    if index is not None and 0 <= index < len(choices):
        return index
    add("answer", f"{value!r} is not among the choices {list(choices)} (give the option's text, or its index "
                  f"from 0 to {len(choices) - 1})")
    return None


def _target(value: Any, choices, add) -> str | float | None:
    if value is None:
        return None
    if choices is not None:
        add("target", "a row with choices gives its gold as answer, not target")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or (
            isinstance(value, float) and not math.isfinite(value)):
        add("target", f"must be text or a finite number, got {_type_name(value)}")
        return None
    return value


def _groups(row: dict, add) -> tuple[str, ...]:
    """Labels to break results down by: `group` (text or list) and group_<dim> columns (as "dim=label")."""
    out: list[str] = []
    for column, value in row.items():
        if not is_group_column(column) or value is None:
            continue
        value = _decoded(value)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        labels = [_text(v) for v in values]
        if any(label is None for label in labels):
            add(column, f"must be text or a list of texts, got {_type_name(value)}")
            continue
        prefix = "" if column == "group" else column[len("group_"):] + "="
        out += [prefix + label for label in labels]
    return tuple(dict.fromkeys(out))


def check_set(items: list[Item], parser: str, problems: Problems, pairs: bool = True) -> None:
    """Unique ids; every pair has each variant once and the same choices; the parser has what it needs."""
    first: dict[str, int] = {}
    for item in items:
        if item.id in first:
            problems.add(item.row, "id", f"duplicate id {item.id!r} (first on row {first[item.id]}): make ids unique")
        first.setdefault(item.id, item.row)
        if parser in CHOICE_PARSERS and item.choices is None:
            problems.add(item.row, "choices", f'missing: parser "{parser}" needs choices on every row')
        if parser == "number" and isinstance(item.target, str) and _number(item.target) is None:
            problems.add(item.row, "target", f"{item.target!r} is not a number (parser \"number\")")
        if parser not in CHOICE_PARSERS and item.choices is not None:
            problems.add(item.row, "choices", f'parser "{parser}" ignores choices: use parser = "choice"')
    if pairs:
        _check_pairs(items, problems)


def _check_pairs(items: list[Item], problems: Problems) -> None:
    pairs: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        if item.pair is not None:
            pairs[item.pair].append(item)
    variants = sorted({i.variant for i in items if i.variant is not None})
    for pair, members in pairs.items():
        names = [m.variant for m in members]
        for m in members:
            if names.count(m.variant) > 1 and m is not next(x for x in members if x.variant == m.variant):
                problems.add(m.row, "variant", f"pair {pair!r} has variant {m.variant!r} twice: one row per variant")
        missing = [v for v in variants if v not in names]
        if missing:
            problems.add(members[0].row, "pair", f"pair {pair!r} is missing variant(s) {', '.join(map(repr, missing))}"
                                                 f" (the set's variants: {', '.join(variants)}): add the row(s)")
        for m in members[1:]:
            if m.choices != members[0].choices:
                problems.add(m.row, "choices", f"pair {pair!r}: choices differ from row {members[0].row}'s; the "
                                               f"variants of a pair must have the same choices")


def _number(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None
