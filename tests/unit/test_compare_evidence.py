"""kit compare (text and --json), the HTML report and the PR comment show the same per-case evidence: both
fractions with Wilson 95% intervals, the p-value and the verdict; flaky cases by name; each suite's pass^k
with its interval; the smallest detectable drop. Runs come from a stand-in agent with fixed per-case pass
counts through the real runner and store."""

from __future__ import annotations

import json
import re

import pytest

from kit.aggregate import case_changes, evidence
from kit.cli import main as kit
from tests.unit._fixed_agent import forget_agent, run_suite, write_agent

BEFORE = {"steady": (40, 40), "wobbly": (39, 40), "jittery": (38, 40), "same": (40, 40), "mended": (20, 40)}
AFTER = {"steady": (30, 40), "wobbly": (20, 40), "jittery": (37, 40), "same": (40, 40), "mended": (40, 40)}
VERDICTS = {"steady": "regression", "wobbly": "regression", "jittery": "noise", "same": "unchanged",
            "mended": "improvement"}  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    mp = pytest.MonkeyPatch()
    mp.chdir(folder)
    mp.delenv("KIT_RUN_ID", raising=False)
    write_agent(folder)
    # jittery (0.93) meets its floor: its change is noise; under its floor it would be named so, never noise.
    (folder / "gates.yaml").write_text("baseline: {alpha: 0.01}\nhard: {min_pass_fraction: 0.9}\n")
    store = folder / "evals.duckdb"
    try:
        yield folder, store, run_suite(folder, store, "before", BEFORE), run_suite(folder, store, "after", AFTER)
    finally:
        forget_agent()
        mp.undo()


