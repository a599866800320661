"""Agents the runner can drive: the kit's reference agent, or a user's callable (`module:callable`).

A user's callable takes the case input (and, if it accepts a second argument or a `case` keyword, the
Case) and returns a trace dict in the contract format, a `kit.trace.Trace`, or an OpenAI message list
(imported as a trace). Whatever it returns is checked here: a malformed result is the run's error.

A callable with a parameter named `history` is multi-turn: for a case with `turns` (or a simulated
`user`) it is called once per turn, `fn(turn_text, history=messages)` (plus `case=` when it has a `case`
parameter), and returns that turn's OpenAI messages or trace dict (kit.runner.conversation joins them).
A single-turn case is a one-turn conversation for it: `fn(input, history=[])`.

State per conversation: a callable that also takes `conversation_id` gets one id per conversation (the
same on each of its turns, another for the next run), to key its own state on; a class (`module:Class`)
is a factory: a fresh instance, made with no arguments, for every conversation and every single-turn run,
whose `close()`, if it has one, is called when that run ends. Every front end loads the agent here, so
DeepEval, Promptfoo and the kit's runner all give each conversation its own.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.case import Case
from kit.errors import KitInputError
from kit.frozen import thaw
from kit.names import file_in
from kit.offline import agent_environment
from kit.pricing import priced
from kit.runner.conversation import AgentConversation
from kit.runner.frameworks import with_end_state_read
from kit.settings import Settings
from kit.trace import Trace, parse_trace

AgentFn = Callable[[Case, int], Any]  # (case, attempt) -> whatever the agent returns
ConverseFn = Callable[[Case, int], AgentConversation]  # (case, attempt) -> a fresh conversation


class MalformedTrace(Exception):
    """The agent returned something that is not a trace; the message says what and why."""


@dataclass(frozen=True)
class Agent:
    """`call` runs a single-turn case; `converse`, when the agent can hold a conversation, starts one for a
    multi-turn case (None: the agent takes no history, and a multi-turn case is an error run)."""

    name: str
    call: AgentFn
    uses_kit_agent: bool = False
    converse: ConverseFn | None = None
    is_async: bool = False  # an `async def` callable: `call` returns a coroutine (run on an event loop)
    variant: str | None = None  # the reference agent's fault variant, if any
    options: tuple[tuple[str, Any], ...] = ()  # the reference agent's: what `reference_agent` was given

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by name: another process (a spawned host) imports the agent anew, never its code."""
        if self.uses_kit_agent:
            return (_reference_again, (self.options,))
        return (load_agent, (self.name,))


def _reference_again(options: tuple[tuple[str, Any], ...]) -> Agent:
    return reference_agent(**dict(options))


class _CallableConversation:
    """A user's `fn(text, history=...)` as one conversation: `case=` when it takes a `case`, and
    `conversation_id=` (the same on every turn of this conversation, new for the next) when it takes one.
    `owner`: the object made for this conversation alone (a class agent's instance), closed at its end."""

    def __init__(
        self, fn: Callable[..., Any], case: Case | None, conversation_id: str | None, owner: Any = None
    ) -> None:
        self.fn, self.owner = fn, owner
        self.kwargs: dict[str, Any] = {}
        if case is not None:
            self.kwargs["case"] = case
        if conversation_id is not None:
            self.kwargs["conversation_id"] = conversation_id

    def turn(self, text: str, history: list[dict[str, Any]]) -> Any:
        return resolve_awaitable(self.fn(text, history=history, **self.kwargs))

    def close(self) -> None:
        close = getattr(self.owner, "close", None)
        if callable(close):
            resolve_awaitable(close())


