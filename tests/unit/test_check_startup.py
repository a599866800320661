"""`kit check` loads only what it needs: no scan of installed packages for pydantic plugins (it runs no user
code), and the switch it sets for that is its own, gone when it returns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib.metadata, json, os, sys
scanned = []
during = [False]
real = importlib.metadata.entry_points
def entry_points(**kw):
    scanned.append((kw.get("group"), "during kit check" if during[0] else "after"))
    return real(**kw)
importlib.metadata.entry_points = entry_points
from kit.cli import main
during[0] = True
code = main(["check", "--cases", sys.argv[1], sys.argv[2]])
during[0] = False
from pydantic import BaseModel
class After(BaseModel):  # a model of the caller's, built after kit check returned
    x: int
print(json.dumps({"code": code, "scanned": scanned, "env": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}))
"""


def _probe(tmp_path: Path, **env: str) -> dict:
    (tmp_path / "c.yaml").write_text("- id: a\n  input: hi\n  checks:\n    - {type: finished}\n")
    (tmp_path / "t.json").write_text(json.dumps({"case_id": "a", "finish_reason": "finish", "spans": []}))
    clean = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "c.yaml"), str(tmp_path / "t.json")],
        capture_output=True, text=True, cwd=tmp_path, env={**clean, **env, "PYTHONPATH": str(ROOT)}, check=True,
    )  # fmt: skip
    return json.loads(p.stdout.splitlines()[-1])


def test_kit_check_builds_its_models_without_scanning_for_plugins_and_leaves_the_switch_unset(tmp_path):
    got = _probe(tmp_path)
    assert got["code"] == 0
    # Only the model built after kit check returned looked for plugins: the switch was kit check's alone.
    assert got["scanned"] == [["pydantic", "after"]] and got["env"] is None


def test_a_switch_the_user_set_is_kept(tmp_path):
    got = _probe(tmp_path, PYDANTIC_DISABLE_PLUGINS="some_plugin")
    assert got["code"] == 0 and got["env"] == "some_plugin"
    # The user's value names one plugin: the others are still looked for, by kit check's first model.
    assert got["scanned"] == [["pydantic", "during kit check"]]
