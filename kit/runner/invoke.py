"""One run of an agent on a case, judged by the oracle: the single way every front end runs an agent.

    inv = invoke(agent, case, attempt, timeout=60.0)
    inv.case_run   # the oracle's verdict, or an error run naming the cause
    inv.trace      # the contract trace dict (None when the agent gave none)

An agent that raises, overruns its timeout or returns a malformed trace becomes an error run
(`kit.evaluate.error_run`) with the cause; `invoke` itself never raises for the agent's faults.

A multi-turn case (`turns`, or a simulated `user`) runs as one conversation (kit.runner.conversation)
under the same timeout; an agent without a conversation (no `history` parameter) makes it an error run
naming the case, and a `user:` case with no user model configured is a `skipped` run, never a pass.

`invoke` is two halves, `call` (the agent's side: the call itself, its retries, its result as a plain
trace dict) and `judge` (the oracle's side), so a runner can call the agent in one process and judge in
another the agent never touched. `call_async` is the agent's side for an `async def` agent on an event loop.
A call that raises a rate-limit error is retried with exponential backoff and jitter (`RETRIES` times,
within the timeout); the retries are counted on the run. With KIT_SLOTS_DIR set, each call of a user's agent
holds one of the shared slots (kit.runner.slots), so processes that call the agent at once stay under one cap.

Model calls: when the process runs under recordings (`[tool.kit.recordings]`, kit.recording), each call
is one attempt's tape, current in the agent's thread or task: its SDK calls are recorded or answered from the
recording, and a replayed request with no recording makes the run an error naming it (`recording miss: ...`),
even when the agent swallowed the SDK's exception. A replayed run's trace says so (`replayed`) and costs 0.

The timeout: on the main thread a SIGALRM timer interrupts the agent where it is (`deadline`). Elsewhere
(a thread pool, a host that calls from a worker thread) no signal can reach the agent, so it runs in a
daemon thread of its own and is abandoned when time is up: the run is an error at once, but a thread
cannot be killed, so an agent that never returns keeps that thread busy until the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import json
import random
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run, evaluate
from kit.mcp.attempts import with_mcp_report
from kit.offline import agent_environment
from kit.result import CaseRun
from kit.runner.agents import Agent, MalformedTrace, resolve_awaitable, to_trace
from kit.runner.conversation import NextMessage, TurnError, converse, scripted
from kit.runner.frameworks import with_end_state_read
from kit.runner.slots import Slots, from_env
from kit.runner.usersim import UserModelError
from kit.trace import Trace, parse_trace

# Rate-limit retries: at most RETRIES more calls, waiting BACKOFF_S * 2**k (k = 0, 1, ...), at most
# BACKOFF_MAX_S, times a random factor in [0.5, 1] so callers that were limited together do not retry together.
RETRIES = 4
BACKOFF_S = 0.5
BACKOFF_MAX_S = 30.0


@dataclass(frozen=True)
class Invocation:
    """One run: its evaluation, the trace (as a dict, for the store), and where its time went."""

    case_run: CaseRun
    trace: dict[str, Any] | None
    agent_s: float = 0.0  # waiting on the agent (its calls and the backoff between them)
    kit_s: float = 0.0  # the kit's own work on this run: reading the trace and every check
    retries: int = 0  # calls repeated after a rate-limit error


@dataclass(frozen=True)
class Called:
    """The agent's side of one run, before judging. Crosses from an agent's process to the judge's as JSON
    text (`json`), so nothing the agent returned is unpickled where the oracle runs."""

    data: dict[str, Any] | None = None  # the trace as a dict (None: see error/skipped)
    error: str | None = None  # why the run is an error (the agent raised, hung, returned no trace)
    skipped: str | None = None  # why the run could not take place
    agent_s: float = 0.0
    kit_s: float = 0.0  # reading the agent's result into a trace
    retries: int = 0
    calls: int = 0  # calls made to the agent (retries included)
    json: str | None = None  # `data` encoded, set by `wire()`
    trace: Trace | None = None  # the parsed trace, in the agent's process only (never sent)
    replayed: int = 0  # model calls answered from a recording (kit.recording): the run cost nothing

    def wire(self) -> Called:
        """This, ready to cross a process boundary: the trace as JSON text, nothing else of the agent's."""
        if self.data is None:
            return dataclasses.replace(self, trace=None)
        text = self.json if self.json is not None else json.dumps(self.data, default=str)
        return dataclasses.replace(self, data=None, trace=None, json=text)


