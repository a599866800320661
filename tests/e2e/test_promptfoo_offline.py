"""Promptfoo runs offline: the launcher's environment, and a traced eval that connects nowhere but loopback."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from _tracing import strace, strace_unusable

from kit_promptfoo import run_promptfoo

ROOT = Path(__file__).resolve().parents[2]
needs_promptfoo = pytest.mark.skipif(
    not run_promptfoo.promptfoo_bin(ROOT).exists(), reason="node_modules missing: run `make promptfoo-install`"
)

# strace prints the peer of every connect()/sendto(); these are the forms an IP peer takes.
_PEER = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')
_LOCAL = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def non_local_peers(strace_log: str) -> list[str]:
    bad = []
    for line in strace_log.splitlines():
        for m in _PEER.finditer(line):
            addr = m.group(1) or m.group(2)
            if addr not in _LOCAL:
                bad.append(line.strip())
    return bad


def test_offline_env_sets_every_flag_and_keeps_state_in_the_project(tmp_path: Path) -> None:
    env = run_promptfoo.offline_env(tmp_path, base={"PATH": "/usr/bin", "HTTPS_PROXY": "http://corp:3128"})
    for flag in (
        "PROMPTFOO_DISABLE_TELEMETRY",
        "PROMPTFOO_DISABLE_UPDATE",
        "PROMPTFOO_DISABLE_SHARING",
        "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION",
    ):
        assert env[flag] == "1", flag
    assert env["PROMPTFOO_CONFIG_DIR"] == str(tmp_path / ".promptfoo")
    assert env["PATH"].split(":")[0] == str(tmp_path / "node_modules" / ".bin")
    # A proxy the user had would carry the telemetry beacon out: offline mode replaces it.
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    online = run_promptfoo.offline_env(tmp_path, base={"KIT_PROMPTFOO_ONLINE": "1", "HTTPS_PROXY": "http://p:1"})
    assert online["HTTPS_PROXY"] == "http://p:1"


def test_peer_parser_flags_dns_and_remote_hosts() -> None:
    log = (
        '1 connect(3, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.53")}, 16) = 0\n'
        '1 connect(4, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}, 16) = -1\n'
        '1 connect(5, {sa_family=AF_UNIX, sun_path="/tmp/x.pipe"}, 110) = 0\n'
        '1 connect(6, {sa_family=AF_INET6, sin6_port=htons(443), inet_pton(AF_INET6, "2606:4700::1", &x)}) = 0\n'
    )
    assert len(non_local_peers(log)) == 2


@needs_promptfoo
@pytest.mark.skipif(strace_unusable() is not None, reason=str(strace_unusable()))
def test_eval_with_python_provider_and_assertion_connects_only_to_loopback(tmp_path: Path) -> None:
    (tmp_path / "prov.py").write_text(
        "def call_api(prompt, options, context):\n    return {'output': prompt.upper()}\n"
    )
    (tmp_path / "check.py").write_text(
        "def get_assert(output, context):\n    return {'pass': output == 'SAY HELLO', 'score': 1, 'reason': 'ok'}\n"
    )
    (tmp_path / "cfg.yaml").write_text(
        "prompts: ['say {{x}}']\n"
        "providers: ['file://prov.py']\n"
        "tests:\n  - vars: {x: hello}\n    assert: [{type: python, value: file://check.py}]\n"
    )
    log = tmp_path / "strace.txt"
    cmd = strace(log, "connect,sendto,sendmsg,sendmmsg")
    cmd += run_promptfoo.command(["eval", "-c", str(tmp_path / "cfg.yaml"), "--no-progress-bar", "--no-cache"], ROOT)
    base = {k: v for k, v in os.environ.items() if k != "KIT_PROMPTFOO_ONLINE"}
    env = run_promptfoo.offline_env(ROOT, base=base)
    env["PROMPTFOO_CONFIG_DIR"] = str(tmp_path / "state")
    env["NODE_COMPILE_CACHE"] = str(tmp_path / "compiled")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout
    assert any(p.is_file() for p in (tmp_path / "compiled").rglob("*"))  # the pinned Node kept its code cache
    traced = log.read_text()
    assert "connect(" in traced  # strace saw the run (the beacon's refused connect to 127.0.0.1 at least)
    assert non_local_peers(traced) == []


def _waiting_on(lock: Path) -> bool:
    """Whether a process waits for a flock on `lock` (Linux lists each blocked waiter in /proc/locks as `->`)."""
    inode = f":{lock.stat().st_ino} "
    return any("->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines())


@needs_promptfoo
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads the waiting locks from /proc/locks (Linux)")
def test_a_fresh_state_folder_is_created_by_one_launch_while_the_others_wait_their_turn(tmp_path: Path) -> None:
    """Promptfoo creates its database with no lock between processes: two launches on a fresh state folder
    (two pipelines in one checkout) must not both create it. While one holds the lock, another waits for it,
    creating nothing; once free, it creates the database with a real Promptfoo; then a launch finds it at once."""
    env = run_promptfoo.offline_env(ROOT, base={k: v for k, v in os.environ.items() if k != "KIT_PROMPTFOO_ONLINE"})
    state = tmp_path / "state"
    env["PROMPTFOO_CONFIG_DIR"] = str(state)
    state.mkdir()
    exe = run_promptfoo.promptfoo_bin(ROOT)
    got: list[str | None] = []
    lock = state / run_promptfoo.STATE_LOCK
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another launch creating it
        waiting = threading.Thread(target=lambda: got.append(run_promptfoo.created_state(exe, env)))
        waiting.start()
        deadline = time.monotonic() + 30
        while not _waiting_on(lock) and waiting.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _waiting_on(lock), f"the launch did not wait for the lock: {got}"
        assert not (state / "promptfoo.db").exists() and got == []
    waiting.join(120)
    assert got == [None] and (state / "promptfoo.db").is_file()
    started = time.perf_counter()
    assert run_promptfoo.created_state(exe, env) is None
    assert time.perf_counter() - started < 1  # no Promptfoo started: it exists


@needs_promptfoo
def test_a_fresh_state_folder_gets_a_copy_of_the_first_database_this_promptfoo_created(tmp_path: Path) -> None:
    """Creating the tables starts a Promptfoo (about 2 CPU-s); the first database an installed Promptfoo creates is
    kept beside it, under its version, and a later fresh folder gets a copy that Promptfoo runs on."""
    modules = tmp_path / "node_modules"  # the kit's own Promptfoo, in a folder of its own (no kept copy yet)
    (modules / ".bin").mkdir(parents=True)
    (modules / ".bin" / "promptfoo").symlink_to(run_promptfoo.promptfoo_bin(ROOT).resolve())
    (modules / "promptfoo").symlink_to((ROOT / "node_modules" / "promptfoo").resolve())
    exe = modules / ".bin" / "promptfoo"
    base = {k: v for k, v in os.environ.items() if k != "KIT_PROMPTFOO_ONLINE"}
    env = run_promptfoo.offline_env(ROOT, base=base)
    version = run_promptfoo.pristine_database(exe)
    assert version is not None and version.parent == modules and not version.exists()

    env["PROMPTFOO_CONFIG_DIR"] = str(tmp_path / "first")
    assert run_promptfoo.created_state(exe, env) is None
    assert version.is_file() and version.read_bytes() == (tmp_path / "first" / "promptfoo.db").read_bytes()

    env["PROMPTFOO_CONFIG_DIR"] = str(tmp_path / "second")
    started = time.perf_counter()
    assert run_promptfoo.created_state(exe, env) is None
    assert time.perf_counter() - started < 1  # copied: no Promptfoo started
    assert (tmp_path / "second" / "promptfoo.db").read_bytes() == version.read_bytes()
    assert not [p.name for p in modules.iterdir() if p.name.endswith(".partial")]
    listed = subprocess.run([str(exe), "list", "evals"], env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]

    # A kept copy that is not a database (truncated, overwritten) is never handed on: Promptfoo makes the next
    # folder's, and that one is kept instead.
    version.write_bytes(b"not a database")
    env["PROMPTFOO_CONFIG_DIR"] = str(tmp_path / "third")
    assert run_promptfoo.created_state(exe, env) is None
    made = (tmp_path / "third" / "promptfoo.db").read_bytes()
    assert made.startswith(b"SQLite format 3\x00") and version.read_bytes() == made


def test_a_state_folder_that_cannot_hold_the_lock_is_named_never_a_traceback(tmp_path: Path) -> None:
    exe = run_promptfoo.promptfoo_bin(ROOT)
    (tmp_path / "file").write_text("")
    problem = run_promptfoo.created_state(exe, {"PROMPTFOO_CONFIG_DIR": str(tmp_path / "file" / "state")})
    assert problem is not None and f"state folder {tmp_path / 'file' / 'state'}" in problem
    # The lock cannot be taken but the database is there: Promptfoo runs on it as before.
    state = tmp_path / "made"
    (state / run_promptfoo.STATE_LOCK).mkdir(parents=True)
    (state / "promptfoo.db").write_bytes(b"")
    assert run_promptfoo.created_state(exe, {"PROMPTFOO_CONFIG_DIR": str(state)}) is None