def reference_agent(
    *,
    variant: str | None = None,
    policy: str = "deterministic",
    replay: str | Path | None = None,
    record: str | Path | None = None,
) -> Agent:
    """The kit's reference agent on a fresh agent and sandbox per call (kit.agent.run_agent).

    `replay`: a folder of cassettes (`<case_id>.json`): tools (and the model) answer from the recording.
    `record`: a folder to record attempt 0 of each case into. A case's own `cassette:` field (a path
    relative to its file) wins over the folder.
    """
    from kit.agent import run_agent

    folder = Path(replay or record) if (replay or record) else None

    def options(case: Case, attempt: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "case_id": case.id,
            "attempt": attempt,
            "context": dict(case.context),
            "variant": variant or case.variant,
            "policy": policy,
        }
        own = case.extra.get("cassette")
        if own is not None and case.file:
            tape: Path | None = Path(case.file).parent / str(own)
        else:
            tape = file_in(folder, case.id, ".json") if folder is not None else None
        if tape is not None and (replay or attempt == 0):
            # Recording every attempt into one file would race; the first attempt is the recording.
            kwargs["cassette"], kwargs["record"] = str(tape), record is not None
        return kwargs

    def call(case: Case, attempt: int) -> Any:
        return run_agent(case.input, **options(case, attempt))

    def converse(case: Case, attempt: int) -> AgentConversation:
        from kit.agent.conversation import Conversation

        kwargs = options(case, attempt)
        return Conversation(**kwargs)

    mode = "+replay" if replay else ("+record" if record else "")
    label = f"reference:{policy}{mode}" + (f"+{variant}" if variant else "")
    given = (("variant", variant), ("policy", policy), ("replay", replay), ("record", record))
    return Agent(label, call, uses_kit_agent=True, converse=converse, variant=variant, options=given)


def configured_agent(
    settings: Settings,
    *,
    variant: str | None = None,
    policy: str | None = None,
    replay: str | Path | None = None,
    record: str | Path | None = None,
) -> Agent:
    """The agent every front end runs (through kit.plan): the user's callable when the settings name one,
    else the reference agent (a `variant` given here, e.g. a red-team control target's, wins over the
    settings'). Variant, policy and cassettes drive the reference agent: given with a user's agent, they
    are an error, never silently dropped; the settings' own variant and policy apply to the reference
    agent only."""
    if settings.agent:
        if variant or policy not in (None, "deterministic") or replay or record:
            raise KitInputError(
                "--variant, --policy, --replay and --record drive the reference agent; not with --agent"
            )
        return load_agent(settings.agent, settings.project_file.parent.resolve() if settings.project_file else None)
    variant = variant or settings.variant
    if variant:
        from kit.agent.run import VARIANTS

        if variant not in VARIANTS:
            raise KitInputError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    if replay and not Path(replay).is_dir():
        raise KitInputError("no such cassette folder", file=str(replay))
    return reference_agent(variant=variant, policy=policy or settings.agent_policy, replay=replay, record=record)


def load_agent(spec: str, root: Path | None = None) -> Agent:
    """`module:callable` (the current folder is importable) as an Agent, or KitInputError. `root`: the
    project's folder (a plan's), whose own modules then import without PYTHONPATH, wherever a tool starts."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise KitInputError(f"--agent must be module:callable, got {spec!r}")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    agent_environment()  # a client the module makes at import reads its proxies then
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # an import error in the user's module is bad input, said in one line
        raise KitInputError(f"--agent {spec}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise KitInputError(f"--agent {spec}: {module_name} has no attribute {attr!r}")
    if not callable(fn):
        raise KitInputError(f"--agent {spec}: {attr} is not callable")
    if inspect.isclass(fn):
        return _class_agent(spec, fn)
    if _has_param(fn, "history"):
        return _history_agent(spec, fn, lambda: (fn, None))
    wants_case = _wants_case(fn)

    def call(case: Case, attempt: int) -> Any:
        mine = agent_case(case)
        return fn(mine.input, mine) if wants_case else fn(mine.input)

    return Agent(spec, call, is_async=is_async_callable(fn))


def _class_agent(spec: str, cls: type) -> Agent:
    """A class of agents: a fresh instance for every conversation (and every single-turn run), made with no
    arguments, so an agent keeps its state (its database, its client) in itself and never shares it with
    another run; its `close()`, if any, is called when the conversation ends."""
    method = next((k.__dict__["__call__"] for k in cls.__mro__ if "__call__" in k.__dict__ and k is not object), None)
    if method is None:
        raise KitInputError(f"--agent {spec}: the class {cls.__name__} has no __call__ method to run a case")

    def fresh() -> tuple[Callable[..., Any], Any]:
        try:
            instance = cls()
        except TypeError as e:
            raise KitInputError(f"--agent {spec}: {cls.__name__}() must take no arguments: {e}") from None
        return instance, instance

    if _has_param(method, "history"):
        return _history_agent(spec, method, fresh)
    wants_case = _wants_case(method, bound=False)

    is_async = inspect.iscoroutinefunction(method)

    def call(case: Case, attempt: int) -> Any:
        mine = agent_case(case)
        instance, _ = fresh()
        result = instance(mine.input, mine) if wants_case else instance(mine.input)
        if is_async:
            return result  # awaited by the runner; an async agent closes what it opened itself
        result = with_end_state_read(result)  # before close(), which may close the database it handed
        close = getattr(instance, "close", None)
        if callable(close):
            close()
        return result

    return Agent(spec, call, is_async=is_async)


def is_async_callable(fn: Any) -> bool:
    """An `async def` function, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def resolve_awaitable(value: Any) -> Any:
    """`value`, or what it gives when awaited: an `async def` agent called from synchronous code runs on an
    event loop of its own (in a helper thread when this thread already runs a loop, e.g. inside a host's
    async test runner)."""
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = asyncio.run(wait())
        except BaseException as e:  # handed to the caller, which decides what it means
            box["error"] = e

    helper = threading.Thread(target=run, name="kit-agent-loop", daemon=True)
    helper.start()
    helper.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


