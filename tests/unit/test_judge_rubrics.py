"""The rubric file, the offline switches and the soft-gate floor arithmetic (no DeepEval import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deepeval_metrics.offline import quiet_offline
from kit.case import parse_case
from kit.errors import KitInputError
from kit.gate.verdict import SoftFloor as FloorResult
from kit.judge.rubrics import load_rubrics

ROOT = Path(__file__).resolve().parents[2]


def _case(id_: str, tags: list[str]):
    return parse_case({"id": id_, "input": "x", "tags": tags}, file=None, base_dir=None, invariants={})


def test_golden_rubrics_load_and_select_by_tag_and_id(tmp_path: Path) -> None:
    rubrics = load_rubrics(ROOT / "golden" / "rubrics.yaml")
    assert rubrics.rubrics, "golden/rubrics.yaml declares no rubric"
    f = tmp_path / "r.yaml"
    f.write_text(
        "rubrics:\n"
        "  - {name: all, criteria: c}\n"
        "  - {name: tagged, criteria: c, applies_to: {tags: [refund]}}\n"
        "  - {name: by_id, evaluation_steps: [s], applies_to: {cases: ['kb-*']}}\n"
    )
    rs = load_rubrics(f)
    assert [r.name for r in rs.for_case(_case("refund-1", ["refund"]))] == ["all", "tagged"]
    assert [r.name for r in rs.for_case(_case("kb-warranty", []))] == ["all", "by_id"]


def test_rubric_hash_changes_with_the_text_only() -> None:
    from kit.judge.rubrics import Rubric

    a = Rubric(name="a", criteria="Is it polite?")
    assert a.hash == Rubric(name="renamed", criteria="Is it polite?").hash
    assert a.hash != Rubric(name="a", criteria="Is it polite?!").hash
    assert a.hash != Rubric(name="a", criteria="Is it polite?", threshold=0.9).hash


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("rubrics:\n  - {name: x}\n", "check rubric:x: give criteria or evaluation_steps"),
        ("rubrics:\n  - {name: x, criteria: c, params: [nope]}\n", "unknown params ['nope']"),
        ("rubrics:\n  - {name: x, criteria: c, threshold: 2}\n", "check rubric:x: threshold"),
        ("rubrics:\n  - {name: x, criteria: c}\n  - {name: x, criteria: d}\n", "duplicate rubric names ['x']"),
        ("rubrics:\n  - {name: x, criteria: c, floor: 0.5}\n", "check rubric:x: floor: Extra inputs"),
        ("rubrics: [\n", "malformed YAML"),
    ],
)
def test_bad_rubric_files_name_file_and_rubric(tmp_path: Path, body: str, fragment: str) -> None:
    f = tmp_path / "rubrics.yaml"
    f.write_text(body)
    with pytest.raises(KitInputError) as err:
        load_rubrics(f)
    assert str(err.value).startswith(str(f)) and fragment in str(err.value)


def test_missing_rubric_file_means_no_rubrics(tmp_path: Path) -> None:
    assert load_rubrics(tmp_path / "none.yaml").rubrics == []


def test_quiet_offline_forces_telemetry_off_and_blanks_the_upload_key() -> None:
    env = {"DEEPEVAL_TELEMETRY_OPT_OUT": "0", "CONFIDENT_API_KEY": "ck-live", "DEEPEVAL_DISABLE_DOTENV": "0"}
    quiet_offline(env)
    assert env["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1" and env["DEEPEVAL_UPDATE_WARNING_OPT_IN"] == "0"
    assert env["CONFIDENT_API_KEY"] == ""  # DeepEval reads an empty key as none: no upload
    assert env["DEEPEVAL_DISABLE_DOTENV"] == "0"  # an explicit choice is kept
    asked = {"CONFIDENT_API_KEY": "ck-live", "KIT_DEEPEVAL_UPLOAD": "1"}
    quiet_offline(asked)
    assert asked["CONFIDENT_API_KEY"] == "ck-live" and asked["DEEPEVAL_DISABLE_DOTENV"] == "1"


def test_floor_arithmetic_never_counts_a_skip_as_a_pass() -> None:
    ok = FloorResult("rubric:a", passed=4, failed=1, errors=0, skipped=5, floor=0.8)
    assert ok.rate == 0.8 and not ok.below_floor and "4/5 passed" in ok.line() and "5 skipped" in ok.line()
    low = FloorResult("rubric:a", passed=3, failed=1, errors=1, skipped=0, floor=0.8)
    # A judge error is no verdict on the agent: left out of the rate unless `soft: {errors: fail}`.
    assert low.rate == 0.75 and low.below_floor and "BELOW FLOOR" in low.line() and "1 judge errors" in low.line()
    counted = FloorResult("rubric:a", passed=3, failed=1, errors=1, skipped=0, floor=0.8, errors_fail=True)
    assert counted.rate == 0.6 and counted.below_floor
    down = FloorResult("rubric:a", passed=0, failed=0, errors=5, skipped=0, floor=0.8)
    assert down.rate is None and not down.below_floor and "the judge failed on all 5 verdicts" in down.line()
    none = FloorResult("rubric:a", passed=0, failed=0, errors=0, skipped=7, floor=0.8)
    assert none.rate is None and not none.below_floor and "not a pass" in none.line()
    strict = FloorResult("rubric:a", passed=4, failed=0, errors=0, skipped=4, floor=0.8, skipped_fails=True)
    assert strict.rate == 0.5 and strict.below_floor


def test_rubric_loading_does_not_import_deepeval() -> None:
    code = "import sys, kit.judge.rubrics; assert 'deepeval' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
