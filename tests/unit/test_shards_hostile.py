"""A CI matrix that lost, doubled or mixed up a job: `kit run --merge` refuses a missing, duplicated, foreign
(another run id, agent or suite) or corrupt shard before it stores anything, naming it (exit 2), and stores
a whole suite run only."""

from __future__ import annotations

import json

import pytest

from kit.cli import main as kit
from kit.store import open_store
from tests.unit._fixed_agent import cases_yaml, forget_agent, write_agent

COUNTS = {"a": (1, 1), "b": (0, 1), "c": (1, 1)}  # b fails: a gate must never pass without it


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_agent(tmp_path)
    (tmp_path / "other_agent.py").write_text("from flaky_agent import agent  # noqa: F401\n")
    (tmp_path / "cases.yaml").write_text(cases_yaml(COUNTS))
    monkeypatch.chdir(tmp_path)
    for name in ("KIT_RUN_ID", "KIT_STORE", "KIT_CASES", "KIT_GATES"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
    forget_agent()


def shard(i: int, out: str, *, run_id: str = "ci-1", agent: str = "flaky_agent:agent", n: int = 3) -> str:
    import sys

    module = sys.modules.get("flaky_agent")
    if module is not None:
        module.calls.clear()
    argv = ["run", "--cases", "cases.yaml", "--agent", agent, "--shard", f"{i}/{n}", "--run-id", run_id]
    kit([*argv, "--out", out, "--pool", "thread", "-q"])
    return out


def stored_runs(project) -> list[tuple]:
    path = project / "m.duckdb"
    if not path.exists():
        return []
    with open_store(path).connect() as con:
        return con.execute("SELECT run_id, status FROM runs").fetchall()


def merge(*shards: str) -> int:
    return kit(["run", "--merge", *shards, "--store", "m.duckdb", "-q"])


@pytest.fixture
def three(project):
    return [shard(i, f"s{i}") for i in (1, 2, 3)]


def test_a_missing_shard_is_refused_and_nothing_is_stored(project, three, capsys):
    capsys.readouterr()
    for kept in ([three[1], three[2]], [three[0], three[2]]):
        assert merge(*kept) == 2
    err = capsys.readouterr().err
    assert "shard(s) 1/3 of run ci-1 missing" in err and "shard(s) 2/3 of run ci-1 missing" in err
    assert stored_runs(project) == []
    # Every slice there: one complete run, and its gate sees the failing case.
    assert merge(*three) == 1
    assert stored_runs(project) == [("ci-1", "complete")]
    assert kit(["gate", "--store", "m.duckdb", "--run", "ci-1"]) == 1
    assert "case b" in capsys.readouterr().err


def test_a_duplicated_shard_is_refused_naming_it(project, three, capsys):
    (project / "s1-again").mkdir()
    for f in (project / "s1").iterdir():
        (project / "s1-again" / f.name).write_bytes(f.read_bytes())
    assert merge(*three, "s1-again") == 2
    assert "s1-again: duplicate shard: 1/3 is also s1" in capsys.readouterr().err
    assert stored_runs(project) == []


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: shard(3, "x3", run_id="ci-2"), "foreign shard: its run id is 'ci-2', shard s1 has 'ci-1'"),
        (lambda: shard(3, "x3", agent="other_agent:agent"), "foreign shard: its agent is 'other_agent:agent'"),
        (lambda: shard(3, "x3", n=4), "foreign shard: its shard count is 4, shard s1 has 3"),
    ],
)
def test_a_foreign_shard_is_refused_naming_it(project, three, capsys, make, why):
    make()
    assert merge(three[0], three[1], "x3") == 2
    err = capsys.readouterr().err
    assert f"x3: {why}" in err
    assert stored_runs(project) == []


def test_a_shard_of_another_suite_is_refused(project, three, capsys):
    (project / "cases.yaml").write_text(cases_yaml({**COUNTS, "d": (1, 1)}))
    shard(3, "x3")
    assert merge(three[0], three[1], "x3") == 2
    assert "x3: foreign shard: its suite (its cases, checks or runs differ)" in capsys.readouterr().err
    assert stored_runs(project) == []


def test_a_cut_shard_is_refused_before_anything_is_stored(project, three, capsys):
    """The corrupt shard last: the others must not have been stored as a complete run already."""
    part = project / "s1" / "case_results.parquet"
    part.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])
    assert merge(three[1], three[2], three[0]) == 2
    err = capsys.readouterr().err
    assert "s1: not a readable shard (cut or corrupt?)" in err
    assert stored_runs(project) == []
    assert kit(["gate", "--store", "m.duckdb"]) == 2  # no run to pass


def test_a_shard_without_its_record_is_refused(project, capsys):
    out = shard(1, "old.json", n=1)
    data = json.loads((project / out).read_text())
    data["runs"][0]["meta"] = json.dumps({"shard": "1/1"})  # what an older kit wrote
    (project / out).write_text(json.dumps(data))
    assert merge(out) == 2
    assert "old.json: no shard record" in capsys.readouterr().err
    assert stored_runs(project) == []


def test_the_merged_run_holds_every_slices_rules(project, capsys):
    """Each shard records the whole suite's rules, so the merged run (whose row is shard 1's) holds b's own
    floor, although b ran in shard 2."""
    (project / "cases.yaml").write_text(cases_yaml(COUNTS, floors={"b": 0.0}))
    shards = [shard(i, f"f{i}") for i in (1, 2, 3)]
    assert merge(*shards) == 1  # b fails its one attempt...
    capsys.readouterr()
    assert kit(["gate", "--store", "m.duckdb", "--run", "ci-1"]) == 0  # ...and its own floor 0.0 lets it pass


def test_a_shard_that_lost_a_cases_results_is_refused(project, capsys):
    out = shard(1, "lost.json", n=1)
    data = json.loads((project / out).read_text())
    data["case_results"] = [r for r in data["case_results"] if r["case_id"] != "c"]
    (project / out).write_text(json.dumps(data))
    assert merge(out) == 2
    assert "lost.json: cut or corrupt shard: no results for its cases c" in capsys.readouterr().err
    assert stored_runs(project) == []