class RateLimited(Exception):
    """Raise it from an agent to say "rate limited, try again" (`retry_after`: seconds, when known).
    The kit also knows a provider's own error (a class named RateLimitError, an HTTP 429)."""

    def __init__(self, message: str = "rate limited", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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

    # The caller's context goes with it: the attempt's recording tape is a context variable.
    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(target,), name=f"kit-agent:{case.id}#{attempt}", daemon=True)
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
    # An `async def` agent's coroutine is awaited inside the same time limit.
    # A database handed as the end state is read in the thread that made it (sqlite3 serves no other).
    work = run if run is not None else (lambda: with_end_state_read(resolve_awaitable(agent.call(case, attempt))))
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
    from kit.runner.usersim import NO_USER_REASON, SimulatedUser, user_config

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
    """`Type: message (at file:line)`: the innermost frame says where the agent broke. An exception group
    (a TaskGroup's, as the MCP SDK and anyio raise) says nothing of its own: its leaves are named, each once."""
    if isinstance(e, BaseExceptionGroup):
        named: dict[str, str] = {}  # `Type: message` -> where it was first raised
        for leaf in _leaves(e):
            named.setdefault(*_named(leaf))
        causes = [what + where for what, where in named.items()]
        return causes[0] if len(causes) == 1 else f"{len(causes)} errors: " + "; ".join(causes)
    return "".join(_named(e))


def _named(e: BaseException) -> tuple[str, str]:
    """(`Type: message`, ` (at file:line)`)."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}{': ' + msg if msg else ''}", where


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions a group holds, nested groups opened, in the order they were raised."""
    found: list[BaseException] = []
    for inner in group.exceptions:
        found.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return found


# --- rate limits --------------------------------------------------------------------------------------

_HTTP_429 = re.compile(r"\b429\b")
_LIMIT_WORDS = re.compile(r"rate.?limit|too many requests|quota", re.IGNORECASE)


def is_rate_limit(e: BaseException) -> bool:
    """A rate-limit error: RateLimited, any provider's class named RateLimitError (openai, anthropic,
    litellm, ...; found by name, so no provider is imported), an HTTP 429 status on the error or its
    response, or a message naming 429 beside words of a rate limit."""
    if isinstance(e, RateLimited):
        return True
    if any(k.__name__ == "RateLimitError" for k in type(e).__mro__):
        return True
    response = getattr(e, "response", None)
    for holder in (e, response):
        for attr in ("status_code", "status", "http_status"):
            if getattr(holder, attr, None) == 429:
                return True
    text = str(e)
    return bool(_HTTP_429.search(text) and _LIMIT_WORDS.search(text)) or "too many requests" in text.lower()


def backoff(retry: int, e: BaseException | None = None) -> float:
    """Seconds to wait before retry number `retry` (0-based): the error's own `retry_after` when it gives
    one (capped), else exponential with jitter."""
    hint = getattr(e, "retry_after", None)
    if isinstance(hint, int | float) and hint > 0:
        return float(min(hint, BACKOFF_MAX_S))
    return min(BACKOFF_S * 2**retry, BACKOFF_MAX_S) * random.uniform(0.5, 1.0)


# --- the agent's side ---------------------------------------------------------------------------------


def _own_slots(agent: Agent) -> Slots | None:
    """The shared slots for a user's agent; the reference agent answers in milliseconds from the kit's own
    code and keeps its fast path."""
    return None if agent.uses_kit_agent else from_env()


def _prepare(agent: Agent, case: Case, attempt: int) -> tuple[Called | None, Callable[[], Any] | None]:
    """(an early outcome, or None) and the conversation to run (None: a single call)."""
    if not getattr(case, "is_multi_turn", False):
        return None, None
    dialogue = _dialogue(agent, case)
    if isinstance(dialogue, str):
        if dialogue.startswith("skip: "):
            return Called(skipped=dialogue.removeprefix("skip: ")), None
        return Called(error=dialogue), None
    return None, lambda: dialogue.run(agent, case, attempt)


