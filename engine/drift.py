"""Drift checks: the provider's resolved model name and system fingerprint, compared with those already
stored for the run. A change is recorded in `drift_events` and reported loudly; with strict_drift it
stops the model."""

from __future__ import annotations

from dataclasses import dataclass, field

FIELDS = ("provider_model", "system_fingerprint")


@dataclass
class DriftWatch:
    """What one model of a run answered as so far; flags the first response that differs."""

    model: str
    known: dict[str, set[str]] = field(default_factory=lambda: {f: set() for f in FIELDS})
    reported: set[tuple[str, str]] = field(default_factory=set)

    def observe_values(self, provider_model: str | None, fingerprint: str | None) -> list[tuple[str, str, str]]:
        """New (field, previous, observed) changes in one answer; the first values seen are learned."""
        changes = []
        for name, value in zip(FIELDS, (provider_model, fingerprint)):
            if value is None:
                continue
            seen = self.known[name]
            if not seen:
                seen.add(value)
            elif value not in seen and (name, value) not in self.reported:
                self.reported.add((name, value))
                changes.append((name, ", ".join(sorted(seen)), value))
        return changes


def watch_from(model: str, answered_as: list[tuple[str | None, str | None]]) -> DriftWatch:
    """A watch that knows the (provider_model, fingerprint) pairs stored before this session."""
    watch = DriftWatch(model)
    for provider_model, fingerprint in answered_as:
        if provider_model:
            watch.known["provider_model"].add(provider_model)
        if fingerprint:
            watch.known["system_fingerprint"].add(fingerprint)
    return watch
