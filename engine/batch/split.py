"""Cutting a model's requests into batches that fit the provider's limits (requests and bytes per batch)."""

from __future__ import annotations

# Room left in each batch for what wraps the requests (a JSON envelope, multipart headers).
ENVELOPE_BYTES = 64 * 1024


def split(encoded: list[bytes], max_requests: int, max_bytes: int) -> list[list[int]]:
    """Indices of `encoded` in consecutive groups of at most max_requests requests and max_bytes bytes."""
    budget = max_bytes - ENVELOPE_BYTES
    groups: list[list[int]] = []
    size = 0
    for index, line in enumerate(encoded):
        if len(line) + 2 > budget:
            raise ValueError(f"one request is {len(line):,} bytes, more than a whole batch may hold")
        if not groups or len(groups[-1]) >= max_requests or size + len(line) + 2 > budget:
            groups.append([])
            size = 0
        groups[-1].append(index)
        size += len(line) + 2  # a separator per request
    return groups
