"""One eval session's link to the kit's store: start the run, record each case, judge the soft-gate floors,
finish the run. Works the same under `deepeval test run` and plain pytest, with or without xdist workers
(every process appends to its own spool; the process that started the run finishes it)."""

from __future__ import annotations

from typing import Any

from deepeval_metrics.caselog import CaseLog
from kit.errors import KitInputError
from kit.gate.policy import GatePolicy
from kit.gate.rules import RunRules
from kit.gate.verdict import SoftFloor, soft_floors
from kit.plan import PLAN_ENV, Plan, trace_model
from kit.store import Store, new_run_id, open_store
from kit.store.lifecycle import OpenRun, join_run, open_run
from kit.store.queries import soft_gates


class EvalSession:
    def __init__(self, run: OpenRun, *, document: str | None = None, agent: str | None = None) -> None:
        self.run = run  # the run in the store (kit.store.lifecycle): the owner opened it and finishes it
        self.document = document  # the plan document naming this run (the owner's), for its workers
        self.agent = agent  # the agent label the run is stored under
        self.model: str | None = None  # the first recorded trace's own model id, for a run started without one

    @property
    def store(self) -> Store:
        return self.run.store

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def owner(self) -> bool:
        """Only the process that started the run finishes it."""
        return self.run.owner

    @property
    def rules(self) -> RunRules | None:
        """What the run is held to, recorded with it (kit.gate.rules)."""
        return self.run.rules

    @classmethod
    def begin(
        cls,
        plan: Plan,
        source: str = "deepeval",
        *,
        worker: bool = False,
        meta: dict[str, Any] | None = None,
        **run: Any,
    ) -> EvalSession:
        """The controller (or a lone process) starts the run in the plan's store, under the plan's run id if
        it has one, as part of its `make evals` (evals id); an xdist worker joins the run its controller
        started: the controller hands its workers, before they spawn, the plan with that run id. The run
        records its rules (the plan's cases, those that did not load included, under its gates file), as
        `kit run` does: the gate judges it by them."""
        store = open_store(plan.store)
        if worker:
            if not plan.settings.run_id:
                raise RuntimeError("an xdist worker's plan has no run id: the controller did not start a run")
            return cls(join_run(store, plan.settings.run_id), agent=run.get("agent") or plan.agent_name)
        run_id = plan.settings.run_id or new_run_id(source)
        opened = open_run(store, source, run_id=run_id, meta=meta, evals_id=plan.evals_id, rules=plan.rules(), **run)
        # The plan with this run's id, for the xdist workers to join (pytest_plugin hands it to each).
        document = plan.derive(run_id=run_id).env()[PLAN_ENV]
        return cls(opened, document=document, agent=run.get("agent"))

    def record(self, log: CaseLog) -> None:
        """Store the log once (the plugin stores, after each test, every log not stored yet)."""
        if log.recorded:
            return
        log.recorded = True
        self._record(log)

    def _record(self, log: CaseLog) -> None:
        """The case's hard verdict (case_results + check_results) and every rubric verdict with its judge call."""
        if log.agent and self.agent and log.agent != self.agent:
            raise KitInputError(
                f"case {log.case.id!r}: run_agent ran {log.agent}, but this session's run is stored as {self.agent}'s "
                "(one run, one agent): name the agent in the settings ([tool.kit] agent, KIT_AGENT) instead"
            )
        if self.model is None and log.trace is not None:
            self.model = trace_model(log.trace)
        self.run.record(log.case_run(self.run_id), log.trace, gate="hard")
        for v in log.soft.values():
            self.run.record_soft(
                log.case.id,
                log.attempt,
                v.rubric,
                outcome=v.outcome,  # type: ignore[arg-type]
                score=v.score,
                threshold=v.threshold,
                reason=v.reason,
                judge_model=v.judge_model,
                rubric_hash=v.rubric_hash,
                raw_answer=v.raw_answer,
                prompt=v.prompt,
                calls=v.calls or None,
            )

    def floors(self, policy: GatePolicy) -> list[SoftFloor]:
        """Soft-gate pass rates of this run against gates.yaml's floors, read back from the store (so the
        rows of xdist workers count too). The same query and policy `kit gate` uses."""
        with self.store.connect() as con:
            return soft_floors(soft_gates(con, self.run_id), policy)

    def finish(self) -> None:
        """Finish the run: `incomplete` when cases did not load (a gate never passes a suite with a hole)."""
        self.run.finish(model=self.model)