def _failure(e: BaseException, timeout: float | None) -> str:
    """What an exception out of the agent's call makes of the run."""
    if isinstance(e, AgentTimeout):
        return f"timeout: the agent ran longer than {timeout:g}s"
    if isinstance(e, TurnError):
        detail = f"raised {_cause(e.cause)}" if e.cause is not None else e.detail
        return f"the agent {detail} in turn {e.turn}"
    if isinstance(e, UserModelError):
        return f"the simulated user failed: {e}"
    return f"the agent raised {_cause(e)}"


def call(
    agent: Agent,
    case: Case,
    attempt: int,
    *,
    timeout: float | None,
    run_id: str | None = None,
    slots: Slots | bool | None = True,
    on_start: Callable[[], None] | None = None,
) -> Called:
    """The agent's side of one run: call it (retrying rate limits), read what it returned into a trace.
    Never raises: anything the agent raises (SystemExit, KeyboardInterrupt and every other BaseException
    included) or returns wrongly is the run's error. `slots=True`: the shared slots, if any."""
    early, conversation = _prepare(agent, case, attempt)
    if early is not None:
        return early
    agent_environment()  # the user's own proxies for the agent's code, whichever tool started this process
    taped = _tape(case, attempt)
    if isinstance(taped, str):
        return Called(error=taped)
    if taped is None:
        return _call(agent, case, attempt, timeout, run_id, slots, on_start, conversation)
    token = _current_tape().set(taped[1])
    try:
        called = _call(agent, case, attempt, timeout, run_id, slots, on_start, conversation)
    finally:
        _current_tape().reset(token)
    return _taped(called, *taped)


def _call(
    agent: Agent,
    case: Case,
    attempt: int,
    timeout: float | None,
    run_id: str | None,
    slots: Slots | bool | None,
    on_start: Callable[[], None] | None,
    conversation: Callable[[], Any] | None,
) -> Called:
    shared = _own_slots(agent) if slots is True else slots or None
    held = shared.acquire() if shared is not None else None
    try:
        if on_start is not None:
            on_start()
        t0 = time.perf_counter()
        ends = t0 + timeout if timeout else None
        retries = 0
        while True:
            left = ends - time.perf_counter() if ends is not None else None
            try:
                if left is not None and left <= 0:
                    raise AgentTimeout
                result = call_agent(agent, case, attempt, left, conversation)
                break
            except BaseException as e:  # an agent's SystemExit is its run's error, not the runner's end
                wait = _retry_or_fail(e, retries, t0, ends, timeout)
                if isinstance(wait, Called):
                    return wait
                time.sleep(wait)  # holding the slot: backing off frees no capacity on a rate-limited account
                retries += 1
        agent_s = time.perf_counter() - t0
    finally:
        if held is not None and shared is not None:
            shared.release(held)
    return _read(result, agent, case, attempt, run_id, agent_s, retries)


async def call_async(
    agent: Agent,
    case: Case,
    attempt: int,
    *,
    timeout: float | None,
    run_id: str | None = None,
    slots: Slots | bool | None = True,
    on_start: Callable[[], None] | None = None,
) -> Called:
    """`call` for an `async def` agent, on the running event loop: awaited under the timeout, retried with
    `asyncio.sleep`, the shared slot awaited without blocking the loop. A multi-turn case, or an agent whose
    call is not awaitable, runs in a thread."""
    early, conversation = _prepare(agent, case, attempt)
    if early is not None:
        return early
    agent_environment()
    if conversation is not None or not agent.is_async:
        return await asyncio.to_thread(
            call, agent, case, attempt, timeout=timeout, run_id=run_id, slots=slots, on_start=on_start
        )
    taped = _tape(case, attempt)
    if isinstance(taped, str):
        return Called(error=taped)
    if taped is None:
        return await _call_async(agent, case, attempt, timeout, run_id, slots, on_start)
    token = _current_tape().set(taped[1])  # this task's context: the tasks the agent starts inherit it
    try:
        called = await _call_async(agent, case, attempt, timeout, run_id, slots, on_start)
    finally:
        _current_tape().reset(token)
    return _taped(called, *taped)


