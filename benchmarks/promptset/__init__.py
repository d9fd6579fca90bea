"""Prompt sets: a user's own benchmark from a JSONL, CSV or Parquet file, named in the config's [[sets]]."""
