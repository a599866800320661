"""What `kit lint` knows about the agents and MCP servers a case names: those the tools file declares (a
tool's `x-kit-agents` list and `x-kit-server`) and those the traces given with `--traces` have."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kit.case import Case, CheckSpec
from kit.errors import KitInputError


def declared_by_tools(schemas: Mapping[str, Any] | None) -> tuple[set[str], set[str]]:
    """(agents, servers) a tools file declares: per tool, `x-kit-agents` (the agents that have it) and
    `x-kit-server` (the MCP server that serves it)."""
    agents: set[str] = set()
    servers: set[str] = set()
    for schema in (schemas or {}).values():
        if not isinstance(schema, dict):
            continue
        owners = schema.get("x-kit-agents")
        if isinstance(owners, list):
            agents.update(a for a in owners if isinstance(a, str))
        server = schema.get("x-kit-server")
        if isinstance(server, str):
            servers.add(server)
    return agents, servers


def declared_by_traces(paths: Iterable[str | Path]) -> tuple[set[str], set[str], list[KitInputError]]:
    """(agents, servers, problems) of the traces in the given files."""
    from kit.trace import iter_traces

    agents: set[str] = set()
    servers: set[str] = set()
    problems: list[KitInputError] = []
    for path in paths:
        for item in iter_traces(path):
            if isinstance(item, KitInputError):
                problems.append(item)
                continue
            agents.update(item.agent_names)
            servers.update(item.server_names)
    return agents, servers, problems


def _named(spec: CheckSpec) -> tuple[list[str], list[str]]:
    agents = [spec.agent] if spec.agent else []
    if spec.type == "handoff":
        agents += [v for v in (spec.params.get("from"), spec.params.get("to")) if v]
    # An allowed_servers list is not named here: a server it allows and no run uses fails nothing.
    servers = [spec.server] if spec.server else []
    return agents, servers


def scope_warnings(cases: list[Case], agents: set[str], servers: set[str]) -> list[str]:
    """A warning per agent or server a case names that nothing declares (when anything declares one: with
    no declaration there is nothing to hold the names against, and a note says so)."""
    out: list[str] = []
    undeclared: set[str] = set()
    for case in cases:
        for spec in case.checks:
            named_agents, named_servers = _named(spec)
            for kind, names, known in (("agent", named_agents, agents), ("MCP server", named_servers, servers)):
                for name in names:
                    if not known:
                        undeclared.add(f"{kind} {name!r}")
                        continue
                    if name not in known:
                        shown = ", ".join(sorted(known))
                        out.append(
                            str(
                                KitInputError(
                                    f"{kind} {name!r} is in no trace or tools file (declared: {shown}); "
                                    "a run without it fails the check",
                                    file=case.file,
                                    case=case.id,
                                    check=spec.label,
                                )
                            )
                        )
    if undeclared:
        out.append(
            f"{', '.join(sorted(undeclared))} named by the cases, but no tools file (x-kit-agents, x-kit-server) "
            "or trace (--traces FILE) declares agents or servers to hold them against"
        )
    return out


def scope_report(
    cases: list[Case], tools_path: Path | None, traces: Iterable[str | Path] | None
) -> tuple[list[str], list[KitInputError]]:
    """(warnings, problems) about the agents and servers the cases name, held against the tools file and
    the traces given."""
    import json

    from kit.toolspec import tool_schemas

    schemas: Mapping[str, Any] | None = None
    if tools_path is not None:
        try:
            schemas = tool_schemas(json.loads(tools_path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            schemas = None  # read_tools reports a tools file it cannot read
    agents, servers = declared_by_tools(schemas)
    seen_agents, seen_servers, problems = declared_by_traces(traces or ())
    return scope_warnings(cases, agents | seen_agents, servers | seen_servers), problems
