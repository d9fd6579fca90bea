"""Batch mode on the simulated server, for both batch APIs (OpenAI Files + Batches, Anthropic Message
Batches): every answer stored once, errored requests re-batched, an expired batch's requests sent again,
permanent errors stored, a killed run re-attaching without re-submitting, Ctrl-C and cancel, plan and
status, GAMA judges."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest

from helpers import StderrLines, fairsweep_cmd, rows, sweep
from fairsweep.config import ModelSpec
from fairsweep.engine.batch.split import split
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.retry import RetryPolicy
from fairsweep.records import Prompt
from fairsweep.providers.pricing import model_price

FAST = RetryPolicy(max_attempts=4, backoff_initial_s=0.02, backoff_max_s=0.2)
KEY_ENV, KEY = "FAIRSWEEP_TEST_BATCH_KEY", "sk-batch-test-0123456789"
MODELS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-haiku-4-5"}  # both priced for batches


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def batch_model(server, api: str, **fields) -> ModelSpec:
    base = server.base_url if api == "openai" else server.root_url
    return ModelSpec(name=api, model=MODELS[api], api_base=base, api_key_env=KEY_ENV, batch=True, timeout_s=5.0,
                     **fields)


def prompts(n: int, long_every: int = 0) -> list[Prompt]:
    """n prompts; every `long_every`-th one too long for a --context-limit of 40 tokens."""
    return [Prompt("toy", f"p{i:04d}", ({"role": "user", "content": f"Question {i}: " + "word " * (
        200 if long_every and i % long_every == 0 else 6)},), {"stratum": "s"}) for i in range(n)]


def clean_answer(server, prompt: Prompt, max_tokens: int) -> str:
    body = json.dumps({"model": "m", "messages": list(prompt.messages), "max_tokens": max_tokens,
                       "temperature": 0.0}).encode()
    request = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


# --------------------------------------------------------------------------- in-process: the whole cycle

@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_every_answer_is_stored_once_errors_rebatched_expired_sent_again_permanent_stored(sim, db_path, api):
    server = sim("--api-key", KEY, "--batch-duration-s", "0.8", "--batch-error", "0.15", "--batch-expire-first", "1",
                 "--context-limit", "40")
    spec = batch_model(server, api)
    asked = prompts(40, long_every=10)
    outcome = run_sweep(sweep(db_path, [spec], batch_poll_s=0.1), asked, command="test", progress=False,
                        policy=FAST)
    model = outcome.models[0]
    assert outcome.complete, outcome
    assert (model.stored, model.failed) == (36, 4)
    # the 4 long prompts: a permanent context_length failure each, stored once, never sent again
    assert rows(db_path, "SELECT count(DISTINCT request_id), count(*) FROM attempts WHERE outcome = 'permanent' "
                         "AND error_class = 'context_length'") == [(4, 4)]
    assert rows(db_path, "SELECT status, count(*) FROM results GROUP BY 1 ORDER BY 1") == [("failed", 4), ("ok", 36)]
    assert rows(db_path, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(36, 36)]
    assert rows(db_path, "SELECT count(*) FROM attempts WHERE outcome = 'batch'") == [(36,)]
    # the answers are the server's answers to those prompts
    clean = sim("--api-key", KEY)
    stored = dict(rows(db_path, "SELECT r.prompt_key, s.text FROM responses s JOIN requests r USING (request_id)"))
    assert stored == {p.key: clean_answer(clean, p, spec.max_tokens) for p in asked if p.key in stored}
    # each request went into a batch once, plus once more per transient failure (errors, expiry) it had
    stats = server.stats()["batches"]
    assert stats["expired"] == 1 and stats["errored"] > 0 and stats["created"] >= 3
    again = dict(rows(db_path, "SELECT request_id, count(*) FILTER (WHERE outcome = 'transient') FROM attempts "
                               "GROUP BY 1"))
    assert stats["custom_ids"] == {rid: 1 + n for rid, n in again.items()}
    classes = dict(rows(db_path, "SELECT error_class, count(*) FROM attempts WHERE outcome = 'transient' GROUP BY 1"))
    assert classes["batch_expired"] > 0 and classes["http_500"] == stats["errored"]
    # batches recorded with their counts; cost at the provider's batch price
    batches = rows(db_path, "SELECT status, requests, succeeded + errored + unfinished, price_source FROM batches "
                            "ORDER BY created_at")
    assert batches[0][0] == "expired" and all(b[0] in ("completed", "expired") and b[1] == b[2] for b in batches)
    assert {b[3] for b in batches} == {"litellm price map (batch)"}
    price = model_price(spec.model)
    for p_tokens, c_tokens, cost in rows(db_path, "SELECT prompt_tokens, completion_tokens, cost_usd FROM responses"):
        assert cost == pytest.approx(p_tokens * price["input_cost_per_token_batches"]
                                     + c_tokens * price["output_cost_per_token_batches"])
    assert rows(db_path, "SELECT count(*) FROM attempt_errors WHERE outcome = 'batch'") == [(0,)]


def test_a_batch_is_split_by_the_providers_request_and_byte_limits():
    lines = [b"x" * 100] * 7
    assert split(lines, max_requests=3, max_bytes=10 ** 6) == [[0, 1, 2], [3, 4, 5], [6]]
    assert split(lines, max_requests=100, max_bytes=64 * 1024 + 250) == [[0, 1], [2, 3], [4, 5], [6]]
    with pytest.raises(ValueError):
        split([b"x" * 1000], max_requests=10, max_bytes=64 * 1024 + 500)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_batch_created_by_a_run_killed_before_recording_its_id_is_found_not_created_again(sim, db_path, api):
    """The window between the provider's answer to 'create' and the DB update: the next run finds it."""
    import asyncio
    import dataclasses
    import uuid

    from fairsweep.engine.attempts import now_utc
    from fairsweep.providers.registry import make_batch_adapter
    from fairsweep.storage.batches import BatchRecord, record_batch
    from fairsweep.storage.checkpoint import plan_requests, register_run
    from fairsweep.storage.db import open_db
    from fairsweep.engine.work import plan_items

    server = sim("--api-key", KEY, "--batch-duration-s", "0.5")
    spec = batch_model(server, api)
    config = sweep(db_path, [spec], batch_poll_s=0.1)
    items = plan_items(config.run, spec, prompts(6))
    conn = open_db(db_path)
    register_run(conn, config, "killed")
    plan_requests(conn, items)
    adapter = make_batch_adapter(spec)
    lines = [adapter.encode(i) for i in items]
    record = BatchRecord(uuid.uuid4().hex, config.run, spec.name, adapter.api, adapter.api_base, "preparing",
                         [i.request_id for i in items], "killed-session", now_utc())
    record_batch(conn, record)
    conn.close()

    async def created_then_killed():
        file_id = await adapter.upload(lines, record.batch_id)
        await adapter.create(lines, file_id, record.batch_id)
        await adapter.aclose()
    asyncio.run(created_then_killed())
    outcome = run_sweep(dataclasses.replace(config), prompts(6), command="resume", progress=False, policy=FAST)
    assert outcome.complete
    assert server.stats()["batches"]["created"] == 1
    assert rows(db_path, "SELECT status, provider_batch_id IS NOT NULL FROM batches") == [("completed", True)]
    assert rows(db_path, "SELECT count(*) FROM responses") == [(6,)]


