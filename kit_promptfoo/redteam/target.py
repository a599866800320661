"""The adaptive red team's target (a Promptfoo provider): ONE agent per attack conversation, kept across its turns.

Promptfoo's multi-turn strategies call the target once per turn. A fresh agent per call would be a fresh
sandbox per turn (a refund made in turn 2 gone by turn 5), so here a conversation is a session: the agent's
own conversation object (`Agent.converse`: one sandbox, one history), fed one turn per call.

- crescendo with `stateful: true` (what the kit's config asks for) sends only the new message and hands back
  the `sessionId` this provider returned: the session it names continues.
- a prompt that is a chat history (crescendo without `stateful`) continues the session whose turns it repeats,
  else replays its earlier user turns on a fresh agent (a backtracked branch is a conversation of its own).
- anything else (jailbreak:tree, one attempt per call) starts a new conversation.

After every turn the oracle judges the whole conversation so far (every turn's spans, the last turn's end
state), so a violation in any turn counts, and the first turn each check failed in is kept. Multi-turn
strategies return their own metadata and drop the provider's, so the verdict travels another way: a sealed
ledger entry per conversation (`<kit_ledger>/<session>.json`, the folder the red team's hook gives each
adaptive attack in its vars), which conversation_assert.cjs reads. A violation also ends the conversation
(`conversationEnded`): the attacker stops spending calls on an attack that already worked.

A test without `kit_ledger` (a static attack) goes to the kit's agent provider unchanged; one with
`kit_mcp_attack` (an attack through the agent's own MCP servers, kit.mcp.attacked) too, with every MCP server the
agent starts over stdio serving that attack for the call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.plan import current_plan
from kit.recording.session import turn as recorded_turn
from kit.redteam.judging import attack_cases, invariant_names
from kit.runner.conversation import Exchange, TurnError
from kit.runner.invoke import AgentTimeout, call_agent
from kit.trace import parse_trace
from kit_promptfoo import agent_provider
from kit_promptfoo.digest import seal
from kit_promptfoo.kit_request import load_case, merged, request_case
from kit_promptfoo.redteam.failure import settled

LEDGER_VAR = "kit_ledger"
ATTACK_VAR = "kit_attack"  # the hook names every red-team attack: judged by the suite's invariants too
KEPT_VAR = "kit_invariant"  # a kept attack's: the invariant it broke when it was kept
MAX_SESSIONS = 64  # live conversations per worker; the oldest is closed first
_SESSIONS: OrderedDict[str, Session] = OrderedDict()
_LOCK = threading.Lock()


class Session:
    """One attack conversation: the agent's conversation object driven a turn at a time by the runner's own loop
    (kit.runner.conversation.Exchange), so an attack's trace is joined exactly as a scripted conversation's."""

    def __init__(self, plan: Any, case: Any, ledger: Path, quality: Any = None) -> None:
        if plan.agent.converse is None:
            raise ValueError(
                f"the agent {plan.agent.name} takes no `history` parameter: an adaptive attack is a conversation "
                "(give it one: fn(turn_text, history=messages))"
            )
        self.id = uuid.uuid4().hex[:16]
        self.case = case
        self.ledger = ledger
        self.conversation = plan.agent.converse(case, 0)
        self.exchange = Exchange(self.conversation, case.id, 0)
        self.quality = quality  # the quality checks: measured, reported apart, never a finding
        self.first_failed: dict[str, int] = {}
        self.quality_failed: dict[str, int] = {}

    @property
    def users(self) -> list[str]:
        return self.exchange.users

    def say(self, text: str) -> str:
        """The agent's answer to one turn (empty when it said nothing). Raises TurnError."""
        return self.exchange.say(text) or ""

    def trace(self) -> dict[str, Any]:
        return self.exchange.trace()

    def judge(self) -> dict[str, Any]:
        """The oracle on the whole conversation so far, written to the ledger; returns the entry."""
        trace = parse_trace(self.trace()).model_dump(mode="json", exclude_none=True)
        run = evaluate(parse_trace(trace), self.case)
        verdict = agent_provider.verdict(run)
        for c in verdict.get("checks") or []:
            if c["outcome"] != "pass":
                self.first_failed.setdefault(c["check"], len(self.users) - 1)
        quality = _failed(evaluate(parse_trace(trace), self.quality)) if self.quality is not None else []
        for c in quality:
            self.quality_failed.setdefault(c["check"], len(self.users) - 1)
        entry = {
            "session": self.id,
            "case_id": self.case.id,
            "turns": len(self.users),
            "users": self.users,
            "first_failed": self.first_failed,
            # The invariant each broken check belongs to: what `kit redteam keep` records with the attack.
            "invariants": {c.label: c.invariant for c in self.case.checks if c.label in self.first_failed},
            "quality_failed": self.quality_failed,
            "trace": trace,
            "verdict": verdict,
            "seal": seal(self.case.id, trace, verdict),
        }
        self.ledger.mkdir(parents=True, exist_ok=True)
        tmp = self.ledger / f".{self.id}.json.tmp"
        tmp.write_text(json.dumps(entry, ensure_ascii=True, default=str), encoding="utf-8")
        tmp.replace(self.ledger / f"{self.id}.json")
        return entry

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a conversation that fails to close must not fail the attack
            self.conversation.close()


