"""The simulated server's Anthropic Messages route, over real loopback HTTP."""

from __future__ import annotations

import json

import aiohttp

from fairsweep.sim.server import SimServerProcess
from fairsweep.sim.state import prompt_fingerprint

HEADERS = {"x-api-key": "sk-ant-sim", "anthropic-version": "2023-06-01", "content-type": "application/json"}
BODY = {"model": "claude-sim", "max_tokens": 32, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Who prefers the plan?"}]}]}


async def call(sim, body=BODY, headers=HEADERS, path="/v1/messages"):
    async with aiohttp.ClientSession() as session:
        async with session.post(sim.root_url + path, data=json.dumps(body), headers=headers) as resp:
            return resp.status, resp.headers, await resp.json(content_type=None)


async def test_a_message_with_content_blocks_and_usage_the_same_answer_as_the_openai_route():
    with SimServerProcess(["--api-key", "sk-ant-sim"]) as sim:
        status, _, message = await call(sim)
        assert status == 200, message
        assert message["type"] == "message" and message["role"] == "assistant"
        assert message["content"][0]["type"] == "text" and message["content"][0]["text"]
        assert message["usage"]["input_tokens"] > 0 and message["usage"]["output_tokens"] > 0
        assert message["stop_reason"] in ("end_turn", "max_tokens")
        openai_messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who prefers the plan?"}]
        async with aiohttp.ClientSession() as session:
            async with session.post(sim.base_url + "/chat/completions", headers={"Authorization": "Bearer sk-ant-sim"},
                                    json={"model": "m", "messages": openai_messages, "max_tokens": 32}) as resp:
                chat = await resp.json()
        assert chat["choices"][0]["message"]["content"] == message["content"][0]["text"]
        stats = sim.stats()
        assert stats["per_prompt"][prompt_fingerprint(openai_messages)] == {"received": 2, "ok": 2}
        assert stats["paths"] == {"/v1/messages": 1, "/v1/chat/completions": 1}


async def test_auth_version_header_and_body_errors_are_anthropic_shaped():
    with SimServerProcess(["--api-key", "sk-ant-sim", "--models", "claude-sim"]) as sim:
        status, _, body = await call(sim, headers={**HEADERS, "x-api-key": "wrong"})
        assert status == 401 and body == {"type": "error", "error": {"type": "authentication_error",
                                                                     "message": "invalid x-api-key"}}
        no_version = {k: v for k, v in HEADERS.items() if k != "anthropic-version"}
        assert (await call(sim, headers=no_version))[0] == 400
        status, _, body = await call(sim, {k: v for k, v in BODY.items() if k != "max_tokens"})
        assert status == 400 and body["error"]["type"] == "invalid_request_error"
        status, _, body = await call(sim, {**BODY, "model": "claude-other"})
        assert status == 404 and body["error"]["type"] == "not_found_error"


async def test_429_carries_retry_after_and_anthropic_ratelimit_headers_and_529_is_overloaded():
    with SimServerProcess(["--rpm", "60", "--window-s", "1"]) as sim:
        statuses = [await call(sim) for _ in range(3)]
        limited = [s for s in statuses if s[0] == 429]
        assert limited, [s[0] for s in statuses]
        _, headers, body = limited[0]
        assert body["error"]["type"] == "rate_limit_error"
        assert int(headers["retry-after"]) >= 1
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
        assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    with SimServerProcess(["--fault-529", "1"]) as sim:
        status, _, body = await call(sim)
        assert status == 529 and body["error"]["type"] == "overloaded_error"
