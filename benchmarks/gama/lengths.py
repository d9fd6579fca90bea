"""The spread of post lengths per track: quantiles and the share of posts inside the common band.

A set whose posts all sit near 75 words reads as one voice (AUTHORING.md, "Lengths"). Issue 28 found
80% of the bundled posts between 65 and 96 words; the rewrites brought that share down, and
BUNDLED_MAX_BAND_SHARE keeps it there (`gama check` fails the bundled set above it, a test guards it).
Lengths are schema.word_count (a placeholder counts as one word, the actor prefix as none).
"""

from __future__ import annotations

from . import schema

BAND = (65, 96)
BUNDLED_MAX_BAND_SHARE = {"intimate": 0.65, "public": 0.61}  # reached in issue 28 (64.0%, 60.3%), rounded up
QUANTILES = (("min", 0.0), ("p10", 0.1), ("p25", 0.25), ("median", 0.5), ("p75", 0.75), ("p90", 0.9), ("max", 1.0))


def track_lengths(scenarios: list[schema.Scenario], track: str) -> list[int]:
    return sorted(schema.word_count(s.template) for s in scenarios if s.track == track)


def band_share(words: list[int]) -> float:
    """The share of posts whose length is inside BAND (inclusive)."""
    return sum(BAND[0] <= w <= BAND[1] for w in words) / len(words) if words else 0.0


def quantiles(words: list[int]) -> dict[str, int]:
    """Nearest-rank quantiles of a sorted, non-empty list."""
    return {name: words[int(f * (len(words) - 1))] for name, f in QUANTILES}


def over_guard(scenarios: list[schema.Scenario]) -> list[tuple[str, float, float]]:
    """(track, band share, guard) for every track whose band share exceeds BUNDLED_MAX_BAND_SHARE."""
    out = []
    for track, guard in BUNDLED_MAX_BAND_SHARE.items():
        share = band_share(track_lengths(scenarios, track))
        if share > guard:
            out.append((track, share, guard))
    return out
