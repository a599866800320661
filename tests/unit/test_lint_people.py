"""`kit lint` for people: tools.json in OpenAI's format, and every message naming the file it used."""

from __future__ import annotations

import json

import pytest

from kit.cli import main
from kit.toolspec import tool_schemas

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OPENAI = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "finish"}},  # no parameters: any object
]
CASES = """
- id: weather
  input: "Weather in Paris?"
  checks:
    - {type: called, tool: get_weather}
    - {type: not_called, tool: get_forecast}
    - {type: tool_schemas, schemas: tools.json}
"""


def test_openai_anthropic_and_kit_formats_give_the_same_mapping():
    kit = {"get_weather": WEATHER, "finish": {"type": "object"}}
    assert tool_schemas(OPENAI) == kit
    assert tool_schemas({"tools": OPENAI}) == kit  # a request body
    assert tool_schemas([{"type": "function", "name": "get_weather", "parameters": WEATHER}]) == {
        "get_weather": WEATHER
    }
    assert tool_schemas([{"name": "get_weather", "input_schema": WEATHER}]) == {"get_weather": WEATHER}
    assert tool_schemas(kit) == kit


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([{"type": "function", "function": {"parameters": {}}}], "tool #1: no name"),
        ([{"type": "web_search"}], "tool #1: type 'web_search' is not a function tool"),
        ([OPENAI[0], OPENAI[0]], "tool 'get_weather' is listed twice"),
        ("get_weather", "got str"),
    ],
)
def test_a_malformed_tool_list_says_which_entry(bad, message):
    with pytest.raises(ValueError, match=message):
        tool_schemas(bad)


def test_lint_accepts_an_openai_tool_list_and_still_finds_unknown_tools(tmp_path, capsys):
    (tmp_path / "tools.json").write_text(json.dumps(OPENAI))
    (tmp_path / "cases.yaml").write_text(CASES)
    assert main(["lint", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    tools = tmp_path / "tools.json"
    assert captured.err.splitlines() == [
        f"kit lint: {tmp_path / 'cases.yaml'}: case 'weather': check #2 (not_called): "
        f"tool 'get_forecast' is not in {tools}"
    ]
    # The closing line names every file that was used, so a tools.json found further up is no surprise.
    assert f"kit lint: {tmp_path}: 1 cases, 3 checks; invariants: none found; tools: {tools} (2 tools)" in captured.out


def test_the_tool_schemas_check_reads_an_openai_tool_list(tmp_path):
    from kit.case import load_suite
    from kit.evaluate import evaluate
    from kit.trace import parse_trace

    (tmp_path / "tools.json").write_text(json.dumps(OPENAI))
    (tmp_path / "cases.yaml").write_text(CASES.replace("    - {type: not_called, tool: get_forecast}\n", ""))
    [case] = load_suite(tmp_path).cases
    trace = {
        "case_id": "weather",
        "input": "Weather in Paris?",
        "final_output": "sunny",
        "spans": [{"kind": "tool", "name": "get_weather", "input": {"town": "Paris"}}],
    }
    run = evaluate(parse_trace(trace), case)
    [verdict] = [r for r in run.results if r.name.startswith("tool_schemas")]
    assert not verdict.passed and "get_weather (call 1) arguments" in verdict.reason


def test_an_unreadable_tools_file_is_named(tmp_path, capsys):
    (tmp_path / "tools.json").write_text('[{"type": "function", "function": {}}]')
    (tmp_path / "cases.yaml").write_text("- {id: a, input: hi, checks: [{type: finished}]}\n")
    assert main(["lint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"kit lint: {tmp_path / 'tools.json'}: not a tool list: tool #1: no name" in err
