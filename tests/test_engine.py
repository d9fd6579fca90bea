"""The engine against the real simulated provider on 127.0.0.1 and a real DuckDB file."""

from __future__ import annotations

from helpers import make_prompts, rows, sim_model, sweep
from fairsweep.engine.runner import run_sweep
from fairsweep.engine.retry import RetryPolicy
from fairsweep.sim.state import prompt_fingerprint

FAST = RetryPolicy(max_attempts=8, backoff_initial_s=0.02, backoff_max_s=0.3)


def test_declared_limits_are_respected_without_a_single_429(sim, db_path):
    server = sim("--rpm", "1200", "--window-s", "1")  # 20 requests per one-second window
    config = sweep(db_path, [sim_model(server, rpm=1200, max_concurrency=16)])
    outcome = run_sweep(config, make_prompts(70), command="test", progress=False, policy=FAST)
    stats = server.stats()
    assert outcome.complete
    assert stats["rate_limited"] == 0
    assert stats["ok"] == 70
    assert max(stats["received_by_second"].values()) <= 20
    assert rows(db_path, "SELECT count(*) FROM results WHERE status = 'ok'") == [(70,)]


def test_retry_after_is_honoured(sim, db_path):
    server = sim("--rpm", "120", "--window-s", "1", "--retry-after-format", "ms",  # 2 per second
                 "--no-quota-headers")  # (with them, the engine keeps to the quota they report: no 429 to honour)
    config = sweep(db_path, [sim_model(server, max_concurrency=4)])  # no declared limit
    outcome = run_sweep(config, make_prompts(10), command="test", progress=False, policy=FAST)
    assert outcome.complete
    stats = server.stats()
    assert stats["ok"] == 10
    assert 0 < stats["rate_limited"] <= 24  # a client ignoring the hint would send hundreds
    # After a 429 asking for R seconds, that request is not sent again before R seconds passed.
    limited = rows(db_path, """
        SELECT a.request_id, a.started_at + to_milliseconds(a.latency_ms) AS answered, a.retry_after_s,
               (SELECT min(b.started_at) FROM attempts b
                WHERE b.request_id = a.request_id AND b.started_at > a.started_at) AS next_try
        FROM attempts a WHERE a.outcome = 'rate_limited'""")
    assert limited and all(r[2] is not None for r in limited)
    for _, answered, retry_after, next_try in limited:
        assert next_try is not None
        assert (next_try - answered).total_seconds() >= retry_after - 0.02


def test_every_transient_fault_is_retried_to_completion(sim, db_path):
    server = sim("--fault-500", "0.05", "--fault-503", "0.05", "--fault-malformed", "0.04",
                 "--fault-truncated", "0.04", "--fault-empty-choices", "0.03", "--fault-reset", "0.03",
                 "--fault-hang", "0.02", "--hang-s", "3", "--latency-ms", "2")
    config = sweep(db_path, [sim_model(server, timeout_s=0.5, max_concurrency=16)])
    prompts = make_prompts(300)
    outcome = run_sweep(config, prompts, command="test", progress=False, policy=FAST)
    assert outcome.complete, outcome
    stats = server.stats()
    assert all(stats["faults"][kind] > 0 for kind in ("500", "503", "malformed", "truncated", "reset"))
    assert rows(db_path, "SELECT count(*), count(DISTINCT request_id) FROM responses") == [(300, 300)]
    classes = {r[0] for r in rows(db_path, "SELECT DISTINCT error_class FROM attempts WHERE outcome='transient'")}
    assert {"http_500", "http_503", "malformed_body", "connection"} <= classes
    # A 200 with an unusable body is never stored as an answer: every stored text is the clean answer.
    clean = sim()
    expected = run_clean_answers(clean, prompts)
    stored = dict(rows(db_path, "SELECT r.prompt_key, s.text FROM responses s JOIN requests r USING (request_id)"))
    assert stored == expected


def run_clean_answers(server, prompts) -> dict[str, str]:
    import json
    import urllib.request
    answers = {}
    for p in prompts:
        body = json.dumps({"model": "sim-model", "messages": list(p.messages), "temperature": 0.0,
                           "max_tokens": 64}).encode()
        req = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            answers[p.key] = json.loads(resp.read())["choices"][0]["message"]["content"]
    return answers


def test_per_prompt_permanent_errors_are_stored_once_and_not_retried(sim, db_path):
    server = sim("--context-limit", "30", "--models", "sim-model")
    prompts = make_prompts(6) + make_prompts(2, words=200)[:2]
    prompts = prompts[:6] + [type(p)(p.benchmark, f"long{i}", p.messages, p.metadata) for i, p in enumerate(prompts[6:])]
    good = sim_model(server, name="good")
    outcome = run_sweep(sweep(db_path, [good]), prompts, command="test", progress=False, policy=FAST)
    assert outcome.complete  # per-prompt final failures are a finished outcome
    (model,) = outcome.models
    assert model.stored == 6 and model.failed == 2
    assert rows(db_path, "SELECT error_class, count(*) FROM attempts WHERE outcome='permanent' GROUP BY 1") \
        == [("context_length", 2)]
    per_prompt = server.stats()["per_prompt"]
    assert all(v["received"] == 1 for v in per_prompt.values())  # never a retry
    assert rows(db_path, "SELECT count(*) FROM results WHERE status = 'failed'") == [(2,)]
    # A resume does not send them again.
    server.reset_stats()
    again = run_sweep(sweep(db_path, [good]), prompts, command="test", progress=False, policy=FAST)
    assert again.complete and server.stats()["requests"] == 0


