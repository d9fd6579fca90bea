"""fairsweep: gender-bias benchmark sweeps for LLMs, resumable, rate-limited, queryable in DuckDB."""

__version__ = "0.1.0"
