"""One run's life in the store: opened with what it runs under (its rules), its results recorded, finished.

    run = open_run(store, "deepeval", rules=plan.rules(), agent=..., evals_id=plan.evals_id)
    run.record(case_run, trace)             # or record_many / record_soft
    run.finish(model=...)                   # `incomplete` when cases did not load

The kit's runner (kit.runner.store_writer), DeepEval's session and `kit ingest` (kit.store.ingest) all open,
record and finish their runs here, so a run is finished alike whoever wrote it: `incomplete` when its rules
say cases did not load (or its writer says cases are missing), else `complete`. It sits beside the store and
below the gate and the report: the rules are whatever the plan made (kit.gate.rules.RunRules), read here only
for what did not load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kit.result import CaseRun
from kit.store.api import Store
from kit.store.rows import Gate

Status = Literal["complete", "incomplete"]


def not_loaded(rules: Any) -> tuple[str, ...]:
    """What did not load of the cases a run's rules name (a RunRules, or its dict), else nothing."""
    if rules is None:
        return ()
    found = rules.get("not_loaded") if isinstance(rules, Mapping) else getattr(rules, "not_loaded", ())
    return tuple(found or ())


@dataclass
class OpenRun:
    """A run in the store that this process records into; `owner`: it started the run and finishes it (an
    xdist worker that joined its controller's run does not)."""

    store: Store
    run_id: str
    rules: Any = None
    owner: bool = True
    finished: bool = False

    def record(self, case_run: CaseRun, trace: Any = None, gate: Gate = "hard") -> None:
        self.store.record(self.run_id, case_run, trace, gate=gate)

    def record_many(self, batch: list[tuple[CaseRun, Any]], gate: Gate = "hard") -> None:
        self.store.record_many(self.run_id, batch, gate=gate)

    def record_soft(self, case_id: str, attempt: int, check: str, **fields: Any) -> None:
        self.store.record_soft(self.run_id, case_id, attempt, check, **fields)

    def status(self, *, complete: bool = True) -> Status:
        """`incomplete` when cases did not load (the rules say so) or the writer says cases are missing."""
        return "complete" if complete and not not_loaded(self.rules) else "incomplete"

    def finish(self, *, complete: bool = True, model: str | None = None, merge: bool = True) -> Status:
        """Finish the run once, if this process owns it; returns its status."""
        status = self.status(complete=complete)
        if self.owner and not self.finished:
            self.store.finish_run(self.run_id, status=status, merge=merge, model=model)
            self.finished = True
        return status


def open_run(store: Store, source: str, *, rules: Any = None, **run: Any) -> OpenRun:
    """Start a run of `source` in `store` under `rules` (kit.gate.rules.RunRules or its dict, recorded with
    it); `run`: what `Store.start_run` takes (run_id, agent, model, kind, evals_id, meta, ...)."""
    run_id = store.start_run(source, rules=rules, **run)
    return OpenRun(store, run_id, rules)


def join_run(store: Store, run_id: str) -> OpenRun:
    """A run another process started and finishes (an xdist worker records into its controller's run)."""
    return OpenRun(store, run_id, owner=False)
