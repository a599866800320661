"""Calibration figures, labels files and a soft gate's calibration state: pure functions, hand-computed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kit.judge import majority
from kit.judge.agreement import JudgedAnswer, calibrate, calibration_state, cohen_kappa, under_floor
from kit.judge.labels import read_labels, skeleton
from kit.judge.rubrics import Rubric, RubricSet, load_rubrics

ROOT = Path(__file__).resolve().parents[2]


def test_majority_of_odd_samples_and_an_error_is_no_verdict() -> None:
    assert majority(["pass", "fail", "pass"]) == "pass"
    assert majority(["fail", "fail", "pass"]) == "fail"
    assert majority(["pass"]) == "pass"
    assert majority(["pass", "error", "pass"]) == "error"
    with pytest.raises(ValueError):
        majority([])


def test_kappa_by_hand() -> None:
    # 4 of 6 agree; each side passes half: p_e = 0.5, kappa = (2/3 - 1/2) / (1/2) = 1/3.
    pairs = [("pass", "pass"), ("pass", "pass"), ("pass", "fail"), ("fail", "fail"), ("fail", "pass"), ("fail", "fail")]
    assert cohen_kappa(pairs) == pytest.approx(1 / 3)
    # Skewed margins: the person passes 8 of 10, the judge 9 of 10; they agree on 9 (0.9).
    # p_e = 0.8*0.9 + 0.2*0.1 = 0.74; kappa = (0.9 - 0.74) / (1 - 0.74) = 0.16 / 0.26.
    skew = [("pass", "pass")] * 8 + [("fail", "pass"), ("fail", "fail")]
    assert cohen_kappa(skew) == pytest.approx(0.16 / 0.26)
    assert cohen_kappa([("pass", "fail"), ("fail", "pass")]) == pytest.approx(-1.0)
    assert cohen_kappa([("pass", "pass"), ("pass", "pass")]) is None  # one verdict throughout: undefined
    assert cohen_kappa([]) is None


def test_calibrate_counts_majority_agreement_and_consistency() -> None:
    answers = [
        JudgedAnswer("a1", "pass", ("pass", "pass", "pass")),
        JudgedAnswer("a2", "pass", ("pass", "fail", "pass")),
        JudgedAnswer("a3", "pass", ("fail", "fail", "pass")),
        JudgedAnswer("a4", "fail", ("fail", "fail", "fail")),
        JudgedAnswer("a5", "fail", ("pass", "pass", "fail")),
        JudgedAnswer("a6", "fail", ("fail", "fail", "fail")),
        JudgedAnswer("a7", "fail", ("fail", "error", "fail")),  # the judge failed: counted apart
    ]
    r = calibrate("polite", answers, judge_model="j-1", rubric_hash="h", samples=3)
    assert (r.n, r.errors) == (6, 1)
    assert r.agreement == pytest.approx(4 / 6)
    assert r.kappa == pytest.approx(1 / 3)
    assert r.consistency == pytest.approx(3 / 6)
    assert r.disagreements == ("a3", "a5")
    assert r.as_json()["rubric"] == "polite" and r.as_json()["judge_model"] == "j-1"
    (line,) = under_floor([r], 0.6)
    assert "rubric:polite" in line and "0.333" in line and "a3, a5" in line
    assert under_floor([r], 0.3) == []


def test_undefined_kappa_is_under_any_floor() -> None:
    answers = [JudgedAnswer(f"x{i}", "pass", ("pass",)) for i in range(4)]
    r = calibrate("tone", answers, judge_model="j", rubric_hash="h", samples=1)
    assert r.agreement == 1.0 and r.kappa is None
    (line,) = under_floor([r], 0.0)
    assert "kappa undefined" in line and "rubric:tone" in line


def test_calibration_state_applies_only_to_the_same_rubric_and_judge() -> None:
    cal = {"rubric_hash": "h1", "judge_model": "j-1", "kappa": 0.7234, "n": 30, "calibrated_at": "2026-11-30 22:00:00"}
    assert (
        calibration_state({"rubric_hash": "h1", "judge_model": "j-1"}, cal) == "kappa 0.72, n 30, judge j-1, 2026-11-30"
    )
    assert calibration_state({"rubric_hash": "h2", "judge_model": "j-1"}, cal).startswith("uncalibrated (the rubric")
    changed = calibration_state({"rubric_hash": "h1", "judge_model": "j-2"}, cal)
    assert changed.startswith("uncalibrated") and "j-2" in changed
    assert calibration_state({"rubric_hash": "h1", "judge_model": "j-1"}, None).startswith("uncalibrated")


RUBRICS = RubricSet(
    rubrics=[
        Rubric(name="polite", evaluation_steps=["Polite?"], params=["actual_output"]),
        Rubric(name="matches", evaluation_steps=["Same?"], params=["input", "actual_output", "expected_output"]),
    ],
    file="rubrics.yaml",
)


def test_labels_file_every_problem_named_and_good_items_kept(tmp_path: Path) -> None:
    f = tmp_path / "labels.yaml"
    f.write_text(
        yaml.safe_dump(
            [
                {"id": "ok", "rubric": "polite", "actual_output": "Thanks!", "human": "pass"},
                {"id": "no-rubric", "rubric": "nope", "actual_output": "x", "human": "pass"},
                {"id": "lacks", "rubric": "matches", "input": "q", "actual_output": "a", "human": "fail"},
                {"id": "bad-human", "rubric": "polite", "actual_output": "x", "human": "yes"},
                {"id": "empty-human", "rubric": "polite", "actual_output": "x", "human": None},
                {"id": "ok", "rubric": "polite", "actual_output": "again", "human": "fail"},
                {"rubric": "polite", "actual_output": "unnamed", "human": "fail"},
            ]
        )
    )
    got = read_labels(f, RUBRICS)
    assert [a.key for a in got.answers] == ["ok", "#7"]
    said = [str(p) for p in got.problems]
    assert len(said) == 5
    assert all(s.startswith(str(f)) for s in said)
    assert "no-rubric" in said[0] and "no rubric 'nope'" in said[0]
    assert "lacks" in said[1] and "expected_output" in said[1] and "rubric:matches" in said[1]
    assert "bad-human" in said[2] and "human" in said[2]
    assert "empty-human" in said[3] and "human is empty" in said[3]
    assert "duplicate id 'ok'" in said[4]


def test_a_file_that_is_not_a_list_is_an_error_naming_it(tmp_path: Path) -> None:
    from kit.errors import KitInputError

    f = tmp_path / "labels.yaml"
    f.write_text("rubric: polite\n")
    with pytest.raises(KitInputError, match=r"labels\.yaml: a labels file is a non-empty YAML list"):
        read_labels(f, RUBRICS)


def test_skeleton_leaves_human_empty_and_reads_back_as_unlabelled(tmp_path: Path) -> None:
    text = skeleton([{"id": "c@0:polite", "rubric": "polite", "actual_output": "Hi", "human": None}])
    assert "human:\n" in text or text.rstrip().endswith("human:")
    f = tmp_path / "to_label.yaml"
    f.write_text(text)
    got = read_labels(f, RUBRICS)
    assert not got.answers and "human is empty" in str(got.problems[0])


def test_the_committed_labels_cover_the_reference_rubrics() -> None:
    rubrics = load_rubrics(ROOT / "golden" / "rubrics.yaml")
    got = read_labels(ROOT / "golden" / "labels.yaml", rubrics)
    assert got.problems == ()
    assert len(got.answers) >= 30
    for rubric in rubrics.rubrics:  # each rubric has answers a person passed and failed: kappa is defined
        humans = {a.human for a in got.answers if a.rubric.name == rubric.name}
        assert humans == {"pass", "fail"}, rubric.name


def test_export_writes_a_stored_runs_judged_answers_to_label(tmp_path: Path, capsys) -> None:
    from kit.case import load_suite
    from kit.cli import main
    from kit.runner import invoke
    from kit.runner.agents import reference_agent
    from kit.store import open_store

    case = next(c for c in load_suite(ROOT / "golden").cases if c.id == "refund-happy-path")
    inv = invoke(reference_agent(), case, 0, timeout=10)
    store = open_store(tmp_path / "evals.duckdb")
    run_id = store.start_run("deepeval", agent="reference")
    store.record(run_id, inv.case_run, inv.trace)
    for rubric, outcome in (
        ("resolves_request", "pass"),
        ("refund_explained", "fail"),
        ("tone_courteous_and_plain", "skipped"),
    ):
        store.record_soft(run_id, case.id, 0, f"rubric:{rubric}", outcome=outcome)
    store.finish_run(run_id)
    store.close()
    argv = ["calibrate", "--export", run_id, "--store", str(tmp_path / "evals.duckdb"), "--cases", str(ROOT / "golden")]
    assert main([*argv, "--rubrics", str(ROOT / "golden" / "rubrics.yaml")]) == 0
    out = capsys.readouterr().out
    items = yaml.safe_load(out)
    # The judged answers only (a skipped rubric gave no verdict), each with what its rubric shows the judge.
    assert [i["rubric"] for i in items] == ["refund_explained", "resolves_request"]
    explained, resolves = items
    assert explained["expected_output"] == case.reference and explained["input"] == case.input
    assert resolves["actual_output"] == inv.trace["final_output"] and set(resolves) == {
        "id",
        "rubric",
        "input",
        "actual_output",
        "human",
    }
    assert all(i["human"] is None for i in items) and "human:\n" in out
    labelled = tmp_path / "labelled.yaml"
    labelled.write_text(out.replace("human:\n", "human: pass\n"))
    got = read_labels(labelled, load_rubrics(ROOT / "golden" / "rubrics.yaml"))
    assert got.problems == () and len(got.answers) == 2


def test_kit_lint_names_every_labels_problem(tmp_path: Path, capsys) -> None:
    from kit.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "- {id: x, rubric: nope, actual_output: a, human: pass}\n- {rubric: tone_courteous_and_plain, human: maybe}\n"
    )
    assert main(["lint", str(ROOT / "golden"), "--labels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: case 'x': check rubric:nope: no rubric 'nope'" in err
    assert f"{bad}: case '#2': check rubric:tone_courteous_and_plain: human" in err
