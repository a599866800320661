"""Ask the soft gates' judge about given answers, K samples each: what `kit calibrate` measures.

The soft gates judge through DeepEval's G-Eval (deepeval_metrics/rubric_metric.py). A calibration must
measure that very path, prompt and all, and the kit never imports DeepEval: so the adapter's judge runs as
a tool command (`python -m deepeval_metrics.calibrate`, the way the pipeline runs DeepEval's own CLI), and
this module speaks its one-request, one-line-per-answer protocol. Each answer comes back with every judge
call behind it (prompt, raw answer, tokens, cost) for the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from kit.judge import JudgeCall, JudgeConfig

ADAPTER = "deepeval_metrics.calibrate"
STARTUP_S = 120.0  # importing DeepEval on a busy machine, before the first judge call


class JudgingError(RuntimeError):
    """The adapter could not judge the answers (no judge, bad request, crashed or hung): its own words."""


@dataclass(frozen=True)
class Question:
    key: str
    rubric: str
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class Answer:
    key: str
    rubric: str
    rubric_hash: str
    outcome: str
    calls: tuple[JudgeCall, ...]

    @property
    def samples(self) -> tuple[str, ...]:
        """Each sample's verdict (pass, fail, error): the outcome of the call that gave it."""
        return tuple(c.outcome for c in self.calls if c.outcome is not None)


_CALL_FIELDS = {f.name for f in fields(JudgeCall)}


def _answer(line: str) -> Answer:
    data = json.loads(line)
    calls = tuple(JudgeCall(**{k: v for k, v in c.items() if k in _CALL_FIELDS}) for c in data["calls"])
    return Answer(data["key"], data["rubric"], data["rubric_hash"], data["outcome"], calls)


def ask(
    questions: Sequence[Question],
    *,
    rubrics_file: str,
    samples: int,
    judge: JudgeConfig,
    env: Mapping[str, str],
    on_answer: Callable[[Answer], None] | None = None,
) -> Iterator[Answer]:
    """Each question's answer, in order, as the adapter gives them. JudgingError when it cannot judge them
    or stops short; it is stopped after a time that every call at the judge's own timeout could not exceed."""
    request = {
        "rubrics": rubrics_file,
        "samples": samples,
        "items": [q.__dict__ | {"fields": dict(q.fields)} for q in questions],
    }
    per_call = judge.timeout_s * (judge.retries + 1) + 5
    limit = STARTUP_S + per_call * samples * 2 * max(1, len(questions))  # steps drafting: at most 2 calls
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", ADAPTER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=dict(env),
        )
        timer = threading.Timer(limit, proc.kill)
        timer.start()
        got = 0
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request, ensure_ascii=False))
            proc.stdin.close()
            for line in proc.stdout:
                if not line.strip():
                    continue
                try:
                    answer = _answer(line)
                except (ValueError, KeyError, TypeError) as e:
                    raise JudgingError(
                        f"{ADAPTER} answered a line that is not an answer ({e}): {line[:200]!r}"
                    ) from None
                got += 1
                if on_answer is not None:
                    on_answer(answer)
                yield answer
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        said = " ".join(err.read().split())[-600:]
    if code != 0 or got != len(questions):
        why = f"was stopped after {limit:.0f} s" if code == -9 else f"exited {code}"
        raise JudgingError(f"{ADAPTER} {why} after {got} of {len(questions)} answers" + (f": {said}" if said else ""))
