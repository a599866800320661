"""`kit calibrate` against a scripted judge on 127.0.0.1 (the model is the only double): the judge goes
through the soft gates' own G-Eval path in the DeepEval adapter, K samples per labelled answer, some answers
scored differently from one sample to the next; the figures are the ones computed by hand; every call is
in the store with its tokens and cost; under `soft.min_kappa` the command exits 1 naming the rubric."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import yaml

from kit.cli import main
from kit.doubles.judge import ScriptedJudge
from kit.doubles.openai_server import ScriptedOpenAIServer

RUBRICS = {
    "rubrics": [
        {"name": "polite", "evaluation_steps": ["Check the Actual Output is polite."], "params": ["actual_output"]},
        {
            "name": "explains",
            "evaluation_steps": ["Check the Actual Output states what the Expected Output states."],
            "params": ["input", "actual_output", "expected_output"],
            "threshold": 0.7,
        },
    ]
}
# (id, rubric, the person's verdict, the judge's scores out of 10 for its 3 samples)
SCRIPT = [
    ("a1", "polite", "pass", [9, 9, 9]),  # judge pass  (3/3)  agree
    ("a2", "polite", "pass", [9, 2, 9]),  # judge pass  (2/3)  agree, inconsistent
    ("a3", "polite", "pass", [2, 2, 8]),  # judge fail  (1/3)  disagree, inconsistent
    ("a4", "polite", "fail", [2, 2, 2]),  # judge fail         agree
    ("a5", "polite", "fail", [9, 8, 2]),  # judge pass  (2/3)  disagree, inconsistent
    ("a6", "polite", "fail", [1, 1, 1]),  # judge fail         agree
    ("b1", "explains", "pass", [9, 9, 9]),
    ("b2", "explains", "pass", [7, 7, 7]),  # 0.7 reaches the threshold 0.7: pass
    ("b3", "explains", "fail", [3, 3, 3]),
    ("b4", "explains", "fail", [6, 6, 6]),  # 0.6 is under 0.7: fail
]
# By hand. polite: agree on a1 a2 a4 a6 = 4/6; person passes 3/6, judge's majority passes a1 a2 a5 = 3/6,
# so p_e = 0.5*0.5 + 0.5*0.5 = 0.5 and kappa = (4/6 - 0.5) / 0.5 = 1/3; all samples agree on a1 a4 a6 = 3/6.
# explains: agree on all 4; p_e = 0.5; kappa = (1 - 0.5) / 0.5 = 1; consistency 4/4.
EXPECTED = {
    "polite": {"n": 6, "agreement": 4 / 6, "kappa": 1 / 3, "consistency": 3 / 6},
    "explains": {"n": 4, "agreement": 1.0, "kappa": 1.0, "consistency": 1.0},
}
USAGE = {"prompt_tokens": 120, "completion_tokens": 15, "cost": 0.00025}


def _label(key: str, rubric: str, human: str) -> dict:
    item = {
        "id": key,
        "rubric": rubric,
        "actual_output": f"Answer {key.upper()}-MARK: your order ships today.",
        "human": human,
    }
    if rubric == "explains":
        item |= {"input": "When does my order ship?", "expected_output": "It ships today."}
    return item


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    rubrics = tmp_path / "rubrics.yaml"
    rubrics.write_text(yaml.safe_dump(RUBRICS))
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump([_label(k, r, h) for k, r, h, _ in SCRIPT]))
    gates = tmp_path / "gates.yaml"
    gates.write_text("soft: {min_kappa: 0.6}\n")
    store = tmp_path / "evals.duckdb"
    judge = ScriptedJudge([{"match": f"{k.upper()}-MARK", "scores": s} for k, _, _, s in SCRIPT], usage=USAGE)
    with ScriptedOpenAIServer(judge) as srv:
        monkeypatch.setenv("KIT_JUDGE_MODEL", "judge-scripted-2024-01-01")
        monkeypatch.setenv("KIT_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("KIT_JUDGE_API_KEY", "k")
        monkeypatch.setenv("KIT_JUDGE_RETRIES", "0")
        monkeypatch.setenv("KIT_STORE", str(store))
        yield {"rubrics": rubrics, "labels": labels, "gates": gates, "store": store, "judge": judge}


def test_figures_match_the_hand_computed_ones_and_every_call_is_recorded(setup, capsys) -> None:
    argv = ["calibrate", str(setup["labels"]), "--json", "--rubrics", str(setup["rubrics"])]
    code = main([*argv, "--config", str(setup["gates"])])
    out, err = capsys.readouterr()
    got = {r["rubric"]: r for r in json.loads(out)["rubrics"]}
    assert set(got) == set(EXPECTED)
    for name, figures in EXPECTED.items():
        for key, value in figures.items():
            assert got[name][key] == pytest.approx(value), (name, key)
        assert got[name]["judge_model"] == "judge-scripted-2024-01-01"
        assert len(got[name]["rubric_hash"]) == 16
    # Under soft.min_kappa 0.6: exit 1 naming the rubric under it, and only that one.
    assert code == 1
    assert "rubric:polite: kappa 0.333 under soft.min_kappa 0.60" in err and "rubric:explains: kappa" not in err
    # Every judge call: 10 answers x 3 samples, each with its tokens and cost, in the store.
    assert all(setup["judge"].asked[f"{k.upper()}-MARK"] == 3 for k, *_ in SCRIPT)
    con = duckdb.connect(str(setup["store"]), read_only=True)
    try:
        calls = con.execute(
            "SELECT case_id, sample, outcome, prompt_tokens, completion_tokens, cost_usd, judge_model "
            "FROM judge_calls ORDER BY case_id, sample"
        ).fetchall()
        cal = con.execute("SELECT rubric, n, kappa, judge_model FROM calibrations ORDER BY rubric").fetchall()
    finally:
        con.close()
    assert len(calls) == 30
    assert {(c[3], c[4], c[5]) for c in calls} == {(120, 15, 0.00025)}
    a2 = [c[2] for c in calls if c[0] == "a2"]
    assert a2 == ["pass", "fail", "pass"]  # the samples as the judge gave them, not just their majority
    assert [(r[0], r[1]) for r in cal] == [("explains", 4), ("polite", 6)]
    assert cal[1][2] == pytest.approx(1 / 3) and cal[0][3] == "judge-scripted-2024-01-01"


def test_bad_labels_and_no_judge_exit_2(setup, capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump([{"id": "x", "rubric": "nope", "actual_output": "a", "human": "pass"}]))
    assert main(["calibrate", str(bad), "--rubrics", str(setup["rubrics"])]) == 2
    said = capsys.readouterr().err
    assert "bad.yaml" in said and "'x'" in said and "no rubric 'nope'" in said
    monkeypatch.delenv("KIT_JUDGE_MODEL")
    assert main(["calibrate", str(setup["labels"]), "--rubrics", str(setup["rubrics"])]) == 2
    assert "no judge configured" in capsys.readouterr().err
    assert main(["calibrate", str(setup["labels"]), "--samples", "2"]) == 2
    assert "--samples must be odd" in capsys.readouterr().err


def test_a_judge_that_fails_on_an_answer_is_exit_2_and_no_calibration(setup, capsys, tmp_path: Path) -> None:
    labels = tmp_path / "unscripted.yaml"
    items = [_label("b1", "explains", "pass"), _label("zz", "explains", "fail")]  # zz: nobody scripted it
    labels.write_text(yaml.safe_dump(items))
    assert main(["calibrate", str(labels), "--rubrics", str(setup["rubrics"]), "--samples", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{labels}: zz: rubric:explains: the judge failed" in err and "HTTP 500" in err
    assert "no calibration recorded" in err
    con = duckdb.connect(str(setup["store"]), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM calibrations").fetchone() == (0,)
        failed = con.execute("SELECT case_id, outcome, error FROM judge_calls WHERE outcome = 'error'").fetchall()
    finally:
        con.close()
    assert [(c[0], c[1]) for c in failed] == [("zz", "error")] and "HTTP 500" in failed[0][2]
