"""The trace (contract in docs/CONTRACT.md): what one run of an agent did. Pydantic at the edge, derived
data computed once per trace and shared by every check."""

from __future__ import annotations

import codecs
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal, Required

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ModelWrapValidatorHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from typing_extensions import TypedDict

from kit.errors import KitInputError, error_line


class cached(functools.cached_property):  # a decorator, named like functools' own
    """functools.cached_property without its per-instance lock (taken on every first read in Python
    3.11): a trace's derived data is computed on one thread, and computing it twice would be harmless."""

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.attrname] = self.func(obj)
        return value


class _SpanModel(BaseModel):
    """The rules for one span, with their error messages: what `Span` validates through when the fast path
    (`_FastSpan`, the same types checked in Rust) refuses a span, so that values are normalised and errors
    worded in one place."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    kind: str
    name: str | None = None
    role: str | None = None
    content: Any = None
    input: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    error: Any = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_ms: float | None = None
    turn: int | None = Field(default=None, ge=0)
    agent: str | None = None
    server: str | None = None

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        if v not in ("llm", "tool", "message"):
            raise ValueError(f"kind must be llm, tool or message, got {v!r}")
        return v

    @field_validator("input", mode="before")
    @classmethod
    def _parse_json_arguments(cls, v: Any) -> Any:
        # OpenAI logs tool arguments as a JSON string; reading it as {} would hide every argument.
        if v is None:
            return {}
        if isinstance(v, str):
            if not v.strip():
                return {}
            try:
                v = json.loads(v)
            except json.JSONDecodeError as e:
                raise ValueError(f"tool input is a string that is not JSON ({e.msg})") from None
            if not isinstance(v, dict):
                raise ValueError(f"tool input must be a JSON object, got {type(v).__name__}")
        return v

    @field_validator("tokens_in", "tokens_out", mode="before")
    @classmethod
    def _none_is_zero(cls, v: Any) -> Any:
        return 0 if v is None else v

    @field_validator("cost_usd", mode="before")
    @classmethod
    def _none_cost_is_zero(cls, v: Any) -> Any:
        return 0.0 if v is None else v


SPAN_FIELDS = tuple(_SpanModel.model_fields)  # (available without building the schema)
_FIELD_SET = frozenset(SPAN_FIELDS)


class _FastSpan(TypedDict, total=False):
    """A span that needs no normalising, checked entirely in Rust: the same field types as `_SpanModel`
    without its Python validators. A span this refuses goes through `_SpanModel`."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    kind: Required[Literal["llm", "tool", "message"]]
    name: str | None
    role: str | None
    content: Any
    input: dict[str, Any]
    output: Any
    error: Any
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_ms: float | None
    turn: Annotated[int, Field(ge=0)] | None
    agent: str | None
    server: str | None


# Fields left out of a span's dump while unset: a trace of one agent and no MCP server dumps as before.
_UNSET_DROPPED = frozenset(("turn", "agent", "server"))


