"""The recordings a process runs under: the mode, the folder, the pinned model, and the stubs installed once.

    rec = Recordings("replay", Path("golden/recordings"), model="gpt-4o-2024-08-06")
    install(rec)                                   # the plan does it (`Plan.recordings`); hosts follow
    with attempt("refund/late", 0) as tape:        # kit.runner.invoke, around the agent's call
        ...                                        # the agent's SDK calls are answered from the tape
    error = rec.finish(tape)                       # the attempt's misses (replay), or None; record: saved

`live` installs nothing. A process nobody installed them in (the runner's host processes, a tool's subprocess)
takes them from its settings on its first call (`kit.settings.process_settings`: the plan document KIT_PLAN
names, which `Plan.install_recordings` hands to the processes it starts), never from variables of their own.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from kit.errors import KitInputError
from kit.recording.files import JUDGE_PREFIX, save_attempt
from kit.recording.format import Recording, parse, path_for
from kit.recording.router import Patched, Router
from kit.recording.tape import Tape, current

Mode = Literal["live", "record", "replay", "record-missing"]
MODES: tuple[str, ...] = ("live", "record", "replay", "record-missing")
# A process's own recording session, when no evals id names one.
OWN_SESSION = f"process-{os.getpid()}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Recordings:
    """Where the model calls of every attempt are recorded or replayed from, and how."""

    mode: Mode
    folder: Path
    model: str | None = None  # the pinned model id: a recording of another is refused
    # The recording session (a `make evals`: its evals id): its first save of an attempt replaces it, the next
    # add to it (kit.recording.files.save_attempt). Empty: this process's own.
    session: str = ""

    def open(self, case_id: str, attempt: int, *, model: str | None = None) -> Tape:
        """The tape for this attempt: replayed when recorded (replay, record-missing), else recorded. `model`:
        the model id pinned for these calls (the judge's), else the agent's."""
        pinned = model if model is not None else self.model
        if self.mode == "record":
            return Tape(case_id, attempt, "record", model=pinned)
        source = str(path_for(self.folder, case_id))
        try:
            recording = _read(source)
        except KitInputError as e:
            return Tape(case_id, attempt, "replay", refused=f"case '{case_id}' attempt {attempt}: {e}", source=source)
        if recording is not None and recording.case != case_id:
            why = f"{source}: the recording is case '{recording.case}', not '{case_id}'"
            return Tape(case_id, attempt, "replay", refused=why, source=source)
        if recording is not None and pinned is not None and recording.model != pinned:
            why = (
                f"case '{case_id}' attempt {attempt}: {source} was recorded with model {recording.model!r}, "
                f"but the plan pins {pinned!r}: record it again"
            )
            return Tape(case_id, attempt, "replay", refused=why, source=source)
        recorded = recording.attempt(attempt) if recording is not None else None
        if recorded is None and self.mode == "record-missing":
            return Tape(case_id, attempt, "record", model=pinned)
        return Tape(case_id, attempt, "replay", recorded=recorded, source=source)

    def finish(self, tape: Tape) -> str | None:
        """After the attempt: a recording tape saved (the attempt's file merged under a lock); the attempt's
        error when it missed (the first miss, and how many more)."""
        if tape.mode == "record" and (tape.kept or path_for(self.folder, tape.case_id).exists()):
            save_attempt(self.folder, tape.case_id, tape.attempt, tape.kept, tape.model, self.session or OWN_SESSION)
        if not tape.misses:
            return None
        more = len(tape.misses) - 1
        return "recording miss: " + tape.misses[0] + (f" (and {more} more)" if more else "")


@lru_cache(maxsize=1024)
def _parsed(path: str, _mtime_ns: int, _size: int) -> Recording:
    with open(path, "rb") as f:
        return parse(f.read(), file=path)


def _read(path: str) -> Recording | None:
    """A recording file, parsed once per version (many attempts and cases replay from one process)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror or e}", file=path) from None
    try:
        return _parsed(path, st.st_mtime_ns, st.st_size)
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror or e}", file=path) from None


# --- this process's recordings ---------------------------------------------------------------------------

_STATE: dict[str, object] = {"resolved": False, "recordings": None, "patched": None}
_LOCK = threading.Lock()


