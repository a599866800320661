"""A stand-in for a model-backed agent whose cases pass some attempts and fail others, in three versions
(docs/gates.md, "Gate on evidence"), chosen by FLAKY_VERSION (v1, v2 or v3; default v1). A version passes a
fixed number of each case's attempts (PASSES): the first K calls of a case pass and the rest fail, so with
`runs: 40` a case ends at exactly K/40, whatever order the runs go in, and the gate's verdicts on it are
certain. A case may name its own count instead (`metadata: {passes: K}`), for suites written on the fly.

    FLAKY_VERSION=v2 kit run --cases examples/flaky/cases.yaml --agent flaky_agent:agent --pool thread
"""

from __future__ import annotations

import os
import threading
from typing import Any

PASSES = {
    "v1": {"steady": 40, "wobbly": 39, "jittery": 38},
    "v2": {"steady": 40, "wobbly": 37, "jittery": 36},  # slips by noise
    "v3": {"steady": 30, "wobbly": 20, "jittery": 37},  # drops
}

calls: dict[str, int] = {}
_lock = threading.Lock()


def agent(text: str, case: Any) -> dict[str, Any]:
    own = (case.extra.get("metadata") or {}).get("passes")
    passes = own if own is not None else PASSES[os.environ.get("FLAKY_VERSION", "v1")][case.id]
    with _lock:
        seen = calls.get(case.id, 0)
        calls[case.id] = seen + 1
    ok = seen < passes
    return {"case_id": case.id, "final_output": "all fine" if ok else "broken", "finish_reason": "finish", "spans": []}
