"""kit lint on floors: a floor outside 0..1 is refused (exit 2, naming file and case), and a case whose
`runs` cannot express its floor is warned about."""

from __future__ import annotations

import pytest

from kit.cli import main as kit
from kit.commands.lint import runs_for_floor


@pytest.fixture
def lint(tmp_path, capsys):
    def run(cases: str, gates: str = "") -> tuple[int, str]:
        (tmp_path / "cases.yaml").write_text(cases)
        (tmp_path / "gates.yaml").write_text(gates)
        rc = kit(["lint", str(tmp_path / "cases.yaml"), "--gates", str(tmp_path / "gates.yaml")])
        return rc, capsys.readouterr().err

    return run


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "true", ".nan", "'high'"])
def test_a_floor_outside_0_to_1_is_refused(lint, tmp_path, bad):
    rc, err = lint(f"id: ok\ninput: hi\n---\nid: greedy\ninput: hi\nmin_pass_fraction: {bad}\n")
    assert rc == 2
    assert f"{tmp_path / 'cases.yaml'}: case 'greedy': field 'min_pass_fraction': must be a number from 0 to 1" in err
    assert "case 'ok'" not in err


def test_a_floor_outside_0_to_1_in_gates_yaml_is_refused(lint, tmp_path):
    rc, err = lint("id: ok\ninput: hi\n", "hard: {min_pass_fraction: 2}\n")
    assert rc == 2 and f"{tmp_path / 'gates.yaml'}: hard.min_pass_fraction" in err


def test_runs_that_cannot_express_a_floor_are_warned_about(lint, tmp_path):
    cases = (
        "id: one-run\ninput: hi\nruns: 1\nmin_pass_fraction: 0.8\n---\n"
        "id: four-runs\ninput: hi\nruns: 4\nmin_pass_fraction: 0.8\n---\n"
        "id: five-runs\ninput: hi\nruns: 5\nmin_pass_fraction: 0.8\n---\n"
        "id: default-floor\ninput: hi\nruns: 2\n---\n"
        "id: whole\ninput: hi\nruns: 1\nmin_pass_fraction: 1\n"
    )
    rc, err = lint(cases, "hard: {min_pass_fraction: 0.7}\n")
    assert rc == 0  # a warning, not a problem
    warned = [ln for ln in err.splitlines() if "warning" in ln]
    assert warned == [
        f"kit lint: warning: {tmp_path / 'cases.yaml'}: case 'one-run': runs: 1 cannot express its "
        "min_pass_fraction 0.8: 1 of 1 attempts must pass, a floor of 1 in all but name; give it runs: 5 or "
        "more to allow a failed attempt",
        f"kit lint: warning: {tmp_path / 'cases.yaml'}: case 'four-runs': runs: 4 cannot express its "
        "min_pass_fraction 0.8: 4 of 4 attempts must pass, a floor of 1 in all but name; give it runs: 5 or "
        "more to allow a failed attempt",
        f"kit lint: warning: {tmp_path / 'cases.yaml'}: case 'default-floor': runs: 2 cannot express gates.yaml's "
        "hard.min_pass_fraction 0.7: 2 of 2 attempts must pass, a floor of 1 in all but name; give it runs: 4 or "
        "more to allow a failed attempt",
    ]


def test_runs_for_floor():
    assert [runs_for_floor(f) for f in (0.8, 0.5, 0.9, 0.95, 1.0, 0.0)] == [5, 2, 10, 20, None, 1]