def test_an_unknown_model_stops_that_model_and_its_prompts_stay_pending(sim, db_path):
    """A 404 model_not_found says the configuration is wrong, not the prompt: after a few of them the
    model stops, nothing is stored as final, and the other model carries on."""
    server = sim("--models", "sim-model")
    good = sim_model(server, name="good")
    unknown = sim_model(server, name="unknown", model="no-such-model", max_concurrency=2)
    outcome = run_sweep(sweep(db_path, [good, unknown]), make_prompts(30), command="test", progress=False,
                        policy=FAST)
    assert not outcome.complete
    by_model = {o.name: o for o in outcome.models}
    assert by_model["good"].stored == 30 and by_model["good"].missing == 0
    stopped = by_model["unknown"]
    assert stopped.failed == 0 and stopped.missing == 30 and "no-such-model" in stopped.stopped
    assert "model_not_found" in stopped.last_errors
    assert server.stats()["requests"] - 30 <= 5  # three strikes, plus what was in flight
    assert rows(db_path, "SELECT DISTINCT status FROM results WHERE model = 'unknown'") == [("pending",)]
    assert rows(db_path, "SELECT DISTINCT outcome FROM attempts a JOIN requests r USING (request_id) "
                         "WHERE r.model = 'unknown'") == [("config",)]


def test_auth_failure_stops_only_that_model_and_never_leaks_the_key(sim, db_path, monkeypatch):
    secret = "sk-simsecret-0123456789abcdefghij"
    server = sim("--api-key", secret)
    monkeypatch.setenv("SIM_GOOD_KEY", secret)
    monkeypatch.setenv("SIM_BAD_KEY", "sk-wrongwrong-0123456789abcdefghij")
    good = sim_model(server, name="good", api_key_env="SIM_GOOD_KEY", max_concurrency=2)
    bad = sim_model(server, name="bad", api_key_env="SIM_BAD_KEY", max_concurrency=2)
    outcome = run_sweep(sweep(db_path, [good, bad]), make_prompts(40), command="test", progress=False, policy=FAST)
    by_model = {o.name: o for o in outcome.models}
    assert not outcome.complete
    assert by_model["good"].stored == 40 and by_model["good"].stopped is None
    assert by_model["bad"].stored == 0 and "SIM_BAD_KEY" in by_model["bad"].stopped
    assert by_model["bad"].not_sent == 40  # the request that met the 401 is back in the queue too
    assert server.stats()["errors"]["401"] <= 2  # stopped at once: at most one try per in-flight slot
    dumped = rows(db_path, "SELECT string_agg(coalesce(error_message, ''), ' ') FROM attempts")[0][0] or ""
    dumped += rows(db_path, "SELECT string_agg(config::VARCHAR, ' ') FROM runs")[0][0]
    assert secret not in dumped and "sk-wrongwrong" not in dumped


def test_resume_sends_only_what_is_missing(sim, db_path):
    server = sim()
    spec = sim_model(server)
    prompts = make_prompts(30)
    run_sweep(sweep(db_path, [spec]), prompts[:12], command="test", progress=False, policy=FAST)
    server.reset_stats()
    outcome = run_sweep(sweep(db_path, [spec]), prompts, command="test", progress=False, policy=FAST)
    assert outcome.complete and outcome.models[0].already_done == 12
    sent = set(server.stats()["per_prompt"])
    assert sent == {prompt_fingerprint(list(p.messages)) for p in prompts[12:]}
    assert rows(db_path, "SELECT count(*), count(DISTINCT (prompt_key, sample)) FROM results") == [(30, 30)]


def test_samples_are_separate_requests(sim, db_path):
    server = sim()
    spec = sim_model(server, samples=3, temperature=0.7)
    outcome = run_sweep(sweep(db_path, [spec]), make_prompts(4), command="test", progress=False, policy=FAST)
    assert outcome.complete
    assert rows(db_path, "SELECT sample, count(*) FROM results GROUP BY 1 ORDER BY 1") == [(0, 4), (1, 4), (2, 4)]
    assert server.stats()["ok"] == 12


def test_an_output_check_retries_then_records_a_failure_never_a_silent_drop(sim, db_path, tmp_path):
    import json
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"rules": [{"contains": "Question 1:", "answer": "not json"}],
                                   "default": '{"ok": true}'}))
    server = sim("--answers", str(answers))

    def check(item, text):
        try:
            json.loads(text)
        except ValueError:
            return "not valid JSON"
        return None

    outcome = run_sweep(sweep(db_path, [sim_model(server)]), make_prompts(3), command="test", progress=False,
                        policy=FAST, check=check)
    assert outcome.complete and outcome.models[0].stored == 2 and outcome.models[0].failed == 1
    assert rows(db_path, "SELECT prompt_key, status, last_error_class FROM results ORDER BY 1") == [
        ("p00000", "ok", None), ("p00001", "failed", "invalid_output"), ("p00002", "ok", None)]
    tries = rows(db_path, "SELECT count(*) FROM attempts a JOIN requests r USING (request_id) "
                          "WHERE r.prompt_key = 'p00001' AND a.outcome = 'transient'")[0][0]
    assert tries == FAST.max_attempts
    assert server.stats()["per_prompt"] and rows(db_path, "SELECT count(*) FROM responses") == [(2,)]
