"""Writing recordings while many attempts run: one attempt merged into its case's file under a lock, and the
recordings no case uses any more pruned away.

Attempts of one case may finish at once in threads of one process and in the runner's host processes: each
merges its attempt into the file under an exclusive `flock` on `<folder>/.lock` (with a thread lock beside it),
reading the file afresh, so no attempt overwrites another's.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from kit.errors import KitInputError
from kit.recording.format import Exchange, Recording, case_ids, read, write

LOCK_FILE = ".lock"
# A judge's recordings sit beside the agent's, under this prefix and the case id.
JUDGE_PREFIX = "_judge/"
_THREADS = threading.Lock()


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Exclusive access to the recordings in `folder`, across threads and processes."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_FILE, "a+b")  # noqa: SIM115  # held for the block below
    except OSError as e:
        raise KitInputError(f"cannot lock the recordings: {e.strerror or e}", file=str(folder)) from None
    with _THREADS, handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def save_attempt(folder: Path, case_id: str, attempt: int, exchanges: list[Exchange], model: str | None) -> Path:
    """Attempt `attempt` of the case (re)recorded into its file, the other attempts kept."""
    with locked(folder):
        current = read(folder, case_id) or Recording(case=case_id, model=model)
        return write(folder, current.with_attempt(attempt, exchanges, model))


def prune(folder: Path, used: Mapping[str, int]) -> list[str]:
    """Remove what no case uses: the file of a case not in `used` (case id -> its attempts per run), and in a
    used case's file the attempts from `used[case]` on. A judge's recordings follow their case. Returns what
    went, one line each."""
    gone: list[str] = []
    with locked(folder):
        for name, path in case_ids(folder):
            case = name.removeprefix(JUDGE_PREFIX)
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
