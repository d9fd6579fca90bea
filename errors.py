"""User-fixable errors. Each message names the problem and the fix; the CLI prints it on one line."""

import re

# Exit codes of every command: 0 done, 1 work still missing (or a content check failed), 2 a problem you can
# fix, 130 interrupted. Commands return these names, never the numbers.
EXIT_OK, EXIT_INCOMPLETE, EXIT_USER, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CHECK_FAILED = EXIT_INCOMPLETE  # `gama check`: a check of the scenario set failed


class FairsweepError(Exception):
    """Base class for errors a user can fix (bad config, missing data, locked DB...)."""

    exit_code = 2


class ConfigError(FairsweepError):
    """The configuration or the command-line flags are wrong."""


class DataError(FairsweepError):
    """Benchmark data is missing, incomplete or does not match its checksums."""


class DatabaseError(FairsweepError):
    """The DuckDB file cannot be opened as asked (locked by another process, missing, ...)."""


class RunConflictError(FairsweepError):
    """A run of that name exists with a different configuration."""


class QueryError(FairsweepError):
    """SQL given to `fairsweep query` did not run."""


class MissingDependencyError(FairsweepError):
    """An optional package needed for this model or feature is not installed."""


class NativeCodeError(FairsweepError):
    """Native code (llama.cpp) cannot run here: it crashed by a signal or cannot load its model."""


def first_fixable(error: BaseException) -> FairsweepError | None:
    """The first error a user can fix in `error` or, for an exception group (the event loop's tasks), in its
    members; None if there is none."""
    if isinstance(error, FairsweepError):
        return error
    for inner in getattr(error, "exceptions", ()):
        if (found := first_fixable(inner)) is not None:
            return found
    return None


_KEY_PATTERNS = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{16}|Bearer\s+[A-Za-z0-9_\-\.]{8,})")


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove secret values (and anything shaped like an API key) from text bound for logs or the DB."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    return _KEY_PATTERNS.sub("[REDACTED]", text)
