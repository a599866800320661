"""The tools' own commands, typed exactly as a user types them in the project root, with the venv not activated:
`deepeval test run tests/evals` (as .venv/bin/deepeval), `npx promptfoo eval`, `npx promptfoo redteam run` and
`npx promptfoo view`. Each runs inside a network namespace with loopback only (`unshare -n`) and under
`strace -f -e trace=connect`: it must pass on the reference agent, put its results in the store, ask for no
e-mail, run no health check and connect nowhere but loopback (no DNS either: nothing to port 53).

The store is a fresh file (KIT_STORE) so the assertions read only these runs; Promptfoo's state folder is
the project's (.promptfoo, from .env), which `make evals` shares: that is what `promptfoo view` must show.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _tracing import strace_unusable
from shared_runs import environ, shared_run

from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_INET6?), (?:sin6?_port=htons\((\d+)\)), (.*?)\}")


@functools.cache
def can_isolate() -> str | None:
    """None, or why the tools cannot be run offline under strace here."""
    for tool in ("unshare", "strace", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -n is not permitted here: {probe.stderr.strip()}"
    return strace_unusable()


pytestmark = pytest.mark.skipif(can_isolate() is not None, reason=str(can_isolate()))


def user_env(store: Path) -> dict[str, str]:
    """A user's shell: the venv not activated (no .venv/bin on PATH), no kit or tool variables set."""
    base = environ()
    path = [p for p in base.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != VENV_BIN.resolve()]
    drop = ("KIT_", "PROMPTFOO_", "DEEPEVAL_", "CONFIDENT_", "VIRTUAL_ENV", "PYTHONPATH", "HTTP_PROXY", "HTTPS_PROXY")
    env = {k: v for k, v in base.items() if not k.upper().startswith(drop) and k.upper() != "NO_PROXY"}
    env["PATH"] = os.pathsep.join(path)
    env["KIT_STORE"] = str(store)
    return env


