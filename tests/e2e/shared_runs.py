"""Slow runs shared by the e2e tests, started at the session's start and run in the background.

Most of the e2e suite's time is spent waiting on tools (`make evals`, Promptfoo, DeepEval), each using a
fraction of a core. A function decorated with `@shared_run("stream")` becomes a session fixture of that
name whose value is what the function returned. When a worker runs its first test (tests/conftest.py),
every shared run that the session's selected tests need starts, one thread per stream, so the runs overlap
with each other and with the unit tests; the tests that use them are collected last (conftest.py).

Runs of one stream run one after the other, in the order they were declared: one stream holds the runs
that must not overlap (two red teams of the reference agent in one checkout write the same generated file).

With xdist, each stream runs once, in the worker that claims it first (a file created exclusively in a
folder of this test run); the other workers read its results from that folder.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WAIT_LIMIT = 3 * 3600.0  # seconds a test waits for a run that another worker claimed (their timeouts come first)


@dataclass(frozen=True)
class SharedRun:
    name: str
    stream: str
    run: Callable[[Path], Any]  # gets a fresh folder of its own; returns what its tests assert on (picklable)


REGISTRY: dict[str, SharedRun] = {}


class SharedRunError(Exception):
    """A shared run raised: its tests fail with its traceback."""


def shared_run(stream: str) -> Callable[[Callable[[Path], Any]], Any]:
    """`run(tmp)` as a session fixture named after it, whose value is what `run` returned."""

    def register(run: Callable[[Path], Any]) -> Any:
        name = run.__name__
        if name in REGISTRY and REGISTRY[name].run.__module__ != run.__module__:
            raise ValueError(f"two shared runs named {name!r}: {REGISTRY[name].run.__module__}, {run.__module__}")
        REGISTRY[name] = SharedRun(name, stream, run)

        @pytest.fixture(scope="session", name=name)
        def fixture(tmp_path_factory: pytest.TempPathFactory) -> Any:
            return session(tmp_path_factory).result(name)

        fixture.__doc__ = run.__doc__
        return fixture

    return register


def needed(items: Iterable[pytest.Item]) -> set[str]:
    """The shared runs that the selected, not skipped tests use."""
    return {name for item in items if not _skipped(item) for name in item.fixturenames if name in REGISTRY}


def _skipped(item: pytest.Item) -> bool:
    if item.get_closest_marker("skip"):
        return True
    return any((m.args and m.args[0] is True) or m.kwargs.get("condition") is True for m in item.iter_markers("skipif"))


class SharedRuns:
    """This worker's view of the shared runs: the streams it claimed run in its threads; every result, its
    own or another worker's, is read from the test run's shared folder."""

    def __init__(
        self,
        tmp_factory: pytest.TempPathFactory,
        folder: Path | None = None,
        registry: dict[str, SharedRun] = REGISTRY,
    ) -> None:
        self._tmp = tmp_factory
        self._registry = registry
        if folder is None:
            base = tmp_factory.getbasetemp()
            run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
            # Under xdist each worker's base folder is a child of the run's; the run id keeps sessions apart.
            folder = base.parent / f"shared-runs-{run_id}" if run_id else base / "shared-runs"
        self.folder = folder
        self.folder.mkdir(exist_ok=True)
        # The environment as the session started: the runs read this copy, never os.environ, which the unit
        # tests running meanwhile in this process change (monkeypatch) and which is unsafe to iterate then.
        self.environ = dict(os.environ)
        self._threads: list[threading.Thread] = []
        self._started: set[str] = set()

    def start(self, names: Iterable[str]) -> None:
        wanted = set(names) - self._started
        self._started |= wanted
        streams: dict[str, list[SharedRun]] = {}
        for run in self._registry.values():  # declaration order
            if run.name in wanted:
                streams.setdefault(run.stream, []).append(run)
        for stream, runs in streams.items():
            if not self._claim(stream, [run.name for run in runs]):
                continue  # another worker runs it
            work = [(run, self._tmp.mktemp(run.name)) for run in runs]
            thread = threading.Thread(target=self._run_all, args=(work,), name=f"shared-{stream}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _claim(self, stream: str, names: list[str]) -> bool:
        """Whether this worker runs the stream: the first to create its claim (its pid, then the runs)."""
        try:
            fd = os.open(self.folder / f"{stream}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write("\n".join([str(os.getpid()), *names]) + "\n")
        return True

    def _run_all(self, work: list[tuple[SharedRun, Path]]) -> None:
        for run, tmp in work:
            try:
                outcome: tuple[bool, Any] = (True, run.run(tmp))
            except BaseException:  # the tests that use it fail with this traceback, as a fixture's would
                outcome = (False, traceback.format_exc())
            part = self.folder / f"{run.name}.part"
            part.write_bytes(pickle.dumps(outcome))
            part.rename(self.folder / f"{run.name}.done")

    def result(self, name: str) -> Any:
        self.start([name])  # a run that the session's selection did not announce
        done, claim = self.folder / f"{name}.done", self.folder / f"{self._registry[name].stream}.claim"
        deadline = time.monotonic() + WAIT_LIMIT
        while not done.exists():
            owner, *planned = (claim.read_text() if claim.exists() else "").splitlines() or [""]
            if owner.isdigit() and not _alive(int(owner)):
                raise SharedRunError(f"shared run {name}: worker {owner}, which ran it, died")
            if owner and planned and name not in planned:
                raise SharedRunError(f"shared run {name}: worker {owner} claimed its stream for {planned} only")
            if time.monotonic() > deadline:
                raise SharedRunError(f"shared run {name}: no result after {WAIT_LIMIT:.0f} s")
            time.sleep(0.5)
        ok, value = pickle.loads(done.read_bytes())
        if not ok:
            raise SharedRunError(f"shared run {name} failed:\n{value}")
        return value

    def join(self) -> None:
        for thread in self._threads:
            thread.join()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_session: SharedRuns | None = None


def earlier(name: str) -> Any:
    """Within a shared run: the result of a run declared before it in its stream (done by then: a stream runs
    its runs in order)."""
    if _session is None:
        raise SharedRunError(f"shared run {name}: asked for outside a session")
    return _session.result(name)


def environ() -> dict[str, str]:
    """The environment a shared run starts its commands from (a copy: change it freely)."""
    return dict(_session.environ) if _session is not None else dict(os.environ)


def session(tmp_factory: pytest.TempPathFactory) -> SharedRuns:
    global _session
    if _session is None:
        _session = SharedRuns(tmp_factory)
    return _session


def copy_repo(dest: Path) -> None:
    """The checkout's tracked files in `dest`, with the checkout's installed packages: a node_modules of links,
    and a .venv of links to the checkout's whose editable install points at the copy, so that the copy's
    commands run the copy's code (Promptfoo configs generated there name the copy's files)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)  # keeps mtimes, so make sees its stamps up to date
    if (ROOT / "node_modules").exists():
        _overlay_node_modules(ROOT / "node_modules", dest / "node_modules")
    if (ROOT / ".venv").exists():
        _overlay_venv(ROOT / ".venv", dest / ".venv", dest)
    # `make` in the copy must never redo the installs from the copy: a manifest newer than its stamp (edited
    # since the last install) is dated back to the stamp in the copy.
    for stamp, manifests in ((".venv/.installed", ["pyproject.toml"]),
                             ("node_modules/.installed", ["package.json", "package-lock.json", ".npmrc"])):  # fmt: skip
        if (ROOT / stamp).exists():
            at = (ROOT / stamp).stat().st_mtime
            for name in manifests:
                if (dest / name).exists() and (dest / name).stat().st_mtime > at:
                    os.utime(dest / name, (at, at))


