"""Every report opens with the gate's verdict: may this change merge, and the failing cases and checks that
decide it. The issue's case: two cases from 1/1 to 0/1, under their floors, which the side by side called
"noise" with p = 1.00 while the gate failed. A case under its floor is never called noise."""

from __future__ import annotations

import sys

import pytest

from kit.cli import main as kit
from kit.commands.report import ReportRequest, report
from kit.result import CaseRun, Result
from kit.store import open_store


def _run(store, results: dict[str, bool], evals_id: str) -> str:
    run_id = store.start_run("kit", agent="desk:run", model="m", git_sha=None, evals_id=evals_id)
    store.record_many(
        run_id,
        [(CaseRun(c, 0, (Result("no_pii", ok, "" if ok else "email in output"),)), None) for c, ok in results.items()],
    )
    store.finish_run(run_id)
    return run_id


def _fell(folder):
    store = open_store(folder / "evals.duckdb")
    before = _run(store, {"refund": True, "lookup": True, "greet": True}, "evals-1")
    after = _run(store, {"refund": False, "lookup": False, "greet": True}, "evals-2")
    return folder, store, before, after


@pytest.fixture
def fell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("KIT_GATES", "KIT_CASES", "KIT_STORE", "KIT_EVALS_ID"):
        monkeypatch.delenv(name, raising=False)
    return _fell(tmp_path)


@pytest.fixture(scope="module")
def fell_once(tmp_path_factory):
    """`fell` for the tests that only read it: built once."""
    folder = tmp_path_factory.mktemp("fell")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        for name in ("KIT_GATES", "KIT_CASES", "KIT_STORE", "KIT_EVALS_ID"):
            mp.delenv(name, raising=False)
        yield _fell(folder)


def test_the_page_and_the_markdown_open_with_the_failed_gate_and_never_call_a_case_under_its_floor_noise(fell_once):
    folder, store, _, after = fell_once
    done = report(
        ReportRequest(store=store.path, run=after, html=folder / "report.html", md=folder / "compare.md", text=False)
    )
    page = done.html.read_text()
    head = page[page.index("<body>") : page.index("<h2>Sources</h2>")]
    assert '<section id="verdict" class="verdict fail">' in head
    assert "Gate FAILED: do not merge this change" in head
    assert "hard fail: case refund check no_pii (1x): email in output" in head
    assert "hard fail: case lookup check no_pii" in head and "greet" not in head
    compare = page[page.index('<section id="compare">') :]
    assert "<th>noise</th><td class=n></td><td class=n>0</td>" in compare
    assert "<th>under its floor</th><td class=n></td><td class=n>2</td>" in compare
    assert '<li class="v-under-floor">under floor: lookup 1/1' in compare
    assert "noise:" not in compare and ">noise<" not in compare.split("<h3>Every case")[1]

    md = done.md.read_text()
    lines = md.splitlines()
    assert lines[2].startswith("**❌ Gate FAILED: do not merge this change")
    assert "hard fail: case refund check no\\_pii" in md
    assert "- under floor: refund 1/1" in md and "- noise:" not in md
    assert "| noise |  | 0 |" in md and "| under its floor |  | 2 |" in md


def test_kit_report_and_kit_compare_say_first_that_the_gate_failed(fell_once, capsys):
    _, store, before, after = fell_once
    assert kit(["report", "--store", str(store.path), "--run", after]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Gate FAILED: do not merge this change (2 problems in 1 run(s))")
    assert f"gate FAILED for run {after} (kit): 2 problem(s) [desk:run]" in out
    assert f"compared against baseline run {before}" in out

    assert kit(["compare", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Gate FAILED: do not merge this change")
    assert "under floor: lookup 1/1 (1.00" in out and "noise:" not in out


def test_a_change_that_passes_the_gate_says_it_may_merge(fell_once, capsys):
    _, store, passing, failing = fell_once
    assert kit(["report", "--store", str(store.path), "--compare", failing, passing]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Gate passed: this change may merge (1 gated run, every one passed)")


def test_make_evals_report_opens_with_its_own_verdict_a_broken_stage_included(fell, monkeypatch):
    """The gate runs once in make evals: the report opens with the verdict make evals exits on, so a stage
    that broke (whatever the gated runs say) is in it."""
    from kit.pipeline.evals import evaluate
    from kit.pipeline.executor import Stage, Step
    from kit.plan import make_plan
    from kit.settings import load_settings

    folder, store, _, _ = fell
    (folder / "verdict_desk.py").write_text("def run(text):\n    return {'final_output': 'hi', 'spans': []}\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "verdict_desk", raising=False)
    settings = load_settings({"agent": "verdict_desk:run", "cases": folder / "cases.yaml", "store": store.path})
    plan = make_plan(settings).derive(evals_id="evals-3")

    def runner() -> int:  # what the kit's stage writes: a run of this make evals, every case passed
        _run(store, {"refund": True, "lookup": True, "greet": True}, "evals-3")
        return 0

    stages = [
        Stage("kit", "the runner", (Step("kit", call=runner),)),
        Stage("probe", "a stage that breaks", (Step("probe", call=lambda: 3),)),
    ]
    assert evaluate(plan, stages, folder / "out") == 1
    page = (folder / "out" / "report.html").read_text()
    head = page[page.index("<body>") : page.index("<h2>Sources</h2>")]
    assert '<section id="verdict" class="verdict fail">' in head
    assert "Gate FAILED: do not merge this change (stage probe broke: exit 3)" in head
    assert "gate passed for run" in head
    # A red-team control must fail and is never gated: its report says nothing of a merge.
    control = store.start_run("promptfoo", agent="control-obey", model="m", git_sha=None, kind="control")
    store.finish_run(control)
    assert "Gate" not in report(ReportRequest(store=store.path, run=control)).text


def test_the_gate_never_calls_a_case_under_its_floor_noise(fell_once, tmp_path, capsys):
    _, store, before, after = fell_once
    policy = tmp_path / "gates.yaml"
    policy.write_text("baseline: {new_failures: significant}\n")
    argv = ["gate", "--store", str(store.path), "--run", after, "--baseline", before, "--config", str(policy)]
    assert kit(argv) == 1
    out = capsys.readouterr().out
    assert "noise vs baseline" not in out
    assert f"under its floor 1.00, not noise, vs baseline {before}: case refund 1/1 (1.00) → 0/1 (0.00)" in out