def isolated(argv: list[str], log: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """argv in a loopback-only network namespace, every connect() of every process logged to `log`."""
    script = 'ip link set lo up && exec strace --seccomp-bpf -f -qq -e trace=connect -e signal=none -o "$0" -- "$@"'
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", script, str(log), *argv],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def outside_loopback(log: Path) -> list[str]:
    """Every connect() to an address that is not loopback, or to port 53 (DNS) anywhere."""
    bad = []
    for line in log.read_text(errors="replace").splitlines():
        m = CONNECT.search(line)
        if not m:
            continue  # AF_UNIX, AF_NETLINK: local by construction
        family, port, rest = m.groups()
        loopback = "127.0.0.1" in rest if family == "AF_INET" else ('"::1"' in rest or "::ffff:127.0.0.1" in rest)
        if not loopback or port == "53":
            bad.append(line.strip())
    return bad


def runs(store: Path, source: str) -> list[dict[str, object]]:
    with open_store(store).connect() as con:
        rows = con.execute(
            "SELECT r.run_id, r.status, r.meta, count(c.case_id) FROM runs r LEFT JOIN case_results c USING (run_id) "
            "WHERE r.source = ? GROUP BY ALL",
            [source],
        ).fetchall()
    return [{"run_id": r[0], "status": r[1], "meta": json.loads(r[2] or "{}"), "case_runs": r[3]} for r in rows]


def failed_case_runs(store: Path, run_id: str) -> int:
    with open_store(store).connect() as con:
        return con.execute(
            "SELECT count(*) FROM case_results WHERE run_id = ? AND outcome <> 'pass'", [run_id]
        ).fetchone()[0]


def assert_offline_and_ok(proc: subprocess.CompletedProcess[str], log: Path) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert outside_loopback(log) == [], "connections outside loopback"
    assert "Work email" not in out and "Email Verification" not in out
    assert "health check" not in out.lower()


# Each command as its docs say to type it, the store it fills, and how many case runs it must make: the
# golden set through DeepEval and Promptfoo; every attack of redteam/attacks.yaml under every strategy on
# the reference agent. All must pass (the reference agent resists every attack).
AS_TYPED = {
    "deepeval test run tests/evals": ([str(VENV_BIN / "deepeval"), "test", "run", "tests/evals"], "deepeval", 40, 900),
    "npx promptfoo eval": (["npx", "promptfoo", "eval", "--no-table"], "promptfoo", 40, 900),
    "npx promptfoo redteam run": (["npx", "promptfoo", "redteam", "run"], "promptfoo", 205, 1500),
}


@shared_run("tools")
def tools_as_typed(tmp: Path) -> dict[str, tuple[subprocess.CompletedProcess[str], Path, Path]]:
    """Each command of AS_TYPED, one after the other (they share the project's Promptfoo state): its
    process, its connect() log and its store."""
    done = {}
    for i, (command, (argv, _, _, timeout)) in enumerate(AS_TYPED.items()):
        (tmp / str(i)).mkdir()
        log, store = tmp / str(i) / "connect.log", tmp / str(i) / "evals.duckdb"
        done[command] = (isolated(argv, log, user_env(store), timeout=timeout), log, store)
    return done


@pytest.mark.parametrize("command", AS_TYPED)
def test_the_tools_commands_as_typed(command: str, tools_as_typed) -> None:
    _, source, at_least, _ = AS_TYPED[command]
    proc, log, store = tools_as_typed[command]
    assert_offline_and_ok(proc, log)
    (run,) = runs(store, source)
    assert run["status"] == "complete" and run["case_runs"] >= at_least
    assert failed_case_runs(store, str(run["run_id"])) == 0


VIEW_DRIVER = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time, urllib.request
    log, want = sys.argv[1], sys.argv[2]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    view = subprocess.Popen(
        ["strace", "--seccomp-bpf", "-f", "-qq", "-e", "trace=connect", "-e", "signal=none", "-o", log, "--", "npx", "promptfoo", "view"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    found, listening, deadline = False, False, time.time() + 240
    while time.time() < deadline and not found:
        try:
            data = json.load(urllib.request.urlopen("http://127.0.0.1:15500/api/results", timeout=10))
            listening = True
            found = want in {e.get("evalId") for e in data.get("data", [])}
        except OSError:
            pass
        if not found:
            time.sleep(1)
    os.killpg(view.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    code = view.wait(timeout=60)
    time.sleep(1)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) == view.pid:
                left.append(open(f"/proc/{pid}/cmdline").read().replace(chr(0), " ").strip())
        except OSError:
            pass
    print(json.dumps({"listening": listening, "found": found, "code": code, "left": left}))
    """
)


@shared_run("tools")
def promptfoo_view(
    tmp_path: Path,
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str] | None, Path]:
    """`make evals`' promptfoo stage, then `npx promptfoo view` asked for the eval it stored (when it stored
    one): both processes, and the folder holding the store and the connect() log."""
    store = tmp_path / "evals.duckdb"
    # The eval `make evals` runs (its promptfoo stage: the launcher, with the project's state folder).
    out = tmp_path / "evals"
    env = {**user_env(store)}
    stage = subprocess.run(
        [str(VENV_BIN / "python"), "-m", "kit.pipeline", "--only", "promptfoo", "--out", str(out)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )
    stored = runs(store, "promptfoo") if store.exists() else []
    eval_id = stored[0]["meta"].get("evalId") if len(stored) == 1 else None
    if not eval_id:
        return stage, None, tmp_path  # the test says why
    proc = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", VIEW_DRIVER, str(tmp_path / "connect.log"), str(eval_id)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return stage, proc, tmp_path


def test_npx_promptfoo_view_shows_make_evals_eval(promptfoo_view) -> None:
    stage, proc, tmp_path = promptfoo_view
    store = tmp_path / "evals.duckdb"
    (run,) = runs(store, "promptfoo")
    eval_id = run["meta"].get("evalId")
    assert eval_id, stage.stdout[-2000:]
    log = tmp_path / "connect.log"
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["listening"], "promptfoo view never answered on 127.0.0.1:15500"
    assert got["found"], f"promptfoo view does not list make evals' eval {eval_id}"
    assert got["left"] == [], f"processes left after Ctrl-C: {got['left']}"
    assert outside_loopback(log) == []