def test_compare_json_carries_each_case(runs, capsys):
    folder, store, a, b = runs
    capsys.readouterr()
    assert kit(["compare", a, b, "--store", str(store), "--config", str(folder / "gates.yaml"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["a"], data["b"], data["alpha"]) == (a, b, 0.01)
    cases = {c["case_id"]: c for c in data["cases"]}
    assert set(cases) == set(BEFORE)
    for case_id, c in cases.items():
        assert (c["before"]["passed"], c["before"]["attempts"]) == BEFORE[case_id]
        assert (c["after"]["passed"], c["after"]["attempts"]) == AFTER[case_id]
        assert c["verdict"] == VERDICTS[case_id], case_id
        assert 0 <= c["p_value"] <= 1
        lo, hi = c["after"]["interval"]
        assert lo <= c["after"]["fraction"] <= hi
    assert cases["steady"]["p_value"] < 0.01 < cases["jittery"]["p_value"]
    assert cases["steady"]["before"]["interval"] == [0.9124, 1.0]  # Wilson at 40/40: 40/(40 + z²)
    assert [f["case_id"] for f in data["flaky"]["after"]] == ["jittery", "steady", "wobbly"]
    assert set(data["suite_pass_hat_k"]["after"]) == {"1", "2"}
    lo, hi = data["suite_pass_hat_k"]["after"]["1"]["interval"]
    assert lo < data["suite_pass_hat_k"]["after"]["1"]["value"] < hi
    assert data["smallest_detectable_drop"] == [
        "with 40 runs per case, a drop from 100% to 78% (40/40 to 31/40) is the smallest this suite can detect "
        "(one-sided Fisher exact, alpha 0.01, Holm over 5 cases)"
    ]
    assert [f["case_id"] for f in data["pass_to_fail"]] == ["steady"]


def test_text_page_and_pr_comment_agree(runs, capsys, monkeypatch):
    folder, store, a, b = runs
    monkeypatch.setenv("KIT_GATES", str(folder / "gates.yaml"))
    capsys.readouterr()
    assert kit(["compare", a, b, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    page, md = folder / "r.html", folder / "c.md"
    assert kit(["report", "--store", str(store), "--compare", a, b, "--html", str(page), "--md", str(md)]) == 0
    html, comment = page.read_text(), md.read_text()
    lines = [
        "regression: steady 40/40 (1.00, 95% 0.91-1.00) → 30/40 (0.75, 95% 0.60-0.86), p = 0.0020",
        "noise: jittery 38/40 (0.95, 95% 0.83-0.99) → 37/40 (0.93, 95% 0.80-0.97), p = 1.00",
        "improvement: mended 20/40 (0.50, 95% 0.35-0.65) → 40/40 (1.00, 95% 0.91-1.00), p = 1.9e-07",
        "flaky in B: wobbly 20/40 (0.50), steady 30/40 (0.75), jittery 37/40 (0.93)",
        "with 40 runs per case, a drop from 100% to 78% (40/40 to 31/40) is the smallest",
    ]
    for line in lines:
        assert line in text, line
        assert line.replace("flaky in B:", "<b>B</b>") in html, line
        assert line.replace("flaky in B:", "Flaky in B:") in comment, line
    assert re.search(r"suite B: pass\^1 0\.83 \(95% 0\.\d\d-0\.\d\d\), pass\^2 0\.73", text)
    pass1 = re.search(r"pass\^1 0\.83 \(95% (0\.\d\d-0\.\d\d)\)", text).group(1)
    assert "| pass^1 | 0.89 (" in comment and f"0.83 ({pass1})" in comment and f"0.83 ({pass1})" in html
    # Per case in the tables: intervals, p and verdict.
    assert "| steady | 40/40 | 1.00 | 0.91-1.00 | 1.00 | 30/40 | 0.75 | 0.60-0.86 | 0.56 | 0.0020 | regression |" in (
        comment
    )
    assert '<tr class="flip down v-regression" data-case="steady">' in html


def test_case_changes_by_hand():
    changes = case_changes({"a": (5, 5), "b": (2, 4), "gone": (1, 1)}, {"a": (0, 5), "b": (1, 2), "new": (0, 1)}, 0.05)
    assert [(c.case_id, c.verdict) for c in changes] == [("a", "regression"), ("b", "unchanged")]
    # a: 1/C(10,5) = 1/252 raw; Holm over 2 cases doubles the smallest.
    assert changes[0].p_value == pytest.approx(2 / 252)
    ev = evidence({"a": (5, 5), "b": (2, 4), "gone": (1, 1)}, {"a": (0, 5), "b": (1, 2), "new": (0, 1)}, 0.05)
    assert (ev.only_before, ev.only_after) == (("gone",), ("new",))
    assert [c for c, _ in ev.flaky_before] == ["b"] and [c for c, _ in ev.flaky_after] == ["b"]
    assert [h.k for h in ev.suite_after] == [1]  # pass^2 needs 2 attempts of every case; `new` has one


def test_alpha_decides_between_regression_and_noise():
    # 5/5 -> 1/5: p = 6/252 = 0.024, a regression at 0.05, noise at 0.01.
    assert case_changes({"a": (5, 5)}, {"a": (1, 5)}, 0.05)[0].verdict == "regression"
    assert case_changes({"a": (5, 5)}, {"a": (1, 5)}, 0.01)[0].verdict == "noise"


def test_runs_with_no_case_in_common_and_bad_policies(tmp_path, capsys):
    from kit.result import CaseRun, Result
    from kit.store import open_store

    store = open_store(tmp_path / "s.duckdb")
    ids = []
    for case_id in ("old-case", "new-case"):
        run_id = store.start_run("kit", git_sha=None)
        for attempt in range(5):
            store.record(run_id, CaseRun(case_id, attempt, (Result("contains", attempt < 3, ""),)))
        store.finish_run(run_id)
        ids.append(run_id)
    (tmp_path / "gates.yaml").write_text("baseline: {alpha: 0.05}\n")
    policy = ["--config", str(tmp_path / "gates.yaml")]
    capsys.readouterr()
    assert kit(["compare", *ids, "--store", str(store.path), *policy]) == 0
    out = capsys.readouterr().out
    assert "Changes told from chance: no case is in both runs\n" in out
    assert "flaky in A: old-case 3/5 (0.60)" in out and "flaky in B: new-case 3/5 (0.60)" in out
    assert "with 5 runs per case, a drop from 100% to 20% (5/5 to 1/5) is the smallest" in out
    assert kit(["compare", *ids, "--store", str(store.path), "--json", *policy]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cases"] == [] and (data["only_before"], data["only_after"]) == (["old-case"], ["new-case"])
    (tmp_path / "bad.yaml").write_text("baseline: {alpha: 1.5}\n")
    assert kit(["compare", *ids, "--store", str(store.path), "--config", str(tmp_path / "bad.yaml")]) == 2
    assert "bad.yaml: baseline.alpha" in capsys.readouterr().err
    assert kit(["compare", *ids, "--store", str(store.path), "--config", str(tmp_path / "absent.yaml")]) == 2
    assert "no such gate policy file" in capsys.readouterr().err


def test_p_values_are_cut_not_rounded():
    from kit.aggregate import p_text

    # 0.00996 under alpha 0.01 must not print as 0.01; 0.0509 over 0.05 must not print under it.
    assert [p_text(p) for p in (0.00996, 0.0509, 0.5, 1.0, 0.0010296, 1.676e-06, 0.0)] == [
        "0.0099", "0.05", "0.50", "1.00", "0.0010", "1.6e-06", "0"
    ]  # fmt: skip
