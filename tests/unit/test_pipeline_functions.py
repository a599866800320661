"""`make evals` calls the kit's functions, not its command line: lint, the runner, the report and storing a
Promptfoo result are function calls with the plan (its evals id a parameter, never os.environ). A lint problem
stops the build before any agent call; the stage lines say what happened."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest
from test_ingest import PROMPTFOO_FILE

from kit.pipeline.evals import evaluate, main
from kit.pipeline.executor import TIMED_OUT, Stage, StageResult, Step
from kit.pipeline.stages import kit_stage, lint_stage, store_promptfoo
from kit.pipeline.summary import Collected, cost_lines, summary_text
from kit.plan import make_plan
from kit.settings import load_settings
from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
AGENT = "examples.my_agent:run"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The checkout as cwd (examples/ importable), no KIT_* variable of the caller, a scratch store."""
    for var in [v for v in os.environ if v.startswith("KIT_")]:
        monkeypatch.delenv(var)
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "evals.duckdb"))
    return tmp_path


def test_a_lint_problem_stops_make_evals_before_any_agent_call(here, capsys):
    cases = here / "cases.yaml"
    text = (ROOT / "examples" / "cases.yaml").read_text()
    cases.write_text(text.replace("{type: contains, text: shipped}", "{type: contains, txt: shipped}", 1))
    started = time.perf_counter()
    # Only the kit stage asked for: lint runs all the same, first, and its problem ends the build.
    code = main(["--agent", AGENT, "--cases", str(cases), "--only", "kit", "--out", str(here / "out")])
    assert code == 2
    assert time.perf_counter() - started < 30
    err = capsys.readouterr().err
    assert f"{cases}: case 'order-status': check #3 (contains): unknown parameter 'txt'" in err
    assert "no agent was called" in err
    summary = (here / "out" / "summary.txt").read_text()
    assert "valid" not in summary and "bad input: exit 2" in summary
    assert not (here / "evals.duckdb").exists()  # the store untouched: the kit stage never started a run


def test_the_stages_are_function_calls_with_the_plans_evals_id(here, monkeypatch):
    plan = make_plan(load_settings({"agent": AGENT, "cases": ROOT / "examples" / "cases.yaml"})).derive(
        evals_id="20260101T000000-evals-abc123"
    )
    seen: dict[str, str | None] = {}

    def probe() -> int:
        seen["KIT_EVALS_ID"] = os.environ.get("KIT_EVALS_ID")
        return 0

    def no_argparse(*_a, **_k):
        raise AssertionError("a stage ran a command line parser in process")

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", no_argparse)
    out = here / "out"
    chosen = [
        lint_stage(plan),
        kit_stage(plan, (out / "runs.jsonl").resolve()),
        Stage("probe", "what a step of this process sees", (Step("probe", call=probe),)),
    ]
    assert evaluate(plan, chosen, out) == 0, (out / "summary.txt").read_text()
    assert seen == {"KIT_EVALS_ID": None}  # handed over as a parameter, not through this process's environment
    with open_store(here / "evals.duckdb").connect() as con:
        assert con.execute("SELECT source, agent, evals_id FROM runs").fetchall() == [
            ("kit", AGENT, "20260101T000000-evals-abc123")
        ]
    assert "<html" in (out / "report.html").read_text()[:500].lower()  # the report, called as a function


def _result(name: str, code: int, writes=(), judged=frozenset()) -> StageResult:
    return StageResult(
        Stage(name, f"the {name} stage", (), tuple(writes), judged=judged, timeout=60.0), code, 1.0, Path("x")
    )


def _run(run_id: str, source: str, kind: str, runs: int, passed: int, model: str = "m") -> dict:
    return {
        "run_id": run_id,
        "source": source,
        "kind": kind,
        "stage": source if kind == "golden" else f"{source}/{kind}",
        "status": "complete",
        "agent": "a:run",
        "model": model,
        "runs": runs,
        "passed": passed,
        "cases": runs,
    }


