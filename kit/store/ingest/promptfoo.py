"""Promptfoo's `promptfoo eval -o out.json` (0.123.x; results format version 3) into the store.

One run per provider in the file. A result's case id is its test's `metadata.case_id`, else `vars.case_id`,
else the test's description; repeats (`--repeat N`) become attempts in file order. Model-graded assertions
are soft gates; every other assertion (the kit's Python assertions included) is a hard gate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kit.errors import KitInputError, first_error
from kit.result import CaseRun, Result
from kit.store.ingest import Ingested, digest, existing_runs, read_json

# Promptfoo's model-graded assertion types (judged by an LLM or a model): soft gates.
MODEL_GRADED = {
    "llm-rubric",
    "g-eval",
    "model-graded-closedqa",
    "model-graded-factuality",
    "factuality",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "select-best",
    "max-score",
    "similar",
    "classifier",
    "moderation",
    "pi",
    "search-rubric",
    "trajectory:goal-success",
}
# failureReason in Promptfoo's results: 0 none, 1 an assertion failed, 2 the provider or the eval errored.
ERROR_REASON = 2


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class PfResult(_Loose):
    testIdx: int = 0
    promptIdx: int = 0
    success: bool = False
    score: float | None = None
    latencyMs: float | None = None
    cost: float | None = None
    error: str | None = None
    failureReason: int = 0
    provider: dict[str, Any] = {}
    testCase: dict[str, Any] = {}
    vars: dict[str, Any] = {}
    response: dict[str, Any] | None = None
    gradingResult: dict[str, Any] | None = None


class PfResults(_Loose):
    version: int | None = None
    timestamp: str | None = None
    results: list[PfResult]


class PfFile(_Loose):
    evalId: str | None = None
    results: PfResults
    config: dict[str, Any] = {}
    metadata: dict[str, Any] = {}


def _name(assertion: dict[str, Any]) -> str:
    if assertion.get("metric"):
        return str(assertion["metric"])
    kind = str(assertion.get("type", "assertion"))
    value = assertion.get("value")
    if value is None or value == "" or isinstance(value, dict | list):
        return kind
    text = str(value).replace("\n", " ")
    return f"{kind}:{text[:60]}" + ("…" if len(text) > 60 else "")


def _components(grading: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Leaf assertion results. A Python assertion that returned component results contributes its parts,
    not its aggregate; Promptfoo also lists those parts at the top level, so each leaf is kept once."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def walk(comps: list[dict[str, Any]]) -> None:
        for comp in comps:
            parts = comp.get("componentResults")
            if parts:
                walk(parts)
                continue
            key = json.dumps(comp, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(comp)

    walk((grading or {}).get("componentResults") or [])
    return out


def _model_graded(assertion_type: str) -> bool:
    kind = assertion_type.removeprefix("not-")
    # Red-team plugin graders (`promptfoo:redteam:<plugin>`) are LLM graders too.
    return kind in MODEL_GRADED or kind.startswith("promptfoo:redteam:")


def _case_id(r: PfResult) -> str:
    meta = r.testCase.get("metadata") or {}
    for v in (
        meta.get("case_id"),
        r.vars.get("case_id"),
        (r.testCase.get("vars") or {}).get("case_id"),
        r.testCase.get("description"),
    ):
        if v:
            return str(v)
    return f"test-{r.testIdx}"


def _provider(r: PfResult) -> str:
    return str(r.provider.get("label") or r.provider.get("id") or "unknown")


def parse(path: Path) -> PfFile:
    raw = read_json(path)
    if not isinstance(raw, dict) or "results" not in raw:
        raise KitInputError("not a Promptfoo output file (no top-level `results`)", file=str(path))
    try:
        return PfFile.model_validate(raw)
    except ValidationError as e:
        where, msg, _ = first_error(e)
        raise KitInputError(f"not a Promptfoo output file: {where}: {msg}", file=str(path)) from None


def ingest(store: Any, path: Path, *, git_sha: str | None = None, force: bool = False) -> Ingested:
    pf = parse(path)
    eval_id = pf.evalId or digest(pf.model_dump(mode="json"))
    by_provider: dict[str, list[PfResult]] = {}
    for r in sorted(pf.results.results, key=lambda r: (r.testIdx, r.promptIdx)):
        by_provider.setdefault(_provider(r), []).append(r)
    run_ids = {p: f"promptfoo-{eval_id}" + (f"-{digest(p)[:6]}" if len(by_provider) > 1 else "") for p in by_provider}
    done = Ingested()
    present = set() if force else existing_runs(store, list(run_ids.values()))
    config_hash = digest(pf.config) if pf.config else None
    for provider, results in by_provider.items():
        run_id = run_ids[provider]
        if run_id in present:
            done.skipped_runs.append(run_id)
            continue
        if force:
            run_id = f"{run_id}-{digest([path.stat().st_mtime_ns, run_id])[:6]}"
        store.start_run(
            "promptfoo",
            model=provider,
            agent=pf.config.get("description"),
            config_hash=config_hash,
            git_sha=git_sha,
            run_id=run_id,
            started_at=pf.results.timestamp,
            meta={"file": str(path), "evalId": pf.evalId, "promptfoo": pf.metadata.get("promptfooVersion")},
        )
        attempts: dict[str, int] = {}
        batch: list[tuple[CaseRun, Any]] = []
        for r in results:
            case_id = _case_id(r)
            attempt = attempts.get(case_id, 0)
            attempts[case_id] = attempt + 1
            hard: list[Result] = []
            for comp in _components(r.gradingResult):
                assertion = comp.get("assertion") or {}
                name = _name(assertion)
                res = Result(name, bool(comp.get("pass")), str(comp.get("reason") or ""), score=comp.get("score"))
                if _model_graded(str(assertion.get("type", ""))):
                    store.record_soft(
                        run_id,
                        case_id,
                        attempt,
                        name,
                        outcome="pass" if res.passed else "fail",
                        score=res.score,
                        threshold=assertion.get("threshold"),
                        reason=res.reason,
                        judge_model=str(assertion.get("provider") or "promptfoo default grader"),
                    )
                else:
                    hard.append(res)
                done.results += 1
            # Graders the red team left out for want of a judge: soft gates recorded as skipped, never passes.
            for grader in (r.testCase.get("metadata") or {}).get("kitNotGraded") or []:
                store.record_soft(
                    run_id,
                    case_id,
                    attempt,
                    str(grader),
                    outcome="skipped",
                    reason="not graded: no judge model configured (KIT_JUDGE_MODEL)",
                )
                done.results += 1
            error = (r.error or "provider error") if r.failureReason == ERROR_REASON else None
            if not r.success and not error and all(h.passed for h in hard):
                # Failed with no failing hard assertion recorded (e.g. no gradingResult): keep the verdict.
                hard.append(Result("promptfoo:success", False, r.error or "Promptfoo marked the result failed"))
            usage = (r.response or {}).get("tokenUsage") or {}
            output = (r.response or {}).get("output")
            trace = ((r.response or {}).get("metadata") or {}).get("trace") or {
                "case_id": case_id,
                "attempt": attempt,
                "model": provider,
                "final_output": output if isinstance(output, str) else None,
                "spans": [],
            }
            metrics = {"steps": None, "tokens": usage.get("total"), "cost_usd": r.cost, "latency_ms": r.latencyMs}
            batch.append((CaseRun(case_id, attempt, tuple(hard), error=error, metrics=metrics), trace))
        store.record_many(run_id, batch)
        store.finish_run(run_id, merge=False)
        done.run_ids.append(run_id)
        done.cases += len(attempts)
    store.merge()
    return done
