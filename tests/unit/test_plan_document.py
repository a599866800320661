"""kit.plan's document: one JSON document carries the whole plan across a process boundary."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from kit.errors import KitInputError
from kit.plan import PLAN_ENV, current_plan, make_plan, plan_from_document, read_document
from kit.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def _settings(tmp_path: Path, **env: str):
    return load_settings(root=tmp_path, env={"KIT_STORE": str(tmp_path / "s.duckdb"), **env})


def test_document_is_json_and_names_everything(tmp_path: Path) -> None:
    plan = make_plan(_settings(tmp_path, KIT_CASES=str(ROOT / "golden")), variant="double_refund")
    doc = json.loads(json.dumps(plan.document()))
    assert doc["variant"] == "double_refund" and doc["settings"]["variant"] == "double_refund"
    assert doc["agent"] == "reference:deterministic+double_refund"
    assert doc["agent_policy"] == "deterministic" and doc["kind"] == "golden"
    assert doc["model"] == "deterministic-policy"
    assert doc["store"] == str(tmp_path / "s.duckdb")
    assert doc["invariants"] == str(ROOT / "golden" / "invariants.yaml")
    files = {Path(f["path"]).name for f in doc["case_files"]}
    assert "refunds.yaml" in files and all(len(f["sha256"]) == 64 for f in doc["case_files"])
    assert doc["judge"] is None and doc["evals_id"] is None
    assert set(doc) >= {"replay", "record", "cases", "redteam_corpus"}


def test_variant_policy_and_cassettes_travel(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    plan = make_plan(_settings(tmp_path), variant="double_refund", policy="deterministic", replay=tapes)
    env = plan.env()
    assert set(env) == {PLAN_ENV}  # the document alone: no KIT_* copy of a setting beside it
    again = current_plan(env=env)
    assert again.agent.name == plan.agent.name == "reference:deterministic+replay+double_refund"
    assert again.variant == "double_refund" and again.replay == tapes.absolute()
    assert again.store == plan.store and again.kind == "golden"


def test_front_end_additions_apply_over_the_document(tmp_path: Path) -> None:
    env = make_plan(_settings(tmp_path)).env()
    control = current_plan(variant="obey_injection", kind="control", env=env)
    assert control.variant == "obey_injection" and control.kind == "control"
    with pytest.raises(KitInputError, match="no agent named"):
        current_plan(reference_ok=False, env=env)


def test_secrets_stay_out_of_the_file(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        KIT_JUDGE_MODEL="judge-2025-01-01",
        KIT_JUDGE_BASE_URL="http://127.0.0.1:9/v1",
        KIT_JUDGE_API_KEY="sk-secret-value",
    )
    env = make_plan(settings).env()
    text = Path(env[PLAN_ENV]).read_text()
    assert "sk-secret-value" not in text
    assert env["KIT_JUDGE_API_KEY"] == "sk-secret-value"
    plan = current_plan(env=env)
    assert plan.judge is not None and plan.judge.api_key == "sk-secret-value"
    assert read_document(env[PLAN_ENV])["judge"]["model"] == "judge-2025-01-01"
    assert current_plan(env={PLAN_ENV: env[PLAN_ENV]}).judge.api_key is None  # type: ignore[union-attr]


def test_a_case_file_changed_since_the_plan_is_an_error(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(ROOT / "golden" / "cases", cases)
    doc = make_plan(_settings(tmp_path, KIT_CASES=str(cases))).document()
    plan_from_document(doc)
    (cases / "refunds.yaml").write_text((cases / "refunds.yaml").read_text() + "\n# edited\n")
    with pytest.raises(KitInputError, match="changed since the plan was made") as e:
        plan_from_document(doc)
    assert "refunds.yaml" in str(e.value)


def test_a_bad_document_names_the_variable(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    with pytest.raises(KitInputError, match=PLAN_ENV):
        current_plan(env={PLAN_ENV: str(bad)})
    with pytest.raises(KitInputError, match="cannot read"):
        current_plan(env={PLAN_ENV: str(tmp_path / "gone.json")})


def test_derive_changes_settings_and_keeps_the_agent(tmp_path: Path) -> None:
    plan = make_plan(_settings(tmp_path, KIT_RUN_ID="r1"), variant="double_refund")
    stage = plan.derive(run_id=None, evals_id="evals-1", replay_runs=tmp_path / "runs.jsonl")
    assert stage.settings.run_id is None and stage.evals_id == "evals-1" and stage.replaying
    assert stage.variant == "double_refund"
    assert current_plan(env=stage.env()).evals_id == "evals-1"
    with pytest.raises(KitInputError, match="concurrency"):
        plan.derive(concurrency=0)


def test_redteam_corpus_is_the_settings_or_the_generic_one(tmp_path: Path) -> None:
    ref = make_plan(_settings(tmp_path))
    assert ref.redteam_corpus.name == "attacks.yaml" and ref.redteam_corpus.parent.name == "redteam"
    user = make_plan(_settings(tmp_path), agent="kit.doubles.slow_agent:sync_agent")
    assert user.redteam_corpus.parent.name == "generic" and user.redteam_corpus.is_file()
    own = make_plan(
        _settings(tmp_path, KIT_REDTEAM_CORPUS=str(tmp_path / "mine.yaml")), agent="kit.doubles.slow_agent:sync_agent"
    )
    assert own.redteam_corpus == tmp_path / "mine.yaml"
    assert current_plan(env=own.env()).redteam_corpus == tmp_path / "mine.yaml"


def test_a_users_repository_with_the_kit_installed_inside_runs_its_own_attacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `kit init` repository whose venv (and so the installed adapter) lies inside it is not the kit's
    checkout: its redteam/attacks.yaml is the user's own, never swapped for the generic attacks."""
    import kit.plan

    (tmp_path / "pyproject.toml").write_text('[tool.kit]\nagent = "desk:run"\n')
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    monkeypatch.setattr(
        kit.plan, "generic_corpus", lambda: site / "kit_promptfoo" / "redteam" / "generic" / "attacks.yaml"
    )
    settings = load_settings(root=tmp_path, env={})
    assert kit.plan.redteam_corpus(settings) == tmp_path / "redteam" / "attacks.yaml"
    # The kit's own checkout: its top-level kit_promptfoo/ is the adapter, and a user's agent gets the generic attacks.
    generic = tmp_path / "kit_promptfoo" / "redteam" / "generic" / "attacks.yaml"
    monkeypatch.setattr(kit.plan, "generic_corpus", lambda: generic)
    assert kit.plan.redteam_corpus(settings) == generic


