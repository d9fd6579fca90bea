"""MRNI-BB data: verification, fetching from a loopback mirror, loading and selection."""

from __future__ import annotations

import functools
import os
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from helpers import fairsweep_cmd
from fairsweep.benchmarks.mrni.data import LANGUAGES, SUBSCALES, expanded_path, fetch, load_expanded, read_tsv, verify
from fairsweep.benchmarks.mrni.prompts import build_prompts
from fairsweep.benchmarks.sampling import stratified_sample
from fairsweep.derived import file_stamp
from fairsweep.errors import DataError


@pytest.fixture
def mirror():
    """Serve a directory over HTTP on 127.0.0.1 (a stand-in for the upstream raw-file host)."""
    servers = []

    def serve(directory: Path) -> str:
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
        handler.log_message = lambda *a: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_fixture_matches_the_pinned_checksums(mrni_dir):
    assert verify(mrni_dir) == []


def test_fetch_downloads_verifies_and_installs_atomically(mrni_dir, mirror, tmp_path):
    dest = fetch(tmp_path / "cache" / "mrni", base_url=mirror(mrni_dir))
    assert verify(dest) == []
    result = subprocess.run(fairsweep_cmd("data", "verify", "--data-dir", str(dest)), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and "match the pinned commit" in result.stdout


def test_a_tampered_mirror_installs_nothing(mrni_dir, mirror, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(mrni_dir, bad)
    target = bad / "IT" / "all_conditions" / "T_MNRI-BB_it_all.tsv"
    target.chmod(0o644)
    target.write_text(target.read_text(encoding="utf-8") + "x", encoding="utf-8")
    dest = tmp_path / "cache" / "mrni"
    with pytest.raises(DataError, match="does not match its pinned SHA256"):
        fetch(dest, base_url=mirror(bad))
    assert not dest.exists()
    assert not list((tmp_path / "cache").glob(".mrni-fetch-*"))  # no half-downloaded leftovers
    result = subprocess.run(fairsweep_cmd("data", "verify", "--data-dir", str(bad)), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "checksum mismatch" in result.stderr


def test_loading_refuses_an_incomplete_copy(mrni_dir, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(mrni_dir, partial)
    (partial / "EN" / "all_conditions" / "AF_MNRI-BB_en_all.tsv").unlink()
    with pytest.raises(DataError, match="missing"):
        load_expanded(partial)


def test_prompts_read_back_from_the_cache_are_the_files_prompts_and_never_hide_a_damaged_file(mrni_dir, tmp_path,
                                                                                             monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copy = tmp_path / "copy"
    shutil.copytree(mrni_dir, copy)
    parsed = [(lang, sub, row) for lang in LANGUAGES for sub in SUBSCALES
              for row in read_tsv(expanded_path(copy, lang, sub))]
    assert load_expanded(copy) == parsed
    built = build_prompts(copy)
    assert (tmp_path / "cache" / "fairsweep" / "mrni-bb-prompts.marshal").is_file()
    cached = build_prompts(copy)
    assert [(p.key, p.messages, p.metadata, list(p.metadata)) for p in cached] == \
           [(p.key, p.messages, p.metadata, list(p.metadata)) for p in built]
    assert [p.messages[0]["content"] for p in cached] == [row["prompt"] for _, _, row in parsed]
    assert [p.metadata["condition"] for p in cached] == [row["condition"] for _, _, row in parsed]
    target = expanded_path(copy, "it", "T")
    target.chmod(0o644)
    target.write_text(target.read_text(encoding="utf-8").replace("a", "e", 1), encoding="utf-8")  # same size
    with pytest.raises(DataError, match="checksum mismatch"):
        build_prompts(copy)


def test_a_file_replaced_by_another_of_the_same_size_and_time_is_a_new_stamp(tmp_path):
    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    first.write_text("x\ty\n")
    second.write_text("x\tz\n")
    os.utime(second, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns))
    before = file_stamp(first)
    os.replace(second, first)  # same path, size and modification time: another file
    assert file_stamp(first) != before
    assert file_stamp(first) == file_stamp(first)


def test_all_4704_prompts_load_with_unique_keys_in_the_documented_order(mrni_dir):
    prompts = build_prompts(mrni_dir)
    assert len(prompts) == 4704
    assert len({p.key for p in prompts}) == 4704
    assert prompts[0].key.startswith("en:") and prompts[-1].key.startswith("it:")
    english_order = list(dict.fromkeys(p.metadata["subscale"] for p in prompts[:2352]))
    assert english_order == ["AF", "D", "IOS", "NTSM", "RE", "SRTMS", "T"]
    assert all(p.key.startswith("en:") for p in prompts[:2352])
    first = prompts[0]
    assert first.messages[0]["content"].startswith("Context:") and "\n" in first.messages[0]["content"]
    assert {"instance_id", "condition", "gold_answer", "answer_options", "Category", "MRNI-item"} <= set(first.metadata)


def test_stratified_sample_is_deterministic_and_proportional(mrni_dir):
    prompts = build_prompts(mrni_dir)
    a = stratified_sample(prompts, 48, seed=7)
    assert [p.key for p in a] == [p.key for p in stratified_sample(prompts, 48, seed=7)]
    assert [p.key for p in a] != [p.key for p in stratified_sample(prompts, 48, seed=8)]
    by_stratum = {}
    for p in a:
        by_stratum[p.metadata["stratum"]] = by_stratum.get(p.metadata["stratum"], 0) + 1
    # 588 / 2352 of each language is one condition's quarter share: 6 of 48 for the 4-prompt conditions.
    assert by_stratum["en/disambiguated_ga"] == 6 and by_stratum["it/ambiguous_gs"] == 3
    assert len(a) == 48


def test_fetch_from_a_local_copy_installs_it_into_the_cache(mrni_dir, tmp_path):
    """The README's main job on a machine without network: `data fetch --from DIR` fills the cache,
    and later commands find the data with no flag or variable."""
    env = {k: v for k, v in os.environ.items() if k != "FAIRSWEEP_MRNI_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    missing = subprocess.run(fairsweep_cmd("data", "fetch", "--from", str(tmp_path / "nowhere")), env=env,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    done = subprocess.run(fairsweep_cmd("data", "fetch", "--from", os.path.relpath(mrni_dir)), env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    check = subprocess.run(fairsweep_cmd("data", "verify"), env=env, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "match the pinned commit" in check.stdout


def test_files_hashed_once_are_trusted_by_size_and_mtime_until_they_change(mrni_dir, tmp_path, monkeypatch):
    """A run does not hash 30 files each time; `data verify` still does, and any change is hashed again."""
    import fairsweep.benchmarks.mrni.data as data

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    copy = tmp_path / "mrni"
    shutil.copytree(mrni_dir, copy)
    hashed = []
    real = data.sha256_file
    monkeypatch.setattr(data, "sha256_file", lambda path: hashed.append(path) or real(path))
    data.require_verified(copy)
    assert len(hashed) == len(data.pinned()["sha256"])
    hashed.clear()
    data.require_verified(copy)
    assert hashed == []
    assert data.verify(copy) == [] and len(hashed) == len(data.pinned()["sha256"])  # explicit: always hashes
    hashed.clear()
    edited = copy / "MRNI_items" / "MRNI_EN.tsv"
    edited.chmod(0o644)
    edited.write_text(edited.read_text(encoding="utf-8").replace("Men should", "Women should", 1), encoding="utf-8")
    with pytest.raises(DataError, match="MRNI_EN.tsv: checksum mismatch"):
        data.require_verified(copy)
    assert hashed == [edited]


def test_the_stamps_of_verified_files_are_kept_for_the_last_copies_only(mrni_dir, tmp_path, monkeypatch):
    """Every copy of the data is new stamps: verified.json, read by every run, keeps VERIFIED_KEEP of them, the
    copy in use among them, instead of growing with every copy ever verified."""
    import fairsweep.benchmarks.mrni.data as data
    from fairsweep.jsonfile import read_json

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(data, "VERIFIED_KEEP", len(data.pinned()["sha256"]) + 5)
    copies = []
    for n in range(3):
        copies.append(tmp_path / f"mrni{n}")
        shutil.copytree(mrni_dir, copies[-1])
        data.require_verified(copies[-1])
        assert len(read_json(data._verified_file())) <= data.VERIFIED_KEEP
    hashed = []
    real = data.sha256_file
    monkeypatch.setattr(data, "sha256_file", lambda path: hashed.append(path) or real(path))
    data.require_verified(copies[-1])
    assert hashed == []  # the copy verified last is still trusted
    data.require_verified(copies[0])
    assert len(hashed) == len(data.pinned()["sha256"])  # the first was dropped: hashed again, and it is correct
