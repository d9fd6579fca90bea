"""Drift checks: the provider's resolved model name and system fingerprint, compared with those already
stored for the run. A change is recorded in `drift_events` and reported loudly; with strict_drift it
stops the model."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..providers.base import Completion

FIELDS = ("provider_model", "system_fingerprint")


@dataclass
class DriftWatch:
    """What one model of a run answered as so far; flags the first response that differs."""

    model: str
    known: dict[str, set[str]] = field(default_factory=lambda: {f: set() for f in FIELDS})
    reported: set[tuple[str, str]] = field(default_factory=set)

    def observe(self, completion: Completion) -> list[tuple[str, str, str]]:
        """New (field, previous, observed) changes in this completion; the first values seen are learned."""
        return self.observe_values(completion.provider_model, completion.system_fingerprint)

    def observe_values(self, provider_model: str | None, fingerprint: str | None) -> list[tuple[str, str, str]]:
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


def load_known(conn, run: str, model: str) -> DriftWatch:
    """The values stored for this run and model before this session."""
    watch = DriftWatch(model)
    rows = conn.execute("""
        SELECT DISTINCT s.provider_model, s.system_fingerprint
        FROM responses s JOIN requests r USING (request_id)
        JOIN attempts a ON a.attempt_id = s.attempt_id
        WHERE r.run = ? AND r.model = ? AND a.outcome = 'ok'""", [run, model]).fetchall()
    for provider_model, fingerprint in rows:
        if provider_model:
            watch.known["provider_model"].add(provider_model)
        if fingerprint:
            watch.known["system_fingerprint"].add(fingerprint)
    return watch
