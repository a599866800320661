"""The case file's text: YAML a person reads and reviews, each check on one line under the comment that says
where it came from. Built by hand (PyYAML drops comments); every value is dumped by PyYAML's safe dumper, and
the whole is read back by the case loader before it is written."""

from __future__ import annotations

from typing import Any

import yaml

from kit.casegen.propose import Proposal
from kit.names import printable

_WIDTH = 1 << 30  # one line per value: a check's line is the unit of review


def flow(value: Any) -> str:
    """A value as one line of YAML (flow style)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=_WIDTH, allow_unicode=True, sort_keys=False)
    return text.removesuffix("\n...\n").rstrip("\n")


def comment(text: str, indent: str) -> str:
    """`text` as comment lines: its own line breaks kept as lines, no character that could end the comment."""
    lines = [printable(line) for line in str(text).replace("\r", "\n").split("\n")]
    return "".join(f"{indent}# {line}".rstrip() + "\n" for line in lines if line.strip())


def render(
    fields: dict[str, Any],
    checks: list[Proposal],
    *,
    invariants: list[str],
    header: list[str],
    source: str,
    notes: list[str],
) -> str:
    """The case file: the header, then one case (`fields` in order, its invariants and checks)."""
    out = "".join(comment(line, "") for line in header)
    out += f"- id: {flow(fields['id'])}\n"
    for key, value in fields.items():
        if key == "id":
            continue
        if key == "turns":
            out += "  turns:\n" + "".join(f"    - {flow(t)}\n" for t in value)
        else:
            out += f"  {key}: {flow(value)}\n"
    if invariants:
        out += f"  invariants: {flow(invariants)}\n"
    if notes:
        out += comment("\n".join(notes), "  ")
    if checks:
        out += "  checks:\n"
        for p in checks:
            mark = f"PROPOSED from {source}, review: " if p.proposed else ""
            out += comment(mark + p.why, "    ")
            out += f"    - {flow(p.check)}\n"
    return out
