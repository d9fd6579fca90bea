"""What a provider's rate-limit headers say. On a 429, how long it asked us to wait: Retry-After (seconds
or HTTP-date), retry-after-ms, OpenAI-style x-ratelimit-reset-* durations ("1s", "6m0s", "20ms") and
Anthropic's anthropic-ratelimit-*-reset times (RFC 3339). On an answer, the request quota it reports
(x-ratelimit-{limit,remaining,reset}-requests, anthropic-ratelimit-requests-{limit,remaining,reset})."""

from __future__ import annotations

import re
import time
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Mapping

from .base import RequestQuota

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


_QUOTA_HEADERS = (("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
                  ("anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
                   "anthropic-ratelimit-requests-reset"))


def request_quota(headers: Mapping[str, str] | None, now: float | None = None) -> RequestQuota | None:
    """The request quota an answer's headers report (None: they report none, or not as numbers).
    `headers` is looked up by lower-case name (aiohttp's headers and litellm's dicts are)."""
    if not headers:
        return None
    for limit_name, remaining_name, reset_name in _QUOTA_HEADERS:
        limit, remaining = headers.get(limit_name), headers.get(remaining_name)
        if limit is None or remaining is None:
            continue
        try:
            limit, remaining = int(float(limit)), int(float(remaining))
        except (TypeError, ValueError):
            return None
        if limit <= 0 or remaining < 0:
            return None
        return RequestQuota(limit, min(remaining, limit), _reset_s(headers.get(reset_name), now))
    return None


def _reset_s(value, now: float | None) -> float | None:
    if value is None:
        return None
    text = str(value)
    seconds = parse_duration(text)
    if seconds is None:
        seconds = _rfc3339_delay(text, time.time() if now is None else now)
    return seconds if seconds else None