# --------------------------------------------------------------------------- GAMA judges in batch mode

def test_gama_judges_run_in_batch_mode_with_the_output_check(sim, db_path, tmp_path):
    from test_gama_judge import _answers, _scenario_file

    from fairsweep.benchmarks.gama import judge as J
    from fairsweep.benchmarks.gama.prompts import load
    from fairsweep.benchmarks.gama.score import score_run
    from fairsweep.config import SweepConfig
    from fairsweep.storage.db import open_db

    server = sim("--answers", str(_answers(tmp_path / "answers.json")), "--batch-duration-s", "0.3")
    target = ModelSpec(name="target", model="target-model", api_base=server.base_url, batch=True)
    judge = ModelSpec(name="judge", model="judge-model", api_base=server.base_url, max_tokens=512, batch=True)
    config = SweepConfig(db=db_path, run="r1", benchmarks=("gama",), flush_ms=50, max_attempts=3, batch_poll_s=0.1,
                         gama_scenarios=str(_scenario_file(tmp_path / "scenarios.jsonl")),
                         models=(target,), judges=(judge,))
    assert run_sweep(config, load(config), command="test", progress=False).complete
    outcome = J.stage(config, "test", False)
    assert outcome.complete
    (judged,) = outcome.models
    assert (judged.planned, judged.stored, judged.failed) == (6, 4, 2)
    assert server.stats()["paths"].get("/v1/chat/completions", 0) == 0  # nothing went the synchronous way
    # an invalid judge answer is re-batched max_attempts times, then stored as a final invalid_output failure
    assert rows(db_path, "SELECT count(*) FROM attempts WHERE error_class = 'invalid_output' AND outcome = 'transient'"
                ) == [(2 * config.max_attempts,)]
    assert rows(db_path, "SELECT count(*) FROM attempts WHERE error_class = 'invalid_output' AND outcome = 'permanent'"
                ) == [(2,)]
    conn = open_db(db_path)
    try:
        assert score_run(conn, config)["judgements"] == 4
    finally:
        conn.close()


