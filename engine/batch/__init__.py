"""Batch mode: a model with `batch = true` is sent through its provider's batch API instead of one call per
request. The runner hands its remaining requests to a BatchSender, which records every batch in DuckDB
before submitting it, re-attaches to batches a killed run left in flight, polls with backoff, and turns
each request's result into the same attempt and response rows a synchronous answer makes (outcome 'batch').
"""

from .cancel import cancel_batches
from .sender import BatchSender

__all__ = ["BatchSender", "cancel_batches"]
