"""Traces assembled from span batches as they arrive, handed out when complete.

A trace is complete when its root span (no parent) has arrived and no span of it has arrived for the
settle time (late spans from other processes); one whose root never comes is handed out `max_wait` after
its first span, marked incomplete. Memory is bounded by `max_spans`: `admit` refuses a batch while the
spans held (pending and being judged) are over it, and the front answers 429 with Retry-After.

A span that came before (the same trace and span id: a sender retrying a batch whose answer it lost, or a
batch the log replays) is taken once. Traces judged recently are remembered (`window` ids) so that a late
span of one is dropped, counted, and not judged as a trace of its own; past that window the store's trace
id is the guard.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from kit.importers.otlp import OtelSpan


@dataclass(slots=True)
class Pending:
    trace_id: str
    spans: list[OtelSpan] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    segments: set[int] = field(default_factory=set)
    root: bool = False
    first: float = 0.0
    last: float = 0.0


@dataclass(slots=True)
class Ready:
    trace_id: str
    spans: list[OtelSpan]
    segments: set[int]
    complete: bool


class Assembler:
    def __init__(self, settle: float, max_wait: float, max_spans: int, window: int = 16_384) -> None:
        self.settle = settle
        self.max_wait = max_wait
        self.max_spans = max_spans
        self.window = window
        self._lock = threading.Lock()
        self._pending: dict[str, Pending] = {}
        self._due: list[tuple[float, str]] = []  # (when it may be ready, trace id); checked again when popped
        self._judged: OrderedDict[str, None] = OrderedDict()
        self.held = 0  # spans pending or being judged
        self.late_spans = 0  # spans of a trace already judged, dropped
        self.repeated_spans = 0  # a span that came before (same trace and span id), dropped

    def admit(self) -> bool:
        """Whether a batch may come in now (memory bound)."""
        return self.held < self.max_spans

    def add(self, spans: list[OtelSpan], segment: int, now: float | None = None) -> dict[int, set[str]]:
        """Take a batch's spans. Returns the holds to release at once: traces already judged whose late spans
        were dropped (their segment need not keep them)."""
        now = time.monotonic() if now is None else now
        released: dict[int, set[str]] = {}
        with self._lock:
            for s in spans:
                tid = s.trace_id
                if tid in self._judged:
                    self.late_spans += 1
                    released.setdefault(segment, set()).add(tid)
                    continue
                p = self._pending.get(tid)
                if p is None:
                    p = self._pending[tid] = Pending(tid, first=now)
                    heapq.heappush(self._due, (now + self.max_wait, tid))
                p.segments.add(segment)
                if s.span_id in p.span_ids:  # a batch sent again (its answer lost, or replayed): once
                    self.repeated_spans += 1
                    continue
                p.span_ids.add(s.span_id)
                p.spans.append(s)
                p.last = now
                self.held += 1
                if not s.parent_id and not p.root:
                    p.root = True
                    heapq.heappush(self._due, (now + self.settle, tid))
        return released

    def ready(self, now: float | None = None, limit: int = 1000) -> list[Ready]:
        """Traces complete by now (at most `limit`), taken out of the pending set."""
        now = time.monotonic() if now is None else now
        out: list[Ready] = []
        with self._lock:
            while self._due and self._due[0][0] <= now and len(out) < limit:
                _, tid = heapq.heappop(self._due)
                p = self._pending.get(tid)
                if p is None:
                    continue  # handed out already (a stale entry)
                if now - p.first >= self.max_wait:
                    out.append(self._take(p, complete=p.root))
                elif p.root:
                    due = p.last + self.settle
                    if due <= now:
                        out.append(self._take(p, complete=True))
                    else:
                        heapq.heappush(self._due, (due, tid))  # a span came since: wait the settle time again
        return out

    def _take(self, p: Pending, complete: bool) -> Ready:
        del self._pending[p.trace_id]
        self._remember(p.trace_id)
        return Ready(p.trace_id, p.spans, p.segments, complete)

    def _remember(self, trace_id: str) -> None:
        self._judged[trace_id] = None
        if len(self._judged) > self.window:
            self._judged.popitem(last=False)

    def mark_judged(self, trace_ids: list[str]) -> None:
        """Traces judged before (the store or the log says so): their spans, if any come, are late."""
        with self._lock:
            for tid in trace_ids:
                self._remember(tid)

    def done(self, spans: int) -> None:
        """Spans let go once their trace's verdict is stored."""
        with self._lock:
            self.held -= spans

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def pending_rooted(self) -> int:
        """Pending traces whose root has come (judged within the settle time)."""
        with self._lock:
            return sum(p.root for p in self._pending.values())
