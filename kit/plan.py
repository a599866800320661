"""One plan from the settings: what every front end runs, on what, recorded how.

    from kit.plan import current_plan, make_plan

    plan = make_plan()                     # the settings: [tool.kit] < KIT_* < overrides
    plan.agent_name                        # the label every store run of this agent carries
    plan.suite.cases                       # the cases, with the suite's invariants expanded
    plan.model_of(trace)                   # the model id a run records
    env = plan.env()                       # {"KIT_PLAN": <the plan document>, ...} for a subprocess
    plan = current_plan()                  # in that subprocess: the same plan, read from the document

`kit run`, the DeepEval session and test, the Promptfoo provider, the red-team provider and `make evals`
all resolve their agent, cases, invariants, rubrics, judge, red-team corpus, model id, store, timeout and the
run's kind here, so the same settings give the same runs in every front end. A front end adds only what is
its own (the red team's control target names its variant; a Promptfoo config may name its agent).

The plan travels whole: `Plan.document()` is one JSON document (settings, agent, variant, agent policy, cassettes,
kind, cases and their hashes, invariants, judge, corpus, model id, store, evals id); `Plan.env()` writes it
to a file and names it in KIT_PLAN, and `current_plan()` in a subprocess rebuilds exactly that plan. A
secret (an API key) is never written to the file: the document names the variable that holds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kit.case import Case, Suite, case_files, invariants_of, load_suite
from kit.errors import KitInputError, first_error
from kit.runner.agents import Agent, configured_agent, load_agent
from kit.runner.invoke import Invocation, invoke
from kit.runner.recorded import replay as replay_run
from kit.settings import (
    DOCUMENT_VERSION,
    PLAN_ENV,
    SECRETS,
    McpServerSettings,
    Settings,
    document_settings,
    load_settings,
    project_root,
    read_document,
    validated,
)
from kit.store.rows import RunKind

if TYPE_CHECKING:
    from kit.gate.policy import GatePolicy
    from kit.gate.rules import RunRules
    from kit.judge import JudgeConfig
    from kit.recording import Recordings

# The reference agent's deterministic policy calls no model: its runs say so instead of a model id.
DETERMINISTIC_MODEL = "deterministic-policy"
# A plan document nobody wrote or used for a week belongs to no running process.
DOCUMENT_KEEP_S = 7 * 24 * 3600.0
# The names the kit gives its plan documents: the only files of the folder it ever removes.
DOCUMENT_PREFIX = "kit-plan-"
DOCUMENT_NAME = re.compile(r"kit-plan-[0-9a-f]{20}\.json")
# The settings' default corpus: the reference agent's shop attacks. Another agent gets the generic attacks.
DEFAULT_CORPUS = Path("redteam/attacks.yaml")
GENERIC = "generic"
_KINDS = ("golden", "redteam", "control")


@dataclass(frozen=True)
class Plan:
    """Everything a front end needs to run and record one suite, resolved once from the settings."""

    settings: Settings
    # The agent, or a user's `module:callable` not imported yet: `agent` imports it where first needed.
    chosen: Agent | str
    kind: RunKind = "golden"
    cases_path: Path | None = None  # None: the settings' cases
    replay: Path | None = None  # the reference agent's cassette folder to answer from
    record: Path | None = None  # the reference agent's cassette folder to record into
    # The kit's recordings endpoints the model calls that leave from Node go through, by who makes them
    # ("attacker": Promptfoo's attacker, "grader": grader.cjs) -> base URL; `make evals` starts them.
    node_endpoints: Mapping[str, str] = field(default_factory=dict)
    read_from: str | None = None  # the plan document it was read from (KIT_PLAN), None: made from the settings

    @cached_property
    def agent(self) -> Agent:
        """The agent. A user's callable is imported here, on first use, so that a process that only judges
        recorded runs (DeepEval's, Promptfoo's provider workers under `make evals`) never imports it (its
        module may import a whole SDK); one that cannot be imported is a KitInputError naming it, raised here.
        Its model calls are recorded or replayed in this process as the plan's `recordings` say."""
        self.install_recordings()
        if isinstance(self.chosen, Agent):
            return self.chosen
        try:
            return load_agent(self.chosen, self.root)
        except KitInputError as e:
            if self.read_from is None:
                raise
            # Under a plan document the agent was named by the plan, not by an --agent the user typed.
            why = str(e).removeprefix(f"--agent {self.chosen}: ")
            raise KitInputError(f"{PLAN_ENV}: the plan's agent {self.chosen}: {why}", file=self.read_from) from None

    @cached_property
    def recordings(self) -> Recordings | None:
        """The model calls' recordings the plan runs under (`[tool.kit.recordings]`: mode, folder; the pinned
        model `agent_model`), None when live."""
        from kit.recording import from_settings

        return from_settings(self.settings)

    def install_recordings(self) -> None:
        """The plan's recordings over this process's model calls (kit.recording.install; live: nothing): done
        where the agent is first used and before every live run, so each process that calls the agent or the
        judge records or replays alike (the runner's hosts inherit it)."""
        from kit.recording import install

        if install(self.recordings) and self.recordings is not None:
            # The runner's host processes inherit this environment: they read the same recordings (mode,
            # folder, pinned model, session) from this plan's document, as every subprocess of a plan does.
            os.environ[PLAN_ENV] = self.env()[PLAN_ENV]

    @property
    def agent_name(self) -> str:
        """The label every store run of this agent carries, known without importing the agent."""
        return self.chosen if isinstance(self.chosen, str) else self.chosen.name

    @property
    def reference(self) -> bool:
        """The kit's reference agent (not a user's callable)."""
        return isinstance(self.chosen, Agent) and self.chosen.uses_kit_agent

    @property
    def agent_policy(self) -> str | None:
        """The reference agent's policy (deterministic or model), None for a user's agent."""
        return None if not self.reference else self.settings.agent_policy

    @property
    def variant(self) -> str | None:
        return self.chosen.variant if isinstance(self.chosen, Agent) else None

    @property
    def invariants(self) -> Path | None:
        """The invariants the suite's cases expand (kit.case.invariants_of: the settings' file, else the one
        beside or above the cases)."""
        return invariants_of(self.cases, configured=self.settings.invariants)

    def invariants_for(self, case_file: str | Path) -> Path | None:
        """The invariants a case file's cases expand (kit.case.invariants_of): the suite's for a file of the
        suite (so every front end judges a golden case alike), else the file's own, else the suite's."""
        return invariants_of(case_file, configured=self.settings.invariants, suite=self.cases)

    def case(self, case_file: str | Path, case_id: str) -> Case:
        """The case `case_id` of `case_file` (relative to the project's folder), its invariants the plan's
        (`invariants_for`); each file parsed once per version. KitInputError naming the file and the case."""
        path = Path(case_file)
        path = path if path.is_absolute() else self.root / path
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            raise KitInputError("no such case file", file=str(case_file), case=case_id) from None
        invariants = self.invariants_for(path)
        cases, errors = _case_file(str(path), mtime, str(invariants) if invariants else None)
        found = cases.get(case_id)
        if found is None:
            own = next((e for e in errors if e.case == case_id), None)
            if own is not None:
                raise own  # already names the file, the case and the check
            raise KitInputError("no case with that id", file=str(case_file), case=case_id)
        return found

    @property
    def cases(self) -> Path:
        return self.cases_path or self.settings.cases

    @cached_property
    def suite(self) -> Suite:
        """The cases with their invariants expanded (and the errors of those that did not load)."""
        return load_suite(self.cases, self.invariants)

    @cached_property
    def gate_policy(self) -> GatePolicy:
        """The gate policy the settings name (`gates`, default gates.yaml): its defaults when the file is not
        there, a KitInputError naming it when it does not load."""
        from kit.gate.policy import load_policy

        return load_policy(self.settings.gates)

    def rules(
        self,
        *,
        case_ids: list[str] | None = None,
        runs: int | None = None,
        with_errors: bool = True,
        origin: Literal["run", "ingest"] = "run",
        with_cases: bool = True,
    ) -> RunRules:
        """The rules a run of this plan's suite runs under, recorded with it (kit.gate.rules.run_rules):
        the cases' floors and runs, the case files, those that did not load, the gate policy and its file.
        `with_cases=False`: the policy alone (a run of other cases than the suite's)."""
        from kit.gate.rules import RunRules, run_rules

        if not with_cases:
            return RunRules(policy=self.gate_policy, policy_file=str(self.settings.gates.absolute()), origin=origin)
        return run_rules(
            self.suite,
            self.gate_policy,
            case_ids=case_ids,
            runs=runs,
            with_errors=with_errors,
            origin=origin,
            policy_file=self.settings.gates,
        )

    @property
    def mcp_servers(self) -> dict[str, McpServerSettings]:
        """The MCP servers the agent reaches through `kit mcp serve NAME`, by name (the settings' `mcp`)."""
        return dict(self.settings.mcp.servers)

    @property
    def prices(self) -> Mapping[str, tuple[float, float]]:
        """USD per million tokens (input, output) by model id, over genai-prices' (kit.pricing)."""
        return self.settings.prices

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
    def evals_id(self) -> str | None:
        """The `make evals` invocation every run of this plan belongs to, if any."""
        return self.settings.evals_id

    @cached_property
    def judge(self) -> JudgeConfig | None:
        """The one judge (kit.judge.judge_config over these settings), None without a judge model."""
        from kit.judge import judge_config

        return judge_config(self.settings)

    @property
    def root(self) -> Path:
        """The project's folder (kit.settings.project_root over these settings)."""
        return project_root(self.settings)

    @property
    def redteam_corpus(self) -> Path:
        """The attacks the red team runs (`redteam_corpus` over these settings)."""
        return redteam_corpus(self.settings)

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
            return replay_run(self.settings.replay_runs, case, attempt, run_id=run_id)
        return self.run_live(case, attempt, run_id=run_id)

    def run_live(self, case: Case, attempt: int, *, run_id: str | None = None) -> Invocation:
        """A fresh call of the agent on the case (an attack, say), judged, under the plan's timeout."""
        self.install_recordings()
        return invoke(self.agent, case, attempt, timeout=self.timeout, run_id=run_id)

    def model_of(self, trace: Any) -> str | None:
        """The model id a run records: the setting, else the trace's own `model`."""
        return self.model or trace_model(trace)

    def derive(self, *, kind: RunKind | None = None, cases: str | Path | None = None, **settings: Any) -> Plan:
        """This plan with some settings changed (a stage's `replay_runs`, `evals_id`, `run_id=None`,
        `redteam={"corpus": ...}`), validated as the settings are: the same agent, variant and cassettes."""
        if settings:
            merged = self.settings.model_dump() | settings
            if isinstance(settings.get("redteam"), Mapping):
                merged["redteam"] = self.settings.redteam.model_dump() | dict(settings["redteam"])
            updated = validated(merged, where="plan")
        else:
            updated = self.settings
        return replace(
            self,
            settings=updated,
            kind=kind or self.kind,
            cases_path=Path(cases) if cases is not None else self.cases_path,
        )

    def case_files(self) -> list[dict[str, str]]:
        """The suite's case files with the sha256 of each (what the run ran under)."""
        root = Path(self.cases)
        if not root.exists():
            return []
        out = []
        for f in case_files(root):
            try:
                digest = file_sha256(f)
            except OSError as e:
                raise KitInputError(f"cannot read: {e.strerror}", file=str(f)) from None
            out.append({"path": str(f.absolute()), "sha256": digest})
        return out

    def document(self) -> dict[str, Any]:
        """The plan as one JSON-serializable document, read back by `plan_from_document`: everything a
        subprocess needs to run exactly this plan. API keys are left out (`secrets` names their variables)."""
        settings = _absolute(self.settings).model_dump(mode="json")
        for path, _var in SECRETS.items():
            _drop(settings, path)
        try:
            judge: dict[str, Any] | None = (
                self.judge.model_dump(mode="json", exclude={"api_key"}) if self.judge is not None else None
            )
        except KitInputError as e:  # a bad judge setting: every judging subprocess reports it, by name
            judge = {"error": str(e)}
        return {
            "version": DOCUMENT_VERSION,
            "settings": settings,
            "secrets": {var: ".".join(path) for path, var in SECRETS.items()},
            "agent": self.agent_name,
            "reference": self.reference,
            "variant": self.variant,
            "agent_policy": self.agent_policy,
            "replay": str(self.replay.absolute()) if self.replay else None,
            "record": str(self.record.absolute()) if self.record else None,
            "kind": self.kind,
            "cases": str(Path(self.cases).absolute()),
            "invariants": str(self.invariants.absolute()) if self.invariants else None,
            "case_files": self.case_files(),
            "judge": judge,
            "redteam_corpus": str(self.redteam_corpus.absolute()),
            "model": self.model,
            "store": str(Path(self.store).absolute()),
            "evals_id": self.evals_id,
            "node_endpoints": dict(self.node_endpoints),
        }

    def env(self) -> dict[str, str]:
        """The plan for a tool started in a subprocess (DeepEval, the Promptfoo eval, the red team): the
        document written under the store's folder (`plans/<hash>.json`) and named by KIT_PLAN, which the
        subprocess's `current_plan()` reads back as this very plan, and the secrets the document leaves out,
        each in the variable it names. Nothing else: every front end reads the plan, not KIT_* copies."""
        out = {PLAN_ENV: str(write_document(self.document(), Path(self.store).absolute().parent / "plans"))}
        for path, var in SECRETS.items():
            value = _get(self.settings, path)
            if value:
                out[var] = str(value)
        return out


