"""Promptfoo's `promptfoo eval -o out.json` (0.123.x; results format version 3) into the store.

One run per provider in the file. A result's case id is its test's `metadata.case_id`, else `vars.case_id`,
else the test's description; repeats (`--repeat N`) become attempts in file order. Model-graded assertions
are soft gates; every other assertion (the kit's Python assertions included) is a hard gate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kit.errors import KitInputError, first_error
from kit.names import printable
from kit.result import CaseRun, Result
from kit.store.ingest import Ingested, digest, existing_runs, read_json
from kit.store.lifecycle import open_run
from kit.store.rows import RunKind

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


ORACLE_PREFIX = "kit:"


def _name(assertion: dict[str, Any]) -> str:
    if assertion.get("metric"):
        return str(assertion["metric"])
    kind = str(assertion.get("type", "assertion"))
    value = assertion.get("value")
    # The kit's oracle assertion names each check's component `kit:<check>` (and sets no metric, which
    # Promptfoo would render as a template for every named score of the row).
    if kind == "python" and isinstance(value, str) and value.startswith(ORACLE_PREFIX):
        return value.removeprefix(ORACLE_PREFIX)
    if value is None or value == "" or isinstance(value, dict | list):
        return kind
    text = str(value).replace("\n", " ")
    return f"{kind}:{text[:60]}" + ("…" if len(text) > 60 else "")


class _Bad(ValueError):
    """A field of one result that is not what Promptfoo writes: said with the result's place in the file."""


def _obj(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"{where}: expected an object, got {type(value).__name__} {str(value)[:40]!r}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{where}: expected a list, got {type(value).__name__} {str(value)[:40]!r}")
    return value


