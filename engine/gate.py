"""Stop conditions checked before each send, and fed by each stored answer: spend caps and drift.

Both executors use it: the local scheduler asks it before taking a model's next item; the Ray driver
asks it before dispatching a shard. It only sees what arrived (cost, provider model, fingerprint), so it
works the same wherever the request was sent from.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ..records import DriftRow
from ..storage.provenance import answered_as, spent_by_model
from .budget import SpendCap
from .drift import DriftWatch, watch_from

log = logging.getLogger(__name__)


class SendGate:
    """Per-model spend caps (model and run scope) and drift watches for one session."""

    def __init__(self, run: str, caps: dict[str, list[SpendCap]], drift: dict[str, DriftWatch],
                 strict_drift: bool, record_drift):
        self.run = run
        self.caps = caps
        self.drift = drift
        self.strict_drift = strict_drift
        self._record_drift = record_drift  # callable(DriftRow) -> None: the RowWriter's add
        self._stops: dict[str, str] = {}
        self.drift_warnings: list[str] = []

    def stopped(self, model: str) -> str | None:
        """Why this model must not send any more in this session (None: it may)."""
        if model in self._stops:
            return self._stops[model]
        for cap in self.caps.get(model, ()):
            if cap.reached:
                self._stops[model] = cap.message()
                return self._stops[model]
        return None

    def spent(self, model: str) -> float | None:
        """USD spent by the model in this run so far (answers with a known price)."""
        caps = self.caps.get(model)
        return caps[0].spent if caps else None

    def observe(self, model: str, request_id: str, cost: float | None, provider_model: str | None,
                fingerprint: str | None) -> None:
        """Account one stored answer: add its cost, compare its provenance with what the run saw."""
        for cap in self.caps.get(model, ()):
            cap.add(cost)
        watch = self.drift.get(model)
        if watch is None:
            return
        for name, previous, observed in watch.observe_values(provider_model, fingerprint):
            message = (f"DRIFT: {model} answered as {name} {observed!r}, earlier answers in run {self.run!r} "
                       f"came from {previous!r}")
            log.warning(message)
            self.drift_warnings.append(message)
            self._record_drift(DriftRow(self.run, model, request_id, name, previous, observed,
                                        datetime.now(timezone.utc)))
            if self.strict_drift:
                self._stops[model] = f"{message}; strict_drift is set: start a new run (--run NEW_NAME)"


def build_gate(conn, config, specs, writer, *, new_db: bool = False) -> SendGate:
    """Caps and drift watches for one session, starting from what the DB already holds for the run
    (`new_db`: nothing, and the DB may still be opening: not looked at)."""
    spent = {} if new_db else spent_by_model(conn, config.run)
    run_cap = SpendCap(f"run {config.run}", config.max_cost, sum(spent.values()))
    caps = {spec.name: [SpendCap(f"model {spec.name}", spec.max_cost, spent.get(spec.name, 0.0)), run_cap]
            for spec in specs}
    drift = {spec.name: watch_from(spec.name, [] if new_db else answered_as(conn, config.run, spec.name))
             for spec in specs}
    return SendGate(config.run, caps, drift, config.strict_drift, writer.add)