def test_stage_lines_say_what_happened_never_an_exit_code_of_a_judged_failure():
    data = Collected(
        [
            _run("k", "kit", "golden", 10, 7),
            _run("p", "promptfoo", "golden", 10, 9),
            _run("r", "promptfoo", "redteam", 40, 40),
            _run("c", "promptfoo", "control", 5, 0, model="control-obey-injection"),
        ],
        [],
        {},
        [],
    )
    results = [
        _result("lint", 0),
        _result("kit", 1, [("kit", "golden")], frozenset({1})),
        _result("promptfoo", 100, [("promptfoo", "golden")], frozenset({100})),
        _result("deepeval", 1, [("deepeval", "golden")], frozenset({1})),  # exit 1 and no run: broken
        _result("redteam", 0, [("promptfoo", "redteam"), ("promptfoo", "control")], frozenset({1})),
        _result("slow", TIMED_OUT),
        _result("crash", 3, [], frozenset({1})),
    ]
    table = summary_text(data, results).split("== runs")[0]
    lines = {ln.split()[0]: ln for ln in table.splitlines() if ln.startswith("  ")}
    assert " passed " in lines["lint"] and " passed " in lines["redteam"]  # the control's failures are not its
    assert " 3 judged failures " in lines["kit"]
    assert " 1 judged failure " in lines["promptfoo"] and "100" not in lines["promptfoo"]
    assert " broken: no deepeval golden run reached the store " in lines["deepeval"]
    assert " broken: timed out after 60 s " in lines["slow"]
    assert " broken: exit 3 " in lines["crash"]
    assert "exit 0" not in table and "exit 1 " not in table


def test_every_stages_calls_are_counted_or_said_not_to_be_and_no_cost_reads_as_zero():
    data = Collected(
        [_run("k", "kit", "golden", 3, 3), _run("d", "deepeval", "golden", 3, 3)],
        [],
        {},
        [],
        costs=[
            {"run_id": "k", "source": "kit", "runs": 3, "agent_calls": 3, "retries": 0, "tokens": 900,
             "cost_usd": None, "agent_s": 1.0, "kit_s": 0.1},
            {"run_id": "d", "source": "deepeval", "runs": 3, "agent_calls": None, "retries": None, "tokens": None,
             "cost_usd": None, "agent_s": None, "kit_s": None},
        ],
    )  # fmt: skip
    text = "\n".join(cost_lines(data, [_result("kit", 0)]))
    assert "?" not in text and "$0.0000" not in text
    assert "deepeval          calls not counted (the agent was called outside the kit) for 3 runs" in text
    assert "3 calls (besides deepeval: not counted)" in text and "cost not recorded;" in text


def test_a_result_file_the_store_hook_stored_is_named_as_stored_not_as_a_clash(here, capsys):
    results = here / "golden.json"
    results.write_text(json.dumps(PROMPTFOO_FILE))
    plan = make_plan().derive(evals_id="20260101T000000-evals-def456")
    step = store_promptfoo(plan, str(results))
    assert step.call is not None and not step.argv
    assert step.call() == 0  # the hook could not: stored here, under the plan's evals id
    assert step.call() == 0  # the hook did (or this step, before): named, not stored twice
    out = capsys.readouterr().out
    assert "--force" not in out and "already in the store" not in out
    assert f"{results}: stored by Promptfoo's store hook as run promptfoo-eval-abc-2026-01-01T00:00:00" in out
    with open_store(here / "evals.duckdb").connect() as con:
        assert con.execute("SELECT evals_id FROM runs").fetchall() == [("20260101T000000-evals-def456",)]


def test_the_report_is_a_function_whose_bad_input_is_an_error_naming_the_store(here):
    from kit.commands.report import ReportRequest, report
    from kit.errors import KitInputError

    store = open_store(here / "evals.duckdb")
    run_id = store.start_run("kit", git_sha=None)
    store.finish_run(run_id)
    done = report(ReportRequest(store=store.path, run=run_id, html=here / "r.html", text=False))
    assert done.html == here / "r.html" and done.text is None and done.html.is_file()
    with pytest.raises(KitInputError, match=r"evals\.duckdb: .*no-such-run"):
        report(ReportRequest(store=store.path, run="no-such-run"))


def test_the_total_counts_tokens_and_cost_of_runs_judged_again_once():
    """DeepEval and Promptfoo judging the kit stage's runs spent no tokens of their own: the total is the kit's."""
    row = {"runs": 2, "retries": 0, "tokens": 804, "cost_usd": 0.0002, "agent_s": 0.6, "kit_s": 0.1}
    data = Collected(
        [
            _run("k", "kit", "golden", 2, 2),
            _run("d", "deepeval", "golden", 2, 2),
            _run("p", "promptfoo", "golden", 2, 2),
        ],
        [],
        {},
        [],
        costs=[
            {**row, "run_id": "k", "source": "kit", "agent_calls": 2},
            {**row, "run_id": "d", "source": "deepeval", "agent_calls": 0},
            {**row, "run_id": "p", "source": "promptfoo", "agent_calls": 0},
        ],
    )
    total = cost_lines(data, [_result("kit", 0)])[-1]
    assert "2 calls, 0 retries, 804 tokens, $0.0002;" in total, total
