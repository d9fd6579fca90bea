"""fairsweep's config classes are built without pydantic's plugins (no scan of every installed package before a
run's first request); pydantic classes built afterwards see the user's plugins, and the user's own setting of
PYDANTIC_DISABLE_PLUGINS is left as it was (config/_plugins.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# A real pydantic plugin, installed as an entry point of a distribution on the path: it records the names of
# the classes it is asked to watch.
PLUGIN = '''
SEEN = []

class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        SEEN.append(getattr(schema_type, "__name__", str(schema_type)))
        return None, None, None

plugin = Plugin()
'''

PROBE = '''
import json, os, sys
import fairsweep.config
import pydantic.plugin._loader as loader
after_config = os.environ.get("PYDANTIC_DISABLE_PLUGINS"), loader._plugins is None
from pydantic import BaseModel
class UserModel(BaseModel):
    a: int
import watcher
print(json.dumps({"after_config": after_config, "seen": watcher.SEEN}))
'''


def probe(tmp_path, **env) -> dict:
    (tmp_path / "watcher.py").write_text(PLUGIN)
    info = tmp_path / "watcher-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: watcher\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nwatcher = watcher:plugin\n")
    environ = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    environ["PYTHONPATH"] = os.pathsep.join([str(tmp_path), environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env={**environ, **env},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_config_is_built_without_plugins_and_later_classes_see_them(tmp_path):
    seen = probe(tmp_path)
    assert seen["after_config"] == [None, True]  # the switch is restored, and no scan has been made
    assert "UserModel" in seen["seen"]
    assert not {"SweepConfig", "ModelSpec", "SetSpec"} & set(seen["seen"])


def test_the_users_own_setting_is_kept(tmp_path):
    seen = probe(tmp_path, PYDANTIC_DISABLE_PLUGINS="watcher")
    assert seen["after_config"][0] == "watcher"
    assert seen["seen"] == []  # the user turned this plugin off: it stays off