def _components(grading: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Leaf assertion results. A Python assertion that returned component results contributes its parts,
    not its aggregate; Promptfoo also lists those parts at the top level, so each leaf is kept once."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def walk(comps: list[Any], where: str) -> None:
        for i, comp in enumerate(comps):
            comp = _obj(comp, f"{where}.{i}")
            parts = _list(comp.get("componentResults"), f"{where}.{i}.componentResults")
            if parts:
                walk(parts, f"{where}.{i}.componentResults")
                continue
            key = json.dumps(comp, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(comp)

    walk(
        _list((grading or {}).get("componentResults"), "gradingResult.componentResults"),
        "gradingResult.componentResults",
    )
    return out


def _model_graded(assertion_type: str) -> bool:
    kind = assertion_type.removeprefix("not-")
    # Red-team plugin graders (`promptfoo:redteam:<plugin>`) are LLM graders too.
    return kind in MODEL_GRADED or kind.startswith("promptfoo:redteam:")


def _case_id(r: PfResult) -> str:
    meta = _obj(r.testCase.get("metadata"), "testCase.metadata")
    for v in (
        meta.get("case_id"),
        r.vars.get("case_id"),
        _obj(r.testCase.get("vars"), "testCase.vars").get("case_id"),
        r.testCase.get("description"),
    ):
        if v:
            return printable(str(v))  # a control character in a test's id would reach terminals and XML raw
    return f"test-{r.testIdx}"


def _provider(r: PfResult) -> str:
    return str(r.provider.get("label") or r.provider.get("id") or "unknown")


def _kind(pf: PfFile, provider: str, results: list[tuple[int, PfResult]]) -> RunKind:
    """A control target's run (a `control-` label: it must fail), a red team's (its tests came from
    red-team plugins), else a golden eval."""
    if provider.startswith("control-"):
        return "control"
    # Not the config's `redteam:` block: the kit's root config carries one (for `npx promptfoo redteam run`)
    # beside its golden tests. Red-team tests are the ones Promptfoo's plugins made.
    if any(isinstance(r.testCase.get("metadata"), dict) and r.testCase["metadata"].get("pluginId") for _, r in results):
        return "redteam"
    return "golden"


def attacks(results: list[tuple[int, PfResult]]) -> dict[str, dict[str, str]]:
    """Per red-team case id, the Promptfoo plugin and strategy that made the attack (and the kit's category
    and goal when its plugin names them): what the case id does not carry, kept in the run's `meta.redteam`
    so the attack success rate is told per plugin and per strategy (kit.report.redteam_view)."""
    out: dict[str, dict[str, str]] = {}
    for _, r in results:
        meta = _obj(r.testCase.get("metadata"), "testCase.metadata")
        if not meta.get("pluginId"):
            continue
        mods = _obj(_obj(meta.get("pluginConfig"), "testCase.metadata.pluginConfig").get("modifiers"), "modifiers")
        found = {"plugin": str(meta["pluginId"]), "strategy": str(meta.get("strategyId") or "basic")}
        for key, name in (("kit_category", "category"), ("kit_goal_id", "goal")):
            if mods.get(key):
                found[name] = str(mods[key])
        out[_case_id(r)] = found
    return out


def _planned(results: list[tuple[int, PfResult]], key: str) -> str | None:
    """What the kit's provider said of the run (`metadata.kit`: the plan's agent label, the model id)."""
    for _, r in results:
        kit = ((r.response or {}).get("metadata") or {}).get("kit") if isinstance(r.response, dict) else None
        if isinstance(kit, dict) and kit.get(key):
            return str(kit[key])
    return None


def escape_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate (JavaScript strings may hold them; UTF-8, DuckDB and the spool
    cannot) written as its escape, `\\udXXX`: the row is stored and the bad text stays visible."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [escape_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {escape_surrogates(k): escape_surrogates(v) for k, v in value.items()}
    return value


def _has_surrogate(value: Any) -> bool:
    """Whether `value` holds a lone surrogate anywhere: one pass of the C encoder (~0.13 s on a red team's 10 MB
    file), where walking every string in Python takes ~0.23 s."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse(path: Path) -> PfFile:
    raw = read_json(path)
    if _has_surrogate(raw):
        raw = escape_surrogates(raw)
    if not isinstance(raw, dict) or "results" not in raw:
        raise KitInputError("not a Promptfoo output file (no top-level `results`)", file=str(path))
    try:
        return PfFile.model_validate(raw)
    except ValidationError as e:
        where, msg, _ = first_error(e)
        raise KitInputError(f"not a Promptfoo output file: {where}: {msg}", file=str(path)) from None


def _result(r: PfResult, case_id: str, attempt: int, provider: str) -> tuple[CaseRun, Any, list[dict[str, Any]]]:
    """One Promptfoo result as the case run, trace and soft verdicts the store keeps."""
    hard: list[Result] = []
    soft: list[dict[str, Any]] = []
    for comp in _components(r.gradingResult):
        assertion = _obj(comp.get("assertion"), "assertion")
        name = _name(assertion)
        res = Result(name, bool(comp.get("pass")), str(comp.get("reason") or ""), score=comp.get("score"))
        if _model_graded(str(assertion.get("type", ""))):
            # Promptfoo marks a grader that got no verdict from its model (down, malformed answer) graderError:
            # an error of the judge, never a verdict on the agent.
            judge_failed = bool(_obj(comp.get("metadata"), "metadata").get("graderError"))
            soft.append(
                dict(
                    check=name,
                    outcome="error" if judge_failed else "pass" if res.passed else "fail",
                    score=res.score,
                    threshold=assertion.get("threshold"),
                    reason=res.reason,
                    judge_model=str(assertion.get("provider") or "promptfoo default grader"),
                )
            )
        else:
            hard.append(res)
    # Graders the red team left out for want of a judge: soft gates recorded as skipped, never passes.
    meta = _obj(r.testCase.get("metadata"), "testCase.metadata")
    for grader in _list(meta.get("kitNotGraded"), "testCase.metadata.kitNotGraded"):
        why = "not graded: no judge model configured (KIT_JUDGE_MODEL)"
        soft.append(dict(check=str(grader), outcome="skipped", reason=why))
    error = (r.error or "provider error") if r.failureReason == ERROR_REASON else None
    explained = any(v["outcome"] in ("fail", "error") for v in soft)  # a soft gate's, judged by its floor
    if not r.success and not error and all(h.passed for h in hard) and not explained:
        # Failed with no failing assertion recorded (e.g. no gradingResult): keep the verdict.
        hard.append(Result("promptfoo:success", False, r.error or "Promptfoo marked the result failed"))
    response = r.response or {}
    usage = _obj(response.get("tokenUsage"), "response.tokenUsage")
    output = response.get("output")
    trace = _obj(response.get("metadata"), "response.metadata").get("trace")
    if not isinstance(trace, dict) or not trace:
        trace = {
            "case_id": case_id,
            "attempt": attempt,
            "model": provider,
            "final_output": output if isinstance(output, str) else None,
            "spans": [],
        }
    metrics = {"steps": None, "tokens": usage.get("total"), "cost_usd": r.cost, "latency_ms": r.latencyMs}
    kit = _obj(response.get("metadata"), "response.metadata").get("kit")
    if isinstance(kit, dict):
        # The kit's provider ran it: one agent call, or none for a recorded run it judged.
        metrics["agent_calls"] = 0 if kit.get("replayed") else 1
    return CaseRun(case_id, attempt, tuple(hard), error=error, metrics=metrics), trace, soft


def ingest(
    store: Any,
    path: Path,
    *,
    git_sha: str | None = None,
    force: bool = False,
    rules: Callable[[RunKind], Any] | None = None,
    evals_id: str | None = None,
) -> Ingested:
    """The file's runs into the store (one per provider), each under `evals_id` (the `make evals` that ran it).
    `rules(kind)`: what a run of that kind ran under (kit.gate.rules.RunRules, read from the settings by the
    caller, only for the kinds the file holds): a golden run records the cases' rules; a red team's or a
    control's the policy alone (it runs attacks, not the golden cases, so their floors are not its own)."""
    pf = parse(path)
    eval_id = pf.evalId or digest(pf.model_dump(mode="json"))
    by_provider: dict[str, list[tuple[int, PfResult]]] = {}
    for n, r in sorted(enumerate(pf.results.results), key=lambda nr: (nr[1].testIdx, nr[1].promptIdx)):
        by_provider.setdefault(_provider(r), []).append((n, r))
    run_ids = {p: f"promptfoo-{eval_id}" + (f"-{digest(p)[:6]}" if len(by_provider) > 1 else "") for p in by_provider}
    # Every result is read and checked before anything is written: a bad one leaves no half run.
    built: dict[str, list[tuple[CaseRun, Any, list[dict[str, Any]]]]] = {}
    for provider, results in by_provider.items():
        attempts: dict[str, int] = {}
        built[provider] = []
        for n, r in results:
            try:
                case_id = _case_id(r)
                attempt = attempts.get(case_id, 0)
                attempts[case_id] = attempt + 1
                built[provider].append(_result(r, case_id, attempt, provider))
            except _Bad as e:
                raise KitInputError(f"not a Promptfoo output file: results.results.{n}: {e}", file=str(path)) from None
    done = Ingested()
    present = set() if force else existing_runs(store, list(run_ids.values()))
    config_hash = digest(pf.config) if pf.config else None
    for provider, rows in built.items():
        run_id = run_ids[provider]
        if run_id in present:
            done.skipped_runs.append(run_id)
            continue
        if force:
            run_id = f"{run_id}-{digest([path.stat().st_mtime_ns, run_id])[:6]}"
        results = by_provider[provider]
        kind = _kind(pf, provider, results)
        meta: dict[str, Any] = {
            "file": str(path.resolve()),  # read again by `kit redteam keep`, from whatever folder it runs in
            "evalId": pf.evalId,
            "promptfoo": pf.metadata.get("promptfooVersion"),
        }
        if kind != "golden":
            meta["redteam"] = attacks(results)
        run = open_run(
            store,
            "promptfoo",
            kind=kind,
            evals_id=evals_id,
            model=_planned(results, "model") or provider,
            agent=_planned(results, "agent") or (pf.config.get("description") and str(pf.config["description"])),
            config_hash=config_hash,
            git_sha=git_sha,
            run_id=run_id,
            started_at=pf.results.timestamp,
            rules=None if rules is None else rules(kind),
            meta=meta,
        )
        for case_run, _, soft in rows:
            for v in soft:
                run.record_soft(case_run.case_id, case_run.attempt, v.pop("check"), **v)
            done.results += len(soft) + sum(1 for res in case_run.results if res.name != "promptfoo:success")
        run.record_many([(cr, trace) for cr, trace, _ in rows])
        run.finish(merge=False)  # `incomplete` when the rules say cases did not load
        done.run_ids.append(run_id)
        done.cases += len({cr.case_id for cr, _, _ in rows})
    store.merge()
    return done
