"""Before pressing enter: what a sweep will send, cost and take, per model, from the config and the DB.

Input tokens: litellm's tokenizer for models litellm knows (OpenAI, Anthropic, ... all offline), else
prompt characters / 4. Output tokens: the mean completion length already observed for the model in this
DB, else max_tokens (an upper bound). Cost: litellm's packaged price map; an unknown price stays unknown.
Time: the slowest of the declared RPM, the declared TPM, and concurrency x typical latency (the median
latency observed for the model, else a documented default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..config import ModelSpec
from ..providers.pricing import BATCH_PRICE_MAP, batch_cost_usd, batch_price_source, model_price
from ..providers.registry import adapter_name, batch_api
from ..records import WorkItem

DEFAULT_LATENCY_S = {"local": 0.8, "openai_compat": 1.0, "litellm": 1.5}
BATCH_WINDOW_S = 24 * 3600  # providers promise batch results within 24 h (usually much sooner)
CHARS_PER_TOKEN = 4


@dataclass
class ModelPlan:
    """The estimate for one model (or judge)."""

    name: str
    model: str
    adapter: str
    planned: int
    stored: int
    cached: int
    to_send: int
    input_tokens: int
    output_tokens: int
    token_method: str
    cost_usd: float | None
    seconds: float
    bound_by: str
    limit_key: str
    batch_cost_usd: float | None = None  # the same requests through the provider's batch API
    batch_price: str = "-"               # how that is priced: 'price map', 'estimate' (half), 'unknown', '-' (no batch API)
    in_batch: int = 0                    # requests in batches still in flight (neither stored nor to send)
    judge: bool = False                  # a judge of a later stage: it runs once the targets are done


def count_tokens(spec: ModelSpec, items: list[WorkItem]) -> tuple[int, str]:
    """Input tokens of the items, and how they were counted."""
    if model_price(spec.model) is not None and spec.api_base is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline price map, no fetch
        import litellm
        counted: dict[str, int] = {}
        total = 0
        for item in items:  # samples of a prompt share one count
            key = item.prompt.prompt_hash
            if key not in counted:
                counted[key] = litellm.token_counter(model=spec.model, messages=list(item.prompt.messages))
            total += counted[key]
        return total, "tokenizer"
    chars = sum(i.prompt.content_chars for i in items)
    return chars // CHARS_PER_TOKEN + len(items), "chars/4"


def estimate_model(spec: ModelSpec, items: list[WorkItem], stored: int, cached: int,
                   observed_output: float | None, observed_latency_s: float | None,
                   extra_input_tokens: int = 0) -> ModelPlan:
    """Requests, tokens, cost and time for the items still to send to one model."""
    input_tokens, method = count_tokens(spec, items)
    input_tokens += extra_input_tokens * len(items)
    output_per_request = observed_output if observed_output is not None else spec.max_tokens
    output_tokens = int(round(output_per_request * len(items)))
    price = model_price(spec.model)  # priced by the model id, as the adapters price each answer
    cost = None if price is None else (input_tokens * price["input_cost_per_token"]
                                       + output_tokens * price.get("output_cost_per_token", 0.0))
    if adapter_name(spec) == "local":
        cost = 0.0
    latency = observed_latency_s or DEFAULT_LATENCY_S[adapter_name(spec)]
    bounds = {"concurrency x latency": len(items) * latency / spec.max_concurrency}
    if spec.rpm:
        bounds["rpm"] = len(items) / spec.rpm * 60
    if spec.tpm:
        bounds["tpm"] = (input_tokens + output_tokens) / spec.tpm * 60
    bound_by = max(bounds, key=bounds.get)
    plan = ModelPlan(spec.name, spec.model, adapter_name(spec), len(items) + stored + cached, stored, cached,
                     len(items), input_tokens, output_tokens, method + ("" if observed_output is None else
                                                                        ", output observed"),
                     cost, bounds[bound_by], bound_by, spec.limiter_key())
    return with_batch_estimate(plan, spec)


def with_batch_estimate(plan: ModelPlan, spec: ModelSpec) -> ModelPlan:
    """The batch price beside the synchronous one; a batch model waits up to the providers' 24 h window."""
    if batch_api(spec) is None:
        return plan
    source = batch_price_source(spec.model)
    plan.batch_price = "unknown" if source is None else "price map" if source == BATCH_PRICE_MAP else "estimate"
    plan.batch_cost_usd = batch_cost_usd(spec.model, plan.input_tokens, plan.output_tokens)
    if spec.batch:
        plan.adapter += " (batch)"
        if plan.to_send:
            plan.seconds, plan.bound_by = BATCH_WINDOW_S, "batch window (≤24h, usually sooner)"
    return plan


def total_seconds(plans: list[ModelPlan]) -> float:
    """Models run at once; models sharing a limiter key share its limits, so their times add up."""
    by_key: dict[str, float] = {}
    for plan in plans:
        by_key[plan.limit_key] = by_key.get(plan.limit_key, 0.0) + plan.seconds
    return max(by_key.values(), default=0.0)
