"""An `anthropic/` model with api_base goes through litellm to the simulated Anthropic Messages API:
answers, usage and cost stored; 429 with retry-after honoured; 529 retried; 401 stops the model; litellm
adds no retries of its own and fetches nothing from the network."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pytest

from helpers import fairsweep_cmd, make_prompts, rows, sweep
from fairsweep.config import ModelSpec
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.retry import RetryPolicy
from fairsweep.providers.pricing import model_price
from fairsweep.providers.registry import adapter_name

FAST = RetryPolicy(max_attempts=8, backoff_initial_s=0.02, backoff_max_s=0.3)
MODEL = "anthropic/claude-haiku-4-5"  # priced in litellm's packaged map
KEY_ENV = "FAIRSWEEP_TEST_ANTHROPIC_KEY"
KEY = "sk-ant-test-0123456789"


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def claude(server, **fields) -> ModelSpec:
    fields.setdefault("max_concurrency", 4)
    fields.setdefault("timeout_s", 5.0)
    return ModelSpec(name="claude", model=MODEL, api_base=server.root_url, api_key_env=KEY_ENV, **fields)


def chat_answer(server, messages, max_tokens: int) -> str:
    """What the simulated server answers the same prompt on its OpenAI route."""
    body = json.dumps({"model": "m", "messages": messages, "max_tokens": max_tokens, "temperature": 0.0}).encode()
    request = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


def test_answers_usage_and_cost_are_stored_and_litellm_adds_no_retries(sim, db_path, key):
    server = sim("--api-key", KEY, "--fault-500", "0.1", "--fault-seed", "3")
    spec = claude(server)
    assert adapter_name(spec) == "litellm"
    prompts = make_prompts(20)
    outcome = run_sweep(sweep(db_path, [spec]), prompts, command="test", progress=False, policy=FAST)
    assert outcome.complete, outcome
    stats = server.stats()
    assert stats["paths"].get("/v1/chat/completions", 0) == 0 and stats["paths"]["/v1/messages"] == stats["requests"]
    assert stats["faults"]["500"] > 0
    assert rows(db_path, "SELECT count(*) FROM attempts") == [(stats["requests"],)]  # one HTTP call per attempt
    price = model_price(MODEL)
    stored = rows(db_path, "SELECT r.prompt_key, s.text, s.prompt_tokens, s.completion_tokens, s.cost_usd, "
                           "s.provider_model FROM responses s JOIN requests r USING (request_id) ORDER BY 1")
    assert len(stored) == 20
    by_key = {p.key: p for p in prompts}
    clean = sim("--api-key", KEY)  # same seed, no faults: the answers the first server meant to give
    for key_, text, p_tokens, c_tokens, cost, provider_model in stored:
        assert text == chat_answer(clean, list(by_key[key_].messages), spec.max_tokens)
        assert p_tokens > 0 and c_tokens > 0 and provider_model == "claude-haiku-4-5"
        expected = p_tokens * price["input_cost_per_token"] + c_tokens * price["output_cost_per_token"]
        assert cost == pytest.approx(expected)


def test_a_429_waits_as_long_as_retry_after_says(sim, db_path, key):
    server = sim("--api-key", KEY, "--rpm", "120", "--window-s", "1")  # 2 requests per second
    outcome = run_sweep(sweep(db_path, [claude(server)]), make_prompts(8), command="test", progress=False,
                        policy=FAST)
    assert outcome.complete
    stats = server.stats()
    assert stats["ok"] == 8 and 0 < stats["rate_limited"] <= 20
    limited = rows(db_path, """
        SELECT a.started_at + to_milliseconds(a.latency_ms), a.retry_after_s, a.http_status,
               (SELECT min(b.started_at) FROM attempts b WHERE b.request_id = a.request_id AND b.started_at > a.started_at)
        FROM attempts a WHERE a.outcome = 'rate_limited'""")
    assert limited and all(r[1] is not None and r[1] >= 1 and r[2] == 429 for r in limited)
    for answered, retry_after, _, next_try in limited:
        assert (next_try - answered).total_seconds() >= retry_after - 0.02


def test_529_overloaded_is_retried_to_completion(sim, db_path, key):
    server = sim("--api-key", KEY, "--fault-529", "0.3", "--fault-seed", "5")
    outcome = run_sweep(sweep(db_path, [claude(server)]), make_prompts(15), command="test", progress=False,
                        policy=FAST)
    assert outcome.complete
    assert server.stats()["faults"]["529"] > 0
    assert rows(db_path, "SELECT DISTINCT outcome, error_class, http_status FROM attempts WHERE outcome <> 'ok'") \
        == [("transient", "overloaded", 529)]
    assert rows(db_path, "SELECT count(DISTINCT request_id) FROM responses") == [(15,)]


def test_401_stops_the_model_and_leaves_its_requests_pending(sim, db_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-ant-wrong-key-000")
    server = sim("--api-key", KEY)
    outcome = run_sweep(sweep(db_path, [claude(server)]), make_prompts(30), command="test", progress=False,
                        policy=FAST)
    model = outcome.models[0]
    assert not outcome.complete and model.stopped and "authentication_error" in model.stopped
    assert "sk-ant-wrong-key-000" not in model.stopped
    assert server.stats()["requests"] <= 4  # at most one per concurrency slot
    assert rows(db_path, "SELECT DISTINCT outcome FROM attempts") == [("auth",)]
    assert rows(db_path, "SELECT status, count(*) FROM results GROUP BY 1") == [("pending", 30)]


def test_fairsweep_run_with_an_anthropic_gateway_stores_every_answer(sim, tmp_path, mrni_dir):
    """The reported bug: api_base used to switch an anthropic/ model to /chat/completions (404, all failed)."""
    server = sim("--api-key", KEY)
    db = tmp_path / "a.duckdb"
    config = tmp_path / "sweep.toml"
    config.write_text(f'db = "{db}"\nrun = "claude"\nflush_ms = 100\n[[models]]\nname = "claude"\nmodel = "{MODEL}"\n'
                      f'api_base = "{server.root_url}"\napi_key_env = "{KEY_ENV}"\nmax_concurrency = 4\n')
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), KEY_ENV: KEY}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)  # fairsweep sets it itself: litellm must fetch nothing
    result = subprocess.run(fairsweep_cmd("run", "--config", str(config), "--limit", "10", "--no-progress"),
                            env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "cost map" not in result.stderr.lower() and "raw.githubusercontent" not in result.stderr
    assert rows(str(db), "SELECT status, count(*) FROM results GROUP BY 1") == [("ok", 10)]
    assert server.stats()["paths"] == {"/v1/messages": 10}


def test_anthropic_reset_times_count_only_for_the_limit_that_is_used_up():
    from datetime import datetime

    from fairsweep.providers.ratelimit_headers import retry_after_seconds
    now = datetime.fromisoformat("2030-01-01T00:00:00+00:00").timestamp()
    headers = {"anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": "2030-01-01T00:00:10Z",
               "anthropic-ratelimit-tokens-remaining": "5000",
               "anthropic-ratelimit-tokens-reset": "2030-01-01T00:01:00Z"}
    assert retry_after_seconds(headers, now) == 10.0
    assert retry_after_seconds({**headers, "retry-after": "3"}, now) == 3.0  # retry-after wins
