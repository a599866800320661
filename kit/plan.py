"""One plan from the settings: what every front end runs, on what, recorded how.

    from kit.plan import make_plan

    plan = make_plan()                     # the settings: [tool.kit] < KIT_* < overrides
    plan.agent.name                        # the label every store run of this agent carries
    plan.suite.cases                       # the cases, with the suite's invariants expanded
    plan.model_of(trace)                   # the model id a run records

`kit run`, the DeepEval session and test, the Promptfoo provider, the red-team provider and `make evals`
all resolve their agent, cases, invariants, rubrics, model id, store, timeout and the run's kind here, so
the same settings give the same runs in every front end. A front end adds only what is its own (the red
team's control target names its variant; a Promptfoo config may name its agent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from kit.case import Case, Suite, find_invariants_file, load_suite
from kit.errors import KitInputError
from kit.runner.agents import Agent, configured_agent
from kit.runner.invoke import Invocation, invoke
from kit.runner.recorded import replay
from kit.settings import Settings, load_settings
from kit.store.rows import RunKind

# The reference agent's deterministic policy calls no model: its runs say so instead of a model id.
DETERMINISTIC_MODEL = "deterministic-policy"


@dataclass(frozen=True)
class Plan:
    """Everything a front end needs to run and record one suite, resolved once from the settings."""

    settings: Settings
    agent: Agent
    kind: RunKind = "golden"
    cases_path: Path | None = None  # None: the settings' cases

    @property
    def reference(self) -> bool:
        """The kit's reference agent (not a user's callable)."""
        return self.agent.uses_kit_agent

    @property
    def policy(self) -> str | None:
        return None if not self.reference else self.settings.agent_policy

    @property
    def variant(self) -> str | None:
        return self.agent.variant

    @property
    def invariants(self) -> Path | None:
        """The settings' invariants file, else the one beside or above the cases."""
        return suite_invariants(self.settings, self.cases)

    def invariants_for(self, case_file: str | Path) -> Path | None:
        """The invariants a case file's cases expand: the plan's for a file of its suite (so every front end
        judges a golden case alike), else the file's own (beside or above it), else the plan's."""
        p = Path(case_file).resolve()
        suite = Path(self.cases).resolve()
        if p == suite or suite in p.parents:
            return self.invariants
        return find_invariants_file(p.parent) or self.invariants

    @property
    def cases(self) -> Path:
        return self.cases_path or self.settings.cases

    @cached_property
    def suite(self) -> Suite:
        """The cases with their invariants expanded (and the errors of those that did not load)."""
        return load_suite(self.cases, self.invariants)

    @property
    def rubrics(self) -> Path:
        return self.settings.rubrics

    @property
    def store(self) -> Path:
        return self.settings.store

    @property
    def timeout(self) -> float:
        return self.settings.agent_timeout

    @property
    def model(self) -> str | None:
        """The model id every run of this plan records, when known before any trace: the setting, else
        the reference agent's (its deterministic policy calls no model)."""
        if self.settings.agent_model:
            return self.settings.agent_model
        if self.reference and self.settings.agent_policy == "deterministic":
            return DETERMINISTIC_MODEL
        return None

    @property
    def replaying(self) -> bool:
        """Judging recorded runs (the settings' replay_runs) instead of calling the agent."""
        return self.settings.replay_runs is not None

    def run(self, case: Case, attempt: int, *, run_id: str | None = None) -> Invocation:
        """One run of the case, judged: the recorded run when replaying (run once, judge everywhere), else a
        fresh call of the agent under the plan's timeout. Never raises for the agent's faults."""
        if self.settings.replay_runs is not None:
            return replay(self.settings.replay_runs, case, attempt, run_id=run_id)
        return self.run_live(case, attempt, run_id=run_id)

    def run_live(self, case: Case, attempt: int, *, run_id: str | None = None) -> Invocation:
        """A fresh call of the agent on the case (an attack, say), judged, under the plan's timeout."""
        return invoke(self.agent, case, attempt, timeout=self.timeout, run_id=run_id)

    def model_of(self, trace: Any) -> str | None:
        """The model id a run records: the setting, else the trace's own `model`."""
        return self.model or trace_model(trace)

    def env(self) -> dict[str, str]:
        """The plan as the KIT_* variables, for a tool started in a subprocess (DeepEval, Promptfoo)."""
        out = self.settings.env()
        if self.cases_path is not None:
            out["KIT_CASES"] = str(self.cases_path)
        if self.settings.invariants is None and self.invariants is not None:
            out["KIT_INVARIANTS"] = str(self.invariants)
        return out


def suite_invariants(settings: Settings, cases: str | Path | None = None) -> Path | None:
    """The invariants a suite's cases expand (every front end, and `kit lint`): the settings' file, else the
    one beside or above the cases (default: the settings' cases)."""
    if settings.invariants is not None:
        return settings.invariants
    return find_invariants_file(Path(cases if cases is not None else settings.cases))


def trace_model(trace: Any) -> str | None:
    """A trace's own model id (a dict or a Trace), or None."""
    model = trace.get("model") if isinstance(trace, Mapping) else getattr(trace, "model", None)
    return str(model) if model else None


def make_plan(
    settings: Settings | None = None,
    *,
    kind: RunKind = "golden",
    agent: str | None = None,
    variant: str | None = None,
    policy: str | None = None,
    replay: str | Path | None = None,
    record: str | Path | None = None,
    cases: str | Path | None = None,
    reference_ok: bool = True,
) -> Plan:
    """The plan for these settings (default: load_settings()). `agent` (a front end's own, e.g. a Promptfoo
    config's `agent:`) wins over the settings' agent; `variant`/`policy`/`replay`/`record` drive the
    reference agent and are an error with a user's agent. `reference_ok=False`: with no agent named
    anywhere, a KitInputError saying where to name one, instead of the reference agent."""
    settings = settings if settings is not None else load_settings()
    if agent is not None:
        settings = settings.model_copy(update={"agent": agent})
    # Resolved now: an agent that changes directory must not move where the results go.
    settings = settings.model_copy(update={"store": Path(settings.store).absolute()})
    if not settings.agent and not reference_ok:
        raise KitInputError(
            "no agent named: give it in the provider's config (agent: module:callable), in KIT_AGENT or in "
            "[tool.kit] agent; only the kit's own reference config runs the reference agent"
        )
    chosen = configured_agent(settings, variant=variant, policy=policy, replay=replay, record=record)
    return Plan(settings, chosen, kind, Path(cases) if cases is not None else None)
