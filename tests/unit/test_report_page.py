"""The HTML page's parts without a browser: which runs a page holds, like-with-like trends, two runs side
by side (HTML and Markdown), escaping of hostile text, truncation of large traces and the label layout."""

from __future__ import annotations

import json
import math
import re

from kit.cli import main as kit
from kit.report import compare_view, page_model, trend_svg
from kit.report import page_data as pd
from kit.result import CaseRun, Result
from kit.store import open_store


def _run(store, source, plan, *, agent="desk", model="m1", sha="a" * 40, cost=0.01, latency=100.0):
    run_id = store.start_run(source, agent=agent, model=model, git_sha=sha)
    for case_id, oks in plan.items():
        for attempt, ok in enumerate(oks):
            checks = (Result("called:lookup_order", bool(ok), "" if ok else "lookup_order never called"),)
            trace = {"case_id": case_id, "final_output": "ok", "finish_reason": "finish", "latency_ms": latency,
                     "spans": [{"kind": "llm", "name": model, "cost_usd": cost},
                               {"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-1"}}]}  # fmt: skip
            store.record(run_id, CaseRun(case_id, attempt, checks), trace)
    store.finish_run(run_id)
    return run_id


def test_script_json_cannot_close_its_element():
    hostile = "</script><img src=x onerror=alert(1)><!-- & \u2028"
    text = page_model.to_script_json({"a": hostile})
    assert not re.search(r"[<>&\u2028]", text)
    assert json.loads(text) == {"a": hostile}


def test_large_traces_are_cut_with_a_note():
    spans = [{"kind": "message", "role": "user", "content": "x" * 5000}] + [
        {"kind": "tool", "name": f"t{i}", "input": {"q": "y" * 1500}} for i in range(40)
    ]
    state = {"orders": [{"id": i} for i in range(120)]}
    shown = page_model.shrink_trace(json.dumps({"spans": spans, "end_state": state, "run_id": "r"}))
    assert "run_id" not in shown  # the row says it; dropping it lets identical attempts share one trace
    assert len(shown["spans"]) < len(spans) and len(json.dumps(shown)) < page_model.MAX_TRACE + 10_000
    assert shown["spans"][0]["content"].endswith("[cut: 3000 more characters]")
    assert len(shown["end_state"]["orders"]) == page_model.MAX_TABLE_ROWS
    notes = " ".join(shown["notes"])
    assert f"first {len(shown['spans'])} of 41 spans" in notes and "first 50 of 120 rows" in notes
    assert page_model.shrink_trace("{not json")["notes"] == ["the stored trace is not valid JSON"]