def test_without_the_variable_the_settings_make_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = current_plan(env={"KIT_VARIANT": "double_refund", "KIT_STORE": "s.duckdb"})
    assert plan.variant == "double_refund"
    assert os.path.isabs(plan.store)


def test_a_plan_read_back_writes_the_same_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher that re-exports the plan it was handed (Promptfoo's, under `make evals`) hands on the very
    same document: the round trip changes nothing."""
    env = make_plan(_settings(tmp_path), variant="double_refund").env()
    assert current_plan(env=env).env()[PLAN_ENV] == env[PLAN_ENV]


def test_documents_nobody_used_for_a_week_are_removed(tmp_path: Path) -> None:
    plan = make_plan(_settings(tmp_path))
    old = Path(plan.env()[PLAN_ENV])
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    again = Path(plan.env()[PLAN_ENV])  # the same plan: in use again, kept
    assert again == old and old.stat().st_mtime > week_ago
    os.utime(old, (week_ago, week_ago))
    Path(plan.derive(evals_id="evals-2").env()[PLAN_ENV])  # another plan's document prunes the unused one
    assert not old.exists()


def test_current_settings_read_the_document_without_loading_the_agent(tmp_path: Path) -> None:
    from kit.settings import current_settings

    agent = tmp_path / "agent_never_imported.py"
    agent.write_text("raise SystemExit('imported')\n")
    settings = _settings(tmp_path, KIT_EVALS_ID="evals-9").model_copy(
        update={"agent": "agent_never_imported:run", "project_file": None}
    )
    doc = {**make_plan(_settings(tmp_path)).document(), "settings": settings.model_dump(mode="json")}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    got = current_settings(env={PLAN_ENV: str(path)})
    assert got.evals_id == "evals-9" and got.agent == "agent_never_imported:run"


def test_the_red_teams_hook_asks_the_plan_whether_there_is_a_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kit_promptfoo.redteam.hooks import beforeAll

    def judge_configured() -> bool:  # the hook strips Promptfoo's LLM graders when the plan has no judge
        test = {"vars": {"prompt": "x"}, "assert": [{"type": "promptfoo:redteam:pii"}], "metadata": {}}
        return bool(beforeAll({"suite": {"tests": [test]}})["suite"]["tests"][0]["assert"])

    judged = _settings(tmp_path, KIT_JUDGE_MODEL="judge-2025-01-01", KIT_JUDGE_BASE_URL="http://127.0.0.1:9/v1")
    for var in [v for v in os.environ if v.startswith("KIT_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv(PLAN_ENV, make_plan(judged).env()[PLAN_ENV])
    assert judge_configured()  # the document alone says so: no KIT_JUDGE_MODEL in this environment
    monkeypatch.setenv(PLAN_ENV, make_plan(_settings(tmp_path)).env()[PLAN_ENV])
    monkeypatch.setenv("KIT_JUDGE_MODEL", "ignored-2025-01-01")  # the document wins over a stray variable
    assert not judge_configured()


def test_a_plan_read_back_imports_a_users_agent_only_where_first_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that only judges recorded runs (DeepEval's, Promptfoo's provider workers) never imports the
    user's agent, whose module may import a whole SDK; its first use imports it, and one that cannot be
    imported is the same error there as in `kit run` and `make evals`, which import it at once."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "lazy_desk.py").write_text("def run(text):\n    return 'hi'\n")
    env = make_plan(_settings(tmp_path, KIT_AGENT="lazy_desk:run")).env()
    monkeypatch.delitem(sys.modules, "lazy_desk")  # make_plan imported it at once
    plan = current_plan(env=env)
    assert plan.agent_name == "lazy_desk:run" and not plan.reference and plan.variant is None
    assert plan.document()["agent"] == "lazy_desk:run"
    assert "lazy_desk" not in sys.modules
    assert plan.agent.name == "lazy_desk:run" and "lazy_desk" in sys.modules

    missing = _settings(tmp_path, KIT_AGENT="no_such_desk:run")
    with pytest.raises(KitInputError, match="cannot import no_such_desk"):
        make_plan(missing)
    doc = {**make_plan(_settings(tmp_path)).document(), "settings": missing.model_dump(mode="json")}
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    deferred = current_plan(env={PLAN_ENV: str(tmp_path / "plan.json")})
    with pytest.raises(KitInputError, match="cannot import no_such_desk"):
        deferred.agent  # noqa: B018
