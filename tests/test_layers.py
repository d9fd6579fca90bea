"""Imports point one way: cli -> benchmarks -> engine -> providers, storage (and every layer may use the
leaves: config, errors, records). Read from the source with ast, so a lazy import inside a function
counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
# layer -> the fairsweep modules and packages it must never import
FORBIDDEN = {
    "storage": ("engine", "benchmarks", "providers", "cli", "console", "plan"),
    "providers": ("engine", "benchmarks", "storage", "cli", "console", "plan"),
    "engine": ("benchmarks", "cli", "console", "plan"),
    "benchmarks": ("cli",),
}
LEAVES = ("config.py", "config_types.py", "config_problems.py", "config_doc.py", "errors.py", "records.py",
          "jsonfile.py")
LEAF_MODULES = {leaf.removesuffix(".py") for leaf in LEAVES}


def fairsweep_imports(path: Path) -> set[str]:
    """Every fairsweep module a file imports, as a dotted path below the package ('engine.limiter')."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    package = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("fairsweep"):
                target = node.module.removeprefix("fairsweep").lstrip(".")
            else:
                continue
            found.update(f"{target}.{a.name}".strip(".") if not node.module else target for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("fairsweep").lstrip(".") for a in node.names
                         if a.name.startswith("fairsweep"))
    return found


def layer_files(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_never_imports_the_layers_above_it(layer):
    bad = [f"{path.relative_to(PACKAGE)} imports {module}" for path in layer_files(layer)
           for module in sorted(fairsweep_imports(path))
           if module.split(".")[0] in FORBIDDEN[layer]]
    assert not bad, "\n".join(bad)


def test_the_leaves_import_no_layer():
    for leaf in LEAVES:
        modules = fairsweep_imports(PACKAGE / leaf)
        layers = {m.split(".")[0] for m in modules} - LEAF_MODULES - {"benchmarks", ""}
        assert not layers, f"{leaf} imports {sorted(modules)}"
    # the config reads the benchmark table (names, identity fields) and the [[sets]] schema, nothing else
    for leaf in LEAVES:
        assert {m for m in fairsweep_imports(PACKAGE / leaf) if m.startswith("benchmarks")} <= \
            {"benchmarks.registry", "benchmarks.promptset.spec"}, leaf
    spec = fairsweep_imports(PACKAGE / "benchmarks" / "promptset" / "spec.py")
    assert {m.split(".")[0] for m in spec} <= LEAF_MODULES, spec  # the schema itself imports only leaves


@pytest.mark.parametrize("layer, folder, source, module", [
    ("storage", "storage", "from ..engine.limiter import KeyLimiter\n", "engine.limiter"),
    ("engine", "engine", "from ..benchmarks import registry\n", "benchmarks"),
    ("engine", "engine/executors", "def later():\n    from ...benchmarks.mrni.score import score_run\n",
     "benchmarks.mrni.score"),
    ("engine", "engine", "import fairsweep.benchmarks.pipeline\n", "benchmarks.pipeline"),
])
def test_the_check_sees_a_backward_import(layer, folder, source, module):
    """The checker itself: storage -> engine and engine -> benchmarks, relative, lazy or absolute, are found."""
    probe = PACKAGE / folder / "_probe_backward.py"
    probe.write_text(source, encoding="utf-8")
    try:
        assert module in fairsweep_imports(probe)
        assert module.split(".")[0] in FORBIDDEN[layer]
    finally:
        probe.unlink()