def child_env(plan: Plan, *, without: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a tool this process starts under `plan`: this process's own (the user's PATH,
    proxies, keys), less `without`, with the plan's (`Plan.env()`) over it."""
    return {k: v for k, v in os.environ.items() if k not in without} | plan.env()


def write_document(doc: Mapping[str, Any], folder: Path) -> Path:
    """The document as `<folder>/kit-plan-<hash>.json` (one file per distinct plan, written once, atomically).
    Every run writes one (its run id is in it): the kit's documents unused for DOCUMENT_KEEP_S are removed as
    a new one is written, so the folder does not grow for ever; no other file there is ever touched."""
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False)
    path = folder / f"{DOCUMENT_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:20]}.json"
    try:
        if path.is_file():
            os.utime(path)  # in use again: kept
            return path
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{path.name}.{os.getpid()}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        raise KitInputError(f"cannot write the plan document: {e.strerror or e}", file=str(path)) from None
    _prune(folder)
    return path


def _prune(folder: Path) -> None:
    """The kit's own old documents (its names alone: the folder may hold a team's files of its own)."""
    cutoff = time.time() - DOCUMENT_KEEP_S
    for old in folder.glob(f"{DOCUMENT_PREFIX}*.json"):
        if not DOCUMENT_NAME.fullmatch(old.name):
            continue
        with contextlib.suppress(OSError):  # another process pruned it first
            if old.stat().st_mtime < cutoff:
                old.unlink()