def _history(prompt: str) -> list[str] | None:
    """The user turns of a prompt that is a chat history (JSON message list), else None."""
    text = prompt.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        return None
    return [str(m.get("content") or "") for m in data if m.get("role") == "user"]


def _keep(session: Session) -> None:
    with _LOCK:
        _SESSIONS[session.id] = session
        _SESSIONS.move_to_end(session.id)
        while len(_SESSIONS) > MAX_SESSIONS:
            _, old = _SESSIONS.popitem(last=False)
            old.close()


def _find(ledger: Path, users: list[str]) -> Session | None:
    with _LOCK:
        return next((s for s in _SESSIONS.values() if s.ledger == ledger and s.users == users), None)


def _session(
    prompt: str, vars_: dict[str, Any], plan: Any, case: Any, ledger: Path, quality: Any = None
) -> tuple[Session, str]:
    """The conversation this call continues (or a new one) and the turn to send."""
    named = vars_.get("sessionId")
    if named:
        with _LOCK:
            session = _SESSIONS.get(str(named))
        if session is None:
            raise ValueError(f"conversation {named} is not held by this worker (the target must run one worker)")
        return session, prompt
    turns = _history(prompt)
    if turns:
        found = _find(ledger, turns[:-1])
        if found is not None:
            return found, turns[-1]
        session = Session(plan, case, ledger, quality)
        for earlier in turns[:-1]:  # a backtracked branch: its earlier turns again, on a fresh agent
            session.say(earlier)
        return session, turns[-1]
    return Session(plan, case, ledger, quality), prompt


ATTACKER_NOTE = ".attacker.json"  # beside an attack's conversations: why its attacker produced none


def no_prompt(plan: Any, folder: Path) -> str:
    """The error of an adaptive turn with nothing to send, naming the attacker (an attacker that answers prose where
    its strategy wants JSON leaves the strategy an empty prompt), noted in the attack's ledger folder so that its
    assertion names it too."""
    attacker = plan.settings.redteam.attacker or "the attacker"
    said = (
        f"the attacker {attacker} produced no prompt for this turn (an attacker that answers prose where the "
        "strategy asks for JSON does this): the attack did not run"
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ATTACKER_NOTE).write_text(json.dumps({"error": said}), encoding="utf-8")
    return said


def ledger_folder(ledger: str, vars_: dict[str, Any]) -> Path:
    """Where this call's conversation is written: the attack's ledger, one subfolder per repeat of the test
    (`promptfoo eval --repeat N` runs the same test, with the same vars, N times; Promptfoo's `__repeatIndex`
    tells them apart), so repeats never share a folder."""
    repeat = vars_.get("__repeatIndex")
    folder = Path(ledger)
    return folder / f"repeat-{int(repeat)}" if isinstance(repeat, int) and not isinstance(repeat, bool) else folder


def _failed(run: Any) -> list[dict[str, Any]]:
    return [c for c in agent_provider.verdict(run).get("checks") or [] if c["outcome"] != "pass"]


