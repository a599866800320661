"""`kit run` replays an openai-SDK desk's recorded model calls with the model stopped and the run in a network
namespace of its own (`unshare -n`: no interface up, not even loopback), through the runner's host processes:
the recorded outcome of every case, attempt and check, $0 spent, and no key in the recordings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.doubles.sampling_model import SamplingModel
from kit.duck import connect
from kit.recording import Recordings, install, uninstall
from kit.runner import RunOptions, jobs_for, run_suite
from kit.runner.agents import load_agent
from kit.store.queries import run_costs

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MODEL = "desk-model-2025-01-01"
PROJECT = f"""
[tool.kit]
agent = "recording_desks:openai_desk"
cases = "cases.yaml"
store = ".kit/evals.duckdb"
agent_model = "{MODEL}"
[tool.kit.recordings]
mode = "replay"
folder = "recordings"
"""
CASES = """
- id: refund/damaged
  input: "My mug arrived broken, refund please."
  runs: 8
  checks:
    - {type: contains, text: "approved"}
"""


def _isolated() -> str | None:
    if not shutil.which("unshare"):
        return "no unshare"
    ok = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return None if ok else "unshare -n is not permitted here"


@pytest.mark.skipif(_isolated() is not None, reason=str(_isolated()))
def test_kit_run_replays_the_recorded_run_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    (tmp_path / "cases.yaml").write_text(CASES)
    shutil.copy(ROOT / "tests" / "fixtures" / "recording_desks.py", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DESK_API_KEY", "sk-e2e-NEVER-WRITTEN")
    try:  # recorded here, as `kit run` in record mode does (tests/unit/test_recording_replay.py)
        with SamplingModel(["Refund approved.", "REFUND DENIED, sorry."], seed=2) as model:
            monkeypatch.setenv("DESK_BASE_URL", model.base_url)
            install(Recordings("record", tmp_path / "recordings", MODEL))
            runs = run_suite(
                jobs_for(load_suite(tmp_path / "cases.yaml").cases),
                load_agent("recording_desks:openai_desk"),
                RunOptions(mode="thread", timeout=20),
            )
    finally:
        uninstall()
    recorded = sorted(
        (r.case_run.case_id, r.case_run.attempt, [(x.name, x.passed, x.reason) for x in r.case_run.results])
        for r in runs
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env["PYTHONPATH"] = str(ROOT)
    rep = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "kit.cli", "run", "--json", "-q", "--workers", "1"],  # one host
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(rep.stdout)
    replayed = sorted(
        (r["case_id"], r["attempt"], [(c["check"], c["outcome"] == "pass", c.get("reason", "")) for c in r["checks"]])
        for r in out["results"]
    )
    assert replayed == recorded, rep.stderr
    # a failure of chance, replayed as such: 8 draws, so a slow call the SDK retries (a draw more) cannot leave
    # all of them one answer, as 3 did once under load
    assert {r[2][0][1] for r in recorded} == {True, False}
    con = connect(str(tmp_path / ".kit" / "evals.duckdb"), read_only=True)
    [costs] = run_costs(con, [out["run_id"]])
    con.close()
    assert (costs["replayed"], costs["cost_usd"]) == (8, None)  # $0: nothing spent
    files = [f for f in (tmp_path / "recordings").rglob("*") if f.is_file()]
    assert not [f for f in files if "NEVER-WRITTEN" in f.read_text()]
