"""The run contract: a TOML sweep file plus command-line overrides, validated up front.

`sweep.py` holds the schema (`SweepConfig`, `ModelSpec`) and how a config is read and overridden;
`types.py` the strict field types; `problems.py` words the validation errors; `doc.py` renders the
README's config reference. The public names are re-exported here: `from fairsweep.config import SweepConfig`.
"""

from ._plugins import without_pydantic_plugins

with without_pydantic_plugins():  # its classes and type adapters are built as the modules are imported
    from .sweep import (ENV_KNOBS, FLAGS, KNOWN_BENCHMARKS, ModelSpec, SweepConfig, check_env, env_int, load_config,
                        local_default_concurrency, model_from_flag, parse_config, resolve_config, with_batch,
                        with_overrides)
    from .types import LOCAL_MODEL

__all__ = ["ENV_KNOBS", "FLAGS", "KNOWN_BENCHMARKS", "LOCAL_MODEL", "ModelSpec", "SweepConfig", "check_env", "env_int",
           "load_config", "local_default_concurrency", "model_from_flag", "parse_config", "resolve_config",
           "with_batch", "with_overrides"]
