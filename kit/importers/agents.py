"""Which agent made each span of an OpenTelemetry export, and the handoffs between agents.

An agent is named by, on a span or its nearest ancestor that names one:
- the GenAI conventions: `gen_ai.agent.name` (an `invoke_agent` span's, or any span's), with `gen_ai.agent.id`;
- OpenInference: `agent.name` on an AGENT span (the OpenAI Agents SDK's instrumentation; `graph.node.parent_id`
  names the agent that handed off to it);
- OpenLLMetry: `traceloop.entity.name` on a span whose `traceloop.span.kind` is `agent`;
- LangGraph (through OpenInference's LangChain instrumentation): the subgraph a node runs in, from its task path
  `metadata.langgraph_checkpoint_ns` (`billing:<id>|agent:<id>`), as `create_react_agent(name=...)` agents run
  as subgraphs; the nodes of a single graph are no agents, but a single `create_react_agent(name="triage")`
  is the agent triage when its graph's root span and its AI messages' `name` both say so (`named_graph`).

An agent whose spans sit inside another agent's (called as a tool, or delegated to from a tool) was called by it;
a change of agent between siblings is a handoff. A trace whose parent links form a cycle, or whose agent
attributes disagree (two names for one span or one agent id), is a KitInputError naming the spans.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kit.errors import KitInputError
from kit.importers.otlp import OtelSpan


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def _langgraph_agent(attrs: dict[str, Any]) -> str | None:
    """The LangGraph subgraph a span runs in, from OpenInference's `metadata` (JSON text): its task path
    `langgraph_checkpoint_ns` is `<subgraph>:<id>|...|<node>:<id>`, and the innermost subgraph around the node
    is the agent. A node of the top graph (one part: a single `create_react_agent`'s `agent` and `tools`) is no
    agent of its own."""
    raw = attrs.get("metadata")
    if not isinstance(raw, str) or "langgraph_checkpoint_ns" not in raw:
        return None
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError:
        return None
    ns = meta.get("langgraph_checkpoint_ns") if isinstance(meta, dict) else None
    if not isinstance(ns, str):
        return None
    parts = ns.split("|")
    return _str(parts[-2].split(":")[0]) if len(parts) > 1 else None


def own_agent(span: OtelSpan) -> str | None:
    """The agent a span names itself, or None; a KitInputError when its attributes name two."""
    a = span.attrs
    named = {
        "gen_ai.agent.name": _str(a.get("gen_ai.agent.name")),
        "agent.name": _str(a.get("agent.name")),
        "traceloop.entity.name": _str(a.get("traceloop.entity.name"))
        if str(a.get("traceloop.span.kind") or "").lower() == "agent"
        else None,
    }
    found = {k: v for k, v in named.items() if v is not None}
    if len(set(found.values())) > 1:
        shown = ", ".join(f"{k} {v!r}" for k, v in found.items())
        raise KitInputError(f"span {span.name!r} ({span.span_id}): its agent attributes disagree: {shown}")
    if found:
        return next(iter(found.values()))
    return _langgraph_agent(a)


_MESSAGE_NAME = re.compile(r"llm\.(?:input|output)_messages\.(\d+)\.message\.name")


def named_graph(spans: list[OtelSpan]) -> str | None:
    """The name of a single LangGraph agent: its graph's root span (a CHAIN with no parent, named by the graph;
    an unnamed graph's is `LangGraph`) when every AI message that names an agent names that one."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if (not s.parent_id or s.parent_id not in ids)]
    kinds = {str(s.attrs.get("openinference.span.kind") or "").upper() for s in roots}
    if len(roots) != 1 or kinds != {"CHAIN"}:
        return None
    graph = _str(roots[0].name)
    said: set[str] = set()
    for s in spans:
        for key, value in s.attrs.items():
            m = _MESSAGE_NAME.fullmatch(key)
            role = s.attrs.get(key[: -len("name")] + "role") if m else None
            if m and role == "assistant" and _str(value):
                said.add(value)
    return graph if graph and said == {graph} else None


def handoff_marker(span: OtelSpan) -> tuple[str, str] | None:
    """(from, to) of a span that records a handoff and is no tool call: OpenInference's `handoff to X` TOOL
    span of the OpenAI Agents SDK (input the agent handing off, output the one handed to)."""
    a = span.attrs
    if str(a.get("openinference.span.kind") or "").upper() != "TOOL" or "tool.name" in a:
        return None
    src, dst = _str(a.get("input.value")), _str(a.get("output.value"))
    if src and dst and span.name == f"handoff to {dst}":
        return src, dst
    return None


class SpanAgents:
    """The agent of every span (its own, else its nearest ancestor's) and each agent's caller."""

    def __init__(self, spans: list[OtelSpan]) -> None:
        self.by_id = {s.span_id: s for s in spans}
        self._own = {s.span_id: own_agent(s) for s in spans}
        self.ids: dict[str, str] = {}  # agent name -> its id, where a span gives one
        self._check_ids(spans)
        self.of: dict[str, str | None] = {}
        for s in spans:
            self.of[s.span_id] = self._resolve(s)
        # Each agent's caller: the agent of the nearest ancestor outside it, at its first span.
        self.caller: dict[str, str | None] = {}
        for s in spans:
            name = self.of[s.span_id]
            if name is None or name in self.caller:
                continue
            self.caller[name] = self._outside(s, name)

    def _check_ids(self, spans: list[OtelSpan]) -> None:
        names: dict[str, tuple[str, OtelSpan]] = {}
        for s in spans:
            agent_id = _str(s.attrs.get("gen_ai.agent.id"))
            name = self._own[s.span_id]
            if agent_id is None or name is None:
                continue
            seen = names.setdefault(agent_id, (name, s))
            self.ids.setdefault(name, agent_id)
            if seen[0] != name:
                raise KitInputError(
                    f"agent id {agent_id!r} is named {seen[0]!r} on span {seen[1].name!r} ({seen[1].span_id}) and "
                    f"{name!r} on span {s.name!r} ({s.span_id}): its agent attributes disagree"
                )

    def _ancestors(self, span: OtelSpan) -> list[OtelSpan]:
        """The span's ancestors, nearest first; a KitInputError when the parent links form a cycle."""
        out: list[OtelSpan] = []
        seen = {span.span_id}
        parent = span.parent_id
        while parent and parent in self.by_id:
            if parent in seen:
                cycle = [span.span_id, *(p.span_id for p in out), parent]
                raise KitInputError(f"the spans' parent links form a cycle: {' -> '.join(cycle)}")
            seen.add(parent)
            node = self.by_id[parent]
            out.append(node)
            parent = node.parent_id
        return out

    def _resolve(self, span: OtelSpan) -> str | None:
        own = self._own[span.span_id]
        if own is not None:
            return own
        for a in self._ancestors(span):
            if self._own[a.span_id] is not None:
                return self._own[a.span_id]
        return None

    def _outside(self, span: OtelSpan, name: str) -> str | None:
        for a in self._ancestors(span):
            other = self.of.get(a.span_id)
            if other is not None and other != name:
                return other
        return None

    def within(self, inner: str, outer: str) -> bool:
        """Whether agent `inner` was called from inside agent `outer` (at any depth)."""
        seen: set[str] = set()
        name: str | None = inner
        while name is not None and name not in seen:
            seen.add(name)
            name = self.caller.get(name)
            if name == outer:
                return True
        return False


def tree(out: list[dict[str, Any]], events: list[dict[str, Any]], agents: SpanAgents) -> list[dict[str, Any]]:
    """The agent tree as the trace reads it from its spans and handoffs, with each agent's id where a span
    gives one (`gen_ai.agent.id`); [] when no agent has an id (the trace then reads the tree itself)."""
    if not agents.ids:
        return []
    from kit.trace import parse_trace

    steps = [{"kind": s["kind"], "agent": s.get("agent")} for s in out]
    read = parse_trace({"case_id": "tree", "spans": steps, "handoffs": events}).agent_tree
    return [
        {**a.model_dump(exclude_none=True), **({"id": agents.ids[a.name]} if a.name in agents.ids else {})}
        for a in read
    ]


def handoffs(out: list[dict[str, Any]], agents: SpanAgents) -> list[dict[str, Any]]:
    """The handoff events of a run, from the agent of each of its spans in order: a change to an agent called
    from inside the one before is `via: tool`; a change back to a caller is its return, no event; any other
    change is a handoff."""
    events: list[dict[str, Any]] = []
    current: str | None = None
    for i, span in enumerate(out):
        who = span.get("agent")
        if who is None:
            continue
        if current is not None and who != current:
            if agents.within(who, current):
                events.append({"from": current, "to": who, "via": "tool", "at": i})
            elif not agents.within(current, who):
                events.append({"from": current, "to": who, "via": "handoff", "at": i})
        current = who
    return events