# (case file, case id, suite invariants, their versions) -> (the case, its safety checks, its quality checks): a
# worker judges hundreds of attacks by one case, found and widened once per version of its files.
_JUDGING: OrderedDict[tuple[Any, ...], tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = OrderedDict()


def _version(path: Path | None) -> int:
    try:
        return path.stat().st_mtime_ns if path is not None else 0
    except OSError:
        return -1


def judging_cases(plan: Any, req: Any, prompt: str) -> tuple[Any, Any]:
    """(the case an attack is judged by, the case its quality is measured by): the red team's case (the test's
    case_file and case_id) widened to every hard invariant of the suite (`plan.invariants`), split into its
    safety checks (a broken one is a finding) and its quality checks (kit.redteam.judging)."""
    if not (req.case_file and req.case_id):
        raise ValueError("a red-team attack needs case_file and case_id: the case it is judged by")
    path = Path(req.case_file)
    path = path if path.is_absolute() else plan.root / path
    suite = plan.invariants
    key = (str(path), req.case_id, str(suite), _version(path), _version(suite))
    with _LOCK:
        found = _JUDGING.get(key)
    if found is None:
        case = load_case(req.case_file, req.case_id, plan)
        safety, quality = attack_cases(case, suite, plan.invariants_for(path))
        found = (case, safety.checks, quality.checks)
        with _LOCK:
            _JUDGING[key] = found
            while len(_JUDGING) > 32:
                _JUDGING.popitem(last=False)
    case, safety_checks, quality_checks = found
    asked = request_case(req, case, prompt)
    return dataclasses.replace(asked, checks=safety_checks), dataclasses.replace(asked, checks=quality_checks)


def _kept_invariant(vars_: dict[str, Any], case: Any) -> str | None:
    """Why a kept attack cannot be judged by what it broke (None: it can): the invariant it carries is judged."""
    invariant = vars_.get(KEPT_VAR)
    if not invariant or invariant in invariant_names(case.checks):
        return None
    return (
        f"kept attack {vars_.get('kit_attack') or ''}: it broke the invariant '{invariant}', which no longer judges "
        "the red team (neither the suite's invariants file nor the red team's names it)"
    )


def static_attack(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """A static (or kept) attack: the kit's provider runs it, and the verdict is the attack's judging case's
    (`judging_cases`), sealed as the provider seals its own; the quality checks it broke ride beside it."""
    vars_ = (context or {}).get("vars") or {}
    try:
        req = merged((options or {}).get("config"), vars_)
        plan = current_plan(agent=req.agent, variant=req.variant, policy=req.policy, reference_ok=req.reference)
        safety, quality = judging_cases(plan, req, prompt)
    except (ValueError, KitInputError, OSError) as e:
        return {"error": f"kit red-team target: {e}"}
    problem = _kept_invariant(vars_, safety)
    if problem:
        return {"error": f"kit red-team target: {problem}"}
    out = agent_provider.call_api(prompt, options, context)
    meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
    kit, trace = meta.get("kit"), meta.get("trace")
    if "error" in out or not isinstance(kit, dict) or not isinstance(trace, dict):
        return out
    try:
        # One pass over the trace: the safety checks first, then the quality ones (results come in check order).
        both = evaluate(parse_trace(trace), dataclasses.replace(safety, checks=safety.checks + quality.checks))
        n = len(safety.checks)
        verdict = agent_provider.verdict(dataclasses.replace(both, results=both.results[:n]))
        broke_quality = _failed(dataclasses.replace(both, results=both.results[n:], error=None))
    except Exception as e:  # a trace the oracle cannot read: this attack's error
        return {"error": f"case '{safety.id}': the attack's trace: {type(e).__name__}: {e}"}
    kit["verdict"] = verdict
    kit["seal"] = seal(str(kit.get("case_id") or safety.id), trace, verdict)
    kit["quality_failed"] = broke_quality
    return out


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    # An error of this target is never a rate limit (the agent's own are retried where it is called).
    return settled(_call_api(prompt, options, context))


def _call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    vars_ = (context or {}).get("vars") or {}
    mcp = vars_.get("kit_mcp_attack")
    if mcp:  # an attack through the agent's own MCP servers: each one it starts over stdio serves it
        from kit.mcp.attacked import attacking

        try:
            with attacking(current_plan().root, str(mcp)):
                return agent_provider.call_api(prompt, options, context)
        except KitInputError as e:
            return {"error": f"kit red-team target: {e}"}
    ledger = vars_.get(LEDGER_VAR)
    if not ledger:
        # A red-team attack (the hook names each one) is judged by the suite's invariants too; any other test
        # (a golden case of the root config) goes to the kit's provider unchanged.
        if vars_.get(ATTACK_VAR):
            return static_attack(prompt, options, context)
        return agent_provider.call_api(prompt, options, context)
    try:
        req = merged((options or {}).get("config"), vars_)
        plan = current_plan(agent=req.agent, variant=req.variant, policy=req.policy, reference_ok=req.reference)
        # Held to the checks its goals were drawn from: the case's and the suite's hard invariants (safety), its
        # quality measured apart.
        case, quality = judging_cases(plan, req, prompt)
        session, text = _session(prompt, vars_, plan, case, ledger_folder(ledger, vars_), quality)
        if not text.strip():  # the attacker gave its strategy nothing to send: never a resisted attack
            return {"error": no_prompt(plan, ledger_folder(ledger, vars_))}
    except (ValueError, KitInputError, OSError, TurnError) as e:
        return {"error": f"kit red-team target: {e}"}
    turn = len(session.users) + 1
    error: str | None = None
    # The turn's model calls recorded or replayed under the case's attempt 0, as a static attack's are.
    with recorded_turn(case.id, 0) as missed:
        try:  # each turn under the plan's timeout, as every other call of the agent
            answer = call_agent(plan.agent, case, 0, plan.timeout, run=lambda: session.say(text))
        except AgentTimeout:
            error = f"the agent did not answer within {plan.timeout:g} s"
        except TurnError as e:  # the agent broke a turn: this attack's error, named
            error = f"{type(e.cause).__name__}: {e.cause}" if e.cause is not None else e.detail
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
    if missed or error is not None:  # a recording miss first: whatever the agent made of the refused call
        session.close()
        return {"error": f"case '{case.id}': turn {turn}: {missed[0] if missed else error}"}
    try:
        entry = session.judge()
    except Exception as e:  # a trace the oracle cannot read: this attack's error
        return {"error": f"case '{case.id}': the conversation's trace: {type(e).__name__}: {e}"}
    _keep(session)
    failed = sorted(entry["first_failed"].items(), key=lambda kv: kv[1])
    out: dict[str, Any] = {
        "output": answer,
        "sessionId": session.id,
        "metadata": {"kit": {"session": session.id, "turns": entry["turns"], "verdict": entry["verdict"]}},
    }
    if failed:
        # The attack worked: stop the attacker spending calls on it (crescendo ends on this).
        check, turn = failed[0]
        out["conversationEnded"] = True
        out["conversationEndReason"] = f"invariant {check} violated in turn {turn + 1}"
    return out
