"""Soft rubrics on a sample of production traces: the expensive part, judged off the ingest path.

Hard invariants see every trace (`kit.receiver.judging`). A rubric needs a judge model, so it sees a sample: a
complete trace is in it when the hash of its trace id falls under the rate (the same trace is in or out on
every receiver and every restart). `SoftJudge.offer` queues a sampled trace and returns at once; a thread of
its own asks the judge, one OpenAI-compatible chat call per rubric that applies (`kit.agent.chat_http`), and
`take` hands out the rows for `production_checks` (check `rubric:<name>`, no invariant): `pass` when the score
(0 to 10, over 10) reaches the rubric's threshold, `fail` below it, `error` when the judge cannot be reached or
answers no score, `skipped` with the reason when there is no judge, the judge is behind (`queue` traces
waiting) or the receiver stopped first. Never a pass without a judge's answer.

The prompt is the kit's own, not DeepEval's G-Eval (the kit never imports DeepEval): a production score is
the same rubric asked in other words, not a figure to compare with `make evals`' soft gates.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from kit.judge import JudgeConfig
from kit.judge.rubrics import Rubric, retrieved
from kit.trace import Trace

PREFIX = "rubric:"
_SCALE = 10
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def sampled(trace_id: str, rate: float) -> bool:
    """Whether a trace is in the sample: the first 8 bytes of its id's SHA-256, under `rate` of their range."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    h = int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big")
    return h < rate * 2**64


@dataclass(frozen=True)
class _Asked:
    trace_id: str
    fields: dict[str, Any]
    rubrics: tuple[Rubric, ...]


def fields_of(trace: Trace) -> dict[str, Any]:
    """What a rubric may show the judge, read from a production trace (which has no case's reference or context):
    the user's first message, the final answer, the tool calls and what they retrieved."""
    said = [s.content for s in trace.spans if s.kind == "message" and s.role == "user" and s.content]
    return {
        "input": said[0] if said else None,
        "actual_output": trace.final_output,
        "tools_called": [{"name": s.name, "input": s.input} for s in trace.tool_calls],
        "retrieval_context": retrieved(trace),
    }


def applies(rubric: Rubric, fields: dict[str, Any]) -> bool:
    """A rubric applies to every production trace that has what it shows the judge."""
    return all(fields.get(p) not in (None, "", []) or p == "tools_called" for p in rubric.params)


def prompt(rubric: Rubric, fields: dict[str, Any]) -> str:
    how = (
        "Evaluation steps:\n" + "\n".join(f"{n}. {s}" for n, s in enumerate(rubric.evaluation_steps or [], 1))
        if rubric.evaluation_steps
        else f"Criteria: {rubric.criteria}"
    )
    shown = "\n\n".join(
        f"{p}:\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)}"
        for p in rubric.params
        if (v := fields.get(p)) is not None
    )
    return (
        f"You evaluate one run of an AI agent against a rubric ({rubric.name}).\n\n{how}\n\n{shown}\n\n"
        f'Answer with JSON only: {{"score": <an integer from 0 to {_SCALE}>, "reason": "<one sentence>"}}'
    )


def verdict(rubric: Rubric, content: str) -> tuple[str, str]:
    """(outcome, reason) from the judge's answer: pass or fail by the rubric's threshold, error without a score."""
    found = _JSON_OBJECT.search(content or "")
    try:
        data = json.loads(found.group(0)) if found else None
        score = float(data["score"]) if isinstance(data, dict) else None
    except (ValueError, TypeError, KeyError):
        score = None
    if score is None or not 0 <= score <= _SCALE:
        return "error", f"the judge's answer holds no score from 0 to {_SCALE}: {content[:120]!r}"
    why = str(data.get("reason") or "").strip() if isinstance(data, dict) else ""
    got = score / _SCALE
    outcome = "pass" if got >= rubric.threshold else "fail"
    return outcome, f"score {got:.2f} (threshold {rubric.threshold:.2f})" + (f": {why}" if why else "")