# --------------------------------------------------------------------------- `fairsweep run` as a user runs it

def write_config(tmp_path, server, api: str, poll: float = 0.2) -> str:
    base = server.base_url if api == "openai" else server.root_url
    path = tmp_path / "sweep.toml"
    path.write_text(f'db = "{tmp_path / "b.duckdb"}"\nrun = "batched"\nflush_ms = 100\nbatch_poll_s = {poll}\n'
                    f'[[models]]\nname = "{api}"\nmodel = "{MODELS[api]}"\napi_base = "{base}"\n'
                    f'api_key_env = "{KEY_ENV}"\nbatch = true\n')
    return str(path)


def env(mrni_dir) -> dict:
    return {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir), KEY_ENV: KEY}


def wait_for_batch_progress(server, batch_id: str, timeout: float = 60) -> None:
    """Until the provider has answered some, not all, of a batch's requests."""
    deadline = time.monotonic() + timeout
    while True:
        request = urllib.request.Request(f"{server.base_url}/batches/{batch_id}",
                                         headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            counts = json.loads(resp.read())["request_counts"]
        if counts["completed"] + counts["failed"] > 0:
            assert counts["completed"] + counts["failed"] < counts["total"], "the batch ended before the cancel"
            return
        assert time.monotonic() < deadline, "the provider never answered any of the batch"
        time.sleep(0.05)


def wait_for_batches(server, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while server.stats()["batches"].get("created", 0) < n:
        assert time.monotonic() < deadline, "no batch was submitted"
        time.sleep(0.05)


def table_rows(stdout: str, first: str, keep_empty: bool = False) -> list[list[str]]:
    """The cells of the table rows whose first cell is `first` (empty cells dropped unless `keep_empty`)."""
    found = []
    for line in stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells[:1] == [first]:
            found.append(cells if keep_empty else [c for c in cells if c])
    return found


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_sigkill_while_batches_are_in_flight_then_the_same_command_reattaches(sim, tmp_path, mrni_dir, api):
    server = sim("--api-key", KEY, "--batch-duration-s", "4")
    config = write_config(tmp_path, server, api)
    db = str(tmp_path / "b.duckdb")
    command = fairsweep_cmd("run", "--config", config, "--limit", "25", "--no-progress")
    proc = subprocess.Popen(command, env=env(mrni_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = StderrLines(proc)
    stderr.wait_for("submitted 25 requests")  # printed once the batch is recorded in the DB
    proc.send_signal(signal.SIGKILL)
    stderr.finish()
    assert rows(db, "SELECT status, requests, provider_batch_id IS NOT NULL FROM batches") == [("submitted", 25, True)]
    assert rows(db, "SELECT count(*) FROM responses") == [(0,)]
    # status and `fairsweep batches` show the batch in flight; plan counts its requests as in a batch
    status = subprocess.run(fairsweep_cmd("status", "--config", config), env=env(mrni_dir), capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0 and "batches in flight" in status.stdout
    (listed,) = table_rows(status.stdout, "batched", keep_empty=True)[-1:]  # killed before any poll
    assert listed[1:3] == [api, api] and listed[4] == "submitted" and listed[6] == "25"
    plan = subprocess.run(fairsweep_cmd("plan", "--config", config, "--limit", "25"), env=env(mrni_dir),
                          capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    (planned,) = table_rows(plan.stdout, api)
    assert planned[2:6] == ["25", "0", "0", "0"] and planned[-1] == "25"  # planned, stored, cached, to send; in batch
    resumed = subprocess.run(command, env=env(mrni_dir), capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    assert "re-attached" in resumed.stderr
    stats = server.stats()["batches"]
    assert stats["created"] == 1 and set(stats["custom_ids"].values()) == {1}  # nothing submitted twice
    assert rows(db, "SELECT status, count(*) FROM results GROUP BY 1") == [("ok", 25)]
    assert rows(db, "SELECT status, succeeded FROM batches") == [("completed", 25)]
    listing = subprocess.run(fairsweep_cmd("batches", "--config", config), env=env(mrni_dir), capture_output=True,
                             text=True, timeout=60)
    assert listing.returncode == 0 and "completed" in listing.stdout


def test_ctrl_c_leaves_batches_running_says_how_to_resume_or_cancel_and_cancel_works(sim, tmp_path, mrni_dir):
    server = sim("--api-key", KEY, "--batch-duration-s", "6")
    config = write_config(tmp_path, server, "openai")
    db = str(tmp_path / "b.duckdb")
    command = fairsweep_cmd("run", "--config", config, "--limit", "30", "--no-progress")
    proc = subprocess.Popen(command, env=env(mrni_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = StderrLines(proc)
    submitted = stderr.wait_for("submitted 30 requests")  # printed once the batch is recorded in the DB
    proc.send_signal(signal.SIGINT)
    err = stderr.finish(timeout=60)
    assert proc.returncode == 130, err
    assert "still running" in err and "fairsweep batches cancel" in err and f"run --config {config}" in err
    batch_id = submitted.split()[1]
    wait_for_batch_progress(server, batch_id)  # the provider goes on answering: some is done when it is cancelled
    cancel = subprocess.run(fairsweep_cmd("batches", "cancel", "--config", config), env=env(mrni_dir),
                            capture_output=True, text=True, timeout=60)
    assert cancel.returncode == 0, cancel.stderr
    assert rows(db, "SELECT status FROM batches") == [("cancelling",)]
    resumed = subprocess.run(command, env=env(mrni_dir), capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    stats = server.stats()["batches"]
    assert stats["cancelled"] == 1 and stats["created"] == 2
    first, second = rows(db, "SELECT status, succeeded, unfinished, requests FROM batches ORDER BY created_at")
    assert first[0] == "cancelled" and 0 < first[1] < 30 and first[1] + first[2] == 30
    assert second == ("completed", first[2], 0, first[2])  # only what the cancel left unanswered was sent again
    assert rows(db, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(30, 30)]


@pytest.mark.parametrize("after", ["submit", "synchronous models"])
def test_ctrl_c_between_submitting_and_following_the_batches_still_says_they_run(sim, db_path, monkeypatch, after):
    """A real SIGINT right after the batches are submitted, or right after the synchronous models are sent: the
    run ends interrupted with its batch counted as still in flight (the summary naming it and how to cancel or
    resume), not with the bare CLI interrupt; the resumed run re-attaches and sends each request once."""
    from fairsweep.engine.batch.sender import BatchSender
    from fairsweep.engine.executors.local import LocalExecutor

    owner, method = (BatchSender, "submit") if after == "submit" else (LocalExecutor, "execute")
    original = getattr(owner, method)

    def then_ctrl_c(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return result

    server = sim("--api-key", KEY, "--batch-duration-s", "1")
    models = [batch_model(server, "openai"),
              ModelSpec(name="sync", model="sync-model", api_base=server.base_url, api_key_env=KEY_ENV)]
    config = sweep(db_path, models, batch_poll_s=0.1)
    monkeypatch.setattr(owner, method, then_ctrl_c)
    try:
        outcome = run_sweep(config, prompts(12), command="test", progress=False, policy=FAST)
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped the run: the CLI would say only `interrupted`, not that batches run")
    assert outcome.interrupted and outcome.batches_in_flight == 1
    monkeypatch.setattr(owner, method, original)
    resumed = run_sweep(config, prompts(12), command="test", progress=False, policy=FAST)
    assert resumed.complete and resumed.batches_in_flight == 0
    assert rows(db_path, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(24, 24)]
    assert server.stats()["batches"]["created"] == 1  # followed again on resume, never submitted twice


def test_plan_shows_both_prices_and_the_wait(sim, tmp_path, mrni_dir):
    server = sim()
    config = write_config(tmp_path, server, "openai")
    plan = subprocess.run(fairsweep_cmd("plan", "--config", config, "--limit", "50"), env=env(mrni_dir),
                          capture_output=True, text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    (row,) = table_rows(plan.stdout, "openai")
    # model, adapter, planned, stored, cached, to send, in tok, out tok, tokens by, cost, batch cost, time, bound by
    assert row[1] == "openai_compat (batch)"
    sync_cost, batch_cost = float(row[9]), float(row[10])
    assert batch_cost == pytest.approx(sync_cost / 2, abs=0.011)
    assert row[11] == "24h00m" and row[12].startswith("batch window")
    no_batch = subprocess.run(fairsweep_cmd("plan", "--config", config, "--limit", "50", "--model",
                                            f"gemini/gemini-2.0-flash@{server.root_url}"), env=env(mrni_dir),
                              capture_output=True, text=True, timeout=120)
    assert no_batch.returncode == 0, no_batch.stderr
    assert table_rows(no_batch.stdout, "gemini-gemini-2.0-flash")[0][10] == "-"  # no batch API: no batch price


def test_batch_prices_come_from_the_price_map_else_half_the_synchronous_price_as_an_estimate(sim, tmp_path):
    from fairsweep.config import SweepConfig
    from fairsweep.commands.plan import _batch_cost, build_plan

    server = sim()
    specs = (ModelSpec(name="mini", model="openai/gpt-4o-mini", api_base=server.base_url, batch=True),
             ModelSpec(name="deepseek", model="deepseek/deepseek-chat", api_base=server.base_url),
             ModelSpec(name="custom", model="my-model", api_base=server.base_url),
             ModelSpec(name="gemini", model="gemini/gemini-2.0-flash"))
    config = SweepConfig(db=str(tmp_path / "none.duckdb"), models=specs)
    plans = {p.name: p for p in build_plan(config, prompts(200))}
    mini, deepseek = plans["mini"], plans["deepseek"]
    price = model_price("openai/gpt-4o-mini")
    assert mini.batch_price == "price map" and mini.batch_cost_usd == pytest.approx(
        mini.input_tokens * price["input_cost_per_token_batches"]
        + mini.output_tokens * price["output_cost_per_token_batches"])
    assert mini.seconds == 24 * 3600 and deepseek.seconds < 3600  # a batch model waits for the batch window
    assert deepseek.batch_price == "estimate" and deepseek.batch_cost_usd == pytest.approx(deepseek.cost_usd / 2)
    assert _batch_cost(deepseek).startswith("~") and not _batch_cost(mini).startswith("~")
    assert (plans["custom"].batch_price, _batch_cost(plans["custom"])) == ("unknown", "unknown")  # never $0
    assert _batch_cost(plans["gemini"]) == "-"


def test_anthropic_batch_requests_are_litellms_translation_and_unsupported_parameters_are_refused():
    from fairsweep.benchmarks.gama.judge import response_format
    from fairsweep.engine.work import plan_items
    from fairsweep.errors import ConfigError
    from fairsweep.providers.registry import make_batch_adapter

    spec = ModelSpec(name="claude", model=MODELS["anthropic"], batch=True, max_tokens=300,
                     params={"response_format": response_format(ModelSpec(name="j", model=MODELS["anthropic"]))})
    adapter = make_batch_adapter(spec)
    (item,) = plan_items("r", spec, [Prompt("toy", "k", ({"role": "system", "content": "Judge."},
                                                         {"role": "user", "content": "Text"}), {})])
    line = json.loads(adapter.encode(item))
    params = line["params"]
    assert line["custom_id"] == item.request_id and adapter.api_base == "https://api.anthropic.com"
    assert params["model"] == "claude-haiku-4-5" and params["max_tokens"] == 300 and params["temperature"] == 0.0
    assert params["system"] == [{"type": "text", "text": "Judge."}]
    assert params["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Text"}]}]
    assert params["output_format"]["type"] == "json_schema" and "json_mode" not in params
    assert any(beta.startswith("structured-outputs") for beta in adapter._betas)
    seeded = ModelSpec(name="claude", model=MODELS["anthropic"], batch=True, params={"seed": 1})
    (item,) = plan_items("r", seeded, [Prompt("toy", "k", ({"role": "user", "content": "x"},), {})])
    with pytest.raises(ConfigError, match=r"does not take the parameter\(s\) \['seed'\]"):
        make_batch_adapter(seeded).encode(item)


def test_the_batch_flag_puts_every_model_and_judge_in_batch_mode(tmp_path):
    from fairsweep.cli import build_parser
    from fairsweep.config import resolve_config

    config = tmp_path / "s.toml"
    config.write_text('[[models]]\nmodel = "openai/gpt-4o-mini"\n[[judges]]\nname = "j"\nmodel = "openai/gpt-4o"\n')
    args = build_parser().parse_args(["run", "--config", str(config), "--batch"])
    resolved = resolve_config(args)
    assert [m.batch for m in (*resolved.models, *resolved.judges)] == [True, True]
    assert not resolve_config(build_parser().parse_args(["run", "--config", str(config)])).models[0].batch


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_refused_key_stops_the_batch_model_and_leaves_its_requests_pending(sim, db_path, api, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-0123456789")
    server = sim("--api-key", KEY)
    outcome = run_sweep(sweep(db_path, [batch_model(server, api)], batch_poll_s=0.1), prompts(5), command="test",
                        progress=False, policy=FAST)
    model = outcome.models[0]
    assert not outcome.complete and model.stopped and model.not_sent == 5
    assert "sk-wrong-key" not in model.stopped
    assert rows(db_path, "SELECT status, requests FROM batches") == [("failed", 5)]  # never reached the provider
    assert rows(db_path, "SELECT status, count(*) FROM results GROUP BY 1") == [("pending", 5)]
    assert server.stats()["batches"]["created"] == 0
