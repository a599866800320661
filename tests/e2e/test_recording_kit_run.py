"""`kit run` records an openai-SDK desk's model calls, then replays them with the model stopped and the run in a
network namespace of its own (`unshare -n`: no interface up, not even loopback): the same outcome for every
case, attempt and check, through the runner's host processes, and nothing on the network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.doubles.sampling_model import SamplingModel
from kit.duck import connect
from kit.store.queries import run_costs

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KIT = [sys.executable, "-m", "kit.cli"]
PROJECT = """
[tool.kit]
agent = "recording_desks:openai_desk"
cases = "cases.yaml"
store = ".kit/evals.duckdb"
agent_model = "desk-model-2025-01-01"
[tool.kit.recordings]
folder = "recordings"
"""
CASES = """
- id: refund/damaged
  input: "My mug arrived broken, refund please."
  runs: 3
  checks:
    - {type: contains, text: "approved"}
"""


def _isolated() -> str | None:
    if not shutil.which("unshare"):
        return "no unshare"
    ok = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return None if ok else "unshare -n is not permitted here"


@pytest.mark.skipif(_isolated() is not None, reason=str(_isolated()))
def test_kit_run_replays_the_recorded_run_offline(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    (tmp_path / "cases.yaml").write_text(CASES)
    shutil.copy(ROOT / "tests" / "fixtures" / "recording_desks.py", tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update(DESK_API_KEY="sk-e2e-NEVER-WRITTEN", PYTHONPATH=str(ROOT))
    with SamplingModel(["Refund approved.", "REFUND DENIED, sorry."], seed=2) as model:
        env["DESK_BASE_URL"] = model.base_url
        rec = subprocess.run(
            [*KIT, "run", "--json", "-q", "--pool", "thread"],  # replay below goes through the host processes
            cwd=tmp_path,
            env={**env, "KIT_RECORDINGS_MODE": "record"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert len(model.requests) == 6, rec.stderr
    rep = subprocess.run(
        ["unshare", "-n", *KIT, "run", "--json", "-q"],
        cwd=tmp_path,
        env={**env, "KIT_RECORDINGS_MODE": "replay"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rep.returncode == rec.returncode, rep.stderr
    assert json.loads(rep.stdout)["results"] == json.loads(rec.stdout)["results"]
    con = connect(str(tmp_path / ".kit" / "evals.duckdb"), read_only=True)
    [recorded, replayed] = run_costs(con, [json.loads(rec.stdout)["run_id"], json.loads(rep.stdout)["run_id"]])
    con.close()
    assert (recorded["replayed"], replayed["replayed"], replayed["cost_usd"]) == (0, 3, None)  # $0: nothing spent
    files = [f for f in (tmp_path / "recordings").rglob("*") if f.is_file()]
    assert sorted(f.relative_to(tmp_path).as_posix() for f in files if ".kit" not in f.parts) == [
        "recordings/refund/damaged.json"
    ]
    assert not [f for f in files if "NEVER-WRITTEN" in f.read_text()]
