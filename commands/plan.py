"""`fairsweep plan` / `run --dry-run`: what the sweep would send, cost and take, without sending anything."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table

from ..benchmarks.registry import STAGES
from ..config import SweepConfig
from ..engine.estimate import ModelPlan, estimate_model, total_seconds
from ..engine.runner import plan_work
from ..records import Prompt
from ..storage.batches import live_request_ids
from ..storage.cache import cache_sources
from ..storage.checkpoint import remaining
from ..storage.db import open_db

# Judge prompts wrap a target prompt and its answer in instructions of about this many tokens.
JUDGE_TEMPLATE_TOKENS = 450


def build_plan(config: SweepConfig, prompts: list[Prompt]) -> list[ModelPlan]:
    """Estimates per model (and per judge, for benchmarks with a judge stage), reading the DB if it exists."""
    conn = open_db(config.db, read_only=True) if os.path.exists(config.db) else None
    try:
        plans = []
        planned = plan_work(config, prompts, list(config.models))
        for spec in config.models:
            items = planned[spec.name]
            todo = remaining(conn, items) if conn else items
            in_batch = live_request_ids(conn, config.run) if conn else set()
            cached = set(cache_sources(conn, todo)) if conn else set()
            to_send = [i for i in todo if i.request_id not in cached and i.request_id not in in_batch]
            output, latency = _observed(conn, spec.name)
            plan = estimate_model(spec, to_send, len(items) - len(todo), len(cached), output, latency)
            plan.in_batch = len(todo) - len(to_send) - len(cached)
            plan.planned += plan.in_batch
            plans.append(plan)
        judged = {p.benchmark for p in prompts if p.benchmark in STAGES}  # [[judges]] run in the later stage
        for judge in config.judges if judged else ():
            targets = [i for spec in config.models for i in planned[spec.name] if i.prompt.benchmark in judged]
            output, latency = _observed(conn, judge.name)
            extra = JUDGE_TEMPLATE_TOKENS + max(s.max_tokens for s in config.models)
            plan = estimate_model(judge, targets, 0, 0, output, latency, extra_input_tokens=extra)
            plan.name, plan.judge = f"{judge.name} (judge)", True
            plans.append(plan)
        return plans
    finally:
        if conn:
            conn.close()


def _observed(conn, name: str) -> tuple[float | None, float | None]:
    """Mean completion tokens and median latency already stored for this model name in the DB."""
    if conn is None:
        return None, None
    mean_tokens, median_ms = conn.execute("""
        SELECT avg(s.completion_tokens), median(s.latency_ms) FILTER (WHERE s.latency_ms > 0)
        FROM responses s JOIN requests r USING (request_id) JOIN attempts a ON a.attempt_id = s.attempt_id
        WHERE r.model = ? AND a.outcome <> 'batch'""", [name]).fetchone()  # a batch's turnaround is no latency
    return mean_tokens, (median_ms / 1000 if median_ms else None)


def print_plan(config: SweepConfig, plans: list[ModelPlan]) -> None:
    table = Table(title=f"plan for run {config.run} ({config.db})")
    for col in ("model", "adapter", "planned", "stored", "cached", "to send", "input tok", "output tok",
                "tokens by", "cost $", "batch $", "time", "bound by", "in batch"):
        table.add_column(col, justify="left" if col in ("model", "adapter", "tokens by", "bound by") else "right")
    for p in plans:
        table.add_row(p.name, p.adapter, str(p.planned), str(p.stored), str(p.cached), str(p.to_send),
                      f"{p.input_tokens:,}", f"{p.output_tokens:,}", p.token_method,
                      "unknown" if p.cost_usd is None else f"{p.cost_usd:,.2f}", _batch_cost(p), _duration(p.seconds),
                      p.bound_by, str(p.in_batch))
    known = [p.cost_usd for p in plans if p.cost_usd is not None]
    unknown = [p.name for p in plans if p.cost_usd is None]
    cost = f"${sum(known):,.2f}" + (f" + unknown ({', '.join(unknown)})" if unknown else "")
    table.add_section()
    table.add_row("total", "", str(sum(p.planned for p in plans)), str(sum(p.stored for p in plans)),
                  str(sum(p.cached for p in plans)), str(sum(p.to_send for p in plans)),
                  f"{sum(p.input_tokens for p in plans):,}", f"{sum(p.output_tokens for p in plans):,}", "",
                  cost, "", _duration(stage_seconds(plans)), "", str(sum(p.in_batch for p in plans)))
    Console(width=200).print(table)


def _batch_cost(plan: ModelPlan) -> str:
    """The batch price of the same requests: '~' marks an estimate (half the synchronous price)."""
    if plan.batch_price in ("-", "unknown"):
        return plan.batch_price
    return ("~" if plan.batch_price == "estimate" else "") + f"{plan.batch_cost_usd:,.2f}"


def stage_seconds(plans: list[ModelPlan]) -> float:
    """Targets run at once; a judge stage starts when they are done."""
    judges = [p for p in plans if p.judge]
    targets = [p for p in plans if p not in judges]
    return total_seconds(targets) + total_seconds(judges)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
