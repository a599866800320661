"""What the kit's MCP servers tell the process that started them (the agent's: the kit's runner, a Promptfoo
worker), so an attempt hears of it whatever the agent returns.

    tell_parent({"server": "shop", "miss": "..."})       # in `kit mcp replay|serve` (stdio), per miss
    report = reported_since(t0)                          # in the agent's process, after the attempt
    called = with_mcp_report(called, case_id)            # an attempt's Called, a miss made its error

A server started over stdio is its agent's child. Each line it tells goes to a file of its parent's,
`/tmp/kit-mcp-<uid>/<pid>-<start time>.jsonl` (kit.mcp.process: a later process given the pid is another
file), appended in one write. The folder is fixed, not the temp folder of either side: an MCP client may start
its server without the agent's TMPDIR (the `mcp` SDK's stdio client passes only a few variables). It is the
user's own (0700, refused when another user owns it).

An attempt reads the lines told since it started (the agent's wall time, `agent_s`). Attempts that run at once
in one process share the file: a miss told while they overlap is an error of each of them (never a pass of
any).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import KitInputError
from kit.mcp.process import alive, identity, start_time

FOLDER = Path("/tmp") / f"kit-mcp-{os.getuid()}"
# Lines told this long before an attempt's measured start still count for it: the agent's wall time is
# measured around the call, not from the server's start.
SLACK_S = 0.5


def _folder() -> Path | None:
    """The user's folder of these files (made 0700), None when it is not safely theirs."""
    try:
        FOLDER.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(FOLDER)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return FOLDER


def _file(pid: int, started: int | None) -> Path:
    return FOLDER / f"{pid}-{started}.jsonl"


def tell_parent(event: dict[str, Any]) -> None:
    """Append `event` (with the time) to the parent process's file. Never raises: the server's own answer
    (and its stderr) still says what happened."""
    parent = os.getppid()
    started = start_time(parent)
    if started is None or _folder() is None:
        return
    path = _file(parent, started)
    line = (json.dumps({"t": time.time(), **event}, ensure_ascii=False) + "\n").encode()
    with contextlib.suppress(OSError):
        new = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        if new:
            _prune()


def _prune() -> None:
    """Remove the files of processes that are gone."""
    for f in FOLDER.glob("*.jsonl"):
        pid, _, started = f.stem.partition("-")
        if pid.isdigit() and started.isdigit() and not alive(int(pid), int(started)):
            f.unlink(missing_ok=True)


@dataclass
class Report:
    """What this process's MCP servers told since a time: the calls a replayed cassette could not answer, and
    the servers that replayed a cassette or recorded into one (server -> cassette)."""

    misses: list[tuple[str, str]] = field(default_factory=list)  # (server, what the replay said)
    replayed: dict[str, str] = field(default_factory=dict)
    recorded: dict[str, str] = field(default_factory=dict)


