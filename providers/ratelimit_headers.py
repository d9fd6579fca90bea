"""How long a provider asked us to wait: Retry-After (seconds or HTTP-date), retry-after-ms,
OpenAI-style x-ratelimit-reset-* durations ("1s", "6m0s", "20ms") and Anthropic's
anthropic-ratelimit-*-reset times (RFC 3339)."""

from __future__ import annotations

import re
import time
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Mapping

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float | None:
    """'6m0s' -> 360.0, '20ms' -> 0.02, '1.5' -> 1.5; None when it is not a duration."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _http_date_delay(text: str, now: float) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait the provider asked for, in seconds, or None if it gave no hint."""
    now = time.time() if now is None else now
    lower = {k.lower(): v for k, v in headers.items()}
    if (ms := lower.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    if (value := lower.get("retry-after")) is not None:
        seconds = parse_duration(value)
        return seconds if seconds is not None else _http_date_delay(value, now)
    resets = [parse_duration(lower[h]) for h in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
              if h in lower]
    resets += [_rfc3339_delay(v, now) for h, v in lower.items()
               if h.startswith("anthropic-ratelimit-") and h.endswith("-reset")
               and lower.get(h[: -len("reset")] + "remaining") == "0"]  # only the limits that are used up
    resets = [r for r in resets if r is not None]
    return max(resets) if resets else None


def _rfc3339_delay(text: str, now: float) -> float | None:
    try:
        return max(0.0, datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp() - now)
    except ValueError:
        return None