def test_batch_holds_each_source_once_and_never_another_agent(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    old = _run(store, "kit", {"c": [1]})
    kit_run = _run(store, "kit", {"c": [1]})
    other = _run(store, "kit", {"c": [0]}, agent="someone-else")
    de = _run(store, "deepeval", {"c": [1]})
    golden = _run(store, "promptfoo", {"c": [1]}, agent="golden eval")
    red = _run(store, "promptfoo", {"redteam/a/basic": [1]}, agent="red team")
    control = _run(store, "promptfoo", {"redteam/a/basic": [0]}, agent="red team", model="control-obey")
    with store.connect() as con:
        chosen = pd.batch(con, kit_run)
        shown = {r["run_id"]: r["display_source"] for r in pd.runs_info(con, chosen)}
    assert chosen == [kit_run, de, golden, red, control] and old not in chosen and other not in chosen
    assert [shown[r] for r in chosen] == ["kit", "deepeval", "promptfoo", "redteam", "redteam"]


def test_trend_is_one_agent_and_one_case_set(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    a1 = _run(store, "kit", {"c1": [1], "c2": [0]}, model="m1")
    _run(store, "kit", {"x": [0]}, agent="other")  # another agent: a series of its own
    _run(store, "kit", {"c1": [1]}, model="m2")  # another case set
    a2 = _run(store, "kit", {"c1": [1], "c2": [1]}, model="m3")
    with store.connect() as con:
        (run,) = pd.runs_info(con, [a2])
        points = pd.trend(con, run)
    assert [p["run_id"] for p in points] == [a1, a2] and [p["pass_rate"] for p in points] == [0.5, 1.0]


def test_side_by_side_names_flips_checks_cost_and_latency(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    a = _run(store, "kit", {"refund": [1, 1], "loop": [0, 1], "same": [1, 1]}, model="m1", cost=0.01, latency=100)
    b = _run(store, "kit", {"refund": [1, 0], "loop": [1, 1], "same": [1, 1]}, model="m2", cost=0.03, latency=250)
    with store.connect() as con:
        side = pd.side_by_side(con, a, b, k=2)
    assert [(d.case_id, d.flip, d.new_failing, d.fixed) for d in side.flips] == [
        ("refund", "pass→fail", ["called:lookup_order"], []),
        ("loop", "fail→pass", [], ["called:lookup_order"]),
    ]
    cells = dict(zip(compare_view.headers(2), compare_view.case_cells(side.flips[0], 2), strict=True))
    assert cells["A pass^2"] == "1.00" and cells["B pass^2"] == "0.00"
    assert cells["Δ cost"] == "+0.0200" and cells["Δ latency ms"] == "+150"
    summary = {m: (x, y, c) for m, x, y, c in compare_view.summary_rows(side)}
    assert summary["pass rate"] == ("83.3%", "83.3%", "0")
    assert summary["pass→fail"][1] == "1" and summary["fail→pass"][1] == "1"
    md = compare_view.markdown(side)
    assert "**2 flips**, 2 cases changed of 3." in md and "| same |" not in md


def test_side_by_side_says_when_case_sets_or_agents_differ(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    a = _run(store, "kit", {"c1": [1], "c2": [1]})
    b = _run(store, "kit", {"c1": [0], "z": [1]}, agent="other")
    with store.connect() as con:
        side = pd.side_by_side(con, a, b)
    assert any("different agents" in n for n in side.notes)
    assert any("1 cases in both, 1 only in A, 1 only in B" in n for n in side.notes)


def test_markdown_cells_hold_no_markup():
    assert compare_view._md("a|b <img src=x> *x* [l](u)\nz") == "a\\|b &lt;img src=x&gt; \\*x\\* \\[l\\](u) z"


def test_trend_labels_are_whole_and_spaced_for_their_rotation():
    points = [
        {"run_id": f"r{i}", "pass_rate": i / 10, "model": "deterministic-reference-agent", "git_sha": f"{i:040d}"}
        for i in range(10)
    ]
    svg = trend_svg.render(points, title="t")
    labels = re.findall(r'class="label"[^>]*>([^<]*)</text>', svg)
    assert labels[0] == "deterministic-reference-agent @ 0000000"  # never cut to "terministic"
    # Neighbouring rotated labels are STEP apart along x: their perpendicular gap must exceed a text line.
    assert trend_svg.STEP * math.sin(math.radians(trend_svg.ANGLE)) > 16
    width = float(re.search(r'width="(\d+)"', svg).group(1))
    first_x = float(re.search(r'<circle cx="([\d.]+)"', svg).group(1))
    longest = max(len(s) for s in labels) * trend_svg.CHAR_W
    assert first_x - longest * math.cos(math.radians(trend_svg.ANGLE)) >= 0 and width > first_x + 9 * trend_svg.STEP


def test_kit_report_compare_writes_html_and_markdown(tmp_path, capsys):
    store = open_store(tmp_path / "s.duckdb")
    _run(store, "kit", {"refund": [1, 1]}, model="m1", sha="1" * 40)
    _run(store, "kit", {"refund": [0, 0]}, model="m2", sha="2" * 40)
    out, md = tmp_path / "r.html", tmp_path / "c.md"
    argv = ["report", "--store", str(store.path), "--compare", "1111111", "m2", "--html", str(out), "--md", str(md)]
    assert kit(argv) == 0
    assert "pass→fail: 1" in capsys.readouterr().out
    assert 'id="compare"' in out.read_text() and "| refund | 2/2 |" in md.read_text()
    assert kit(["report", "--store", str(store.path), "--compare", "nope", "m2", "--html", str(out)]) == 2
    assert "no run matches 'nope'" in capsys.readouterr().err