class Span:
    """One step: an `llm` call, a `tool` call or a `message`. Unknown extra fields are kept (and readable as
    attributes). A plain object over its validated fields: a trace of 50 spans is read several times faster
    than as 50 pydantic models. `Span(**fields)` and `Span.model_validate(data)` validate as before."""

    __slots__ = ("__dict__",)

    kind: str
    # Defaults of absent fields (class attributes; `input` is always set on the instance).
    name: str | None = None
    role: str | None = None
    content: Any = None
    input: dict[str, Any]
    output: Any = None
    error: Any = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_ms: float | None = None
    # The conversation turn (0-based) of a multi-turn trace; left out of dumps when unset.
    turn: int | None = None
    # The agent that made this call or message (None: a trace of one agent), and the MCP server a tool call
    # went to; both left out of dumps when unset.
    agent: str | None = None
    server: str | None = None

    def __init__(self, **data: Any) -> None:
        self.__dict__ = _from_model(_SpanModel.model_validate(data)).__dict__

    @classmethod
    def model_validate(cls, data: Any) -> Span:
        if isinstance(data, Span):
            return data
        return _from_model(_SpanModel.model_validate(data))

    @property
    def model_extra(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in _FIELD_SET}

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """Every field (defaults included; `turn`, `agent` and `server` only when set), then the extra ones."""
        d = self.__dict__
        out = {
            f: d.get(f, getattr(Span, f, None)) for f in SPAN_FIELDS if f not in _UNSET_DROPPED or d.get(f) is not None
        }
        out.update((k, v) for k, v in d.items() if k not in _FIELD_SET)
        return _any_adapter().dump_python(out, mode="json") if mode == "json" else out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Span(" + ", ".join(f"{k}={v!r}" for k, v in self.model_dump().items()) + ")"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        # Inside a Trace: validated by `_SpanModel` (its errors keep their place, e.g. spans.0.kind),
        # dumped as a plain object.
        return core_schema.no_info_before_validator_function(
            _span_input,
            core_schema.no_info_after_validator_function(_from_model, handler(_SpanModel)),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda s, info: s.model_dump(mode=info.mode), info_arg=True
            ),
        )


def _span_input(v: Any) -> Any:
    return v.model_dump() if isinstance(v, Span) else v


def _from_model(m: _SpanModel) -> Span:
    s = Span.__new__(Span)
    d = dict(m.__dict__)
    d.update(m.__pydantic_extra__ or {})
    s.__dict__ = d
    return s


def _fast_spans(raw: Any) -> list[Span] | None:
    """The spans of a trace when every one passes `_FastSpan`, else None (the caller validates in full)."""
    try:
        checked = _fast_adapter().validate_python(raw)
    except ValidationError:
        return None
    out = []
    new = Span.__new__
    for d in checked:
        if "input" not in d:
            d["input"] = {}
        s = new(Span)
        s.__dict__ = d
        out.append(s)
    return out


# How `_decoded_spans` checks each field of a span that JSON decoding gave: the exact Python type of a value
# of that field that needs no change (JSON decodes to nothing else), as `_FastSpan` declares it. The other
# fields (kind, content, output, error and extra ones) take any value; kind is checked on its own. A `turn`
# passes as is when null; an int turn is checked to be >= 0.
_DECODED_RULES: dict[str, type] = {
    "name": str,
    "role": str,
    "agent": str,
    "server": str,
    "tokens_in": int,
    "tokens_out": int,
    "cost_usd": float,
    "latency_ms": float,
    "turn": type(None),
    "input": dict,
}
_NULLABLE = frozenset(("name", "role", "agent", "server", "latency_ms", "turn"))  # null is a value of these
_KINDS = frozenset(("llm", "tool", "message"))
_EXACT = 1 << 53  # an int up to this size is the float of the same value, so float(v) is what pydantic gives


def _decoded_spans(raw: list[Any]) -> list[Span] | None:
    """The spans of a trace that JSON decoding just gave (dicts with text keys and JSON values, held by no
    one else) when every span passes `_FastSpan` needing no change but an integer in a float field made a
    float, else None (the caller validates them another way). Checked in Python, without pydantic's copies:
    each span's dict becomes the Span's own. A change made before a later span is refused (that float,
    `input` set to {} when absent) is what any validation makes of that span, so the other ways decide and
    word errors as they would on the data as given."""
    out = []
    rule_of = _DECODED_RULES.get
    new = Span.__new__
    for s in raw:
        if type(s) is not dict:
            return None
        kind = s.get("kind")
        if type(kind) is not str or kind not in _KINDS:
            return None
        for k, v in s.items():
            want = rule_of(k)
            if want is None:
                continue
            t = type(v)
            if t is want:  # most values: one lookup and one comparison
                continue
            if t is int:
                if want is float and -_EXACT <= v <= _EXACT:
                    s[k] = float(v)
                    continue
                if k == "turn" and v >= 0:
                    continue
                return None
            if v is None and k in _NULLABLE:
                continue
            return None
        if "input" not in s:
            s["input"] = {}
        span = new(Span)
        span.__dict__ = s
        out.append(span)
    return out


