"""tau-bench 2 (`tau2`) simulation results -> traces, one per simulation (task and trial).

A results file is `{"info", "tasks", "simulations": [...]}`; a simulation is `{id, task_id, trial,
termination_reason, reward_info: {reward, ...}, agent_cost, user_cost, messages: [...]}` (a file may also
hold one simulation, or a list of them). Its messages: `assistant` and `user` (both may carry
`tool_calls`: `{id, name, arguments (an object), requestor}`), `tool` (`{id, content, requestor, error}`,
answering a call by id, or the earliest open call of its requestor when ids are empty) and `system`.

The agent's calls become tool spans (through the OpenAI importer, so turns and requested-versus-executed
hold as there); a call the user makes on their own device (telecom) is not the agent's: it becomes part of
the user's message, `[user tool call] name(arguments) -> result`, so the tool-call checks never count it.
The case id is `task-<task_id>`, the attempt the trial; the reward and the termination reason are kept.
"""

from __future__ import annotations

import json
from typing import Any

from kit.errors import KitInputError

FINISH = {"agent_stop": "finish", "user_stop": "finish", "max_steps": "step_cap"}


def is_simulation(d: Any) -> bool:
    return (
        isinstance(d, dict)
        and isinstance(d.get("messages"), list)
        and "task_id" in d
        and ("termination_reason" in d or "reward_info" in d)
    )


def is_tau2(data: Any) -> bool:
    if isinstance(data, dict) and isinstance(data.get("simulations"), list):
        return all(is_simulation(s) for s in data["simulations"])
    if isinstance(data, list) and data:
        return all(is_simulation(s) for s in data)
    return is_simulation(data)


def simulations(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("simulations"), list):
        return list(data["simulations"])
    return list(data) if isinstance(data, list) else [data]


def conversation(sim: dict[str, Any], file: str | None) -> dict[str, Any]:
    """One simulation as a conversation object of the OpenAI importer (`kit.importers.openai_chat`)."""
    messages = _messages(sim["messages"], file)
    conv: dict[str, Any] = {"case_id": f"task-{sim['task_id']}", "messages": messages}
    if isinstance(sim.get("trial"), int):
        conv["attempt"] = sim["trial"]
    reason = sim.get("termination_reason")
    if reason is not None:
        conv["finish_reason"] = FINISH.get(str(reason), "error")
    if isinstance(sim.get("duration"), int | float):
        conv["latency_ms"] = round(float(sim["duration"]) * 1000, 3)
    return conv


def extras(sim: dict[str, Any]) -> dict[str, Any]:
    """What the trace keeps of the simulation beyond its messages."""
    reward = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
    out = {
        "tau2_simulation_id": sim.get("id"),
        "termination_reason": sim.get("termination_reason"),
        "reward": reward.get("reward"),
        "agent_cost": sim.get("agent_cost"),
        "user_cost": sim.get("user_cost"),
    }
    return {k: v for k, v in out.items() if v is not None}


def costs(sim: dict[str, Any]) -> list[float | None]:
    """The cost of each assistant message (each is one model call), in order."""
    out = []
    for m in sim["messages"]:
        if isinstance(m, dict) and m.get("role") == "assistant":
            c = m.get("cost")
            out.append(float(c) if isinstance(c, int | float) and not isinstance(c, bool) else None)
    return out


