"""The README's config reference, rendered from the schema in config/sweep.py (so the two cannot drift).

`python -m fairsweep.config.doc README.md` rewrites the block between the markers; tests/test_config.py
fails when the README's block differs from `render()`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .sweep import ENV_KNOBS, ModelSpec, SweepConfig
from .problems import expect_of, show

BEGIN = "<!-- config-reference: generated from config/sweep.py by `python -m fairsweep.config.doc README.md` -->"
END = "<!-- /config-reference -->"
_TOML_DEFAULTS = {(ModelSpec, "name"): "the model id, `/` as `-`", (ModelSpec, "model"): "required"}


def _default(schema: type, key: str) -> str:
    if (schema, key) in _TOML_DEFAULTS:
        return _TOML_DEFAULTS[(schema, key)]
    info = schema.__pydantic_fields__[key]
    value: Any = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, tuple) and value and all(isinstance(v, ModelSpec) for v in value):
        return " ".join(f"`model = {show(v.model)}`" for v in value)
    return "none" if value == () else f"`{show(value)}`"


def _table(schema: type) -> list[str]:
    rows = ["| key | default | must be | what it does |", "|---|---|---|---|"]
    for key, info in schema.__pydantic_fields__.items():
        cells = [f"`{key}`", _default(schema, key), expect_of(schema, key) or "", info.description or ""]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return rows


def render() -> str:
    """The whole reference block, markers included."""
    lines = [BEGIN, "", "Top level:", "", *_table(SweepConfig), "", "`[[models]]` and `[[judges]]` tables:", "",
             *_table(ModelSpec), "", "Environment variables that take numbers (checked before anything runs):", "",
             "| variable | must be |", "|---|---|"]
    lines += [f"| `{name}` | a whole number from {low} to {high} ({what}) |" for name, (what, low, high) in
              ENV_KNOBS.items()]
    return "\n".join([*lines, "", END])


def replace_block(text: str, block: str) -> str:
    """`text` with the marked block replaced (ValueError when the markers are missing)."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + block + text[end:]


def current_block(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme.write_text(replace_block(readme.read_text(encoding="utf-8"), render()), encoding="utf-8")
    print(f"config reference written to {readme}")