async def _call_async(
    agent: Agent,
    case: Case,
    attempt: int,
    timeout: float | None,
    run_id: str | None,
    slots: Slots | bool | None,
    on_start: Callable[[], None] | None,
) -> Called:
    shared = _own_slots(agent) if slots is True else slots or None
    held = await shared.acquire_async() if shared is not None else None
    try:
        if on_start is not None:
            on_start()
        t0 = time.perf_counter()
        ends = t0 + timeout if timeout else None
        retries = 0
        while True:
            left = ends - time.perf_counter() if ends is not None else None
            try:
                if left is not None and left <= 0:
                    raise AgentTimeout
                pending = agent.call(case, attempt)
                if inspect.isawaitable(pending):
                    pending = await asyncio.wait_for(_awaited(pending), left) if left is not None else await pending
                result = pending
                break
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # we are being cancelled, not the agent failing
                return Called(error="the agent raised CancelledError", agent_s=time.perf_counter() - t0)
            except BaseException as e:  # as in `call`
                if isinstance(e, TimeoutError) and isinstance(e.__cause__, asyncio.CancelledError):
                    e = AgentTimeout()  # wait_for's own: the deadline, not the agent's TimeoutError
                wait = _retry_or_fail(e, retries, t0, ends, timeout)
                if isinstance(wait, Called):
                    return wait
                await asyncio.sleep(wait)
                retries += 1
        agent_s = time.perf_counter() - t0
    finally:
        if held is not None and shared is not None:
            shared.release(held)
    return _read(result, agent, case, attempt, run_id, agent_s, retries)


# --- the model's calls, recorded or replayed ----------------------------------------------------------


def _current_tape() -> contextvars.ContextVar[Any]:
    from kit.recording.tape import current

    return current


def _tape(case: Case, attempt: int) -> tuple[Any, Any] | str | None:
    """(the process's recordings, this attempt's tape) when it runs under recordings (kit.recording), None
    when live, or why the attempt cannot run (a recordings folder that cannot be read)."""
    from kit.recording.session import active

    try:
        recordings = active()
        return None if recordings is None else (recordings, recordings.open(case.id, attempt))
    except KitInputError as e:
        return f"recordings: {e}"


def _taped(called: Called, recordings: Any, tape: Any) -> Called:
    """The call after its tape is done: saved (record); the run an error when a request missed (replay),
    whatever the agent made of the answer; a replayed trace marked so (`replayed`: its calls and their file)."""
    try:
        missed = recordings.finish(tape)
    except KitInputError as e:
        missed = f"recordings: {e}"
    if missed is not None:
        return dataclasses.replace(called, error=missed, skipped=None, data=None, json=None, trace=None)
    if tape.mode != "replay" or called.data is None or not tape.replayed:
        return called
    data = dict(called.data)
    data["replayed"] = {"calls": tape.replayed, "recording": tape.source}
    text = json.dumps(data, default=str) if called.json is not None else None
    return dataclasses.replace(called, data=data, json=text, replayed=tape.replayed)


def _retry_or_fail(
    e: BaseException, retries: int, t0: float, ends: float | None, timeout: float | None
) -> float | Called:
    """After the agent raised `e`: the seconds to back off before retrying (a rate limit, retries left, time
    left), else the failed run, saying why (and after how many retries)."""
    wait = backoff(retries, e) if is_rate_limit(e) and retries < RETRIES else None
    if wait is not None and (ends is None or time.perf_counter() + wait < ends):
        return wait
    why = _failure(e, timeout)
    if is_rate_limit(e) and retries:
        why += f" (after {retries} rate-limit retr{'y' if retries == 1 else 'ies'})"
    return Called(error=why, agent_s=time.perf_counter() - t0, retries=retries, calls=retries + 1)


async def _awaited(pending: Any) -> Any:
    return await pending