class _CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    sha256: str


class _DocumentShape(BaseModel):
    """What a plan document of this version holds and `plan_from_document` reads: each field is required (the
    kit writes them all), so a document of another version, or hand-cut, is refused naming the field."""

    model_config = ConfigDict(extra="allow")
    settings: dict[str, Any]
    agent: str
    kind: str
    variant: str | None
    agent_policy: str | None
    replay: str | None
    record: str | None
    cases: str
    case_files: list[_CaseFile]
    node_endpoints: dict[str, str]


def _check_document(doc: Mapping[str, Any], where: str) -> None:
    try:
        _DocumentShape.model_validate(doc)
    except ValidationError as exc:
        name, msg, _ = first_error(exc)
        raise KitInputError(f"{PLAN_ENV}: not a plan document of this kit: {name}: {msg}", file=where) from None
    # Every setting is written (less the secrets): one missing would be read as its default, another store.
    missing = [k for k in Settings.model_fields if k not in doc["settings"] and (k,) not in SECRETS]
    if missing:
        raise KitInputError(f"{PLAN_ENV}: not a plan document of this kit: settings.{missing[0]} missing", file=where)


def plan_from_document(
    doc: Mapping[str, Any], *, env: Mapping[str, str] | None = None, where: str = "plan document"
) -> Plan:
    """The plan a document describes (`Plan.document()`): the same settings, agent, variant, policy,
    cassettes, kind and cases. Its secrets come from the variables the document names (default: this
    process's environment). A case file that changed since the plan was made is an error naming it: a
    subprocess never runs other cases than the plan's. A user's agent is imported where first needed
    (`Plan.agent`). A document missing a field, or holding one of another shape, is an error naming it."""
    _check_document(doc, where)
    settings = document_settings(doc, env, where)
    kind = doc.get("kind") or "golden"
    if kind not in _KINDS:
        raise KitInputError(f"{PLAN_ENV}: unknown run kind {kind!r}", file=where)
    plan = make_plan(
        settings,
        kind=kind,
        variant=doc.get("variant"),
        policy=doc.get("agent_policy"),
        replay=doc.get("replay"),
        record=doc.get("record"),
        cases=doc.get("cases"),
        defer_agent=True,
    )
    for entry in doc.get("case_files") or ():
        try:
            now: str | None = file_sha256(Path(entry["path"]))
        except OSError:
            now = None
        if now != entry["sha256"]:
            raise KitInputError(
                f"{PLAN_ENV}: the case file " + ("is gone" if now is None else "changed") + " since the plan was made",
                file=str(entry["path"]),
            )
    endpoints = doc.get("node_endpoints") or {}
    if not isinstance(endpoints, dict) or not all(isinstance(v, str) for v in endpoints.values()):
        raise KitInputError(f"{PLAN_ENV}: node_endpoints is not a mapping of base URLs", file=where)
    return replace(plan, node_endpoints=dict(endpoints), read_from=where)


