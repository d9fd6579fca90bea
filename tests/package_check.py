"""fairsweep as users get it: build the sdist and the wheel, check that the wheel holds every module and data
file of the checkout, install the wheel into a fresh virtual environment (not editable), and run the CLI
there from a folder outside the checkout.

Used by tests/test_package.py (the new environment borrows the dependencies of the one running the tests)
and by .ci/run, which installs the wheel with its dependencies the way a user does:

    python tests/package_check.py --python /path/to/venv/bin/python --mrni-dir ../shared/data/mrni-bb

A file of the checkout is part of the package unless it is under tests/, bench/ or .ci/, or is one of the
checkout's own root files (README, CONTRIBUTING, pyproject.toml, setup.py, dotfiles).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOT_PACKAGED_DIRS = ("tests/", "bench/", ".ci/")
NOT_PACKAGED_ROOT_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml", "setup.py")
LISTENING = re.compile(r"fairsweep sim-server listening on (http://\S+/v1)\s*$")


def tracked_files(repo: Path) -> list[str]:
    """The checkout's files: git's list where there is one, else every file on disk below the root."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
        return sorted(f for f in out.decode().split("\0") if f and (repo / f).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())


def expected_in_wheel(repo: Path) -> set[str]:
    """Every file of the checkout that the wheel must hold, as a path inside the wheel."""
    shipped = set()
    for rel in tracked_files(repo):
        root_file = "/" not in rel
        if rel.startswith(NOT_PACKAGED_DIRS) or (root_file and (rel in NOT_PACKAGED_ROOT_FILES or rel.startswith("."))):
            continue
        if root_file and not rel.endswith(".py"):
            continue  # a stray file at the root (a demo DB, notes) is not package data
        shipped.add(f"fairsweep/{rel}")
    return shipped


def wheel_contents(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if not n.endswith("/") and ".dist-info/" not in n}


def missing_from_wheel(repo: Path, wheel: Path) -> list[str]:
    """Files of the checkout the wheel lacks (empty when the packaging forgot nothing)."""
    return sorted(expected_in_wheel(repo) - wheel_contents(wheel))


def build(repo: Path, out: Path, python: str = sys.executable) -> tuple[Path, Path]:
    """sdist and wheel, the wheel built from the sdist (as `python -m build` does), without network."""
    subprocess.run([python, "-m", "build", "--no-isolation", "--outdir", str(out), str(repo)], check=True,
                   capture_output=True, text=True)
    sdist, = out.glob("fairsweep-*.tar.gz")
    wheel, = out.glob("fairsweep-*.whl")
    return sdist, wheel