def install(recordings: Recordings | None) -> bool:
    """Run this process's model calls under `recordings` (None or live: untouched). Replaying, the stubs are
    built at once: from now on no request of this process reaches the network. Recording, they are built when
    the process first makes an attempt's calls (`active`), so a process that only hands its calls to its hosts
    never imports vcrpy. Installing the same recordings again costs a comparison. True when this call changed
    what the process runs under."""
    with _LOCK:
        if _STATE["resolved"] and _STATE["recordings"] == recordings:
            return False
        _remove()
        _STATE["resolved"] = True
        if recordings is None or recordings.mode == "live":
            _STATE["recordings"] = None
            return True
        _STATE["recordings"] = recordings
        if recordings.mode == "replay":
            _STATE["patched"] = Patched(Router(replaying=True))
        return True


def uninstall() -> None:
    """The stubs taken out; the process stays live from then on, its settings not
    read again (tests; a process otherwise keeps its recordings)."""
    with _LOCK:
        _remove()
        _STATE["resolved"] = True


def _remove() -> None:
    patched = _STATE.get("patched")
    if isinstance(patched, Patched):
        patched.remove()
    _STATE.update(recordings=None, patched=None)


def active() -> Recordings | None:
    """This process's recordings, their stubs in place: those installed, else (once) those its settings name.
    Called before an attempt's calls are made."""
    if not _STATE["resolved"]:
        from kit.settings import process_settings

        install(from_settings(process_settings()))
    found = _STATE["recordings"]
    if not isinstance(found, Recordings):
        return None
    if _STATE["patched"] is None:
        with _LOCK:
            if _STATE["patched"] is None and _STATE["recordings"] is found:
                _STATE["patched"] = Patched(Router(replaying=found.mode == "replay"))
    return found


def from_settings(settings: object) -> Recordings | None:
    """The recordings a Settings object names (`[tool.kit.recordings]`, `agent_model`), None for live."""
    section = getattr(settings, "recordings", None)
    mode = getattr(section, "mode", "live")
    if section is None or mode == "live":
        return None
    session = getattr(settings, "evals_id", None) or ""  # never a run id: a reused one would add to old recordings
    return Recordings(mode, Path(section.folder).absolute(), getattr(settings, "agent_model", None), session)


@contextlib.contextmanager
def attempt(case_id: str, number: int, *, judge: bool = False) -> Iterator[Tape | None]:
    """The model calls made inside (in this context: its thread, or tasks it starts) are this attempt's.
    `judge`: the judge's calls about the attempt, kept apart (`_judge/<case id>`). Yields None when live."""
    recordings = active()
    if recordings is None:
        yield None
        return
    tape = recordings.open(JUDGE_PREFIX + case_id if judge else case_id, number)
    token = current.set(tape)
    try:
        yield tape
    finally:
        current.reset(token)


@contextlib.contextmanager
def turn(case_id: str, number: int) -> Iterator[list[str]]:
    """The model calls made inside are attempt `number` of the case, as in `attempt`, and the tape is finished
    when the block ends (saved when recording; a session's later saves of the attempt add to it, as one attack
    conversation's turns do). A replayed request with no recording is put in the yielded list, for the caller to
    make its error. Live: nothing."""
    missed: list[str] = []
    recordings = active()
    if recordings is None:
        yield missed
        return
    tape = recordings.open(case_id, number)
    token = current.set(tape)
    try:
        yield missed
    finally:
        current.reset(token)
        error = recordings.finish(tape)
        if error is not None:
            missed.append(error)


@contextlib.contextmanager
def judging(case_id: str | None, number: int, model: str | None) -> Iterator[Tape | None]:
    """The judge's calls about attempt `number` of a case, recorded or replayed as the agent's are, apart from
    them (`_judge/<case id>.json`, pinned to the judge's `model`), saved when the block ends. A replayed call
    with no recording is answered 400 (the judge's error names the miss). No case (None) or live: nothing."""
    recordings = active()
    if recordings is None or case_id is None:
        yield None
        return
    tape = recordings.open(JUDGE_PREFIX + case_id, number, model=model)
    token = current.set(tape)
    try:
        yield tape
    finally:
        current.reset(token)
        recordings.finish(tape)
