"""The receiver: span batches in (durable before acknowledged), traces assembled, judged, stored.

    receiver = Receiver(production, store, Options(wal=Path(".kit/serve.wal")))
    receiver.start()          # replays the write-ahead log, starts the judging thread
    status, headers, body = receiver.accept(body, content_type, content_encoding)   # one POST /v1/traces
    receiver.stop()           # refuses new batches, judges what is complete, stores it

One thread judges (a trace's checks are pure Python: more threads would only share the GIL); the HTTP
front's threads decode, log and acknowledge. Verdicts are written to the store in batches (`batch` traces
or `flush_s` seconds, whichever comes first, or at once when the receiver is full and half of what it holds is
judged), and only then are the log's segments let go.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.receiver import wal as wal_mod
from kit.receiver.assemble import Assembler, Ready
from kit.receiver.decode import JSON, PROTOBUF, BadBatch, decompressed, media_type, spans_of
from kit.receiver.judging import Production, Verdict, judge
from kit.receiver.soft import SoftJudge

Response = tuple[int, dict[str, str], bytes]


@dataclass
class Options:
    wal: Path
    name: str = "receiver"
    settle: float = 2.0  # seconds without a new span after the root's, before a trace is judged
    max_wait: float = 300.0  # a trace whose root never comes is judged this long after its first span
    max_spans: int = 50_000  # spans held before batches are refused (429): ~1,000 traces of 50 spans
    retry_after: int = 1  # seconds, told to a refused sender
    batch: int = 500  # verdicts per store write
    # At most this long between a verdict and its store write. Opening the store costs ~50 ms of CPU whatever the
    # batch holds, so a batch of a few traces a second would cost more than judging them.
    flush_s: float = 5.0
    segment_bytes: int = wal_mod.SEGMENT_BYTES


@dataclass
class Counters:
    batches: int = 0
    spans: int = 0
    refused: int = 0  # 429/503: told to retry
    bad: int = 0  # 400/413/415: told what is wrong
    judged: int = 0
    failed: int = 0
    duplicates: int = 0  # verdicts the store already had (a trace judged before a crash)
    soft: int = 0  # soft rubrics' rows stored (pass, fail, error or skipped)
    store_errors: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Receiver:
    def __init__(self, production: Production, store: Any, options: Options, soft: SoftJudge | None = None) -> None:
        self.production = production
        self.soft = soft  # soft rubrics on a sample, judged on a thread of their own
        self._soft_rows: list[dict[str, Any]] = []
        self.store = store
        self.options = options
        self.assembler = Assembler(options.settle, options.max_wait, options.max_spans)
        self.wal = wal_mod.Wal(options.wal, options.segment_bytes)
        self.counters = Counters()
        self._closing = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._unstored: list[tuple[Ready, Verdict]] = []
        self._first_unstored = 0.0
        self.replayed = 0

    # -- start and stop ----------------------------------------------------------------------------
    def start(self) -> None:
        if self.soft is not None:
            self.soft.start()
        self._replay()
        self._thread = threading.Thread(target=self._judge_loop, name="kit-serve-judge", daemon=True)
        self._thread.start()

    def _replay(self) -> None:
        """What an earlier run acknowledged and had not stored: judged now. The store says what it had."""
        from kit.store import production as prod

        records = self.wal.replay()
        if not records:
            self.wal.release({})  # an older run's segments that hold nothing (empty) go now
            return
        batches = []
        for r in records:
            try:
                spans = spans_of(r.payload, PROTOBUF if r.kind == wal_mod.PROTOBUF else JSON)
            except BadBatch as e:  # written only after it was read once: a damaged disk
                print(
                    f"kit serve: {self.options.wal}: a logged batch cannot be read again: {e.message}", file=sys.stderr
                )
                continue
            batches.append((r.segment, spans))
        ids = list({s.trace_id for _, spans in batches for s in spans})
        with self.store.connect() as con:
            stored = prod.judged(con, ids)
        self.assembler.mark_judged(list(stored))
        now = time.monotonic()
        for segment, spans in batches:
            todo = [s for s in spans if s.trace_id not in stored]
            self.wal.hold(segment, {s.trace_id for s in todo})
            self.assembler.add(todo, segment, now)
        self.replayed = len(set(ids) - stored)
        self.wal.release({})  # segments whose traces were all stored go now

    def stop(self, timeout: float | None = None) -> None:
        """Refuse new batches; judge and store every trace whose root has come (after its settle time); a
        trace still without its root stays in the log for the next start."""
        self._closing.set()
        deadline = time.monotonic() + (timeout if timeout is not None else self.options.settle + 30)
        while self._thread is not None and self._thread.is_alive() and time.monotonic() < deadline:
            if self.assembler.pending_rooted() == 0 and not self._unstored:
                break
            time.sleep(0.02)
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=max(deadline - time.monotonic(), 1.0))
        if self.soft is not None:  # the sample's judge calls finish, or their rubrics are stored as skipped
            self.soft.stop(timeout=max(deadline - time.monotonic(), 1.0))
        self._flush()
        self.wal.close()

    # -- the HTTP front's one call -----------------------------------------------------------------
    def accept(self, body: bytes, content_type: str | None, content_encoding: str | None) -> Response:
        """One POST /v1/traces: (status, headers, body). 200 only once the batch is on disk."""
        kind = PROTOBUF
        try:
            kind = media_type(content_type)
            if self._closing.is_set():
                self.counters.refused += 1
                return self._error(kind, 503, "the receiver is shutting down", retry=True)
            raw = decompressed(body, content_encoding)
            spans = spans_of(raw, kind)
        except BadBatch as e:
            self.counters.bad += 1
            return self._error(kind, e.status, e.message)
        if not spans:
            return self._ok(kind)
        if not self.assembler.admit():
            self.counters.refused += 1
            return self._error(kind, 429, f"{self.assembler.held} spans held: retry later", retry=True)
        code = wal_mod.PROTOBUF if kind == PROTOBUF else wal_mod.JSON
        try:
            segment, mark = self.wal.append(code, raw, holds={s.trace_id for s in spans})
            self.wal.sync(mark)
        except OSError as e:  # a full disk: not acknowledged, so the sender keeps the batch and retries
            self.counters.refused += 1
            return self._error(kind, 503, f"cannot write the log: {e.strerror or e}", retry=True)
        released = self.assembler.add(spans, segment)
        if released:
            self.wal.release(released)
        self.counters.batches += 1
        self.counters.spans += len(spans)
        return self._ok(kind)

    def _ok(self, kind: str) -> Response:
        # An empty ExportTraceServiceResponse: no bytes in protobuf, `{}` in JSON.
        return 200, {"Content-Type": kind}, b"" if kind == PROTOBUF else b"{}"

    def _error(self, kind: str, status: int, message: str, retry: bool = False) -> Response:
        headers = {"Content-Type": kind}
        if retry:
            headers["Retry-After"] = str(self.options.retry_after)
        return status, headers, status_body(kind, _GRPC_CODE.get(status, 2), message)

    # -- judging -----------------------------------------------------------------------------------
    def _judge_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                got = self.assembler.ready(limit=self.options.batch)
                for r in got:
                    v = self._judge(r)
                    self._unstored.append((r, v))
                    if self.soft is not None and r.complete and v.judged is not None:
                        self.soft.offer(r.trace_id, v.judged)
                    v.judged = None  # not held while it waits for the store
                    if not self._first_unstored:
                        self._first_unstored = time.monotonic()
                if self.soft is not None:
                    self._soft_rows += self.soft.take()
                    if self._soft_rows and not self._first_unstored:
                        self._first_unstored = time.monotonic()
                due = (self._unstored or self._soft_rows) and (
                    len(self._unstored) >= self.options.batch
                    or time.monotonic() - self._first_unstored >= self.options.flush_s
                    or self._closing.is_set()
                    or self._judged_holds_most()
                )
                if due:
                    self._flush()
                if not got:
                    time.sleep(0.01)
            except Exception:  # the loop must outlive any one trace or store hiccup: said, then retried
                traceback.print_exc(file=sys.stderr)
                time.sleep(0.5)

    def _judged_holds_most(self) -> bool:
        """The receiver is full and at least half of what it holds is judged, waiting for the store: written at
        once, so that batches come in again (never a write of a few traces while pending spans fill it)."""
        if self.assembler.admit():
            return False
        return 2 * sum(len(r.spans) for r, _ in self._unstored) >= self.assembler.held

    def _judge(self, r: Ready) -> Verdict:
        try:
            return judge(r.trace_id, r.spans, self.production, receiver=self.options.name, complete=r.complete)
        except Exception as e:  # a bug in a reader must not lose the trace: stored as an error naming it
            row = {"trace_id": r.trace_id, "receiver": self.options.name, "passed": False, "outcome": "error"}
            row["error"] = f"the receiver failed on this trace: {type(e).__name__}: {e}"
            row["spans"] = len(r.spans)
            return Verdict(row, [])

    def _flush(self) -> None:
        from kit.store import production as prod

        batch, self._unstored = self._unstored, []
        if self.soft is not None:
            self._soft_rows += self.soft.take()
        soft, self._soft_rows = self._soft_rows, []
        self._first_unstored = 0.0
        if not batch and not soft:
            return
        try:
            # Without merging other writers' spools: that is a third of an open's CPU, paid per batch here, and
            # the next reader or writer of runs merges them.
            with self.store.connect(merge=False) as con:
                written = prod.write(con, [v.trace for _, v in batch], [c for _, v in batch for c in v.checks])
                self.counters.soft += prod.write_soft(con, soft)  # after the traces they belong to
        except Exception as e:  # the store busy or full: kept, and tried again (the log still holds them)
            self.counters.store_errors += 1
            print(f"kit serve: cannot write verdicts to the store, retrying: {e}", file=sys.stderr)
            self._unstored = batch + self._unstored
            self._soft_rows = soft + self._soft_rows
            self._first_unstored = time.monotonic()
            return
        released: dict[int, set[str]] = {}
        for r, v in batch:
            for segment in r.segments:
                released.setdefault(segment, set()).add(r.trace_id)
            if r.trace_id in written:
                self.counters.judged += 1
                self.counters.failed += not v.trace.get("passed")
            else:
                self.counters.duplicates += 1
        self.wal.release(released)
        self.assembler.done(sum(len(r.spans) for r, _ in batch))

    def status(self) -> dict[str, Any]:
        c = self.counters
        return {
            "batches": c.batches,
            "spans": c.spans,
            "refused": c.refused,
            "bad": c.bad,
            "judged": c.judged,
            "failed": c.failed,
            "duplicates": c.duplicates,
            "late_spans": self.assembler.late_spans,
            "repeated_spans": self.assembler.repeated_spans,
            "pending_traces": self.assembler.pending(),
            "held_spans": self.assembler.held,
            "replayed": self.replayed,
            "store_errors": c.store_errors,
            "soft": c.soft,
            "wal_segments": self.wal.held_segments(),
        }


# HTTP status -> the google.rpc.Code OTLP's error body carries.
_GRPC_CODE = {400: 3, 404: 5, 413: 3, 415: 3, 429: 8, 503: 14, 500: 13}


def status_body(kind: str, code: int, message: str) -> bytes:
    """A `google.rpc.Status` (what OTLP/HTTP returns on an error) in the request's encoding."""
    if kind == JSON:
        import json

        return json.dumps({"code": code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
