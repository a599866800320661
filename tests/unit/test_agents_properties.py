"""Property tests of the agent tree: any spans and handoffs make a tree with no cycle whose agents' views
split the spans; declared parent links are refused exactly when they form a cycle."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.errors import KitInputError
from kit.trace import parse_trace

NAMES = ["a", "b", "c", "d"]


@st.composite
def runs(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(0, 12))
    spans = [
        {
            "kind": draw(st.sampled_from(["llm", "tool", "message"])),
            "name": "t",
            "role": "assistant",
            "agent": draw(st.sampled_from([*NAMES, None])),
        }
        for _ in range(n)
    ]
    places = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    handoffs = []
    for at in places:
        src, dst = draw(st.sampled_from([(x, y) for x in NAMES for y in NAMES if x != y]))
        handoffs.append({"from": src, "to": dst, "at": at, "via": draw(st.sampled_from(["handoff", "tool"]))})
    return {"case_id": "c", "spans": spans, "handoffs": handoffs}


@settings(max_examples=200, deadline=None)
@given(runs())
def test_the_tree_has_each_agent_once_and_no_cycle(raw: dict[str, Any]) -> None:
    trace = parse_trace(raw)
    tree = trace.agent_tree
    names = [a.name for a in tree]
    assert len(names) == len(set(names))
    seen = {s["agent"] for s in raw["spans"] if s["agent"]} | {h[k] for h in raw["handoffs"] for k in ("from", "to")}
    assert set(names) == seen
    parent = {a.name: a.parent for a in tree}
    for name in names:  # walking up ends at a root
        steps, node = 0, name
        while parent[node] is not None:
            node, steps = parent[node], steps + 1
            assert steps <= len(names)
    # The tree, declared as it was read, is accepted as it is.
    again = parse_trace({**raw, "agents": [a.model_dump() for a in tree]})
    assert again.agent_tree == tree


@settings(max_examples=200, deadline=None)
@given(runs())
def test_agent_views_split_the_spans(raw: dict[str, Any]) -> None:
    trace = parse_trace(raw)
    total = 0
    for name in trace.agent_names:
        view = trace.for_agent(name)
        assert all(s.agent == name for s in view.spans)
        assert all(0 <= h.at <= len(view.spans) and name in (h.from_, h.to) for h in view.handoffs)
        total += len(view.spans)
    assert total == sum(1 for s in raw["spans"] if s["agent"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), st.sampled_from([*NAMES, None]), min_size=1))
def test_declared_parents_are_refused_exactly_when_they_form_a_cycle(parents: dict[str, str | None]) -> None:
    agents = [{"name": n, "parent": p} for n, p in parents.items()]
    unknown = any(p is not None and p not in parents for p in parents.values())

    def cyclic() -> bool:
        for start in parents:
            node, seen = start, set()
            while node is not None and node in parents:
                if node in seen:
                    return True
                seen.add(node)
                node = parents[node]
        return False

    if unknown or cyclic():
        with pytest.raises(KitInputError, match=r"not an agent of the trace|form a cycle"):
            parse_trace({"case_id": "c", "agents": agents})
    else:
        assert [a.name for a in parse_trace({"case_id": "c", "agents": agents}).agent_tree] == list(parents)
