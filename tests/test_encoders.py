"""The encoders built once (records.canonical_json, the journal's lines) give the text json.dumps gave: request
ids, cache keys and journal lines of earlier versions stay byte-identical."""

import json
from datetime import datetime, timezone

from fairsweep.records import AttemptRow, DriftRow, ResponseRow, canonical_json
from fairsweep.storage.journal import CODES, decode, encode

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def test_canonical_json_is_sorted_compact_unescaped_json():
    values = ["mrni", "è \"q\" \n", 3, 0.5, None, True, [1, "x"], {"b": 1, "a": {"d": [None], "c": "ü"}},
              {"temperature": 0.0, "max_tokens": 64, "seed": 7}]
    for value in values:
        assert canonical_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_journal_lines_are_the_lines_of_before_and_read_back():
    rows = [AttemptRow("a" * 32, "b" * 32, "c" * 32, 1, NOW, 41.5, "ok", None, None, None, None, 120, 30),
            ResponseRow("b" * 32, "a" * 32, "The man è \"x\"\n", "stop", 120, 30, 0.0001, "sim", None, 41.5, NOW),
            DriftRow("run", "m", "b" * 32, "fingerprint", None, "fp_2", NOW)]
    for row in rows:
        before = [v.isoformat() if isinstance(v, datetime) else v for v in row]
        assert encode(row) == (json.dumps([CODES[type(row)], *before], separators=(",", ":")) + "\n").encode()
        assert decode(encode(row)) == row


def test_a_request_body_from_the_prompts_serialised_messages_says_what_json_dumps_said():
    """openai_compat sends a prompt's messages as serialised once (records.Prompt.messages_json): the body
    parses to what it was before (model, messages, then the parameters, which may override either)."""
    from fairsweep.providers.base import ChatRequest
    from fairsweep.providers.openai_compat import OpenAICompatProvider
    from fairsweep.records import Prompt

    provider = OpenAICompatProvider(api_base="http://127.0.0.1:9/v1", model='sim "model" è', api_key_env=None,
                                    price_model=None)
    prompt = Prompt("b", "k", ({"role": "system", "content": "Sei un giudice."},
                               {"role": "user", "content": "Ciao è \"quoted\"\n\ttab \\ \u2028"}), {})
    for params in ({"temperature": 0.0, "max_tokens": 64}, {}, {"seed": 7, "stop": ["\n"]},
                   {"model": "override"}, {"messages": []}):
        for messages_json in (prompt.messages_json, None):
            request = ChatRequest(model="m", messages=list(prompt.messages), params=params,
                                  messages_json=messages_json)
            body = provider._body(request)
            assert isinstance(body, bytes)
            assert json.loads(body) == {"model": provider.model, "messages": list(prompt.messages), **params}
