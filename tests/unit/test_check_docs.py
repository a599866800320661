"""The check catalogue in docs/CONTRACT.md and every check's docstring name exactly the parameters the
registered check function takes (its signature is the parameter schema), with each one's default and
allowed values; the table lists every registered check type and no other."""

from __future__ import annotations

import inspect
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from kit.checks import REGISTRY
from kit.checks.registry import param_name

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "CONTRACT.md"
TYPES = sorted(REGISTRY)


def _signature(type_: str) -> dict[str, inspect.Parameter]:
    """The check's parameters, in order, under their names in a case (`from` for `from_`): every keyword
    argument after the trace."""
    return {param_name(n): p for n, p in list(inspect.signature(REGISTRY[type_].plain).parameters.items())[1:]}


def catalogue_rows(text: str) -> dict[str, tuple[str, str]]:
    """type -> (parameters cell, passes-when cell) of the table under "## Check catalogue"."""
    section = text.split("\n## Check catalogue", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    assert len(lines) > 2, "the check catalogue has no table"
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[2:]:  # after the header and the |---| line
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        assert len(cells) == 3, f"catalogue row is not `| type | parameters | passes when |`: {line}"
        m = re.fullmatch(r"`(\w+)`", cells[0])
        assert m, f"catalogue row's type is not one backticked name: {line}"
        assert m.group(1) not in rows, f"check type {m.group(1)} has two catalogue rows"
        assert cells[2], f"catalogue row {m.group(1)} does not say when it passes"
        rows[m.group(1)] = (cells[1], cells[2])
    return rows


def cell_params(cell: str) -> list[str]:
    """The parameters a table cell names: its backticked names outside parentheses (what a parenthesis
    holds is about the parameter before it: values, defaults, examples). `empty: true` names `empty`."""
    previous = None
    while previous != cell:  # innermost parentheses first, so nested ones go too
        previous, cell = cell, re.sub(r"\([^()]*\)", "", cell)
    names = [span.split(":")[0].strip() for span in re.findall(r"`([^`]+)`", cell)]
    return list(dict.fromkeys(names))


def args_section(doc: str) -> dict[str, str]:
    """name -> text of each entry of a Google-style `Args:` section (continuation lines joined)."""
    lines = doc.splitlines()
    heads = [i for i, line in enumerate(lines) if line.strip() == "Args:"]
    if not heads:
        return {}
    assert len(heads) == 1, "two Args: sections"
    base = len(lines[heads[0]]) - len(lines[heads[0]].lstrip())
    entries: dict[str, str] = {}
    entry_indent: int | None = None
    name = ""
    for line in lines[heads[0] + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= base:
            break  # the next section
        if entry_indent is None:
            entry_indent = indent
        if indent == entry_indent:
            m = re.match(r"(\w+)(?: \([^)]*\))?: (.+)", line.strip())
            assert m, f"Args entry is not `name: text`: {line.strip()!r}"
            name = m.group(1)
            assert name not in entries, f"{name} documented twice"
            entries[name] = m.group(2)
        else:
            entries[name] += " " + line.strip()
    return entries


def _doc(type_: str) -> str:
    doc = inspect.getdoc(REGISTRY[type_].plain)
    assert doc, f"check {type_} ({REGISTRY[type_].plain.__qualname__}) has no docstring"
    return doc


def _literals(hint: Any) -> list[Any]:
    """Every Literal value inside a type hint (through unions, lists and Annotated)."""
    if typing.get_origin(hint) is typing.Literal:
        return list(typing.get_args(hint))
    return [v for arg in typing.get_args(hint) for v in _literals(arg)]


def _hints(type_: str) -> dict[str, Any]:
    """Each parameter's type as the registry's pydantic model holds it."""
    fields = REGISTRY[type_].params.model_fields
    return {f.alias or name: f.annotation for name, f in fields.items()}


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # True is not 1


def _read_value(text: str) -> Any:
    """A value as a case's YAML (or JSON) would give it."""
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text)


def test_table_and_registry_hold_the_same_check_types() -> None:
    rows = catalogue_rows(CONTRACT.read_text(encoding="utf-8"))
    assert sorted(set(REGISTRY) - set(rows)) == [], "registered checks missing from the catalogue table"
    assert sorted(set(rows) - set(REGISTRY)) == [], "catalogue rows with no registered check"


@pytest.mark.parametrize("type_", TYPES)
def test_table_row_names_exactly_the_parameters_taken(type_: str) -> None:
    cell, _ = catalogue_rows(CONTRACT.read_text(encoding="utf-8"))[type_]
    taken = set(_signature(type_))
    named = set(cell_params(cell))
    assert sorted(taken - named) == [], f"{type_}: parameters taken but missing from its catalogue row"
    assert sorted(named - taken) == [], f"{type_}: catalogue row names parameters the check does not take"


@pytest.mark.parametrize("type_", TYPES)
def test_docstring_summary_says_what_passes(type_: str) -> None:
    lines = _doc(type_).splitlines()
    assert lines[0].startswith("Passes when "), f"{type_}: summary line {lines[0]!r}"
    assert len(lines) == 1 or not lines[1].strip(), f"{type_}: the summary is more than one line"


@pytest.mark.parametrize("type_", TYPES)
def test_docstring_args_name_exactly_the_parameters_in_order(type_: str) -> None:
    assert list(args_section(_doc(type_))) == list(_signature(type_))


@pytest.mark.parametrize("type_", [t for t in TYPES if _signature(t)])
def test_docstring_args_give_each_default_and_allowed_values(type_: str) -> None:
    entries = args_section(_doc(type_))
    hints = _hints(type_)
    for name, p in _signature(type_).items():
        entry = entries[name]
        if p.default is inspect.Parameter.empty:
            assert "Required" in entry, f"{type_}.{name} is required and its entry does not say so: {entry}"
        elif p.default is None or type(p.default).__module__ != "builtins":  # None or a sentinel: unset
            assert "Optional" in entry, f"{type_}.{name} is optional and its entry does not say so: {entry}"
        else:
            m = re.search(r"Default `([^`]*)`", entry)
            assert m, f"{type_}.{name}: no Default `...` in {entry!r}"
            assert _same(_read_value(m.group(1)), p.default), f"{type_}.{name}: default is {p.default!r}"
        for value in _literals(hints[name]):
            assert f"`{value}`" in entry, f"{type_}.{name}: allowed value {value!r} not in {entry!r}"


def test_the_readers_find_what_is_missing_and_what_is_extra() -> None:
    """The comparisons above can fail: the readers see a parameter the docs lack and one they add."""
    doc = """Passes when it does.

    Args:
        tool: The tool's name,
            over two lines. Required.
        extra: Not a parameter. Default `1`.

    Returns:
        A verdict.
    """
    entries = args_section(inspect.cleandoc(doc))
    assert entries == {"tool": "The tool's name, over two lines. Required.", "extra": "Not a parameter. Default `1`."}
    assert list(entries) != list(_signature("called"))  # lacks min and calls, adds extra
    cell = "`tool`, `key` (dotted, e.g. `a.b`), `mode` (`exact` default; `partial`: keys (`x`) ignored), `empty: true`"
    assert cell_params(cell) == ["tool", "key", "mode", "empty"]
    table = "\n## Check catalogue\n\n| type | parameters | passes when |\n|---|---|---|\n| `called` | `tool` | ok |\n"
    assert catalogue_rows(table) == {"called": ("`tool`", "ok")}