def borrowing_venv(where: Path, wheel: Path) -> str:
    """A new virtual environment with the wheel installed (no dependencies) and the dependencies of the
    environment running this borrowed through a .pth line: that folder's own .pth files (the editable
    install of the checkout among them) are not processed, so the checkout stays off sys.path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = str(where / "bin" / "python")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, text=True)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    borrowed = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "duckdb").is_dir())
    Path(site, "_borrowed_dependencies.pth").write_text(borrowed + "\n")
    return python


class Smoke:
    """The CLI of one installed fairsweep, run from `workdir` with a clean environment."""

    def __init__(self, python: str, workdir: Path, mrni_source: Path):
        self.python, self.workdir, self.mrni_source = python, workdir, mrni_source
        self.bin = Path(python).parent
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "CI")
        self.env = {k: v for k, v in os.environ.items() if k in keep}
        self.env.update(XDG_CACHE_HOME=str(workdir / "cache"), RAY_USAGE_STATS_ENABLED="0",
                        PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        self.log: list[str] = []

    def fairsweep(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.bin / "fairsweep"), *args], cwd=self.workdir, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        self.log.append(f"$ fairsweep {' '.join(args)}  -> exit {proc.returncode}")
        if proc.returncode != 0:
            raise AssertionError(f"fairsweep {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def python_says(self, code: str) -> str:
        return subprocess.run([self.python, "-c", code], cwd=self.workdir, env=self.env, capture_output=True,
                              text=True, check=True, timeout=120).stdout.strip()

    def sim_server(self) -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen([str(self.bin / "fairsweep"), "sim-server", "--port", "0", "--latency-ms", "5"],
                                cwd=self.workdir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, text=True)
        for line in proc.stdout:
            if match := LISTENING.match(line):
                return proc, match.group(1)
        raise AssertionError("the installed sim-server never said where it listens")


def run_smoke(python: str, workdir: Path, mrni_source: Path, version: str, repo: Path = REPO,
              embedded: bool = True) -> list[str]:
    """Every check of an installed fairsweep; returns the log of commands (raises on the first failure)."""
    s = Smoke(python, workdir, mrni_source)
    where = s.python_says("import fairsweep; print(fairsweep.__file__)")
    assert not Path(where).resolve().is_relative_to(repo), f"fairsweep imported from the checkout: {where}"
    assert s.fairsweep("--version").stdout.strip() == f"fairsweep {version}"
    assert "installed from the local copy" in s.fairsweep("data", "ensure", "--from", str(mrni_source)).stdout
    assert "all 30 files match" in s.fairsweep("data", "verify").stdout
    server, url = s.sim_server()
    try:
        db, model = "smoke.duckdb", f"sim=sim-model@{url}"
        s.fairsweep("run", "--model", model, "--limit", "40", "--db", db, "--run", "local", "--no-progress")
        s.fairsweep("run", "--model", model, "--limit", "40", "--db", db, "--run", "ray", "--executor", "ray",
                    "--no-progress", timeout=600)
        worker = s.python_says("import ray; ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
                               "f = ray.remote(lambda: __import__('fairsweep').__file__)\nprint(ray.get(f.remote()))")
        assert Path(worker).resolve() == Path(where).resolve(), f"a Ray worker imported {worker}, not {where}"
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()
    counts = s.fairsweep("query", "--db", db, "SELECT run, count(*) FILTER (WHERE status = 'ok') AS ok "
                                          "FROM results GROUP BY run ORDER BY run", "--format", "json").stdout
    assert json.loads(counts) == [{"run": "local", "ok": 40}, {"run": "ray", "ok": 40}], counts
    s.fairsweep("report", "--db", db, "--run", "local", "--format", "csv", "--out", "report")
    assert (workdir / "report" / "mrni_conditions.csv").is_file()
    s.fairsweep("report", "--db", db, "--format", "html", "--out", "html")
    assert (workdir / "html" / "report.html").is_file()
    s.fairsweep("export", "--db", db, "--run", "local", "--out", "export")
    assert any((workdir / "export").rglob("*.parquet"))
    if embedded:
        out = s.fairsweep("run", "--limit", "4", "--db", "local.duckdb", "--run", "embedded", "--no-progress",
                          timeout=600)
        assert "MRNI-BB findings · run embedded" in out.stdout, out.stdout
    return s.log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="python of an environment to install the wheel into "
                                                        "(with its dependencies, from the index)")
    parser.add_argument("--mrni-dir", required=True, help="a local copy of the MRNI-BB data/ folder")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fairsweep-package-"))
    started = time.monotonic()
    sdist, wheel = build(REPO, work / "dist")
    missing = missing_from_wheel(REPO, wheel)
    if missing:
        print(f"the wheel lacks {len(missing)} file(s) of the checkout: {', '.join(missing[:10])}", file=sys.stderr)
        return 1
    print(f"built {sdist.name} and {wheel.name}: the wheel holds all {len(expected_in_wheel(REPO))} files")
    subprocess.run([args.python, "-m", "pip", "install", "--quiet", f"{wheel}[ray]"], check=True)
    (work / "run").mkdir()
    version = subprocess.run([sys.executable, "-c", "import fairsweep; print(fairsweep.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    for line in run_smoke(args.python, work / "run", Path(args.mrni_dir).resolve(), version):
        print(line)
    print(f"installed wheel: every command ran, in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