def agent_case(case: Case) -> Case:
    """The case as a user's agent gets it: its own plain, mutable copy of the input, context and extra fields,
    so what one call changes neither reaches the next call nor the oracle, which keeps its frozen case."""
    mine = copy.copy(case)
    for name in ("input", "context", "extra"):
        object.__setattr__(mine, name, thaw(getattr(case, name)))
    return mine


def _has_param(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _history_agent(spec: str, probe: Callable[..., Any], fresh: Callable[[], tuple[Callable[..., Any], Any]]) -> Agent:
    """A multi-turn callable (`probe`'s parameters say what it takes): one call per turn with the conversation
    so far. `fresh()` gives the callable for one conversation (a new instance of a class agent; the same
    function otherwise) and what to close at its end."""
    wants_case = _has_param(probe, "case")
    wants_id = _has_param(probe, "conversation_id")

    def converse(case: Case, attempt: int) -> AgentConversation:
        fn, owner = fresh()
        conversation_id = f"{case.id}#{attempt}:{uuid.uuid4().hex[:12]}" if wants_id else None
        return _CallableConversation(fn, agent_case(case) if wants_case else None, conversation_id, owner)

    def call(case: Case, attempt: int) -> Any:
        # A single-turn case is a conversation of one turn; a message list's last user message is the turn.
        history: list[dict[str, Any]] = []
        text = case.input
        if isinstance(text, list):
            users = [i for i, m in enumerate(text) if isinstance(m, dict) and m.get("role") == "user"]
            last = users[-1] if users else len(text)
            history = [dict(m) for m in text[:last]]
            text = text[last]["content"] if users else ""
        conversation = converse(case, attempt)
        try:
            # Read before the agent's close(), which may close the database it handed as its end state.
            return with_end_state_read(conversation.turn(str(text), history))
        finally:
            conversation.close()

    return Agent(spec, call, converse=converse)


def _wants_case(fn: Callable[..., Any], *, bound: bool = True) -> bool:
    """`fn` takes the case too (`bound=False`: `fn` is a class's method, its first parameter `self`)."""
    try:
        params = list(inspect.signature(fn).parameters.values())[0 if bound else 1 :]
    except (TypeError, ValueError):
        return False
    if any(p.name == "case" for p in params) or any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


def to_trace(result: Any, case: Case, attempt: int, run_id: str | None) -> tuple[Trace, dict[str, Any]]:
    """The agent's return value as a validated Trace for this case and attempt (and the dict it was
    read from, which is what the store keeps), or MalformedTrace."""
    if isinstance(result, Trace):
        data: Any = result.model_dump(mode="json")
    else:  # a trace dict, or what a framework returns (messages, a LangGraph state, a RunResult, ...)
        from kit.runner.frameworks import UnknownResult, trace_dict

        try:
            data = trace_dict(result, case.id)
        except UnknownResult as e:
            raise MalformedTrace(str(e)) from None
    # The runner knows which case and attempt this was; an agent's own ids cannot misfile the run.
    data["case_id"], data["attempt"] = case.id, attempt
    priced(data)  # model calls with tokens and no cost of their own: their model's price, where known
    if run_id is not None:
        data["run_id"] = run_id
    try:
        return parse_trace(data), data
    except KitInputError as e:
        raise MalformedTrace(f"returned a malformed trace: {e.message}") from None
