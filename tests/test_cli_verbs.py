"""One way to register a verb: every parser a verb module adds has a handler; old verb names are rewritten
to their new form (and say so); commands return exit codes by name, from fairsweep.errors only."""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from fairsweep import cli
from fairsweep.commands import VERB_MODULES, gama_eval

PACKAGE = Path(cli.__file__).resolve().parent


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(verb words, parser) of every parser that has no sub-verbs of its own."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from leaf_parsers(child, (*path, name))


def test_every_verb_has_a_handler_and_every_module_registers_one():
    leaves = dict(leaf_parsers(cli.build_parser()))
    assert {"run", "plan", "score", "status", "query", "export", "report", "data", "batches", "sim-server"} <= \
        {words[0] for words in leaves}
    assert {("gama", "judge"), ("gama", "validation", "export"), ("gama", "validation", "import"),
            ("gama", "check"), ("gama", "build")} <= set(leaves)
    for words, parser in leaves.items():
        assert callable(parser.get_default("handler")), words
    for name in VERB_MODULES:
        assert callable(importlib.import_module(name).register), name


def test_each_module_registers_the_verbs_listed_for_it_and_a_command_builds_only_its_own():
    every = set()
    for name, verbs in VERB_MODULES.items():
        parser = argparse.ArgumentParser()
        importlib.import_module(name).register(parser.add_subparsers(), cli.add_common_flags)
        registered = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0].choices
        assert tuple(registered) == verbs, name
        every.update(verbs)
    top = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)][0]
    assert set(top.choices) == every
    for verb in every:  # a command's parser holds its own module's verbs, and parses its argv as the whole one
        own = [a for a in cli.build_parser(verb)._actions if isinstance(a, argparse._SubParsersAction)][0]
        module_verbs = next(v for v in VERB_MODULES.values() if verb in v)
        assert tuple(own.choices) == module_verbs
    argv = ["run", "--model", "sim=m@http://127.0.0.1:1/v1", "--limit", "3", "--no-progress"]
    assert vars(cli.build_parser("run").parse_args(argv)) == vars(cli.build_parser().parse_args(argv))


def test_an_unknown_flag_after_a_verb_is_refused_with_the_usage_of_every_verb(capsys):
    with pytest.raises(SystemExit) as refused:
        cli.main(["run", "--no-such-flag"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "unrecognized arguments: --no-such-flag" in err
    assert "{run,plan,score,status," in err  # the usage names every verb, not only those of run's module


@pytest.mark.parametrize("old, new, handler", [
    (["gama-judge", "--config", "c.toml"], ["gama", "judge", "--config", "c.toml"], gama_eval.cmd_judge),
    (["gama-validation", "export", "--out", "x.csv"], ["gama", "validation", "export", "--out", "x.csv"],
     gama_eval.cmd_export),
])
def test_an_old_gama_verb_is_an_alias_that_prints_the_new_form(old, new, handler, capsys):
    assert cli.new_form(old) == new
    assert f"`{old[0]}` is now `fairsweep {' '.join(new[:len(new) - len(old) + 1])}`" in capsys.readouterr().err
    assert cli.build_parser().parse_args(new).handler is handler
    assert cli.new_form(["run", "--limit", "3"]) == ["run", "--limit", "3"]


def test_an_alias_runs_the_verb(tmp_path, capsys):
    code = cli.main(["gama-validation", "export", "--config", str(tmp_path / "missing.toml"), "--out", "x.csv"])
    err = capsys.readouterr().err
    assert code == 2 and "is now `fairsweep gama validation`" in err and "missing.toml" in err


def test_unknown_flags_are_refused_but_the_simulator_gets_its_own(capsys):
    with pytest.raises(SystemExit) as refused:
        cli.main(["status", "--no-such-flag"])
    assert refused.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    with pytest.raises(SystemExit) as shown:
        cli.main(["sim-server", "--help"])
    assert shown.value.code == 0 and "fairsweep sim-server" in capsys.readouterr().out


def test_exit_codes_come_only_from_errors():
    """No `EXIT_... =` outside errors.py, and no handler returns a bare number."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in ("tests", "bench") or path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = [n for t in getattr(node, "targets", ()) for n in ast.walk(t) if isinstance(n, ast.Name)]
            if isinstance(node, ast.Assign) and any(n.id.startswith("EXIT_") for n in targets):
                bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno} defines an exit code")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("cmd_"):
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Constant):
                        bad.append(f"{path.relative_to(PACKAGE)}:{ret.lineno} returns {ret.value.value!r}")
    assert not bad, "\n".join(bad)


def _leave(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import atexit, sys, threading, time\n"
                           "from fairsweep.cli import leave\n"
                           "atexit.register(lambda: print('teardown ran'))\n" + code],
                          capture_output=True, text=True, timeout=60)


def test_leave_skips_the_teardown_but_flushes_the_output_and_keeps_the_exit_code():
    done = _leave("sys.stdout.write('kept'); sys.stderr.write('also'); leave(3)")
    assert done.returncode == 3 and done.stdout == "kept" and done.stderr == "also"


def test_leave_exits_the_ordinary_way_while_another_thread_or_ray_is_there():
    done = _leave("threading.Thread(target=time.sleep, args=(0.2,)).start(); leave(4)")
    assert done.returncode == 4 and "teardown ran" in done.stdout
    done = _leave("sys.modules['ray'] = object(); leave(0)")
    assert done.returncode == 0 and "teardown ran" in done.stdout


def test_leave_exits_the_ordinary_way_under_a_profiler_so_that_it_can_write_its_data(tmp_path):
    script, out = tmp_path / "leave.py", tmp_path / "run.prof"
    script.write_text("from fairsweep.cli import leave\nleave(5)\n")
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 5), done.stderr  # (cProfile's own exit code)
    assert out.exists() and out.stat().st_size > 0
