"""Routing by protocol: the model id's provider decides the adapter; api_base only changes where requests go."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import fairsweep_cmd
from fairsweep.config import ModelSpec
from fairsweep.errors import ConfigError
from fairsweep.providers.registry import batch_api, preflight, route

GATEWAY = "http://127.0.0.1:9/v1"  # never contacted: routing is decided before any send


@pytest.mark.parametrize("fields, adapter, wire", [
    ({"model": "anthropic/claude-haiku-4-5", "api_base": GATEWAY}, "litellm", "anthropic/claude-haiku-4-5"),
    ({"model": "anthropic/claude-haiku-4-5"}, "litellm", "anthropic/claude-haiku-4-5"),
    ({"model": "gemini/gemini-2.0-flash", "api_base": GATEWAY}, "litellm", "gemini/gemini-2.0-flash"),
    ({"model": "bedrock/anthropic.claude-3-haiku", "api_base": GATEWAY}, "litellm", "bedrock/anthropic.claude-3-haiku"),
    ({"model": "vertex_ai/gemini-2.0-flash"}, "litellm", "vertex_ai/gemini-2.0-flash"),
    ({"model": "claude-haiku-4-5"}, "litellm", "claude-haiku-4-5"),  # a bare id: litellm's map names the provider
    ({"model": "openai/gpt-4o-mini"}, "openai_compat", "gpt-4o-mini"),
    ({"model": "openai/gpt-4o-mini", "api_base": GATEWAY}, "openai_compat", "gpt-4o-mini"),
    ({"model": "gpt-4o-mini"}, "openai_compat", "gpt-4o-mini"),
    ({"model": "groq/llama-3.1-8b-instant"}, "openai_compat", "llama-3.1-8b-instant"),
    ({"model": "sim-model", "api_base": GATEWAY}, "openai_compat", "sim-model"),
    ({"model": "meta-llama/Llama-3.1-8B-Instruct", "api_base": GATEWAY}, "openai_compat",
     "meta-llama/Llama-3.1-8B-Instruct"),  # an unknown prefix behind a server: a vLLM-style name, sent whole
    ({"model": "anthropic/claude-haiku-4-5", "api_base": GATEWAY, "protocol": "openai"}, "openai_compat",
     "claude-haiku-4-5"),
    ({"model": "myco/chat-1", "protocol": "litellm"}, "litellm", "myco/chat-1"),
    ({"model": "local/smollm2"}, "local", "local/smollm2"),
])
def test_the_provider_decides_the_adapter_and_api_base_only_where_it_goes(fields, adapter, wire):
    r = route(ModelSpec(name="m", **fields))
    assert (r.adapter, r.wire_model) == (adapter, wire)
    if "api_base" in fields:
        assert r.api_base == fields["api_base"]


def test_an_openai_compatible_provider_keeps_its_default_endpoint_and_key_variable():
    r = route(ModelSpec(name="m", model="openai/gpt-4o-mini"))
    assert (r.api_base, r.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")


@pytest.mark.parametrize("fields, fragment", [
    ({"model": "myco/chat-1"}, "no known provider"),
    ({"model": "some-bare-name"}, "no known provider"),
    ({"model": "hosted_vllm/llama"}, "needs api_base"),
    ({"model": "anthropic/claude-haiku-4-5", "protocol": "openai"}, "needs api_base"),
    ({"model": "local/smollm2", "api_base": GATEWAY}, "runs in-process"),
    ({"model": "local/smollm2", "protocol": "litellm"}, "runs in-process"),
    ({"model": "gemini/gemini-2.0-flash", "batch": True}, "batch mode"),
    ({"model": "local/smollm2", "batch": True}, "batch mode"),
])
def test_combinations_that_cannot_work_are_refused_before_anything_is_sent(fields, fragment):
    with pytest.raises(ConfigError) as err:
        preflight(ModelSpec(name="m", **fields))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_batch_apis_follow_the_protocol():
    assert batch_api(ModelSpec(name="m", model="openai/gpt-4o-mini")) == "openai"
    assert batch_api(ModelSpec(name="m", model="sim-model", api_base=GATEWAY)) == "openai"
    assert batch_api(ModelSpec(name="m", model="anthropic/claude-haiku-4-5", api_base=GATEWAY)) == "anthropic"
    assert batch_api(ModelSpec(name="m", model="gemini/gemini-2.0-flash")) is None


def write(path, text):
    path.write_text(text)
    return str(path)


def test_plan_shows_the_adapter_and_run_refuses_a_bad_combination_in_one_line(tmp_path, mrni_dir):
    env = {**os.environ, "FAIRSWEEP_MRNI_DIR": str(mrni_dir)}
    db = tmp_path / "r.duckdb"
    good = write(tmp_path / "good.toml", f'db = "{db}"\nrun = "r"\n[[models]]\nname = "claude"\n'
                 f'model = "anthropic/claude-haiku-4-5"\napi_base = "{GATEWAY}"\n'
                 f'[[models]]\nname = "vllm"\nmodel = "meta-llama/Llama-3.1-8B-Instruct"\napi_base = "{GATEWAY}"\n')
    plan = subprocess.run(fairsweep_cmd("plan", "--config", good, "--limit", "2"), env=env, capture_output=True,
                          text=True, timeout=120)
    assert plan.returncode == 0, plan.stderr
    adapters = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in plan.stdout.splitlines()
                if line.count("│") > 3 and line.split("│")[1].strip() in ("claude", "vllm")}
    assert adapters == {"claude": "litellm", "vllm": "openai_compat"}
    bad = write(tmp_path / "bad.toml", f'db = "{db}"\nrun = "r"\n[[models]]\nname = "x"\nmodel = "myco/chat-1"\n')
    for verb in ("run", "plan"):
        result = subprocess.run(fairsweep_cmd(verb, "--config", bad, "--limit", "2", "--no-progress")[:-1]
                                if verb == "plan" else fairsweep_cmd(verb, "--config", bad, "--limit", "2",
                                                                     "--no-progress"),
                                env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("fairsweep: error:") and result.stderr.strip().count("\n") == 0
        assert "protocol" in result.stderr
    assert not db.exists()  # refused before the DB (or any endpoint) was touched