def _messages(raw: list[Any], file: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []  # {id, name, arguments, requestor}, in the order asked
    user_calls: dict[str, dict[str, Any]] = {}  # the user's calls by their (made-up) id, awaiting results
    for i, m in enumerate(_flat(raw)):
        if not isinstance(m, dict):
            raise KitInputError(f"message {i}: expected an object, got {type(m).__name__}", file=file)
        role = m.get("role")
        if role in ("system", "assistant", "user"):
            calls = []
            for j, tc in enumerate(m.get("tool_calls") or []):
                if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
                    raise KitInputError(f"message {i}: tool call {j} has no name", file=file)
                call = {
                    "id": tc.get("id") or f"tau2-{i}-{j}",
                    "name": tc["name"],
                    "arguments": tc.get("arguments") if tc.get("arguments") is not None else {},
                    "requestor": tc.get("requestor") or role,
                }
                open_calls.append(call)
                calls.append(call)
            if role == "user":
                for call in calls:
                    user_calls[call["id"]] = call
                if m.get("content") or not calls:
                    out.append({"role": "user", "content": m.get("content")})
                continue
            msg: dict[str, Any] = {"role": role, "content": m.get("content")}
            mine = [c for c in calls if c["requestor"] != "user"]
            if role == "assistant" and mine:
                msg["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in mine
                ]
            if role == "assistant" and isinstance(m.get("usage"), dict):
                msg["usage"] = m["usage"]
            out.append(msg)
        elif role == "tool":
            call = _answered(open_calls, m)
            if call is None:
                raise KitInputError(f"message {i}: tool result {m.get('id')!r} answers no open call", file=file)
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content, default=str)
            if call["id"] in user_calls:
                args = json.dumps(call["arguments"], default=str)
                out.append({"role": "user", "content": f"[user tool call] {call['name']}({args}) -> {text}"})
                continue
            out.append(
                {"role": "tool", "tool_call_id": call["id"], "content": text, "tau2_error": m.get("error") is True}
            )
        else:
            raise KitInputError(
                f"message {i}: unknown role {role!r} (expected system, assistant, user or tool)", file=file
            )
    return out


def _flat(raw: list[Any]) -> list[Any]:
    """Messages, with a `MultiToolMessage` (`{role: tool, tool_messages: [...]}`) as its tool messages."""
    out: list[Any] = []
    for m in raw:
        if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_messages"), list):
            out += m["tool_messages"]
        else:
            out.append(m)
    return out


def _answered(open_calls: list[dict[str, Any]], m: dict[str, Any]) -> dict[str, Any] | None:
    """The open call a tool message answers (by id; with no id, the earliest of its requestor), taken off."""
    rid, requestor = m.get("id"), m.get("requestor") or "assistant"
    n = next((n for n, c in enumerate(open_calls) if rid and c["id"] == rid), None)
    if n is None and not rid:
        n = next((n for n, c in enumerate(open_calls) if c["requestor"] == requestor), None)
    return open_calls.pop(n) if n is not None else None


def from_tau2(data: Any, *, file: str | None = None) -> list[dict[str, Any]]:
    """Traces from decoded tau2 results (see the module's docstring)."""
    from kit.importers.openai_chat import conversation as to_trace

    traces = []
    sims = simulations(data)
    info = data.get("info") if isinstance(data, dict) else None
    agent = info.get("agent_info") if isinstance(info, dict) else None
    model = agent.get("llm") if isinstance(agent, dict) and isinstance(agent.get("llm"), str) else None
    for n, sim in enumerate(sims):
        where = f"{file}[{n}]" if file and len(sims) > 1 else file
        conv = conversation(sim, where)
        failed = {m["tool_call_id"] for m in conv["messages"] if m.get("tau2_error")}
        trace = to_trace(conv, case_id=conv["case_id"], file=where)
        trace["source_format"] = "tau2"
        trace.update(extras(sim))
        llm = [s for s in trace["spans"] if s["kind"] == "llm"]
        if model is not None:  # the results' agent model (its messages do not name it)
            trace["model"] = trace["model"] or model
            for span in llm:
                span["name"] = span["name"] or model
        for span, cost in zip(llm, costs(sim), strict=False):
            if cost is not None:
                span["cost_usd"] = cost
        for span in trace["spans"]:
            if span["kind"] == "tool" and span.get("tool_call_id") in failed and span.get("error") is None:
                out = span.get("output")
                span["error"] = out if isinstance(out, str) else json.dumps(out, default=str)  # tau2 said so
        traces.append(trace)
    return traces
