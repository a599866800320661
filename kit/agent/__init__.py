"""The reference agent: a support desk for an online shop with real tools over a SQLite sandbox.

from kit.agent import run_agent
trace = run_agent("Where is my order ORD-100002?", case_id="c1", context={"customer_id": "C001"})
"""

from __future__ import annotations

from typing import Any


def run_agent(case_input: Any, **kwargs: Any) -> dict[str, Any]:
    from kit.agent.run import run_agent as _run

    return _run(case_input, **kwargs)


__all__ = ["run_agent"]
