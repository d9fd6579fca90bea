"""Package discovery for a repository whose root is the `fairsweep` package.

setuptools finds every subpackage (any folder with an __init__.py below the root, tests and benchmarks of
the engine excluded) and ships every non-Python file inside a package's folder tree (SQL, migrations, JSON
maps, scenario JSONL, static pages) as package data, so a new subpackage or data file cannot be forgotten.
`tests/test_package.py` compares the built wheel with the checkout.
"""

from __future__ import annotations

import os

from setuptools import find_packages, setup

NOT_SHIPPED = ("tests", "tests.*", "bench", "bench.*", "build", "build.*", "dist", "dist.*")
SKIPPED_FILES = (".py", ".pyc", ".pyo", ".duckdb", ".wal", ".live")


def subpackages() -> list[str]:
    return sorted(find_packages(".", exclude=NOT_SHIPPED))


def data_files(package_dir: str, packages: set[str]) -> list[str]:
    """Every non-Python file below `package_dir`, down to (not into) the next subpackage."""
    found = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))
                   and os.path.relpath(os.path.join(folder, d), ".").replace(os.sep, ".") not in packages]
        found += [os.path.relpath(os.path.join(folder, f), package_dir) for f in files
                  if not f.startswith(".") and not f.endswith(SKIPPED_FILES)]
    return sorted(found)


subs = subpackages()
setup(
    packages=["fairsweep", *(f"fairsweep.{name}" for name in subs)],
    package_dir={"fairsweep": "."},
    # the root folder holds the checkout's own files (README, pyproject, tests): only its modules ship
    package_data={f"fairsweep.{name}": data_files(name.replace(".", os.sep), set(subs)) for name in subs},
)
