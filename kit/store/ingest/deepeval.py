"""DeepEval (4.3.x) test-run JSON into the store.

Accepted: `.deepeval/.latest_test_run.json` (`{"testRunData": <TestRun>}`), `.deepeval/.latest_run_full.json`,
the `test_run_<YYYYMMDD_HHMMSS>.json` written to DEEPEVAL_RESULTS_FOLDER, and `.temp_test_run_data.json`:
all `TestRun.model_dump(by_alias=True)`. A test case's case id and attempt come from its metadata (as
`deepeval_metrics.testcase.kit_test_case` sets them), else from a `case#attempt` name. A metric is a soft gate
when DeepEval calls it flaky, it is a kit rubric (`rubric:…`) or a G-Eval, or an LLM judged it (an
evaluation model other than the kit oracle); otherwise a hard gate.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit.errors import KitInputError, first_error
from kit.result import CaseRun, Result
from kit.store.ingest import Ingested, digest, existing_runs, read_json
from kit.store.lifecycle import open_run

ORACLE_MODEL = "kit oracle"


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class DeMetric(_Loose):
    name: str
    threshold: float | None = None
    success: bool | None = None
    score: float | None = None
    reason: str | None = None
    flaky: bool = False
    evaluation_model: str | None = Field(None, alias="evaluationModel")
    error: str | None = None
    verbose_logs: str | None = Field(None, alias="verboseLogs")


class DeTestCase(_Loose):
    name: str
    input: Any = None
    actual_output: Any = Field(None, alias="actualOutput")
    success: bool | None = None
    metrics_data: list[DeMetric] | None = Field(None, alias="metricsData")
    metadata: dict[str, Any] | None = None
    order: int | None = None
    token_cost: float | None = Field(None, alias="tokenCost")
    completion_time: float | None = Field(None, alias="completionTime")
    input_token_count: int | None = Field(None, alias="inputTokenCount")
    output_token_count: int | None = Field(None, alias="outputTokenCount")
    tools_called: list[Any] | None = Field(None, alias="toolsCalled")


class DeTestRun(_Loose):
    test_file: str | None = Field(None, alias="testFile")
    test_cases: list[DeTestCase] = Field(default_factory=list, alias="testCases")
    conversational_test_cases: list[DeTestCase] = Field(default_factory=list, alias="conversationalTestCases")
    hyperparameters: dict[str, Any] | None = None
    identifier: str | None = None


def is_soft(m: DeMetric) -> bool:
    judged = m.evaluation_model not in (None, ORACLE_MODEL)
    return m.flaky or m.name.startswith("rubric:") or m.name.endswith("[GEval]") or judged


MAX_ATTEMPT = 2**31 - 1  # the store's attempt column is a 32-bit integer


def _attempt(value: Any, tc: DeTestCase, path: Path) -> int:
    """An attempt number as the store keeps it, or bad input naming the file and the test case."""
    try:
        attempt = int(value) if not isinstance(value, bool) and float(value) == int(value) else None
    except (TypeError, ValueError, OverflowError):
        attempt = None
    if attempt is None or not 0 <= attempt <= MAX_ATTEMPT:
        raise KitInputError(
            f"test case {tc.name!r}: attempt {value!r} is not a whole number from 0 to {MAX_ATTEMPT}", file=str(path)
        )
    return attempt


def _ids(tc: DeTestCase, counters: dict[str, int], path: Path) -> tuple[str, int]:
    meta = tc.metadata or {}
    m = re.fullmatch(r"(.+)#(\d+)", tc.name)
    case_id = str(meta.get("case_id") or (m.group(1) if m else tc.name))
    if meta.get("attempt") is not None:
        attempt = _attempt(meta["attempt"], tc, path)
    elif m:
        attempt = _attempt(m.group(2), tc, path)
    else:
        attempt = counters.get(case_id, 0)
    counters[case_id] = max(counters.get(case_id, 0), attempt + 1)
    return case_id, attempt


def _outcome(m: DeMetric) -> str:
    if m.error:
        return "error"
    if m.success is None and m.score is None:
        return "skipped"
    return "pass" if m.success else "fail"


def _started_at(path: Path) -> str:
    m = re.search(r"(\d{8}_\d{6})", path.name)
    if m:  # DeepEval names its timestamped exports in local time
        return dt.datetime.strptime(m.group(1), "%Y%m%d_%H%M%S").astimezone().isoformat()
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat()


def parse(path: Path) -> DeTestRun:
    raw = read_json(path)
    if isinstance(raw, dict) and "testRunData" in raw:
        raw = raw["testRunData"]
    if not isinstance(raw, dict) or not ({"testCases", "conversationalTestCases"} & raw.keys()):
        raise KitInputError("not a DeepEval test-run file (no `testCases`)", file=str(path))
    try:
        return DeTestRun.model_validate(raw)
    except ValidationError as e:
        where, msg, _ = first_error(e)
        raise KitInputError(f"not a DeepEval test-run file: {where}: {msg}", file=str(path)) from None


def ingest(store: Any, path: Path, *, git_sha: str | None = None, force: bool = False, rules: Any = None) -> Ingested:
    """The test run into the store as one run; `rules` (kit.gate.rules.RunRules, read from the settings by
    the caller) recorded with it, so the gate holds its cases to their own floors and fails it when a case
    file did not load, as for the kit's and Promptfoo's runs."""
    tr = parse(path)
    run_id = f"deepeval-{digest(tr.model_dump(mode='json', by_alias=True))}"
    done = Ingested()
    if not force and run_id in existing_runs(store, [run_id]):
        done.skipped_runs.append(run_id)
        return done
    if force:
        run_id = f"{run_id}-{digest(path.stat().st_mtime_ns)[:6]}"
    hyper = tr.hyperparameters or {}
    # Everything is read and checked before anything is written: a bad test case leaves no half run.
    counters: dict[str, int] = {}
    soft: list[dict[str, Any]] = []
    batch: list[tuple[CaseRun, Any]] = []
    for tc in sorted(tr.test_cases + tr.conversational_test_cases, key=lambda t: (t.order is None, t.order or 0)):
        case_id, attempt = _ids(tc, counters, path)
        hard: list[Result] = []
        for m in tc.metrics_data or []:
            outcome = _outcome(m)
            done.results += 1
            if is_soft(m):
                soft.append(
                    dict(
                        case_id=case_id,
                        attempt=attempt,
                        check=m.name,
                        outcome=outcome,
                        score=m.score,
                        threshold=m.threshold,
                        reason=m.reason or m.error or "",
                        judge_model=m.evaluation_model,
                        raw_answer=m.verbose_logs,
                    )
                )
            else:
                hard.append(
                    Result(
                        m.name, outcome == "pass", m.error or m.reason or "", error=outcome == "error", score=m.score
                    )
                )
        if not hard and tc.success is False:
            hard.append(Result("deepeval:success", False, "DeepEval marked the test case failed"))
        tokens = (tc.input_token_count or 0) + (tc.output_token_count or 0) or None
        metrics = {
            "steps": None,
            "tokens": tokens,
            "cost_usd": tc.token_cost,
            "latency_ms": tc.completion_time * 1000 if tc.completion_time is not None else None,
        }
        trace = {
            "case_id": case_id,
            "attempt": attempt,
            "final_output": tc.actual_output,
            "input": tc.input,
            "tools_called": tc.tools_called,
            "spans": [],
        }
        batch.append((CaseRun(case_id, attempt, tuple(hard), metrics=metrics), trace))
    run = open_run(
        store,
        "deepeval",
        model=hyper.get("model") and str(hyper["model"]),
        agent=hyper.get("agent") and str(hyper["agent"]),
        config_hash=digest(hyper) if hyper else None,
        git_sha=git_sha,
        run_id=run_id,
        started_at=_started_at(path),
        meta={"file": str(path), "test_file": tr.test_file, "identifier": tr.identifier},
        rules=rules,
    )
    for r in soft:
        run.record_soft(r.pop("case_id"), r.pop("attempt"), r.pop("check"), **r)
    run.record_many(batch)
    run.finish()  # `incomplete` when the rules say cases did not load, as every front end finishes it
    done.run_ids.append(run_id)
    done.cases = len(counters)
    return done
