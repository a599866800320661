"""A stand-in for a model-backed agent whose cases pass some attempts and fail others: each case names how
many of its attempts pass (`metadata: {passes: K}`), and the agent passes the first K calls of each case
and fails the rest. With `runs: N` a case ends at exactly K/N, whatever order the runs go in, so the
gate's verdicts on it are certain: what `README.md`'s "Gate on evidence" shows and the tests check.

    kit run --cases examples/flaky/before.yaml --agent flaky_agent:agent --pool thread
"""

from __future__ import annotations

import threading
from typing import Any

calls: dict[str, int] = {}
_lock = threading.Lock()


def agent(text: str, case: Any) -> dict[str, Any]:
    with _lock:
        seen = calls.get(case.id, 0)
        calls[case.id] = seen + 1
    ok = seen < case.extra["metadata"]["passes"]
    return {
        "case_id": case.id,
        "final_output": "all fine" if ok else "broken",
        "finish_reason": "finish",
        "spans": [],
    }