def current_plan(
    *,
    agent: str | None = None,
    variant: str | None = None,
    policy: str | None = None,
    kind: RunKind | None = None,
    cases: str | Path | None = None,
    reference_ok: bool = True,
    env: Mapping[str, str] | None = None,
    document: str | Path | None = None,
) -> Plan:
    """The plan this process runs: the document KIT_PLAN names when set (a subprocess of `make evals`, or
    of any front end that exported `Plan.env()`; `document`: this one instead, e.g. the one an xdist
    controller hands its workers), else `make_plan()` from the settings. What a front end
    adds of its own (a Promptfoo config's `agent`, the control target's `variant`, the run's `kind`, a
    config's `cases`) is applied over it, as `make_plan` applies it. A user's agent is imported where first
    needed (`Plan.agent`): a process that only judges recorded runs never imports it."""
    env = os.environ if env is None else env
    named = str(document) if document is not None else (env.get(PLAN_ENV) or "").strip()
    if not named:
        settings = load_settings(env=env)
        return make_plan(
            settings,
            kind=kind or "golden",
            agent=agent,
            variant=variant,
            policy=policy,
            cases=cases,
            reference_ok=reference_ok,
            defer_agent=True,
        )
    doc = read_document(named)
    base = plan_from_document(doc, env=env, where=named)
    if agent == base.agent_name:  # a config naming the plan's own agent: the plan as it is (one path)
        agent = None
    own = reference_ok or not base.reference
    if agent is None and variant is None and policy is None and cases is None and own and kind is None:
        return base
    derived = make_plan(
        base.settings,
        kind=kind or base.kind,
        agent=agent,
        variant=variant or (base.variant if agent is None else None),
        policy=policy or (doc.get("agent_policy") if agent is None else None),
        replay=base.replay if agent is None else None,
        record=base.record if agent is None else None,
        cases=cases if cases is not None else base.cases_path,
        reference_ok=reference_ok,
        defer_agent=True,
    )
    return replace(derived, node_endpoints=base.node_endpoints, read_from=base.read_from)


