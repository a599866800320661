"""One run of an agent on a case, judged by the oracle: the single way every front end runs an agent.

    inv = invoke(agent, case, attempt, timeout=60.0)
    inv.case_run   # the oracle's verdict, or an error run naming the cause
    inv.trace      # the contract trace dict (None when the agent gave none)

An agent that raises, overruns its timeout or returns a malformed trace becomes an error run
(`kit.evaluate.error_run`) with the cause; `invoke` itself never raises for the agent's faults.

A multi-turn case (`turns`, or a simulated `user`) runs as one conversation (kit.runner.conversation)
under the same timeout; an agent without a conversation (no `history` parameter) makes it an error run
naming the case, and a `user:` case with no user model configured is a `skipped` run, never a pass.

The timeout: on the main thread a SIGALRM timer interrupts the agent where it is (`deadline`). Elsewhere
(a thread pool, a host that calls from a worker thread) no signal can reach the agent, so it runs in a
daemon thread of its own and is abandoned when time is up: the run is an error at once, but a thread
cannot be killed, so an agent that never returns keeps that thread busy until the process exits.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run, evaluate
from kit.result import CaseRun
from kit.runner.agents import Agent, MalformedTrace, to_trace
from kit.runner.conversation import NextMessage, TurnError, converse, scripted
from kit.usersim import UserModelError


@dataclass(frozen=True)
class Invocation:
    """One run: its evaluation, the trace (as a dict, for the store), and where its time went."""

    case_run: CaseRun
    trace: dict[str, Any] | None
    agent_s: float = 0.0  # inside the agent
    kit_s: float = 0.0  # the kit's own work on this run: reading the trace and every check


class AgentTimeout(BaseException):
    """Raised inside a run that overran its time. A BaseException, so an agent's `except Exception`
    cannot swallow it."""


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise AgentTimeout in this thread after `seconds`; main thread only (a no-op elsewhere, where
    `invoke` watches the agent from outside instead)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _fire(signum: int, frame: Any) -> None:
        raise AgentTimeout

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call_watched(agent: Agent, case: Case, attempt: int, seconds: float, run: Any = None) -> Any:
    """The agent in a daemon thread, waited for `seconds`: AgentTimeout if it has not returned by then."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run() if run is not None else agent.call(case, attempt)
        except BaseException as e:  # handed to the caller, which decides what it means
            box["error"] = e

    worker = threading.Thread(target=target, name=f"kit-agent:{case.id}#{attempt}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise AgentTimeout
    if "error" in box:
        raise box["error"]
    return box.get("result")


def call_agent(agent: Agent, case: Case, attempt: int, timeout: float | None, run: Any = None) -> Any:
    """What the agent returns for this case and attempt (`run()` instead of `agent.call` when given: a whole
    conversation), or AgentTimeout after `timeout` seconds."""
    work = run if run is not None else (lambda: agent.call(case, attempt))
    if not timeout:
        return work()
    if threading.current_thread() is threading.main_thread():
        with deadline(timeout):
            return work()
    return _call_watched(agent, case, attempt, timeout, work)


@dataclass
class _Dialogue:
    """A multi-turn case's conversation with the agent: who speaks for the user, and what it recorded."""

    next_message: NextMessage
    max_turns: int
    simulator: Any = None

    def run(self, agent: Agent, case: Case, attempt: int) -> dict[str, Any]:
        assert agent.converse is not None
        conversation = agent.converse(case, attempt)
        try:
            joined = converse(conversation, case.id, attempt, self.next_message, max_turns=self.max_turns)
        except BaseException:
            with contextlib.suppress(Exception):  # the turn's own error is the one to report
                conversation.close()
            raise
        conversation.close()
        if self.simulator is not None:
            joined["user_simulator"] = self.simulator.record()
        return joined


def _dialogue(agent: Agent, case: Case) -> _Dialogue | str:
    """How a multi-turn case is run on this agent, or why it cannot be ('skip: ...' or the error)."""
    turns = getattr(case, "turns", None)
    user = getattr(case, "user", None)
    if agent.converse is None:
        what = f"{len(turns)} turns" if turns is not None else "a simulated user"
        return (
            f"case '{case.id}' is a multi-turn case ({what}) but the agent {agent.name} takes no `history` "
            "parameter: give it one (fn(turn_text, history=messages)) to run conversations"
        )
    if turns is not None:
        return _Dialogue(scripted(turns), len(turns))
    from kit.usersim import NO_USER_REASON, SimulatedUser, user_config

    assert user is not None

    try:
        config = user_config()
    except KitInputError as e:
        return f"case '{case.id}': {e}"
    if config is None:
        return "skip: " + NO_USER_REASON
    simulator = SimulatedUser(config, user.instruction)
    return _Dialogue(simulator, user.max_turns, simulator)


def _cause(e: BaseException) -> str:
    """`Type: message (at file:line)`: the innermost frame says where the agent broke."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}{': ' + msg if msg else ''}{where}"


def invoke(agent: Agent, case: Case, attempt: int, *, timeout: float | None, run_id: str | None = None) -> Invocation:
    """Run the agent once on the case and evaluate the trace. Never raises for the agent's faults."""
    t0 = time.perf_counter()
    run = None
    if getattr(case, "is_multi_turn", False):
        dialogue = _dialogue(agent, case)
        if isinstance(dialogue, str):
            if dialogue.startswith("skip: "):
                cr = CaseRun(case.id, attempt, (), run_id=run_id, skipped=dialogue.removeprefix("skip: "))
            else:
                cr = error_run(case.id, attempt, dialogue, run_id=run_id)
            return Invocation(cr, None)

        def run() -> Any:
            return dialogue.run(agent, case, attempt)

    try:
        result = call_agent(agent, case, attempt, timeout, run)
    except AgentTimeout:
        cr = error_run(case.id, attempt, f"timeout: the agent ran longer than {timeout:g}s", run_id=run_id)
        return Invocation(cr, None, agent_s=time.perf_counter() - t0)
    except TurnError as e:
        detail = f"raised {_cause(e.cause)}" if e.cause is not None else e.detail
        cr = error_run(case.id, attempt, f"the agent {detail} in turn {e.turn}", run_id=run_id)
        return Invocation(cr, None, agent_s=time.perf_counter() - t0)
    except UserModelError as e:
        cr = error_run(case.id, attempt, f"the simulated user failed: {e}", run_id=run_id)
        return Invocation(cr, None, agent_s=time.perf_counter() - t0)
    except Exception as e:
        cr = error_run(case.id, attempt, f"the agent raised {_cause(e)}", run_id=run_id)
        return Invocation(cr, None, agent_s=time.perf_counter() - t0)
    t1 = time.perf_counter()
    try:
        trace, data = to_trace(result, case, attempt, run_id)
    except MalformedTrace as e:
        cr = error_run(case.id, attempt, f"the agent {e}", run_id=run_id)
        return Invocation(cr, None, agent_s=t1 - t0, kit_s=time.perf_counter() - t1)
    cr = evaluate(trace, case, run_id=run_id)
    return Invocation(cr, data, agent_s=t1 - t0, kit_s=time.perf_counter() - t1)