# Passed as the validation context of a trace that JSON decoding just gave (see `parse_trace`'s `decoded`).
_DECODED = {"decoded": True}


_FAST: TypeAdapter[list[_FastSpan]] | None = None
_ANY: TypeAdapter[Any] | None = None


def _fast_adapter() -> TypeAdapter[list[_FastSpan]]:
    global _FAST
    if _FAST is None:
        _FAST = TypeAdapter(list[_FastSpan])
    return _FAST


def _any_adapter() -> TypeAdapter[Any]:
    """Values as a pydantic model writes its `Any` fields in JSON mode (the Span model did)."""
    global _ANY
    if _ANY is None:
        _ANY = TypeAdapter(Any)
    return _ANY


Via = Literal["handoff", "tool", "delegate"]


class Agent(BaseModel):
    """One agent of the trace's agent tree: `parent` is the agent that first handed off to it or called it
    (None: a root, the agent the run started with), `via` how (`handoff`: control passed to it; `tool`: the
    parent called it as a tool and got its answer back; `delegate`: the parent ran it from inside a tool of
    its own, as pydantic-ai delegates), `at` when (the number of spans before it was first entered)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    name: str = Field(min_length=1)
    id: str | None = None
    parent: str | None = None
    via: Via | None = None
    at: int | None = Field(default=None, ge=0)


class Handoff(BaseModel):
    """One agent handing off to (or calling) another: an event of the run, placed by `at`, the number of
    spans before it (it happened after `spans[at - 1]` and before `spans[at]`)."""

    model_config = ConfigDict(
        extra="allow", frozen=True, defer_build=True, populate_by_name=True, serialize_by_alias=True
    )

    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)
    via: Via = "handoff"
    at: int = Field(ge=0)
    turn: int | None = Field(default=None, ge=0)


def _empty(v: Any) -> bool:
    return not v


class Trace(BaseModel):
    """One run of an agent. `final_output` that is not a string is kept as compact JSON text."""

    # Schemas are built on first use, not on import (`import kit` stays fast for tools that never read one).
    model_config = ConfigDict(extra="allow", ignored_types=(cached,), defer_build=True)

    case_id: str
    run_id: str | None = None
    attempt: int = 0
    model: str | None = None
    final_output: str | None = None
    finish_reason: str | None = None
    latency_ms: float | None = None
    spans: list[Span] = Field(default_factory=list)
    end_state: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    # The agent tree and the handoffs between agents, for a run of several agents; a run of one agent has
    # neither (and dumps as before).
    agents: list[Agent] = Field(default_factory=list, exclude_if=_empty)
    handoffs: list[Handoff] = Field(default_factory=list, exclude_if=_empty)

    @cached
    def derived(self) -> dict[str, Any]:
        """Per-trace caches of checks (e.g. the end-state database), never serialised. Made on first use,
        not with every trace (a private attribute costs each trace pydantic's private-state setup)."""
        return {}

    @model_validator(mode="wrap")
    @classmethod
    def _spans_fast(cls, data: Any, handler: ModelWrapValidatorHandler[Trace], info: ValidationInfo) -> Trace:
        """Spans that need no normalising become Spans without a model each: checked in Python when JSON
        decoding just gave them (`_decoded_spans`), else in Rust (`_fast_spans`); any other trace, or any
        error, goes the full way (so values and error messages are the same)."""
        if isinstance(data, dict) and isinstance(data.get("spans"), list):
            spans = _decoded_spans(data["spans"]) if info.context is _DECODED else None
            if spans is None:
                spans = _fast_spans(data["spans"])
            if spans is not None:
                try:
                    trace = handler({**data, "spans": []})
                except ValidationError:
                    return _agents_checked(handler(data))
                trace.__dict__["spans"] = spans
                return _agents_checked(trace)
        return _agents_checked(handler(data))

    @field_validator("final_output", mode="before")
    @classmethod
    def _output_as_text(cls, v: Any) -> Any:
        return _as_text(v)

    @cached
    def turns(self) -> tuple[int, ...]:
        """The turns its spans carry, in order; () for a trace without turns (one turn: the whole trace)."""
        return tuple(sorted({s.turn for s in self.spans if s.turn is not None}))

    def for_turn(self, turn: int | Literal["last"]) -> Trace:
        """This trace cut to the spans of one turn (`last`: the highest turn present). Its `final_output` is
        the last assistant message of that turn; the other fields are the whole trace's. A trace without
        turns is one turn: turn 0 and `last` are the trace itself. A turn it does not have has no spans."""
        if not self.turns:
            if turn in (0, "last"):
                return self
            return self._view([], ())
        n = self.turns[-1] if turn == "last" else turn
        keep = [i for i, s in enumerate(self.spans) if s.turn == n]
        inside = range(keep[0], keep[-1] + 2) if keep else range(0)
        handoffs = [h for h in self.handoffs if (h.turn == n if h.turn is not None else h.at in inside)]
        return self._view(keep, handoffs)

    def for_agent(self, agent: str) -> Trace:
        """This trace cut to one agent's calls and messages, and the handoffs it made or received. Its
        `final_output` is that agent's last assistant message; its `latency_ms` the sum over its spans (the
        whole run's wall time is not this agent's)."""
        keep = [i for i, s in enumerate(self.spans) if s.agent == agent]
        handoffs = [h for h in self.handoffs if agent in (h.from_, h.to)]
        return self._view(keep, handoffs, latency_ms=None)

    def for_server(self, server: str) -> Trace:
        """This trace cut to the tool calls that went to one MCP server (no messages, no handoffs)."""
        keep = [i for i, s in enumerate(self.spans) if s.server == server]
        return self._view(keep, (), latency_ms=None)

    def _view(self, keep: list[int], handoffs: Any, **fields: Any) -> Trace:
        """The trace with only the spans at `keep` (indexes in order) and the given handoffs, each handoff's
        `at` counted among the kept spans; `final_output` the last assistant message kept."""
        spans = [self.spans[i] for i in keep]
        said = [s.content for s in spans if s.kind == "message" and s.role == "assistant"]
        moved = []
        for h in handoffs:
            at = sum(1 for i in keep if i < h.at)
            moved.append(h if at == h.at else h.model_copy(update={"at": at}))
        data = {name: getattr(self, name) for name in type(self).model_fields}
        data.update(self.model_extra or {})
        data.update(spans=spans, handoffs=moved, final_output=_as_text(said[-1]) if said else None, **fields)
        return type(self).model_construct(_fields_set=set(self.model_fields_set), **data)

    @cached
    def agent_tree(self) -> tuple[Agent, ...]:
        """Every agent of the run, each with the agent that first handed off to it or called it: the
        trace's `agents` when it gives them, else read from its spans and handoffs in order (an agent first
        seen as the target of a handoff has that handoff's `from` as parent). () for a run of one agent
        that names none."""
        if self.agents:
            return tuple(self.agents)
        if not self.handoffs and not any(s.agent for s in self.spans):
            return ()
        found: dict[str, Agent] = {}

        def see(name: str, at: int, parent: str | None = None, via: Via | None = None) -> None:
            if name not in found:
                found[name] = Agent(name=name, parent=parent, via=via, at=at)

        events = iter(self.handoffs)
        h = next(events, None)
        for i, s in enumerate([*self.spans, None]):
            while h is not None and h.at <= i:
                see(h.from_, h.at)
                see(h.to, h.at, h.from_, h.via)
                h = next(events, None)
            if s is not None and s.agent:
                see(s.agent, i)
        return tuple(found.values())

    @cached
    def agent_names(self) -> tuple[str, ...]:
        """The agents of the run, in the order they were first entered."""
        return tuple(a.name for a in self.agent_tree)

    @cached
    def server_names(self) -> tuple[str, ...]:
        """The MCP servers the run's tool calls went to, in order of first use."""
        return tuple(dict.fromkeys(s.server for s in self.spans if s.server))

    # Derived data, computed once and shared by all checks of this trace.
    @cached
    def tool_calls(self) -> tuple[Span, ...]:
        """The tool calls that ran: every `tool` span but those marked `"executed": false` (a call the model
        asked for that never ran, e.g. held back by a confirmation guard)."""
        # Comprehensions, not one loop appending to two lists: a third of the time, and a trace seldom
        # holds a call back.
        tools = [s for s in self.spans if s.kind == "tool"]
        held = [s for s in tools if s.__dict__.get("executed") is False]
        self.__dict__["held_calls"] = tuple(held)  # found together (`kit check` reads both of every trace)
        return tuple([s for s in tools if s.__dict__.get("executed") is not False] if held else tools)

    @cached
    def requested_calls(self) -> tuple[Span, ...]:
        """Every tool call the model asked for, run or not, in order (what `calls: requested` counts)."""
        return tuple([s for s in self.spans if s.kind == "tool"])

    @cached
    def held_calls(self) -> tuple[Span, ...]:
        """The calls the model asked for that never ran."""
        if "tool_calls" not in self.__dict__:
            self.tool_calls  # noqa: B018 - finds both in one pass
            return self.__dict__["held_calls"]
        return tuple([s for s in self.spans if s.kind == "tool" and s.__dict__.get("executed") is False])

    @cached
    def tool_names(self) -> tuple[str, ...]:
        return tuple([s.name or "" for s in self.tool_calls])

    @cached
    def llm_spans(self) -> tuple[Span, ...]:
        return tuple([s for s in self.spans if s.kind == "llm"])

    @cached
    def output(self) -> str:
        return self.final_output or ""

    @cached
    def tools_text(self) -> str:
        """Every tool call's name, arguments and result as JSON lines: what `regex` with target tools reads."""
        return "\n".join(
            json.dumps({"tool": s.name, "input": s.input, "output": s.output}, default=str) for s in self.tool_calls
        )

    @cached
    def totals(self) -> dict[str, float]:
        """Budget figures: steps (llm spans), tool calls, tokens, cost and latency."""
        tokens = 0
        cost = 0.0
        span_latency = 0.0
        for s in self.spans:
            tokens += s.tokens_in + s.tokens_out
            cost += s.cost_usd
            latency = s.latency_ms
            if latency is not None:
                span_latency += latency
        return {
            "steps": len(self.llm_spans),
            "tool_calls": len(self.tool_calls),
            "tokens": tokens,
            "cost_usd": cost,
            "latency_ms": self.latency_ms if self.latency_ms is not None else span_latency,
        }


def _agents_checked(trace: Trace) -> Trace:
    """The trace, once its agent tree and handoffs hold together: agents named once, parents that are
    agents of the tree and never a cycle, handoffs in order inside the trace, and (when the trace lists its
    agents) every agent a span or a handoff names in the list."""
    if not trace.agents and not trace.handoffs:
        return trace  # a run of one agent: nothing to hold together
    names: dict[str, Agent] = {}
    for i, a in enumerate(trace.agents):
        if a.name in names:
            raise _tree_error(f"agents.{i}: agent {a.name!r} is listed twice")
        names[a.name] = a
    known = f" (known: {', '.join(names)})"
    for i, a in enumerate(trace.agents):
        if a.parent is not None and a.parent not in names:
            raise _tree_error(f"agents.{i}: parent {a.parent!r} of {a.name!r} is not an agent of the trace{known}")
    cycle = _parent_cycle(names)
    if cycle:
        raise _tree_error(f"agents: the parent links form a cycle: {' -> '.join(cycle)}")
    n, last = len(trace.spans), 0
    for i, h in enumerate(trace.handoffs):
        if h.at > n:
            raise _tree_error(f"handoffs.{i}: at {h.at} is past the end of the trace ({n} spans)")
        if h.at < last:
            raise _tree_error(f"handoffs.{i}: at {h.at} comes before the handoff listed before it (at {last})")
        last = h.at
        if h.from_ == h.to:
            raise _tree_error(f"handoffs.{i}: agent {h.to!r} hands off to itself")
        for who in (h.from_, h.to):
            if names and who not in names:
                raise _tree_error(f"handoffs.{i}: agent {who!r} is not an agent of the trace{known}")
    if names:
        for i, s in enumerate(trace.spans):
            if s.agent is not None and s.agent not in names:
                raise _tree_error(f"spans.{i}: agent {s.agent!r} is not an agent of the trace{known}")
    return trace


def _tree_error(why: str) -> PydanticCustomError:
    # The validator's own words, without pydantic's "Value error, " in front.
    return PydanticCustomError("agent_tree", "{why}", {"why": why})


def _parent_cycle(agents: dict[str, Agent]) -> list[str]:
    """A cycle of parent links as the names along it (first name repeated at the end), else []."""
    done: set[str] = set()
    for start in agents:
        path: list[str] = []
        on_path: set[str] = set()
        name: str | None = start
        while name is not None and name not in done:
            if name in on_path:
                return [*path[path.index(name) :], name]
            path.append(name)
            on_path.add(name)
            name = agents[name].parent
        done.update(path)
    return []


def _as_text(v: Any) -> str | None:
    """An output that is not a string, as compact JSON text."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"), default=str)


def parse_trace(data: Any, *, file: str | None = None, decoded: bool = False) -> Trace:
    """A Trace from a decoded JSON object, or a KitInputError naming the file, the case and the field.
    `decoded`: the object is what a JSON decoder just returned, held by nothing else, so its span dicts may
    become the trace's own (read faster; the same trace, or the same error)."""
    case = data.get("case_id") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        raise KitInputError(f"a trace must be a JSON object, got {type(data).__name__}", file=file)
    try:
        return Trace.model_validate(data, context=_DECODED if decoded else None)
    except ValidationError as e:
        raise KitInputError(f"invalid trace: {error_line(e, limit=3, root='(root)')}", file=file, case=case) from None
    except RecursionError:
        raise KitInputError("invalid trace: nested too deeply", file=file, case=case) from None


def read_text(path: Path, what: str) -> str:
    """A file's text, or a KitInputError naming the file: unreadable, or not UTF-8 (with the byte's offset)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise KitInputError(f"cannot read {what}: {e.strerror}", file=str(path)) from None
    return _decode(data, path)


def _decode(data: bytes, path: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise KitInputError(f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start}", file=str(path)) from None


def _json(text: str) -> Any:
    """json.loads, with nesting too deep for the parser as a ValueError rather than a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def read_traces(path: str | Path) -> tuple[list[Trace], list[KitInputError]]:
    """Traces from a file: one JSON object, a JSON list of them, or JSON Lines (one per line). A bad trace
    in a list or a bad line is an error of its own; the good traces around it are still returned."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        return [], [KitInputError(f"cannot read trace file: {e.strerror}", file=str(p))]
    return _traces_in(raw, str(p))


def _traces_in(raw: bytes, p: str) -> tuple[list[Trace], list[KitInputError]]:
    """The traces of a file's bytes, as `read_traces` reads them; `p` is the file's name as errors show it
    (`str(Path(path))`)."""
    try:
        # Fast path: orjson reads well-formed JSON several times faster. Whatever it refuses (JSON Lines,
        # NaN, integers beyond 64 bits, bad bytes, deep nesting) takes the path below, which decides and
        # words errors exactly as before.
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if not isinstance(data, list):
            return _parse_each([(data, p)])
        return _parse_each([(item, f"{p}[{i}]") for i, item in enumerate(data)])
    try:
        text = _decode(raw, p)
    except KitInputError as e:
        return [], [e]
    stripped = text.lstrip()
    try:
        data = _json(text)
    except json.JSONDecodeError as e:
        if stripped.startswith("{") and "\n" in stripped.strip():
            return _read_jsonl(text, p)
        return [], [KitInputError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", file=p)]
    except ValueError as e:
        return [], [KitInputError(str(e), file=p)]
    if not isinstance(data, list):
        return _parse_each([(data, p)])
    return _parse_each([(item, f"{p}[{i}]") for i, item in enumerate(data)])


def _parse_each(items: list[tuple[Any, str]]) -> tuple[list[Trace], list[KitInputError]]:
    traces: list[Trace] = []
    errors: list[KitInputError] = []
    for data, where in items:
        try:
            traces.append(parse_trace(data, file=where, decoded=True))
        except KitInputError as e:
            errors.append(e)
    return traces, errors


def _read_jsonl(text: str, file: str) -> tuple[list[Trace], list[KitInputError]]:
    items: list[tuple[Any, str]] = []
    errors: list[KitInputError] = []
    # Lines end at "\n" only: str.splitlines would also cut at U+2028, U+0085 and others, which JSON
    # strings may hold unescaped.
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            items.append((_json(line), f"{file}:{n}"))
        except json.JSONDecodeError as e:
            errors.append(KitInputError(f"malformed JSON on line {n}: {e.msg}", file=file))
        except ValueError as e:
            errors.append(KitInputError(f"line {n}: {e}", file=file))
    traces, bad = _parse_each(items)
    return traces, errors + bad


# Files up to this size are read whole (one orjson call, the fastest way); larger ones are read one trace at
# a time, so that memory does not grow with the file.
STREAM_BYTES = 4 << 20
_CHUNK = 1 << 20


def iter_traces(path: str | Path) -> Iterator[Trace | KitInputError]:
    """The traces of a file (as `read_traces` reads them), each as soon as it is read, with an error in
    the place of each bad one. JSON Lines and a JSON list larger than `STREAM_BYTES` are read a trace at
    a time; anything else, or a file that is neither, is read whole."""
    raw = _small_file(path)
    if raw is not None:
        traces, errors = _traces_in(raw, _shown(path))
        yield from errors
        yield from traces
        return
    p = Path(path)
    streamed = json_items(p)
    if streamed is None:
        traces, errors = read_traces(p)
        yield from errors
        yield from traces
        return
    for item in streamed:
        if isinstance(item, KitInputError):
            yield item
            continue
        where, data = item
        try:
            yield parse_trace(data, file=where, decoded=True)
        except KitInputError as e:
            yield e


def _shown(path: str | Path) -> str:
    """`str(Path(path))`, the name errors give a file, without making a Path (a few µs a file) when the
    name is already what Path would show: a POSIX path without empty or `.` parts and no trailing slash."""
    if (
        type(path) is str
        and os.sep == "/"
        and path
        and "//" not in path
        and "/./" not in path
        and not path.startswith("./")
        and not path.endswith(("/", "/."))
    ):
        return path
    return str(Path(path))


def _small_file(path: str | Path) -> bytes | None:
    """The bytes of a file of at most `STREAM_BYTES`, read with one open, fstat and read (what `kit check`
    pays per file: a third of `Path.stat` and `Path.read_bytes`); None when it is larger or cannot be read
    (the caller then reads it the other way, which words the error)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > STREAM_BYTES:
            return None
        first = os.read(fd, size + 1)
        if len(first) == size:  # the whole file as fstat measured it (asked one byte more): no read to see the end
            return first
        parts = [first] if first else []
        while chunk := os.read(fd, _CHUNK):
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)


