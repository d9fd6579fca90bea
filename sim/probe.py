"""A probe for benches and tests: the source of a `sitecustomize` module that patches a module as a process imports
it (`on_import`), e.g. to end the process when aiohttp is about to send its first request, after running `action`
there (`at_first_request`: recording what the process has imported).

Written into a folder on the child's PYTHONPATH, it measures what a command does before its first request leaves
(bench/first_request_work.py counts the instructions; tests/test_startup.py checks what was done).
"""

from __future__ import annotations

import textwrap

_SOURCE = '''
import os, sys, importlib.abc, importlib.util


class _OnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != {module!r}:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        exec_module = spec.loader.exec_module

        def patched(module):
            exec_module(module)
{patch}

        spec.loader.exec_module = patched
        return spec


sys.meta_path.insert(0, _OnImport())
'''


def on_import(module: str, patch: str) -> str:
    """The source of a sitecustomize that runs `patch` (statements, where `module` is the module just executed)
    once the process imports `module`."""
    return _SOURCE.format(module=module, patch=textwrap.indent(textwrap.dedent(patch).strip(), " " * 12))


def at_first_request(action: str = "pass") -> str:
    """The sitecustomize source; `action` (statements) runs at the first request, before the process ends."""
    action = textwrap.indent(textwrap.dedent(action).strip() or "pass", " " * 4)
    return on_import("aiohttp.client", f"""
async def first_request(self, *args, **kwargs):
{action}
    os._exit(0)

module.ClientSession._request = first_request
""")