def file_sha256(path: Path) -> str:
    """A file's sha256, hashed once per version (path, mtime, size): a long-lived worker (Promptfoo's provider)
    reads its plan on every call, and a large suite's files are not hashed again each time."""
    st = path.stat()
    return _sha256(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4096)
def _sha256(path: str, _mtime_ns: int, _size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def generic_corpus() -> Path:
    """The red team's generic attacks for any tool-using agent: package data of the Promptfoo adapter, found
    without importing it (the kit imports no adapter)."""
    spec = importlib.util.find_spec("kit_promptfoo")
    if spec is None or not spec.submodule_search_locations:
        raise KitInputError("the generic red-team corpus needs the kit's Promptfoo adapter (kit_promptfoo)")
    return Path(next(iter(spec.submodule_search_locations))) / "redteam" / GENERIC / "attacks.yaml"


def redteam_corpus(settings: Settings) -> Path:
    """The attacks the red team runs: the settings' corpus (relative to the project), else, for an agent other
    than the reference one (whose shop attacks are the default) or `corpus = "generic"`, the kit's generic
    attacks for any tool-using agent. The settings decide it, so the red team's hooks read it without loading
    the agent (a user's agent may import a whole SDK)."""
    corpus = settings.redteam.corpus
    if str(corpus) == GENERIC or (corpus == DEFAULT_CORPUS and settings.agent and _kit_checkout(settings)):
        return generic_corpus()
    return corpus if corpus.is_absolute() else project_root(settings) / corpus


def _kit_checkout(settings: Settings) -> bool:
    """The project is the kit's own checkout, whose redteam/attacks.yaml is the reference agent's shop attacks;
    in a repository `kit init` set up, redteam/attacks.yaml is the user's own. The checkout's adapter is its own
    top-level kit_promptfoo/: one installed in a venv inside the project (.venv/lib/.../site-packages) is not."""
    try:
        found = generic_corpus().resolve()
    except KitInputError:
        return False
    return found == (project_root(settings) / "kit_promptfoo" / "redteam" / GENERIC / "attacks.yaml").resolve()


def suite_invariants(settings: Settings, cases: str | Path | None = None) -> Path | None:
    """The invariants a suite's cases expand (kit.case.invariants_of over the settings' file; default cases:
    the settings')."""
    return invariants_of(cases if cases is not None else settings.cases, configured=settings.invariants)


@lru_cache(maxsize=64)
def _case_file(path: str, mtime_ns: int, invariants: str | None) -> tuple[dict[str, Case], tuple[KitInputError, ...]]:
    """Every case of one file, parsed once per (file, version, invariants). The cached `Case` objects are
    frozen, so no run can change what the next one is judged by."""
    suite = load_suite(Path(path), invariants_file=invariants)
    return {c.id: c for c in suite.cases}, tuple(suite.errors)


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
    defer_agent: bool = False,
) -> Plan:
    """The plan for these settings (default: load_settings()). `agent` (a front end's own, e.g. a Promptfoo
    config's `agent:`) wins over the settings' agent; `variant`/`policy`/`replay`/`record` drive the
    reference agent and are an error with a user's agent. `reference_ok=False`: with no agent named
    anywhere, a KitInputError saying where to name one, instead of the reference agent. `defer_agent`: a
    user's agent is imported where first needed (`Plan.agent`), not here (`kit run` and `make evals` import
    it now: one that cannot be imported stops them before anything runs)."""
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
    chosen: Agent | str
    reference_only = variant or policy not in (None, "deterministic") or replay or record
    if defer_agent and settings.agent and not reference_only:
        chosen = settings.agent
    else:  # the reference agent (cheap to make), or configured_agent's error for options a user's agent refuses
        chosen = configured_agent(settings, variant=variant, policy=policy, replay=replay, record=record)
    if isinstance(chosen, Agent) and chosen.uses_kit_agent:
        # The variant and policy the reference agent runs are the plan's settings: its document carries them.
        settings = settings.model_copy(
            update={"variant": chosen.variant, "agent_policy": policy or settings.agent_policy}
        )
    return Plan(
        settings,
        chosen,
        kind,
        Path(cases) if cases is not None else None,
        Path(replay) if replay else None,
        Path(record) if record else None,
    )


def _absolute(settings: Settings) -> Settings:
    """The settings with every relative path made absolute (a subprocess may start in another folder); the
    red team's corpus is relative to the project, as the red team reads it."""
    top = {k: Path(getattr(settings, k)).absolute() for k in _PATHS if getattr(settings, k) is not None}
    rt = settings.redteam
    red: dict[str, Path] = {}
    if rt.invariants is not None:
        red["invariants"] = rt.invariants.absolute()
    if str(rt.corpus) != GENERIC and rt.corpus != DEFAULT_CORPUS and not rt.corpus.is_absolute():
        red["corpus"] = project_root(settings) / rt.corpus
    recordings = settings.recordings.model_copy(update={"folder": settings.recordings.folder.absolute()})
    return settings.model_copy(update={**top, "redteam": rt.model_copy(update=red), "recordings": recordings})


_PATHS = ("cases", "invariants", "rubrics", "gates", "store", "replay_runs")


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        obj = getattr(obj, part)
    return obj


def _drop(target: dict[str, Any], path: tuple[str, ...]) -> None:
    for part in path[:-1]:
        target = target.get(part) or {}
    target.pop(path[-1], None)


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