class _Told:
    """This process's file, read once: each call reads only the lines appended since the last (a long-lived
    worker makes many attempts)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = 0
        self.path: Path | None = None
        self.offset = 0
        self.events: list[dict[str, Any]] = []

    def since(self, t0: float) -> list[dict[str, Any]]:
        with self.lock:
            if self.pid != os.getpid():  # first call, or a forked child: its own file
                pid, started = identity()
                self.pid, self.path, self.offset, self.events = pid, _file(pid, started), 0, []
            assert self.path is not None
            new = b""
            # Only a file of this user's, in this user's own folder: what another user wrote there could pass
            # off a cassette of theirs as the one a replay was judged on.
            if _folder() is not None:
                with contextlib.suppress(OSError), self.path.open("rb") as f:
                    if os.fstat(f.fileno()).st_uid == os.getuid():
                        f.seek(self.offset)
                        new = f.read()
            whole = new[: new.rfind(b"\n") + 1]  # a line being written is read next time
            self.offset += len(whole)
            for line in whole.splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and isinstance(event.get("t"), int | float):
                    self.events.append(event)
            return [e for e in self.events if e["t"] >= t0]


_TOLD = _Told()


def reported_since(t0: float) -> Report:
    """What was told to this process at or after `t0` (time.time())."""
    report = Report()
    for event in _TOLD.since(t0):
        server = str(event.get("server") or "")
        if isinstance(event.get("miss"), str):
            report.misses.append((server, event["miss"]))
        for kind in ("replayed", "recorded"):
            if isinstance(event.get(kind), str):
                getattr(report, kind)[server] = event[kind]
    return report


def with_mcp_report(called: Any, case_id: str) -> Any:
    """An attempt's Called (kit.runner.invoke), read with what its MCP servers told:
    - a call a replayed cassette could not answer is the attempt's error, whatever the agent returned (its own
      code may have swallowed the failed call);
    - an attempt whose tools recorded into a cassette keeps its end state there, for this case;
    - an attempt whose tools ran from a replayed cassette wrote no database: its end state is the one recorded
      with the cassette for this case, else its end_state checks are errors naming the replay (never a
      failure of tables no tool wrote)."""
    if called.error is not None or called.skipped is not None:
        return called
    report = reported_since(time.time() - called.agent_s - SLACK_S)
    import dataclasses

    if report.misses:
        server, said = report.misses[0]
        to = f" to server {server}" if server else ""
        more = f" (and {len(report.misses) - 1} more)" if len(report.misses) > 1 else ""
        error = f"the agent made an MCP call{to} that its replayed cassette cannot answer: {said}{more}"
        return dataclasses.replace(called, error=error, data=None, json=None, trace=None)
    data = called.data
    if not isinstance(data, dict) or "end_state" not in data:
        return called
    for cassette in report.recorded.values():
        try:
            _keep_end_state(Path(cassette), case_id, data)
        except (KitInputError, OSError) as e:
            why = f"the end state could not be kept with the recorded MCP cassette {cassette}: {e}"
            return dataclasses.replace(called, error=why, data=None, json=None, trace=None)
    if not report.replayed:
        return called
    new = {k: v for k, v in data.items() if k not in ("end_state", "end_state_columns")}
    recorded = next((s for c in report.replayed.values() if (s := _recorded_end_state(Path(c), case_id))), None)
    if recorded is not None:
        new.update(recorded)
    else:
        server, cassette = next(iter(report.replayed.items()))
        new["end_state"] = data["end_state"]
        new["end_state_replayed"] = (
            f"not judged: the tools ran from the replayed MCP cassette {cassette} (server {server}), which writes "
            f"no database and holds no end state recorded for case {case_id!r}: record the case "
            "(KIT_MCP_MODE=record) to judge its end state under replay"
        )
    from kit.trace import parse_trace

    try:
        trace = parse_trace(new)
    except Exception as e:  # a recorded end state that is not one: the attempt's error, named
        why = f"the end state recorded with the replayed MCP cassette for case {case_id!r} cannot be read: {e}"
        return dataclasses.replace(called, error=why, data=None, json=None, trace=None)
    text = json.dumps(new, default=str) if called.json is not None else None
    return dataclasses.replace(called, data=new, trace=trace, json=text)


def _recorded_end_state(cassette: Path, case_id: str) -> dict[str, Any] | None:
    try:
        st = cassette.stat()
    except OSError:
        return None
    found = _end_states(str(cassette), st.st_mtime_ns, st.st_size).get(case_id)
    return json.loads(json.dumps(found)) if isinstance(found, dict) else None  # the caller's own copy


@functools.lru_cache(maxsize=16)
def _end_states(path: str, _mtime_ns: int, _size: int) -> dict[str, Any]:
    """A cassette's recorded end states (read once per version of the file)."""
    try:
        states = json.loads(Path(path).read_text(encoding="utf-8")).get("end_states")
    except (OSError, ValueError, AttributeError):
        return {}
    return states if isinstance(states, dict) else {}


def _keep_end_state(cassette: Path, case_id: str, data: dict[str, Any]) -> None:
    from kit.mcp.cassette import McpCassette, locked

    fields = {k: data[k] for k in ("end_state", "end_state_columns") if k in data}
    with locked(cassette):
        recorded = McpCassette.load(cassette)
        recorded.keep_end_state(case_id, fields)
        recorded.save()
