"""SIGTERM stops a session like Ctrl-C: whichever loop sends (local scheduler, Ray driver, batch sender)
cancels its main task, so it stops sending and the writer commits what arrived."""

from __future__ import annotations

import asyncio
import contextlib
import signal


def cancel_on_sigterm() -> None:
    """SIGTERM cancels the running task (call it from inside that task, on its event loop)."""
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: task.cancel() if task else None)