def json_items(path: Path, *, size: int | None = None) -> Iterator[tuple[str, Any] | KitInputError] | None:
    """The items of a JSON Lines file or of a JSON list, one at a time, as (where, decoded value), with an
    error in the place of each bad one; None when the file is neither, is unreadable, or is not larger
    than `size` bytes (default `STREAM_BYTES`): the caller then reads it whole."""
    try:
        if path.stat().st_size <= (STREAM_BYTES if size is None else size):
            return None
        with path.open("rb") as f:
            head = f.read(_CHUNK).lstrip()
    except OSError:
        return None
    if head[:1] == b"[":
        return _stream_list(path)
    if head[:1] == b"{" and _one_line_value(head):
        return _stream_lines(path)
    return None


def _one_line_value(head: bytes) -> bool:
    """Whether the first line of the file is a JSON value of its own (JSON Lines, not a pretty-printed object)."""
    line = head.split(b"\n", 1)[0]
    if len(line) == len(head):
        return False  # a first line longer than the chunk: read whole
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _stream_lines(path: Path) -> Iterator[tuple[str, Any] | KitInputError]:
    """JSON Lines, one value per line; the errors are worded as `_read_jsonl` words them."""
    file = str(path)
    offset = 0
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):  # a binary file splits at b"\n" only
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    where = f"byte 0x{raw[e.start]:02x} at offset {start + e.start}"
                    yield KitInputError(f"not UTF-8 text: {where}", file=file)
                    continue
                try:
                    data = _json(line)
                except json.JSONDecodeError as e:
                    yield KitInputError(f"malformed JSON on line {n}: {e.msg}", file=file)
                    continue
                except ValueError as e:
                    yield KitInputError(f"line {n}: {e}", file=file)
                    continue
            yield f"{file}:{n}", data


