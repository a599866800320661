"""The JavaScript assertion (providers/oracle_assert.cjs) gives oracle_assert.py's answer: the same seal over
(case, trace, verdict) as kit_promptfoo/digest.py, the same GradingResult, and a seal mismatch falls back to
the Python oracle. Run in the Node that Promptfoo runs in."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kit_promptfoo.digest import seal
from kit_promptfoo.oracle_assert import get_assert, grading_result

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / ".bin" / "node"

RUNNER = """
const m = require(process.argv[1]);
let data = "";
process.stdin.on("data", (c) => (data += c));
process.stdin.on("end", async () => {
  const cases = JSON.parse(data);
  const out = [];
  for (const c of cases) {
    if (c.kind === "seal") out.push(m.seal(c.case_id, c.trace, c.verdict));
    else if (c.kind === "grading") out.push(m.gradingResult(c.verdict, c.not_graded));
    else out.push(await m.get_assert(c.output, c.context));
  }
  process.stdout.write(JSON.stringify(out));
});
"""


def _node(cases: list[dict[str, Any]]) -> list[Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make promptfoo-install`")
    proc = subprocess.run(
        [str(NODE), "-e", RUNNER, str(ROOT / "providers" / "oracle_assert.cjs")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PROMPTFOO_PYTHON": str(ROOT / ".venv" / "bin" / "python")},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


TRACES: list[dict[str, Any]] = [
    {"spans": [], "final_output": "ok"},
    {
        "final_output": 'Ünïcødé "quoted" \\ back\nslash\t\x1b[0m \u2028 😀',
        "latency_ms": 12.5,
        "spans": [
            {"kind": "llm", "cost_usd": 1.2e-05, "tokens_in": 10, "x": 0.1, "y": 123.456, "z": -0.0},
            {"kind": "tool", "cost_usd": 3e-07, "big": 1e16, "bigf": 1.5e17, "neg": -2.5e-9, "half": 0.5},
            {"kind": "tool", "n": 1.0, "m": 1e15 + 0.5, "small": 0.0001, "smaller": 0.00001, "e": 12345678.9},
        ],
        "nested": {"b": [1, 2.25, None, True, False], "a": {"z": 1, "a": "x"}},
    },
]
VERDICTS: list[dict[str, Any]] = [
    {
        "case_id": "c1",
        "outcome": "pass",
        "checks": [{"check": "called:a", "outcome": "pass", "reason": "a called 1 times"}],
    },
    {
        "case_id": "c1",
        "outcome": "fail",
        "checks": [
            {"check": "called:a", "outcome": "pass", "reason": ""},
            {"check": "no_pii", "outcome": "fail", "reason": "output leaks email 'bob@example.com'"},
            {"check": "budget", "outcome": "error", "reason": "ZeroDivisionError"},
        ],
    },
    {"case_id": "c1", "outcome": "error", "checks": [], "error": "agent raised"},
    {"case_id": "c1", "outcome": "fail", "checks": []},
]


def test_seal_matches_python() -> None:
    cases = [{"kind": "seal", "case_id": "c1", "trace": t, "verdict": v} for t in TRACES for v in VERDICTS]
    got = _node(cases)
    # The values cross JSON as Promptfoo passes them (1.0 arrives as 1): the seal must survive that trip.
    want = [seal("c1", json.loads(json.dumps(t)), v) for t in TRACES for v in VERDICTS]
    assert got == want


def test_grading_result_matches_python() -> None:
    cases = [
        {"kind": "grading", "verdict": v, "not_graded": ng} for v in VERDICTS for ng in ([], ["promptfoo:redteam:x"])
    ]
    assert _node(cases) == [grading_result(v, ng) for v in VERDICTS for ng in ([], ["promptfoo:redteam:x"])]


def test_get_assert_trusts_a_sealed_verdict_and_rechecks_a_stale_one() -> None:
    trace = {
        "case_id": "ok",
        "final_output": "hi",
        "spans": [],
    }
    verdict = {"case_id": "ok", "outcome": "pass", "checks": [{"check": "x", "outcome": "pass", "reason": ""}]}
    meta = {"trace": trace, "kit": {"verdict": verdict, "seal": seal("ok", trace, verdict), "case_id": "ok"}}
    good = {"vars": {"case_id": "ok", "case_file": "nowhere.yaml"}, "metadata": meta, "test": {}}
    stale = json.loads(json.dumps(good))
    stale["metadata"]["trace"]["final_output"] = "changed after the verdict"
    sealed, rechecked = _node([{"kind": "assert", "output": "hi", "context": c} for c in (good, stale)])
    assert sealed["pass"] is True and "[oracle ran in the provider worker]" in sealed["reason"]
    # The stale verdict is not trusted: the Python oracle runs and, with no such case file, fails saying why.
    assert rechecked == get_assert("hi", stale)
    assert rechecked["pass"] is False and "nowhere.yaml" in rechecked["reason"]
