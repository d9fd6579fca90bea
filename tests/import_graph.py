"""The package's import graph, read from the AST of every module (a lazy import inside a function counts as
much as one at the top), its circles and the imports that run back up a floor.

Run it as a script to print the counts: `python tests/import_graph.py [package_dir]`."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
SKIP = ("tests", "bench", ".git", ".venv", "build", "dist", "setup.py")  # setup.py builds the package

# Floors, lowest first. A module may import its own floor and any floor below; `providers` and `storage`
# share a floor and never import each other. The first matching prefix decides a module's floor.
FLOORS = (
    # benchmarks.registry is the benchmark table (names, "module:function" entries, identity fields): data
    # the config schema reads, importing nothing but errors, so it sits with the leaves.
    ("leaves", ("", "errors", "records", "lazy_prompts", "jsonfile", "derived", "config", "benchmarks.registry")),
    ("adapters", ("providers", "storage")),
    ("simulator", ("sim",)),
    ("engine", ("engine",)),
    ("benchmarks", ("benchmarks",)),
    ("viewer", ("view",)),  # the web page over the results: reads storage and the benchmarks' report tables
    ("commands", ("commands",)),
    ("entry", ("cli",)),
)
SIBLINGS_APART = ({"providers", "storage"},)


def module_name(path: Path, root: Path) -> str:
    """'engine/limiter.py' -> 'engine.limiter'; a package's '__init__.py' -> the package's name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_files(root: Path) -> dict[str, Path]:
    """Every module of the package below root (tests/ and bench/ are not part of it)."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in SKIP:
            continue
        files[module_name(path, root)] = path
    return files


def _resolve(target: str, names: list[str], modules: set[str]) -> set[str]:
    """An import of `names` from `target`: each name that is a submodule is the module imported, else target."""
    found = set()
    for name in names:
        sub = f"{target}.{name}".strip(".")
        found.add(sub if sub in modules else target)
    return found


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package modules one module imports (dotted names below the package, '' for the package itself)."""
    is_package = path.name == "__init__.py"
    package = name.split(".") if is_package else name.split(".")[:-1]
    package = [p for p in package if p]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "fairsweep" or node.module.startswith("fairsweep.")):
                target = node.module.removeprefix("fairsweep").lstrip(".")
            else:
                continue
            found |= _resolve(target, [a.name for a in node.names], modules)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("fairsweep").lstrip(".") for a in node.names
                      if a.name == "fairsweep" or a.name.startswith("fairsweep.")}
    found.discard(name)
    return found


def build_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = package_files(root)
    modules = set(files)
    return {name: imports_of(name, path, modules) for name, path in files.items()}


def floor_of(module: str) -> int:
    """The floor of the longest prefix in FLOORS that names the module or a package holding it."""
    best = None
    for rank, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if module == prefix or (prefix and module.startswith(prefix + ".")):
                if best is None or len(prefix) > len(best[0]):
                    best = (prefix, rank)
    if best is not None:
        return best[1]
    raise KeyError(f"module {module!r} sits on no floor: add its folder to FLOORS in tests/import_graph.py")


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import that runs to a higher floor, or across between two floor-mates kept apart."""
    bad = []
    for source, targets in graph.items():
        for target in targets:
            tops = {source.split(".")[0], target.split(".")[0]}
            apart = len(tops) == 2 and any(tops == pair for pair in SIBLINGS_APART)
            if floor_of(target) > floor_of(source) or apart:
                bad.append((source, target))
    return sorted(bad)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected group of two or more modules (Tarjan), sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def report(root: Path = PACKAGE, floors: bool = True) -> str:
    graph = build_graph(root)
    lines = [f"modules: {len(graph)}, imports: {sum(len(t) for t in graph.values())}"]
    circles = cycles(graph)
    lines.append(f"import circles: {len(circles)}")
    lines += ["  " + " <-> ".join(group) for group in circles]
    if floors:
        up = upward_imports(graph)
        lines.append(f"upward imports: {len(up)}")
        lines += [f"  {source} -> {target}" for source, target in up]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE))