def _stream_list(path: Path) -> Iterator[tuple[str, Any] | KitInputError]:
    """A JSON list, one item at a time: each item is decoded from a window of the file that grows only
    while the item is longer than the window."""
    file = str(path)
    with path.open("rb") as f:
        try:
            for i, data in enumerate(_list_values(f, file)):
                yield f"{file}[{i}]", data
        except KitInputError as e:
            yield e


def _list_values(f: BinaryIO, file: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    reader = codecs.getincrementaldecoder("utf-8")()
    buf, pos, eof, done = "", 0, False, 0

    def more() -> None:
        nonlocal buf, pos, eof, done
        chunk = f.read(_CHUNK)
        eof = not chunk
        try:
            text = reader.decode(chunk, final=eof)
        except UnicodeDecodeError as e:
            where = f"byte 0x{chunk[e.start]:02x} at offset {done + e.start}"
            raise KitInputError(f"not UTF-8 text: {where}", file=file) from None
        done += len(chunk)
        buf, pos = buf[pos:] + text, 0

    def skip(chars: str) -> str:
        """The next character that is not white space or one of `chars` (reading on as needed), or ""."""
        nonlocal pos
        while True:
            while pos < len(buf) and (buf[pos].isspace() or buf[pos] in chars):
                pos += 1
            if pos < len(buf):
                return buf[pos]
            if eof:
                return ""
            more()

    if skip("") != "[":
        raise KitInputError("malformed JSON: expected a list", file=file)
    pos += 1
    i = 0
    while True:
        c = skip(",")
        if c == "]":
            return
        if c == "":
            raise KitInputError("malformed JSON: the list is not closed", file=file)
        while True:
            try:
                data, end = decoder.raw_decode(buf, pos)
                break
            except json.JSONDecodeError as e:
                if eof:  # the whole rest of the file is in the window and still does not decode
                    raise KitInputError(f"malformed JSON in item {i}: {e.msg}", file=file) from None
                more()  # the item may run on past the window
            except RecursionError:
                raise KitInputError(f"item {i}: JSON nested too deeply", file=file) from None
        pos = end
        yield data
        i += 1


def load_traces(path: str | Path) -> list[Trace]:
    """Every trace of a file (see read_traces), or the file's first error."""
    traces, errors = read_traces(path)
    if errors:
        raise errors[0]
    return traces


def load_trace(path: str | Path) -> Trace:
    traces = load_traces(path)
    if len(traces) != 1:
        raise KitInputError(f"expected one trace, found {len(traces)}", file=str(path))
    return traces[0]
