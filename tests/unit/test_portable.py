"""The kit where teams run it first: macOS. Every module imports, and `kit run` runs and stores a suite, in an
interpreter that looks like macOS to the kit: `sys.platform` is "darwin", Linux's own calls are gone
(`os.sched_getaffinity`, `select.epoll`, `os.pidfd_open`, ...) and `/proc` cannot be read. So nothing in the kit
needs Linux at import time, and the runner's concurrency cap (flock), its hosts (spawn, no prctl) and the store
work without /proc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

AS_MACOS = r"""
import builtins, io, os, select, sys, sysconfig, time, types

sysconfig.get_config_vars()  # the interpreter's own build data, read under its real platform name
sys.platform = "darwin"
# The standard library's own macOS module (urllib reads the system proxy settings through it).
scproxy = types.ModuleType("_scproxy")
scproxy._get_proxy_settings = lambda: {"exclude_simple": False, "exceptions": ()}
scproxy._get_proxies = lambda: {}
sys.modules["_scproxy"] = scproxy
for module, names in (
    (os, ("sched_getaffinity", "sched_setaffinity", "pidfd_open", "memfd_create", "eventfd", "posix_fadvise",
          "getxattr", "setxattr", "listxattr", "splice", "copy_file_range")),
    (select, ("epoll",)),
    (time, ("pthread_getcpuclockid",)),
):
    for name in names:
        if hasattr(module, name):
            delattr(module, name)
_open = io.open


def no_proc(file, *args, **kwargs):
    if str(file).startswith("/proc"):
        raise FileNotFoundError(2, "No such file or directory (macOS has no /proc)", str(file))
    return _open(file, *args, **kwargs)


builtins.open = io.open = no_proc
"""

IMPORT_ALL = (
    AS_MACOS
    + r"""
import importlib, json, pkgutil

failed = {}
names = []
for top in ("kit", "kit_promptfoo"):
    package = importlib.import_module(top)
    names.append(top)
    for info in pkgutil.walk_packages(package.__path__, prefix=top + "."):
        if info.name.endswith("__main__"):
            continue  # a module that runs a command when imported
        names.append(info.name)
for name in names:
    try:
        importlib.import_module(name)
    except BaseException as e:
        failed[name] = f"{type(e).__name__}: {e}"
from kit.runner import pool
print(json.dumps({"imported": len(names), "failed": failed, "workers": pool.default_workers()}))
"""
)

AGENT = """\
def run(text):
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "echo " + text}]
"""

CASES = 'id: echo\ninput: "hi"\nruns: 3\nchecks: [{type: contains, text: "echo hi"}]\n'

KIT_RUN = (
    AS_MACOS
    + r"""
from kit.cli import main
code = main(["run", "--agent", "mac_agent:run", "--cases", "cases.yaml", "--pool", "process", "--json", "-q"])
sys.stdout.flush()
raise SystemExit(code)
"""
)


def _as_macos(script: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_module_of_the_kit_imports_where_linux_is_not() -> None:
    done = _as_macos(IMPORT_ALL, ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["failed"] == {}
    assert got["imported"] > 100  # the walk found the kit, not an empty package
    assert got["workers"] >= 1


def test_kit_run_runs_and_stores_a_suite_where_linux_is_not(tmp_path: Path) -> None:
    (tmp_path / "mac_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    store = tmp_path / "store.duckdb"
    done = _as_macos(KIT_RUN, tmp_path, {"KIT_STORE": str(store), "KIT_RUN_ID": "mac-1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["run_id"] == "mac-1" and out["summary"]["runs"] == 3
    assert [r["passed"] for r in out["results"]] == [True] * 3
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    try:
        assert con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall() == [("complete", 1)]
    finally:
        con.close()
