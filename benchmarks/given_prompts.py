"""Which committed answers a labeller can label from the prompt the run gave with them (registry `label`)."""

from __future__ import annotations

from collections.abc import Mapping

from ..records import Prompt


def split_by_prompt(responses: list, prompts: Mapping[str, Prompt] | None, benchmark: str
                    ) -> tuple[list[tuple[str, Prompt]], list[str]]:
    """((request_id, prompt) of the answers given with a prompt of `benchmark`, the ids of the answers given
    without one, whose prompt the labeller reads from the DB). An answer given with another benchmark's prompt is
    in neither."""
    prompts = prompts or {}
    given = [(r.request_id, prompt) for r in responses
             if (prompt := prompts.get(r.request_id)) is not None and prompt.benchmark == benchmark]
    return given, [r.request_id for r in responses if r.request_id not in prompts]
