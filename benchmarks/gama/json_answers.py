"""JSON answers of the GAMA stages (judge, build steps, review): reading the one object of an answer, and
the schema sent as a strict response_format."""

from __future__ import annotations

import json
import re
from typing import Any


def parse_object(text: str) -> tuple[dict | None, str | None]:
    """The one JSON object of an answer (a ```json fence or text around it is tolerated)."""
    body = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.S)
    if fence:
        body = fence.group(1)
    try:
        data = json.loads(body)
    except ValueError as exc:
        start, end = body.find("{"), body.rfind("}")
        try:
            data = json.loads(body[start:end + 1]) if 0 <= start < end else None
        except ValueError:
            data = None
        if data is None:
            return None, f"not valid JSON ({exc.msg})"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    return data, None


def without_lengths(schema: Any) -> Any:
    """The JSON schema without minLength/maxLength (strict provider modes reject them; validation checks them)."""
    if isinstance(schema, dict):
        return {k: without_lengths(v) for k, v in schema.items() if k not in ("minLength", "maxLength")}
    return [without_lengths(v) for v in schema] if isinstance(schema, list) else schema