class SoftJudge:
    """The sample's queue and the thread that judges it. `judge` None: every sampled trace's rubrics are
    `skipped` with `why` (no judge configured)."""

    def __init__(
        self, rubrics: list[Rubric], judge: JudgeConfig | None, rate: float, why: str, queue_size: int = 256
    ) -> None:
        self.rubrics = tuple(rubrics)
        self.judge = judge
        self.rate = rate
        self.why = why
        self._queue: queue.Queue[_Asked | None] = queue.Queue(maxsize=queue_size)
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._current: _Asked | None = None  # the trace the thread is asking about
        self.asked = 0  # judge calls made

    def start(self) -> None:
        if self.judge is not None:
            self._thread = threading.Thread(target=self._loop, name="kit-serve-soft", daemon=True)
            self._thread.start()

    def offer(self, trace_id: str, trace: Trace) -> None:
        """A complete trace judged by its invariants: queued when sampled (never waits)."""
        if not self.rubrics or not sampled(trace_id, self.rate):
            return
        fields = fields_of(trace)
        rubrics = tuple(r for r in self.rubrics if applies(r, fields))
        if not rubrics:
            return
        asked = _Asked(trace_id, fields, rubrics)
        if self.judge is None:
            return self._skip(asked, self.why)
        try:
            self._queue.put_nowait(asked)
        except queue.Full:
            self._skip(asked, f"the judge is behind ({self._queue.maxsize} traces waiting): not judged")

    def take(self) -> list[dict[str, Any]]:
        """The rows judged since the last call."""
        with self._lock:
            rows, self._rows = self._rows, []
        return rows

    def stop(self, timeout: float) -> None:
        """Judge what is queued for up to `timeout` seconds; what is left is `skipped`, saying so."""
        deadline = time.monotonic() + timeout
        if self._thread is not None:
            while not self._queue.empty() and time.monotonic() < deadline:
                time.sleep(0.02)
        while True:
            try:
                left = self._queue.get_nowait()
            except queue.Empty:
                break
            if left is not None:
                self._skip(left, "the receiver stopped before the judge answered")
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=max(deadline - time.monotonic(), 0.1))
            current = self._current
            if self._thread.is_alive() and current is not None:  # a call still out: said, not waited for
                self._current = None  # (its answer, if it comes, is not added)
                self._skip(current, "the receiver stopped before the judge answered")

    def _skip(self, asked: _Asked, why: str) -> None:
        self._add(asked.trace_id, [(r, "skipped", why) for r in asked.rubrics])

    def _add(self, trace_id: str, got: list[tuple[Rubric, str, str]]) -> None:
        now = time.time()
        rows = [
            {"trace_id": trace_id, "check": PREFIX + r.name, "invariant": None, "outcome": o, "reason": why,
             "judged_at": now}
            for r, o, why in got
        ]  # fmt: skip
        with self._lock:
            self._rows += rows

    def _loop(self) -> None:
        while True:
            asked = self._current = self._queue.get()
            if asked is None:
                return
            got = [(r, *self._ask(r, asked.fields)) for r in asked.rubrics]
            if self._current is asked:
                self._add(asked.trace_id, got)
            self._current = None

    def _ask(self, rubric: Rubric, fields: dict[str, Any]) -> tuple[str, str]:
        from kit.agent.chat_http import ChatEndpointError, post_chat_completion

        judge = self.judge
        assert judge is not None and judge.base_url is not None
        body = {
            "model": judge.model,
            "temperature": judge.temperature,
            "messages": [{"role": "user", "content": prompt(rubric, fields)}],
        }
        error = ""
        for _ in range(judge.retries + 1):
            self.asked += 1
            try:
                answer = post_chat_completion(judge.base_url, judge.api_key, body, judge.timeout_s)
            except ChatEndpointError as e:
                error = f"the judge at {judge.base_url} failed: {e}"
                if e.status is not None and e.status < 500:
                    break  # a refusal, not a hiccup: asking again gets the same
                continue
            try:
                content = answer["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                return "error", f"the judge's answer is no chat completion: {str(answer)[:120]!r}"
            return verdict(rubric, str(content or ""))
        return "error", error
