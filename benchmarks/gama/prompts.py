"""GAMA-Bench scenarios -> engine prompts: two per scenario (male actor, then female actor), pair-adjacent."""

from __future__ import annotations

from ...config import SweepConfig
from ...records import Prompt
from ..sampling import UNIT_KEY
from .compile import compile_all
from .schema import Scenario, load_scenarios, runnable

BENCHMARK = "gama"


def build_prompts(scenarios: list[Scenario]) -> list[Prompt]:
    """Single-turn user prompts keyed "<scenario_id>:<actor_gender>", ordered by scenario id then male,
    female, so --limit with an even N keeps whole pairs; the pair is one unit for --sample."""
    prompts = []
    for record in compile_all(scenarios):
        metadata = {k: record[k] for k in ("scenario_id", "track", "dimension", "severity", "style",
                                           "relationship", "actor_gender")}
        metadata["stratum"] = "/".join(record[k] for k in ("track", "dimension", "severity", "style"))
        metadata[UNIT_KEY] = record["scenario_id"]
        prompts.append(Prompt(BENCHMARK, record["key"], ({"role": "user", "content": record["prompt"]},),
                              metadata))
    return prompts


def check_judges(config: SweepConfig) -> None:
    """Refuse unusable judge settings before any target request is sent."""
    from .judge import structured_spec
    for judge in config.judges:
        structured_spec(judge)


def load(config: SweepConfig, data_dir: str | None = None) -> list[Prompt]:
    """The registry's loader: config.gama_scenarios (a file in the schema) or the bundled set; scenarios a
    review rejected are left out. data_dir is MRNI-BB's and not used here."""
    check_judges(config)
    return build_prompts(runnable(load_scenarios(config.gama_scenarios)))
