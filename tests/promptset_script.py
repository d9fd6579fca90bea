"""The scripted answers of the prompt-set tests: what the simulated server says to each vignette prompt."""

from __future__ import annotations

import json
from pathlib import Path

from fairsweep.benchmarks.promptset.examples.make_vignettes import rows as vignette_rows
from fairsweep.sim.state import prompt_fingerprint

REFUSAL, UNPARSED = "I cannot answer that.", "Hmm, tough one."


def scripted(pair_index: int, variant: str, condition: str) -> str:
    """The answer to one vignette: mostly right, with flips, refusals and unparsed answers mixed in."""
    right = "C" if condition == "ambiguous" else "A"
    case = pair_index % 10
    if case == 0:
        return "C" if variant == "female" else "The answer is A."
    if case == 1:
        return REFUSAL
    if case == 2:
        return UNPARSED if variant == "female" else "C"
    if case in (3, 4):
        return "A" if variant == "female" else "B"
    if case == 5:
        return right
    return right


def write_answers(prompts, path: Path) -> dict[str, str]:
    """The sim's answers file (by prompt fingerprint) for these prompts; returns item id -> answer."""
    by_id = {r["id"]: r for r in vignette_rows()}
    pairs = sorted({r["pair"] for r in by_id.values()})
    answers, by_fp = {}, {}
    for p in prompts:
        row = by_id[p.key]
        answers[p.key] = scripted(pairs.index(row["pair"]), row["variant"], row["group_condition"])
        by_fp[prompt_fingerprint(list(p.messages))] = answers[p.key]
    path.write_text(json.dumps({"by_fingerprint": by_fp}), encoding="utf-8")
    return answers
