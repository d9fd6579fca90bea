"""The price map: litellm's packaged file, reduced to what fairsweep reads (cached as derived.py keeps it)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fairsweep.providers.pricing import PRICE_FIELDS, PRICE_FILE, load_price_map, price_map


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def write_prices(path: Path, entries) -> Path:
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_the_reduced_map_keeps_every_provider_and_price_of_litellms_file(cache_home):
    path = Path(list(importlib.util.find_spec("litellm").submodule_search_locations)[0]) / PRICE_FILE
    full = json.loads(path.read_text(encoding="utf-8"))
    reduced = load_price_map(path)
    models = {m for m, e in full.items() if isinstance(e, dict)}
    assert set(reduced) == models
    for model in models:
        assert reduced[model] == {f: full[model][f] for f in PRICE_FIELDS if f in full[model]}, model
    assert list(cache_home.glob("fairsweep/litellm-prices.marshal"))
    assert load_price_map(path) == reduced  # read back from the cache: the same map
    assert price_map()["gpt-4o-mini"]["litellm_provider"] == "openai"


def test_a_changed_price_file_is_read_again(tmp_path):
    prices = write_prices(tmp_path / "prices.json", {"m": {"input_cost_per_token": 1e-6, "mode": "chat"}})
    assert load_price_map(prices) == {"m": {"input_cost_per_token": 1e-6}}
    write_prices(prices, {"m": {"input_cost_per_token": 2e-6, "litellm_provider": "openai"}, "n": {}})
    assert load_price_map(prices) == {"m": {"input_cost_per_token": 2e-6, "litellm_provider": "openai"}, "n": {}}


def test_a_price_file_that_cannot_be_read_gives_no_prices_and_is_not_remembered(tmp_path):
    assert load_price_map(tmp_path / "missing.json") == {}
    bad = write_prices(tmp_path / "bad.json", "not a map")
    assert load_price_map(bad) == {}
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert load_price_map(broken) == {}
    write_prices(bad, {"m": {"input_cost_per_token": 1e-6}})  # mended: read now, nothing stale kept
    assert load_price_map(bad) == {"m": {"input_cost_per_token": 1e-6}}


def test_routing_reads_the_providers_apart_from_the_prices_and_agrees_with_them(cache_home):
    """A run routes its models before its first request from the small routes cache; the prices are read only
    when something is priced. Every priced id routes to the provider the price map gives it."""
    import subprocess
    import sys

    from fairsweep.providers.pricing import model_price, routes

    routes.cache_clear()  # read (and cached) in this process before, from another cache folder
    provided, named = routes()
    for model, entry in price_map().items():
        priced = model_price(model) if "/" not in model else None
        if "/" not in model:
            expected = str(priced["litellm_provider"]).split("-")[0] if priced and priced.get("litellm_provider") \
                else None
            assert provided.get(model) == expected, model
        assert str(entry.get("litellm_provider")).split("-")[0] in named
    assert list(cache_home.glob("fairsweep/litellm-routes.marshal"))
    probe = ("from fairsweep.providers import pricing, registry\n"
             "from fairsweep.config import ModelSpec\n"
             "r = registry.route(ModelSpec(name='a', model='gpt-4o-mini'))\n"
             "print(r.adapter, r.provider, pricing.price_map.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["openai_compat", "openai", "0"], done.stderr
