"""The prompt-set benchmark as the registry sees it: one `Benchmark` for every [[sets]] table; each of its
functions takes the set's name first (the registry binds it)."""

from __future__ import annotations

from ..registry import Benchmark

_PKG = "fairsweep.benchmarks.promptset"
PROMPTSET = Benchmark(load=f"{_PKG}.prompts:load", label=f"{_PKG}.labels:label_committed",
                      score=f"{_PKG}.score:score_run", report=f"{_PKG}.report:report",
                      section=f"{_PKG}.report:section")
