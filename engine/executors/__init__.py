"""Executors: how one session's remaining work gets sent. The runner plans, opens the DB and owns the
writer; an executor only sends and hands every row to that writer.

- `local`: the asyncio scheduler in this process (the default).
- `ray`:   the same scheduler inside stateless Ray workers fed with shards; results stream back here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import MissingDependencyError
from .job import Executor, SweepJob

if TYPE_CHECKING:
    from ...config import SweepConfig

__all__ = ["Executor", "SweepJob", "select_executor"]


def select_executor(config: SweepConfig) -> Executor:
    """The executor named by config.executor ("local" or "ray")."""
    if config.executor == "ray":
        try:
            from .ray_executor import RayExecutor
        except ImportError as exc:
            raise MissingDependencyError(
                f"--executor ray needs Ray ({exc.name or 'ray'} is not importable): "
                f"pip install 'fairsweep[ray]' on the driver and on every node") from None
        return RayExecutor(address=config.ray_address)
    from .local import LocalExecutor
    return LocalExecutor()