def _read(
    result: Any, agent: Agent, case: Case, attempt: int, run_id: str | None, agent_s: float, retries: int
) -> Called:
    """What the agent returned as a Called: a validated trace carrying a latency (the measured one when it
    gave none), or the error saying why it is not one."""
    t1 = time.perf_counter()
    calls = retries + 1
    try:
        trace, data = to_trace(result, case, attempt, run_id)
        if trace.latency_ms is None:
            # A budget never passes on a figure nobody measured: the call's wall time is the run's latency.
            data["latency_ms"] = round(agent_s * 1000, 3)
            trace = parse_trace(data)
        text = None
        if not agent.uses_kit_agent:
            text = _json_text(data)
    except MalformedTrace as e:
        return Called(error=f"the agent {e}", agent_s=agent_s, retries=retries, calls=calls)
    except BaseException as e:  # reading a hostile result (a property that raises, exits, ...)
        why = f"the agent returned a result that could not be read: {_cause(e)}"
        return Called(error=why, agent_s=agent_s, retries=retries, calls=calls, kit_s=time.perf_counter() - t1)
    called = Called(
        data=data,
        agent_s=agent_s,
        kit_s=time.perf_counter() - t1,
        retries=retries,
        calls=calls,
        json=text,
        trace=trace,
    )
    # A miss its replayed MCP server told is the attempt's error, whatever the agent's own code made of it.
    return with_mcp_report(called, case.id)


def _json_text(data: dict[str, Any]) -> str:
    """The trace as the store will keep it; MalformedTrace for what JSON cannot hold (a cycle, nesting
    deeper than the interpreter can follow)."""
    try:
        return json.dumps(data, default=str)
    except ValueError as e:  # "Circular reference detected"
        raise MalformedTrace(f"returned a trace that is not JSON: {e}") from None
    except RecursionError:
        raise MalformedTrace("returned a trace nested too deeply to store") from None


# --- the oracle's side --------------------------------------------------------------------------------


def judge(called: Called, case: Case, attempt: int, *, run_id: str | None = None) -> Invocation:
    """The oracle's verdict on one call (in whichever process judges): an error or skipped run as the call
    says, else every check of the case on the trace. The run's metrics carry its calls, retries and times."""
    t0 = time.perf_counter()
    data = called.data
    if called.error is not None or called.skipped is not None:
        if called.skipped is not None:
            cr = CaseRun(case.id, attempt, (), run_id=run_id, skipped=called.skipped)
        else:
            cr = error_run(case.id, attempt, called.error or "", run_id=run_id)
        data = None
    else:
        trace = called.trace
        try:
            if data is None:
                data = json.loads(called.json or "null")
            if trace is None:
                trace = parse_trace(data)
        except Exception as e:  # whatever the agent's side sent, it is this run's error, not the runner's
            msg = e.message if isinstance(e, KitInputError) else f"{type(e).__name__}: {e}"
            cr = error_run(case.id, attempt, f"the agent returned a malformed trace: {msg}", run_id=run_id)
            data = None
        else:
            cr = evaluate(trace, case, run_id=run_id)
    kit_s = called.kit_s + time.perf_counter() - t0
    # The CaseRun was made just above with a dict of its own, seen by no one yet: filled in place, which
    # costs a fifth of copying the frozen run on the reference agent's hot path.
    cr.metrics.update(agent_calls=called.calls, retries=called.retries, agent_s=called.agent_s, kit_s=kit_s)
    if called.replayed:  # answered from recordings: nothing was spent; what the calls cost when recorded is kept
        priced = any(isinstance(s, dict) and s.get("cost_usd") is not None for s in (data or {}).get("spans") or ())
        spent = {
            "recorded_tokens": cr.metrics.get("tokens"),
            "recorded_cost_usd": cr.metrics.get("cost_usd") if priced else None,  # never a 0 nobody measured
        }
        cr.metrics.update(replayed_calls=called.replayed, cost_usd=0.0, **spent)
    return Invocation(cr, data, agent_s=called.agent_s, kit_s=kit_s, retries=called.retries)


def invoke(agent: Agent, case: Case, attempt: int, *, timeout: float | None, run_id: str | None = None) -> Invocation:
    """Run the agent once on the case and evaluate the trace. Never raises for the agent's faults (an
    `async def` agent is awaited here, on a loop of its own)."""
    return judge(call(agent, case, attempt, timeout=timeout, run_id=run_id), case, attempt, run_id=run_id)
