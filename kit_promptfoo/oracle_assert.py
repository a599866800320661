"""Promptfoo Python assertion: the kit's oracle decides, one component per check.

Promptfoo starts a new Python process for every Python assertion, so this module imports only the
standard library on its fast path. The provider (`agent_provider.py`) already ran the oracle in its warm
worker and put the verdict in `metadata.kit`; here the verdict is checked against the trace it claims to
judge (a seal over case, trace and verdict) and turned into Promptfoo's GradingResult. When there is no verdict
(another provider returned a kit trace), when it does not match, or with KIT_PROMPTFOO_RECHECK=1, the
oracle runs here on the trace (`kit.case`, `kit.evaluate`: slower, same answer).

Red-team plugin graders (Promptfoo's LLM rubrics) that were not run because no judge model is configured
are listed as not graded: they never count as passes.
"""

from __future__ import annotations

import os
from typing import Any


def _metadata(context: dict[str, Any]) -> dict[str, Any]:
    for meta in (context.get("metadata"), (context.get("providerResponse") or {}).get("metadata")):
        if isinstance(meta, dict) and isinstance(meta.get("trace"), dict):
            return meta
    return {}


def _case_ref(context: dict[str, Any], kit: dict[str, Any]) -> tuple[str | None, str | None]:
    config = context.get("config") or {}
    vars_ = context.get("vars") or {}
    case_file = vars_.get("case_file") or config.get("case_file") or kit.get("case_file")
    case_id = vars_.get("case_id") or config.get("case_id") or kit.get("case_id")
    return case_file, case_id


def _fresh_verdict(trace: dict[str, Any], case_file: str, case_id: str) -> dict[str, Any]:
    """The slow path: run the oracle in this process."""
    from kit.evaluate import evaluate
    from kit.trace import parse_trace
    from kit_promptfoo.kit_request import load_case

    run = evaluate(parse_trace(trace), load_case(case_file, case_id))
    out = run.to_dict()
    out["outcome"] = run.outcome
    return out


def _usable(kit: dict[str, Any], trace: dict[str, Any], case_id: str | None, *, recheck: bool) -> bool:
    if recheck or "verdict" not in kit:
        return False
    from kit_promptfoo.digest import seal

    return (
        case_id is not None
        and kit["verdict"].get("case_id") == case_id
        and kit.get("seal") == seal(case_id, trace, kit["verdict"])
    )


def _fail(reason: str) -> dict[str, Any]:
    return {"pass": False, "score": 0.0, "reason": reason}


def grading_result(verdict: dict[str, Any], not_graded: list[str]) -> dict[str, Any]:
    checks = verdict.get("checks") or []
    components = []
    for c in checks:
        ok = c["outcome"] == "pass"
        label = c["outcome"].upper()
        components.append(
            {
                "pass": ok,
                "score": 1.0 if ok else 0.0,
                "reason": f"[{label}] {c['check']}" + (f": {c['reason']}" if c.get("reason") else ""),
                # No "metric": Promptfoo would render each as a template for every named score of the row.
                "assertion": {"type": "python", "value": f"kit:{c['check']}"},
            }
        )
    failed = [c for c in checks if c["outcome"] != "pass"]
    passed = bool(checks) and not failed and not verdict.get("error")
    if verdict.get("error"):
        reason = f"infrastructure error: {verdict['error']}"
    elif not checks:
        reason = "the case has no checks: nothing was verified"
    elif failed:
        reason = "; ".join(f"{c['check']} {c['outcome']}: {c.get('reason', '')}".strip() for c in failed)
    else:
        reason = f"all {len(checks)} checks passed"
    if not_graded:
        reason += f" | not graded (no judge model configured): {', '.join(not_graded)}"
    return {
        "pass": passed,
        "score": (len(checks) - len(failed)) / len(checks) if checks else 0.0,
        "reason": reason,
        "componentResults": components,
        "namedScores": {c["check"]: (1.0 if c["outcome"] == "pass" else 0.0) for c in checks},
    }


def get_assert(output: Any, context: dict[str, Any]) -> dict[str, Any]:
    meta = _metadata(context)
    kit = meta.get("kit") if isinstance(meta.get("kit"), dict) else {}
    case_file, case_id = _case_ref(context, kit)
    test_meta = (context.get("test") or {}).get("metadata") or {}
    not_graded = list(test_meta.get("kitNotGraded") or [])
    if not meta:
        return _fail("no trace in the provider's metadata (is the provider providers/agent_provider.py?)")
    if not case_file or not case_id:
        return _fail("no case to judge by: set case_file and case_id in the test's vars or the assertion's config")
    if _usable(kit, meta["trace"], case_id, recheck=os.environ.get("KIT_PROMPTFOO_RECHECK") == "1"):
        verdict, where = kit["verdict"], "the provider worker"
    else:
        where = "this assertion"
        try:
            verdict = _fresh_verdict(meta["trace"], case_file, case_id)
        except Exception as e:  # bad case file or malformed trace: a failure with its reason, never a pass
            return _fail(f"{case_file}: case '{case_id}': {type(e).__name__}: {e}")
    result = grading_result(verdict, not_graded)
    result["reason"] += f" [oracle ran in {where}]"
    return result
