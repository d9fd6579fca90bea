"""A prompt set's items -> engine prompts; the item's fields (gold, pair, groups, parser) go in its metadata,
which the labeller and the SQL views read."""

from __future__ import annotations

from ...config import SweepConfig
from ...errors import ConfigError
from ...records import Prompt
from ..sampling import UNIT_KEY
from .items import CHOICE_PARSERS, Item
from .rows import load_items

META_KEY = "promptset"  # metadata[META_KEY] marks a prompt-set prompt and holds what its answers need
INSTRUCTION = "Answer with the letter of one option."


def load(name: str, config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """The registry's loader for the set `name`: its file read and checked, one prompt per row, the variants
    of a pair next to each other (so --limit and --sample keep pairs whole)."""
    spec = config.prompt_set(name)
    if spec is None:
        raise ConfigError(f"benchmark {name!r} is not a [[sets]] table of the config: add one with name = {name!r}")
    items = load_items(spec.path, spec.parser)
    options = spec.parser_options()
    return [to_prompt(name, item, options) for item in _pairs_together(items)]


def _pairs_together(items: list[Item]) -> list[Item]:
    order: dict[object, list[Item]] = {}
    for item in items:
        order.setdefault(("pair", item.pair) if item.pair is not None else ("item", item.id), []).append(item)
    return [item for members in order.values() for item in members]


def to_prompt(name: str, item: Item, options: dict) -> Prompt:
    messages = item.messages
    if item.choices is not None and options["show_choices"] and options["parser"] in CHOICE_PARSERS:
        listed = "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(item.choices))
        last = messages[-1]
        messages = (*messages[:-1], {**last, "content": f"{last['content']}\n\n{listed}\n\n{INSTRUCTION}"})
    meta = {META_KEY: {"parser": options["parser"], "pattern": options["pattern"], "field": options["field"],
                       "tolerance": options["tolerance"], "item": item.id, "choices": item.choices,
                       "answer": item.answer, "target": item.target, "groups": list(item.groups),
                       "pair": item.pair, "variant": item.variant},
            "stratum": item.variant or "all", **({"meta": item.meta} if item.meta else {})}
    if item.pair is not None:
        meta[UNIT_KEY] = item.pair
    return Prompt(name, item.id, tuple(messages), meta)
