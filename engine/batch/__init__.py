"""Batch mode: a model with `batch = true` is sent through its provider's batch API instead of one call per
request. The runner hands its remaining requests to a BatchSender (sender.py), which records every batch in
DuckDB before submitting it, re-attaches to batches a killed run left in flight, polls with backoff, and
turns each request's result into the same attempt and response rows a synchronous answer makes (outcome
'batch'). This module stays light: a run without batches never imports the sender or its adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config import ModelSpec, SweepConfig


def batched_specs(conn, config: SweepConfig, specs: list[ModelSpec]) -> list[ModelSpec]:
    """The specs this session must batch: batch models, and any model with batches still in flight."""
    if not any(s.batch for s in specs) and not _has_batches(conn):
        return []
    from ...storage.batches import live_batches

    live = {b.model for b in live_batches(conn, config.run, [s.name for s in specs])}
    return [s for s in specs if s.batch or s.name in live]


def _has_batches(conn) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM batches)").fetchone()[0]


def cancel_batches(config: SweepConfig, command: str) -> tuple[int, bool]:
    from .cancel import cancel_batches as cancel
    return cancel(config, command)
