"""The e2e suite's shared runs (shared_runs.py): two workers, one folder; each stream runs once, in order,
in the worker that claimed it, and both read every result; a run that raises fails its tests with its
traceback; a copied checkout runs its own code."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
from shared_runs import ROOT, SharedRun, SharedRunError, SharedRuns, copy_repo


def _registry(log: list[tuple[str, str]], lock: threading.Lock) -> dict[str, SharedRun]:
    def make(name: str, value: object, seconds: float = 0.0):
        def run(tmp: Path) -> object:
            with lock:
                log.append(("start", name))
            time.sleep(seconds)
            assert tmp.is_dir()
            with lock:
                log.append(("end", name))
            if isinstance(value, Exception):
                raise value
            return value

        return run

    runs = [
        SharedRun("first", "a", make("first", {"n": 1}, 0.3)),
        SharedRun("second", "a", make("second", [2])),
        SharedRun("other", "b", make("other", "b", 0.1)),
        SharedRun("broken", "c", make("broken", RuntimeError("the tool crashed"))),
    ]
    return {r.name: r for r in runs}


def test_each_stream_runs_once_in_order_and_every_worker_reads_its_results(tmp_path_factory) -> None:
    log: list[tuple[str, str]] = []
    registry = _registry(log, threading.Lock())
    folder = tmp_path_factory.mktemp("shared")
    one, two = (SharedRuns(tmp_path_factory, folder, registry) for _ in range(2))
    one.start(["first", "second", "other"])
    two.start(["first", "second", "other"])  # every stream is claimed already: this worker only reads
    assert two.result("second") == [2] and two.result("first") == {"n": 1} and two.result("other") == "b"
    assert one.result("first") == {"n": 1}
    one.join()
    two.join()
    assert len(set(log)) == len(log) == 6  # each run started and ended once, in one of the two workers
    stream_a = [e for e in log if e[1] in ("first", "second")]
    assert stream_a == [("start", "first"), ("end", "first"), ("start", "second"), ("end", "second")]


def test_a_run_that_raises_fails_its_tests_with_the_traceback(tmp_path_factory) -> None:
    registry = _registry([], threading.Lock())
    runs = SharedRuns(tmp_path_factory, tmp_path_factory.mktemp("shared"), registry)
    runs.start(["broken"])
    with pytest.raises(SharedRunError, match=r"(?s)shared run broken failed:.*RuntimeError: the tool crashed"):
        runs.result("broken")
    runs.join()


def test_a_run_outside_the_claimed_plan_is_an_error_not_a_wait(tmp_path_factory) -> None:
    registry = _registry([], threading.Lock())
    folder = tmp_path_factory.mktemp("shared")
    one, two = SharedRuns(tmp_path_factory, folder, registry), SharedRuns(tmp_path_factory, folder, registry)
    one.start(["first"])  # claims stream a for `first` only
    with pytest.raises(SharedRunError, match=r"claimed its stream for \['first'\] only"):
        two.result("second")
    one.join()


def test_a_copy_of_the_checkout_runs_its_own_code(tmp_path: Path) -> None:
    copy_repo(tmp_path)
    packages = ["kit", "kit_promptfoo", "kit_promptfoo.redteam"]
    probe = f"import {', '.join(packages)}; print({', '.join(p + '.__file__' for p in packages)})"
    out = subprocess.run(
        [str(tmp_path / ".venv" / "bin" / "python"), "-c", probe],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        str(tmp_path / "kit" / "__init__.py"),
        str(tmp_path / "kit_promptfoo" / "__init__.py"),
        str(tmp_path / "kit_promptfoo" / "redteam" / "__init__.py"),
    ]
    assert (tmp_path / ".venv" / "bin" / "kit").read_text().startswith(f"#!{tmp_path}/.venv/bin/python")
    assert not (ROOT / ".venv" / "bin" / "kit").read_text().startswith(f"#!{tmp_path}")  # the checkout's untouched
    # `make` in the copy finds both installs up to date; and an `npm ci` it ran anyway could empty only the
    # copy's node_modules, a folder of its own (links to the checkout's packages), never the checkout's.
    if (ROOT / "node_modules" / ".installed").exists() and (ROOT / ".venv" / ".installed").exists():
        stale = subprocess.run(["make", "-q", ".venv/.installed", "node_modules/.installed"], cwd=tmp_path, timeout=60)
        assert stale.returncode == 0
    if (ROOT / "node_modules").exists():
        modules = tmp_path / "node_modules"
        assert not modules.is_symlink() and modules.is_dir()
        assert not (modules / ".installed").is_symlink()
        assert (modules / ".bin" / "promptfoo").resolve() == (ROOT / "node_modules" / ".bin" / "promptfoo").resolve()
