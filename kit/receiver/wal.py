"""The receiver's write-ahead log: every span batch is on disk (fsync'd) before it is acknowledged.

A folder of segment files `wal-<n>.log`, each a run of records `<length:u32><crc32:u32><kind:u8><payload>`.
Kinds: a span batch as it arrived, decompressed (`PROTOBUF` or `JSON`), decoded again on a restart; which
of its traces were judged before the crash the store says (its trace ids). Appends from many threads share one
fsync (group commit): a writer waits until an fsync that started after its write has finished.

A segment is deleted once it is closed (a newer one took over) and every trace with spans in it is
judged and stored (its holds are dropped). On a restart, `replay` reads every segment left, in order: a
record cut short or failing its checksum at the end of a file is one that was never acknowledged (the
crash came mid-write) and ends that file; new records go to a new segment.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PROTOBUF, JSON = 1, 2
_HEAD = struct.Struct("<IIB")
SEGMENT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    segment: int
    kind: int
    payload: bytes


def _name(n: int) -> str:
    return f"wal-{n:08d}.log"


def _number(path: Path) -> int | None:
    stem = path.name.removeprefix("wal-").removesuffix(".log")
    return int(stem) if path.name.startswith("wal-") and path.name.endswith(".log") and stem.isdigit() else None


def segments(folder: Path) -> list[tuple[int, Path]]:
    found = [(n, p) for p in folder.glob("wal-*.log") if (n := _number(p)) is not None]
    return sorted(found)


def read_segment(n: int, path: Path) -> Iterator[Record]:
    """The whole records of one segment; a torn or corrupt record ends it (said on stderr unless it is a
    torn last record, the normal trace of a crash mid-write)."""
    data = path.read_bytes()
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < _HEAD.size:
            return
        length, crc, kind = _HEAD.unpack_from(data, pos)
        start = pos + _HEAD.size
        payload = data[start : start + length]
        if len(payload) < length:
            return  # cut short by a crash before it was acknowledged
        if zlib.crc32(payload) != crc or kind not in (PROTOBUF, JSON):
            print(
                f"kit serve: {path}: record at byte {pos} fails its checksum: the rest of the file is skipped",
                file=sys.stderr,
            )
            return
        yield Record(n, kind, payload)
        pos = start + length


class Wal:
    """Appends, group fsync, holds per segment, deletion of what is judged."""

    def __init__(self, folder: Path, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()  # appends, rotation, holds
        self._sync_lock = threading.Lock()  # one fsync at a time; those waiting share the next
        self._closed: set[int] = set()
        self._holds: dict[int, set[str]] = {}
        found = segments(self.folder)
        self._closed.update(n for n, _ in found)
        self._n = (found[-1][0] + 1) if found else 1
        self._fd = self._open(self._n)
        self._size = 0
        self._written = 0  # bytes appended since start, over all segments
        self._synced = 0
        self._retired: list[int] = []  # descriptors of rotated segments (fsync'd), closed by the next sync

    def _open(self, n: int) -> int:
        fd = os.open(self.folder / _name(n), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _sync_folder(self.folder)  # the new file's name is durable too
        return fd

    def replay(self) -> list[Record]:
        """Every record of the segments that were there at start (older runs'), in order."""
        return [r for n, p in segments(self.folder) if n in self._closed for r in read_segment(n, p)]

    def append(self, kind: int, payload: bytes, holds: Iterable[str] = ()) -> tuple[int, int]:
        """Write one record (not yet durable: `sync` with the returned mark). `holds`: the traces whose spans
        it carries, which keep its segment until they are released. Returns (segment, mark)."""
        record = _HEAD.pack(len(payload), zlib.crc32(payload), kind) + payload
        with self._lock:
            if self._fd < 0:  # closed: never a write through a descriptor number since reused
                raise OSError(errno.EBADF, "the write-ahead log is closed")
            if self._size and self._size + len(record) > self.segment_bytes:
                self._rotate()
            view = memoryview(record)
            while view:
                view = view[os.write(self._fd, view) :]
            self._size += len(record)
            self._written += len(record)
            ids = set(holds)
            if ids:
                self._holds.setdefault(self._n, set()).update(ids)
            return self._n, self._written

    def sync(self, mark: int) -> None:
        """Return once everything appended up to `mark` is on disk."""
        with self._sync_lock:
            if self._synced >= mark:
                return
            with self._lock:
                target, fd = self._written, self._fd
                retired, self._retired = self._retired, []
            for old in retired:
                os.close(old)
            if fd < 0:
                raise OSError(errno.EBADF, "the write-ahead log is closed")
            os.fsync(fd)
            self._synced = target

    def _rotate(self) -> None:
        os.fsync(self._fd)  # what the old segment holds is durable before a newer one exists
        self._retired.append(self._fd)
        self._closed.add(self._n)
        self._n += 1
        self._fd = self._open(self._n)
        self._size = 0
        self._delete_released()

    def hold(self, segment: int, trace_ids: Iterable[str]) -> None:
        """Keep `segment` until these traces are released (replayed records of an older run)."""
        with self._lock:
            self._holds.setdefault(segment, set()).update(trace_ids)

    def release(self, released: dict[int, set[str]]) -> None:
        """Traces judged and stored: their segments no longer need them; a closed segment nothing holds goes."""
        with self._lock:
            for n, ids in released.items():
                held = self._holds.get(n)
                if held is not None:
                    held -= ids
            self._delete_released()

    def _delete_released(self) -> None:
        for n in sorted(self._closed):
            if self._holds.get(n):
                continue
            self._holds.pop(n, None)
            self._closed.discard(n)
            (self.folder / _name(n)).unlink(missing_ok=True)

    def held_segments(self) -> int:
        with self._lock:
            return len(self._closed) + 1

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._fd < 0:
                return
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
            for old in self._retired:
                os.close(old)
            self._retired = []
            if not self._holds.get(self._n):  # nothing of it left to judge: the next start need not read it
                (self.folder / _name(self._n)).unlink(missing_ok=True)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
