"""tau-bench 2 results import as multi-turn traces, one per simulation and trial: the agent's calls (object
arguments, ids or none), tau2's tool errors, the user's own tool calls kept but not counted as the agent's,
the reward and the costs; `kit check` then judges each trial."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import main
from kit.importers import convert, detect
from kit.trace import parse_trace

RESULTS = Path(__file__).resolve().parents[2] / "tests" / "data" / "import" / "tau2" / "results_airline.json"
CASES = """
id: task-5
user: {instruction: "Move reservation JMO1MG to the next day; say yes when asked."}
checks:
  - {type: not_called, tool: update_reservation_flights, turn: 1}
  - {type: called, tool: update_reservation_flights, turn: 2}
  - {type: called_at_most, tool: update_reservation_flights, n: 1}
  - {type: not_called, tool: check_app_notifications}
"""


def test_each_simulation_is_a_multi_turn_trace_of_its_task_and_trial():
    data = json.loads(RESULTS.read_text())
    assert detect(data) == "tau2"
    traces = [parse_trace(t) for t in convert(data)]
    assert [(t.case_id, t.attempt) for t in traces] == [("task-5", 0), ("task-5", 1)]
    first, second = traces
    extra = first.model_extra or {}
    assert extra["reward"] == 1.0 and extra["termination_reason"] == "user_stop" and first.finish_reason == "finish"
    assert first.model == "gpt-4.1-mini-2025-04-14"
    assert first.turns == (0, 1, 2, 3)  # the agent's greeting, then a turn per user message
    assert [(s.name, s.turn) for s in first.tool_calls] == [
        ("get_user_details", 1),
        ("get_reservation_details", 1),
        ("search_direct_flight", 1),
        ("update_reservation_flights", 2),
    ]
    assert first.tool_calls[2].error == "Error: no direct flights on 2024-05-21"  # tau2's `error: true`
    assert first.tool_calls[3].input["flights"] == [{"flight_number": "HAT204", "date": "2024-05-21"}]
    assert round(first.totals["cost_usd"], 4) == extra["agent_cost"] == 0.0147 and first.totals["tokens"] > 0
    # Trial 1: empty call ids pair by order; the user's own call is in the user's message, not a tool call.
    assert [(s.name, s.turn, s.output) for s in second.tool_calls] == [
        ("update_reservation_flights", 1, {"reservation_id": "JMO1MG", "status": "updated"})
    ]
    said = [s.content for s in second.spans if s.kind == "message" and s.role == "user"]
    assert "[user tool call] check_app_notifications({}) -> 1 notification: JMO1MG changed to HAT204" in said


def test_kit_check_judges_each_trial(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["import", str(RESULTS), "-o", str(out)]) == 0
    (tmp_path / "c.yaml").write_text(CASES)
    capsys.readouterr()
    assert main(["check", str(out), "--cases", str(tmp_path / "c.yaml"), "--json"]) == 1
    runs = json.loads(capsys.readouterr().out)["results"]
    failed = [[c["check"] for c in r["checks"] if c["outcome"] != "pass"] for r in runs]
    assert failed == [[], ["not_called:update_reservation_flights@turn1", "called:update_reservation_flights@turn2"]]


def test_simulations_one_per_line_and_a_bad_message_is_exit_2(tmp_path, capsys):
    sims = json.loads(RESULTS.read_text())["simulations"]
    (tmp_path / "sims.jsonl").write_text("\n".join(json.dumps(s) for s in sims) + "\n")
    assert main(["import", str(tmp_path / "sims.jsonl"), "-o", str(tmp_path / "t.json")]) == 0
    assert [t["attempt"] for t in json.loads((tmp_path / "t.json").read_text())] == [0, 1]
    sims[1]["messages"][3]["id"] = "nobody"
    (tmp_path / "bad.json").write_text(json.dumps({"simulations": sims}))
    assert main(["import", str(tmp_path / "bad.json"), "-o", str(tmp_path / "t.json")]) == 2
    assert "message 3: tool result 'nobody' answers no open call" in capsys.readouterr().err
