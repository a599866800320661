"""Writing recordings while many attempts run: one attempt merged into its case's file under a lock, and the
recordings no case uses any more pruned away.

Attempts of one case may finish at once in threads of one process and in the runner's host processes: each
merges its attempt into the file under an exclusive `flock` on `<folder>/.kit/lock` (with a thread lock beside
it), reading the file afresh, so no attempt overwrites another's.

One recording session (one `make evals`: its evals id; else one process) may call the agent more than once
for the same case and attempt: the red team's strategies send one attack in several forms under its case id.
The first save of an attempt in a session replaces what an earlier session recorded; the later ones add to it,
so each call's requests are found on replay. `<folder>/.kit/sessions.json` says which session wrote which
attempts (sessions at once keep theirs apart); `<folder>/.kit/` is the kit's own (a `.gitignore` in it keeps it
out of the repository).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from kit.errors import KitInputError
from kit.recording.format import Exchange, Recording, case_ids, read, write

STATE = ".kit"  # the folder's own state: the lock, the session's written attempts
# A judge's recordings sit beside the agent's, under this prefix and the case id.
JUDGE_PREFIX = "_judge/"
# The recordings of the calls that leave from Node (kit.recording.endpoint), one tape per red team: the attacker's
# and grader.cjs's. No case names them; pruning keeps them.
ATTACKER, GRADER = "_attacker/redteam", "_grader/redteam"
_THREADS = threading.Lock()


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Exclusive access to the recordings in `folder`, across threads and processes."""
    state = Path(folder) / STATE
    try:
        state.mkdir(parents=True, exist_ok=True)
        if not (state / ".gitignore").exists():
            (state / ".gitignore").write_text("*\n")
        handle = open(state / "lock", "a+b")  # noqa: SIM115  # held for the block below
    except OSError as e:
        raise KitInputError(f"cannot lock the recordings: {e.strerror or e}", file=str(folder)) from None
    with _THREADS, handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def save_attempt(
    folder: Path, case_id: str, attempt: int, exchanges: list[Exchange], model: str | None, session: str = ""
) -> Path:
    """Attempt `attempt` of the case (re)recorded into its file, the other attempts kept (unless recorded with
    another model): replaced on the session's first save of it, added to on the next (another call of the agent
    for the same attempt)."""
    with locked(folder):
        current = read(folder, case_id)
        if current is None or current.model != model:  # another model's attempts are no recording of this one
            current = Recording(case=case_id, model=model)
        sessions = _sessions(folder)
        written = sessions.setdefault(session, {"at": time.time(), "written": []})["written"]
        mark = f"{case_id}\n{attempt}"
        if mark in written:
            exchanges = [*(current.attempt(attempt) or []), *exchanges]
        else:
            written.append(mark)
            _write_sessions(folder, sessions)
        return write(folder, current.with_attempt(attempt, exchanges, model))


# Sessions at once (stages of one `make evals`, the runner's hosts) each keep what they wrote; the oldest go.
MAX_SESSIONS = 64


def _sessions(folder: Path) -> dict[str, dict]:
    """Each recent session's written attempts (`<folder>/.kit/sessions.json`); unreadable: none."""
    try:
        found = json.loads((Path(folder) / STATE / "sessions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {
        k: v
        for k, v in found.items()
        if isinstance(v, dict) and isinstance(v.get("written"), list) and isinstance(v.get("at"), int | float)
    }


def _write_sessions(folder: Path, sessions: dict[str, dict]) -> None:
    kept = dict(sorted(sessions.items(), key=lambda kv: kv[1]["at"])[-MAX_SESSIONS:])
    path = Path(folder) / STATE / "sessions.json"
    tmp = path.with_name(f".sessions.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(kept), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        raise KitInputError(f"cannot write the recording sessions: {e.strerror or e}", file=str(path)) from None


def prune(folder: Path, used: Mapping[str, int]) -> list[str]:
    """Remove what no case uses: the file of a case not in `used` (case id -> its attempts per run), and in a
    used case's file the attempts from `used[case]` on. A judge's recordings follow their case. Returns what
    went, one line each."""
    gone: list[str] = []
    with locked(folder):
        for name, path in case_ids(folder):
            case = name.removeprefix(JUDGE_PREFIX)
            if name in (ATTACKER, GRADER):
                continue
            runs = used.get(case)
            if runs is None:
                path.unlink()
                gone.append(f"{name}: no case uses it")
                continue
            recording = read(folder, name)
            if recording is None:
                continue
            extra = sorted((a for a in recording.attempts if int(a) >= runs), key=int)
            if extra:
                kept = {a: x for a, x in recording.attempts.items() if int(a) < runs}
                write(folder, Recording(case=recording.case, model=recording.model, attempts=kept))
                gone.append(f"{name}: attempt{'s' if len(extra) > 1 else ''} {', '.join(extra)} (the case runs {runs})")
    return gone
