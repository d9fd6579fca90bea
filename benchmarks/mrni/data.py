"""MRNI-BB data: where it lives, fetching it at the pinned commit, verifying it, reading it.

Resolution order for the data directory: --data-dir, $FAIRSWEEP_MRNI_DIR, `data_dir` in the config,
then the cache filled by `fairsweep data fetch` (~/.cache/fairsweep/mrni-bb/<commit>).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from ...derived import file_stamp
from ...errors import DataError
from ...jsonfile import cache_dir as fairsweep_cache, read_json, write_json

ENV_DIR = "FAIRSWEEP_MRNI_DIR"
ENV_URL = "FAIRSWEEP_MRNI_URL"
LANGUAGES = ("en", "it")
SUBSCALES = ("AF", "D", "IOS", "NTSM", "RE", "SRTMS", "T")


@functools.lru_cache(maxsize=1)
def pinned() -> dict:
    """Upstream repository, commit and SHA256 of every file (benchmarks/mrni/pinned.json)."""
    return json.loads(resources.files("fairsweep.benchmarks.mrni").joinpath("pinned.json").read_text("utf-8"))


def default_base_url() -> str:
    p = pinned()
    return f"https://raw.githubusercontent.com/{p['repository']}/{p['commit']}/{p['folder']}"


def cache_dir() -> Path:
    return fairsweep_cache() / "mrni-bb" / pinned()["commit"]


def resolve_data_dir(flag: str | None = None, configured: str | None = None) -> Path:
    """The first data directory given (flag, env, config), else the fetch cache; verified."""
    for candidate, origin in ((flag, "--data-dir"), (os.environ.get(ENV_DIR), f"${ENV_DIR}"),
                              (configured, "data_dir in the config")):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_dir():
                raise DataError(f"MRNI-BB data directory {path} (from {origin}) does not exist: fix the path "
                                f"or run `fairsweep data fetch`")
            return path
    path = cache_dir()
    if not path.is_dir():
        raise DataError(f"MRNI-BB data not found: run `fairsweep data fetch`, or pass --data-dir DIR "
                        f"(or set {ENV_DIR}) to a copy of the upstream data/ folder")
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


VERIFIED_KEEP = 256  # stamps kept in verified.json, the last added or used at a save: ~6 copies of the data. Every
                    # copy of the data (a test's, a user's) is new stamps; kept for good, the file every run reads
                    # grew with them (~300 KB, ~2 ms to read, after a test suite's copies)


def _damaged(data_dir: Path, trust_cache: bool = False) -> dict[str, str]:
    """rel -> "missing" | "checksum mismatch" for every pinned file that is not as released. With
    `trust_cache`, a file whose stamp (derived.file_stamp: the file, its size and modification time) matches
    one already hashed here is not hashed again (`fairsweep data verify` always hashes)."""
    damaged, seen = {}, _verified_cache() if trust_cache else {}
    fresh = dict(seen)
    for rel, expected in sorted(pinned()["sha256"].items()):
        path = data_dir / rel
        if not path.is_file():
            damaged[rel] = "missing"
            continue
        stamp = file_stamp(path)
        if seen.get(stamp) == expected:
            fresh[stamp] = fresh.pop(stamp)  # used now: last to go
            continue
        if sha256_file(path) != expected:
            damaged[rel] = "checksum mismatch"
        else:
            fresh[stamp] = expected
    # a new stamp, a new hash for one (the order is not compared), or a file written before the cap
    if trust_cache and (fresh != seen or len(fresh) > VERIFIED_KEEP):
        _save_verified(dict(list(fresh.items())[-VERIFIED_KEEP:]))
    return damaged


def _verified_file() -> Path:
    return cache_dir().parent / "verified.json"


def _verified_cache() -> dict[str, str]:
    return read_json(_verified_file())


def _save_verified(entries: dict[str, str]) -> None:
    write_json(_verified_file(), entries)  # no cache (unwritable): the next run hashes again


def verify(data_dir: Path, trust_cache: bool = False) -> list[str]:
    """Problems with the files in data_dir, each naming the file and, when it can be found, the line
    (e.g. "EN/x.tsv: checksum mismatch; line 12: 7 of 11 fields (truncated, or a tab removed)");
    empty when all are right."""
    damaged = _damaged(data_dir, trust_cache)
    problems = []
    for rel, what in damaged.items():
        if what == "missing":
            problems.append(f"{rel}: missing")
            continue
        from .data_check import locate  # only damaged data is read line by line

        line, found = locate(data_dir, rel, damaged)
        problems.append(f"{rel}: {what}; {f'line {line}: ' if line else ''}{found}")
    return problems


def require_verified(data_dir: Path) -> None:
    """Refuse data that is not the pinned release, naming the first damaged file and line (files already
    hashed here and unchanged since, by size and modification time, are not hashed again)."""
    problems = verify(data_dir, trust_cache=True)
    if problems:
        more = f" (and {len(problems) - 1} more: `fairsweep data verify` lists them)" if len(problems) > 1 else ""
        raise DataError(f"MRNI-BB data in {data_dir} is not the pinned release: {problems[0]}{more}: "
                        f"run `fairsweep data fetch` or point --data-dir at an intact copy")


def fetch(dest: Path | None = None, base_url: str | None = None, timeout_s: float = 60,
          source_dir: Path | None = None) -> Path:
    """Download every pinned file (or copy it from `source_dir`, a local copy of the upstream data/
    folder), verify it, and move the whole set into place at once."""
    dest = dest or cache_dir()
    if source_dir is not None:
        if not source_dir.is_dir():
            raise DataError(f"--from {source_dir}: no such directory: give a local copy of the MRNI-BB data/ "
                            f"folder, or leave --from out to download it")
        base_url = source_dir.resolve().as_uri()  # the same copy-and-verify path as a download
    base_url = (base_url or os.environ.get(ENV_URL) or default_base_url()).rstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".mrni-fetch-", dir=dest.parent))
    try:
        for rel, expected in sorted(pinned()["sha256"].items()):
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            _download(f"{base_url}/{rel}", target, timeout_s)
            if sha256_file(target) != expected:
                raise DataError(f"downloaded {rel} does not match its pinned SHA256: the source at {base_url} "
                                f"is not the pinned commit; nothing was installed")
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def ensure(source_dir: Path | None = None, base_url: str | None = None) -> tuple[Path, str]:
    """Make sure a verified copy is there: the configured one ($FAIRSWEEP_MRNI_DIR) or the cache if it
    verifies, else install the local copy `source_dir` when it exists, else download. Returns the data
    folder and what was done, in words. A configured copy that does not verify is refused, never replaced."""
    configured = os.environ.get(ENV_DIR)
    target = Path(configured).expanduser() if configured else cache_dir()
    if target.is_dir() and not verify(target, trust_cache=True):
        return target, f"already here and verified ({len(pinned()['sha256'])} files)"
    if configured:
        require_verified(target) if target.is_dir() else resolve_data_dir()
    if source_dir is not None and source_dir.is_dir():
        return fetch(source_dir=source_dir), f"installed from the local copy {source_dir}, verified"
    return fetch(base_url=base_url), "downloaded at the pinned commit, verified"


def _download(url: str, target: Path, timeout_s: float) -> None:
    import urllib.error  # only a fetch downloads: every run would import urllib.request (~8 ms) for nothing
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp, open(target, "wb") as out:
            shutil.copyfileobj(resp, out)
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"could not download {url} ({exc}): check the network, or pass --data-dir to a local "
                        f"copy; nothing was installed") from None


def read_tsv(path: Path) -> list[dict[str, str]]:
    """A TSV with quoted multi-line fields (the `prompt` column), read with a real parser."""
    csv.field_size_limit(1 << 24)
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def expanded_path(data_dir: Path, language: str, subscale: str) -> Path:
    return data_dir / language.upper() / "all_conditions" / f"{subscale}_MNRI-BB_{language}_all.tsv"


ROWS_RECIPE = "read_tsv 1"  # a change to read_tsv or to the rows' order changes this: what is derived from them
                            # and cached (prompts.py) is derived again


def expanded_files(data_dir: Path) -> list[tuple[str, str, Path]]:
    """(language, subscale, path) of the 14 expanded TSV files in the fixed order: language (en, it), subscale
    file (AF, D, IOS, NTSM, RE, SRTMS, T); once the data is verified."""
    require_verified(data_dir)
    return [(lang, sub, expanded_path(data_dir, lang, sub)) for lang in LANGUAGES for sub in SUBSCALES]


def read_expanded(files: list[tuple[str, str, Path]]) -> list[tuple[str, str, dict[str, str]]]:
    """(language, subscale, row) for every row of these files (expanded_files), in row order within each."""
    return [(lang, sub, row) for lang, sub, path in files for row in read_tsv(path)]


def load_expanded(data_dir: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(language, subscale, row) for all 4,704 prompts, in the fixed order of expanded_files."""
    return read_expanded(expanded_files(data_dir))
