"""Imports point one way, floor by floor (tests/import_graph.py's FLOORS): leaves (config/, errors, records,
jsonfile, the benchmark table) <- providers/, storage/ <- sim/ <- engine/ <- benchmarks/ <- commands/ <- cli.py.
Every module of the package is on a floor, nothing imports a floor above its own, there is no import
circle, and `Prompt` comes only from `records`. The graph is read from the AST of every module, so a lazy
import inside a function counts as much as one at the top. `python tests/import_graph.py` prints it."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from import_graph import (FLOORS, PACKAGE, SKIP, build_graph, cycles, floor_of, imports_of, package_files, report,
                          upward_imports)


def test_every_module_of_the_package_is_in_the_graph_and_on_a_floor():
    graph = build_graph()
    on_disk = {p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in SKIP}
    assert len(graph) == len(on_disk)
    assert {"cli", "config", "config.sweep", "commands.plan", "commands.console", "sim.server",
            "engine.retry", "benchmarks.registry"} <= set(graph)
    for module in graph:
        floor_of(module)  # raises for a module no floor names


def test_no_import_circle():
    assert cycles(build_graph()) == [], report()


def test_no_import_runs_up_a_floor():
    assert upward_imports(build_graph()) == [], report()


def test_prompt_comes_only_from_records():
    """Prompt is defined in records; importing it through another module re-creates the old circle."""
    bad = []
    paths = [*package_files(PACKAGE).values(), *(p for d in ("tests", "bench") for p in sorted((PACKAGE / d).rglob("*.py")))]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "Prompt" for a in node.names):
                if not (node.module or "").endswith("records"):
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports Prompt from {node.module}")
    assert not bad, "\n".join(bad)


def test_the_simulator_is_imported_only_by_the_command_line():
    graph = build_graph()
    users = {source for source, targets in graph.items() for t in targets
             if t.split(".")[0] == "sim" and source.split(".")[0] != "sim"}
    assert users <= {"cli"} | {m for m in graph if m.startswith("commands")}, users


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_check_sees_a_seeded_circle_and_upward_import(tmp_path):
    """A small package: a circle through a lazy import, an upward import written three ways."""
    _write(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "engine/__init__.py": "",
        "engine/a.py": "from . import b\n",
        "engine/b.py": "def later():\n    from .a import x\n",
        "storage/__init__.py": "",
        "storage/up.py": "from ..engine.a import thing\n",
        "providers/__init__.py": "",
        "providers/up.py": "import fairsweep.benchmarks.registry\n",
        "providers/across.py": "from ..storage import up\n",
        "benchmarks/__init__.py": "",
        "benchmarks/registry.py": "def later():\n    from ..commands.plan import build_plan\n",
        "commands/__init__.py": "",
        "commands/plan.py": "from ..errors import X\n",
    })
    graph = build_graph(tmp_path)
    assert graph["engine.a"] == {"engine.b"} and graph["engine.b"] == {"engine.a"}
    assert cycles(graph) == [["engine.a", "engine.b"]]
    assert upward_imports(graph) == [("benchmarks.registry", "commands.plan"), ("providers.across", "storage.up"),
                                     ("storage.up", "engine.a")]
    # `import fairsweep.benchmarks.registry` from providers is not upward: the table is a leaf
    assert graph["providers.up"] == {"benchmarks.registry"}


def test_the_check_sees_a_circle_seeded_into_a_copy_of_the_package(tmp_path):
    copy = tmp_path / "fairsweep"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns(*SKIP, "__pycache__"))
    assert cycles(build_graph(copy)) == [] and upward_imports(build_graph(copy)) == []
    (copy / "records.py").write_text((copy / "records.py").read_text() + "\nfrom .engine import retry\n")
    graph = build_graph(copy)
    assert ("records", "engine.retry") in upward_imports(graph)
    assert any({"records", "engine.retry"} <= set(group) for group in cycles(graph))


@pytest.mark.parametrize("source, expected", [
    ("from ..engine.limiter import KeyLimiter\n", {"engine.limiter"}),
    ("from .. import errors\n", {"errors"}),
    ("from ..engine import limiter, missing_name\n", {"engine.limiter", "engine"}),
    ("def later():\n    from ...benchmarks.mrni.score import score_run\n", {"benchmarks.mrni.score"}),
    ("import fairsweep.benchmarks.pipeline\n", {"benchmarks.pipeline"}),
    ("import os\nfrom duckdb import connect\n", set()),
])
def test_imports_are_resolved_to_modules(tmp_path, source, expected):
    files = package_files(PACKAGE)
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    name = "storage.probe" if not source.startswith("def later") else "engine.executors.probe"
    assert imports_of(name, probe, set(files)) == expected


def test_the_floors_are_in_order():
    names = [name for name, _ in FLOORS]
    assert names == ["leaves", "adapters", "simulator", "engine", "benchmarks", "viewer", "commands", "entry"]
