"""`fairsweep batches cancel`: ask the provider to cancel a run's batches still in flight (and those of its
judge runs). What they answered before the cancel is collected by the run's own command, with the same
checks as any answer; their other requests go into new batches then."""

from __future__ import annotations

import asyncio

from ...config import SweepConfig
from ...providers.base import ProviderFailure
from ...providers.registry import make_batch_adapter
from ...storage.batches import LIVE, attached_provider_ids, update_batch
from ...storage.db import open_db
from ..attempts import now_utc


def cancel_batches(config: SweepConfig, command: str) -> tuple[int, bool]:
    """(batches cancelled, interrupted)."""
    conn = open_db(config.db)
    try:
        rows = conn.execute(f"""
            SELECT b.batch_id, b.model, b.provider_batch_id, b.created_at, count(*)
            FROM batches b JOIN batch_requests USING (batch_id)
            WHERE (b.run = $1 OR starts_with(b.run, $1 || '/judge/')) AND b.status IN {LIVE}
            GROUP BY ALL ORDER BY b.created_at""", [config.run]).fetchall()
        try:
            return asyncio.run(_cancel_all(conn, config, rows)), False
        except KeyboardInterrupt:
            return 0, True
    finally:
        conn.close()


async def _cancel_all(conn, config: SweepConfig, rows) -> int:
    adapters = {name: make_batch_adapter(config.model(name)) for name in {r[1] for r in rows}}
    cancelled = 0
    try:
        for batch_id, model, provider_id, created_at, total in rows:
            adapter = adapters[model]
            try:
                if provider_id is None:  # never recorded as submitted: a killed run may have created it
                    provider_id = await adapter.find(batch_id, created_at, total,
                                                     attached_provider_ids(conn, adapter.api_base))
                    if provider_id is None:
                        update_batch(conn, batch_id, status="failed", error="never submitted", ended_at=now_utc())
                        continue
                    update_batch(conn, batch_id, provider_batch_id=provider_id)
                await adapter.cancel(provider_id)
            except ProviderFailure as failure:
                print(f"batch {provider_id or batch_id} ({model}): not cancelled: {failure.message}")
                continue
            update_batch(conn, batch_id, status="cancelling")
            print(f"batch {provider_id} ({model}): cancel requested")
            cancelled += 1
    finally:
        for adapter in adapters.values():
            await adapter.aclose()
    return cancelled