def basic_red_team(repo: Path, env: dict[str, str], plugins: int | None = None) -> None:
    """A copy's red team (from `copy_repo`) with each attack under the basic strategy only, and only its first
    `plugins` plugins (None: every one). The other strategies re-encode the same attacks; `npx promptfoo redteam
    run` as typed (test_tools_as_typed) runs them all."""
    path = repo / "redteam" / "promptfooconfig.yaml"
    config = yaml.safe_load(path.read_text())
    config["redteam"]["plugins"] = config["redteam"]["plugins"][:plugins]
    config["redteam"]["strategies"] = ["basic"]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    # The root promptfooconfig.yaml carries the red team too: regenerated, as `make evals` asks after an edit.
    subprocess.run(
        [str(repo / ".venv" / "bin" / "python"), "-m", "kit_promptfoo.genconfig"],
        cwd=repo, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def _overlay_node_modules(modules: Path, into: Path) -> None:
    """A node_modules in `into` of links to each of `modules`' entries, its install stamp a copy (as old): an
    `npm ci` that `make` in the copy ran anyway would empty this folder of links, never the checkout's
    node_modules (a link to the whole folder let it do that)."""
    into.mkdir()
    for entry in modules.iterdir():
        if entry.name == ".installed":
            shutil.copy2(entry, into / entry.name)
        else:
            (into / entry.name).symlink_to(entry)


def _overlay_venv(venv: Path, into: Path, project: Path) -> None:
    """A venv in `into` made of links to `venv`'s files, except what names the checkout: the console
    scripts' interpreter line and the editable install's map of packages to folders, which name `into` and
    `project` instead. Nothing written in it reaches the checkout's venv (no folder of it is linked whole
    where Python writes: site-packages and its __pycache__ are folders of their own)."""
    old, new = str(ROOT), str(project)
    into.mkdir()
    for entry in venv.iterdir():
        if entry.name in ("bin", "lib"):
            continue
        (into / entry.name).symlink_to(os.readlink(entry) if entry.is_symlink() else entry)
    if (venv / ".installed").exists():  # the stamp `make` checks, as old as the checkout's
        (into / ".installed").unlink()
        shutil.copy2(venv / ".installed", into / ".installed")
    (into / "bin").mkdir()
    for script in (venv / "bin").iterdir():
        target = into / "bin" / script.name
        head = b"" if script.is_symlink() or not script.is_file() else script.open("rb").read(2 + len(old))
        if script.is_symlink():
            target.symlink_to(os.readlink(script))  # python -> python3 -> the base interpreter
        elif head == b"#!" + old.encode():
            target.write_text(script.read_text().replace(f"#!{venv}/bin/", f"#!{into}/bin/", 1))
            shutil.copymode(script, target)
        else:
            target.symlink_to(script)
    for lib in (venv / "lib").iterdir():  # lib/python3.X
        site = lib / "site-packages"
        (into / "lib" / lib.name / "site-packages").mkdir(parents=True)
        for entry in lib.iterdir():
            if entry.name != "site-packages":
                (into / "lib" / lib.name / entry.name).symlink_to(entry)
        for entry in site.iterdir():
            target = into / "lib" / lib.name / "site-packages" / entry.name
            if entry.name == "__pycache__":  # a copy: the top-level modules' bytecode (typing_extensions' alone
                shutil.copytree(entry, target)  # takes 32 ms of CPU to compile, in every process of the copy)
            elif entry.name.startswith("__editable__") and entry.suffix == ".py":
                target.write_text(entry.read_text().replace(f"'{old}/", f"'{new}/").replace(f"'{old}'", f"'{new}'"))
            else:
                target.symlink_to(entry)
