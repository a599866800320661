"""One eval session's link to the kit's store: start the run, record each case, judge the soft-gate floors,
finish the run. Works the same under `deepeval test run` and plain pytest, with or without xdist workers
(every process appends to its own spool; the process that started the run finishes it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kit.report.gate import GatePolicy
from kit.store import Store, new_run_id, open_store
from kit.store.queries import soft_gates
from kit_deepeval.caselog import CaseLog

RUN_ID_ENV = "KIT_RUN_ID"


@dataclass(frozen=True)
class FloorResult:
    """A rubric's pass rate over the session against its floor. No judged run: neither pass nor fail."""

    rubric: str
    passed: int
    failed: int
    errors: int
    skipped: int
    floor: float
    skipped_fails: bool = False  # gates.yaml `soft: {skipped: fail}` counts a skipped verdict against the rate

    @property
    def judged(self) -> int:
        return self.passed + self.failed + self.errors + (self.skipped if self.skipped_fails else 0)

    @property
    def rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    @property
    def below_floor(self) -> bool:
        return self.rate is not None and self.rate < self.floor

    def line(self) -> str:
        if self.rate is None:
            return f"{self.rubric}: skipped on all {self.skipped} runs (not a pass)"
        state = "BELOW FLOOR" if self.below_floor else "ok"
        extra = f", {self.errors} judge errors" if self.errors else ""
        extra += f", {self.skipped} skipped" if self.skipped else ""
        return (
            f"{self.rubric}: {self.passed}/{self.judged} passed ({self.rate:.0%}) floor {self.floor:.0%} {state}{extra}"
        )


class EvalSession:
    def __init__(self, store: Store, run_id: str, *, owner: bool) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner  # only the process that started the run finishes it
        self.finished = False

    @classmethod
    def begin(
        cls, source: str = "deepeval", *, worker: bool = False, meta: dict[str, Any] | None = None, **run: Any
    ) -> EvalSession:
        """The controller (or a lone process) starts the run, under KIT_RUN_ID if set; an xdist worker joins
        the run its controller started (the id travels in the environment, set before workers spawn)."""
        store = open_store()
        if worker:
            run_id = os.environ.get(RUN_ID_ENV)
            if not run_id:
                raise RuntimeError(f"an xdist worker found no {RUN_ID_ENV}: the controller did not start a run")
            return cls(store, run_id, owner=False)
        run_id = os.environ.get(RUN_ID_ENV) or new_run_id(source)
        store.start_run(source, run_id=run_id, meta=meta, **run)
        os.environ[RUN_ID_ENV] = run_id
        return cls(store, run_id, owner=True)

    def record(self, log: CaseLog) -> None:
        """The case's hard verdict (case_results + check_results) and every rubric verdict with its judge call."""
        self.store.record(self.run_id, log.case_run(self.run_id), log.trace, gate="hard")
        for v in log.soft.values():
            self.store.record_soft(
                self.run_id,
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
            )

    def floors(self, policy: GatePolicy) -> list[FloorResult]:
        """Soft-gate pass rates of this run against gates.yaml's floors, read back from the store (so the
        rows of xdist workers count too). The same query and policy `kit gate` uses."""
        with self.store.connect() as con:
            rows = soft_gates(con, self.run_id)
        return [
            FloorResult(
                rubric=r["check"],
                passed=int(r["passed"]),
                failed=int(r["failed"]),
                errors=int(r["errors"]),
                skipped=int(r["skipped"]),
                floor=policy.soft.floors.get(r["check"], policy.soft.default_floor),
                skipped_fails=policy.soft.skipped == "fail",
            )
            for r in rows
        ]

    def finish(self) -> None:
        if self.owner and not self.finished:
            self.store.finish_run(self.run_id)
            self.finished = True
