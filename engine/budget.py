"""Spend caps: `max_cost` per model and per run, in USD, counted from the responses' known costs.

The engine stops sending to a model once a cap it is under is reached (requests already in flight
finish and are stored), commits, and reports the spend; raising the cap and running again resumes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SpendCap:
    """Spend of one scope (a model, or the whole run) against an optional cap."""

    scope: str
    cap: float | None
    spent: float = 0.0

    def add(self, cost: float | None) -> None:
        if cost is not None:  # an unknown price cannot count towards the cap (plan says which models)
            self.spent += cost

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.spent >= self.cap

    def message(self) -> str:
        return (f"budget reached for {self.scope}: spent ${self.spent:.4f} of max_cost ${self.cap:.4f}; "
                f"raise max_cost and run the same command to resume")
