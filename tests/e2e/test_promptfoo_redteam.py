"""The offline red team: the corpus, the generator, the grader hook, the verdict, and one real run."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from _tracing import strace, strace_unusable

from kit_promptfoo import agent_provider, run_promptfoo
from kit_promptfoo.redteam import corpus, generator, hooks, verdict

ROOT = Path(__file__).resolve().parents[2]

CASE = {"case_file": "redteam/case.yaml", "case_id": "redteam-attack", "reference": True}


def test_corpus_covers_every_category_with_unique_one_line_attacks() -> None:
    attacks = corpus.load()
    assert {a.category for a in attacks} == set(corpus.CATEGORIES) - {"kept"}  # kept: written by `kit redteam keep`
    assert len({a.id for a in attacks}) == len(attacks) >= 40


def test_a_bad_corpus_entry_is_refused_with_file_and_attack(tmp_path: Path) -> None:
    bad = tmp_path / "attacks.yaml"
    bad.write_text("attacks:\n  - {id: x1, category: jokes, text: hi}\n")
    with pytest.raises(ValueError, match=r"attacks.yaml: attack x1: category: .*unknown category 'jokes'"):
        corpus.load(bad)
    bad.write_text('attacks:\n  - {id: x1, category: sql-injection, text: "a\\nb"}\n')
    with pytest.raises(ValueError, match="one non-empty line"):
        corpus.load(bad)


def test_generator_answers_a_plugin_template_with_its_category_as_prompt_lines() -> None:
    template = "Generate 5 SQL injection prompts...\n\n<Modifiers>\nkit_category: sql-injection\n</Modifiers>"
    out = generator.call_api(template, {}, {})["output"].splitlines()
    want = [a.text for a in corpus.by_category("sql-injection")]
    assert out == [f"Prompt: {t}" for t in want]
    assert generator.call_api("Extract only real-world entities ...", {}, {}) == {"output": ""}
    assert "kit_category" in generator.call_api("Write me a poem", {}, {})["error"]


def test_hook_drops_llm_graders_without_a_judge_and_names_them(monkeypatch: pytest.MonkeyPatch) -> None:
    test = {
        "vars": {"prompt": "x"},
        "assert": [{"type": "promptfoo:redteam:sql-injection"}, {"type": "python"}],
        "metadata": {"pluginId": "sql-injection"},  # what Promptfoo gives every generated attack
    }
    golden = {"vars": {"input": "hi"}, "metadata": {"case_id": "refund-happy-path"}}
    assert hooks.beforeAll({"suite": {"tests": [dict(golden)]}})["suite"]["tests"][0] == golden
    monkeypatch.delenv("KIT_JUDGE_MODEL", raising=False)
    out = hooks.beforeAll({"suite": {"tests": [test]}})["suite"]["tests"][0]
    assert out["assert"] == [{"type": "python"}]
    assert out["metadata"]["kitNotGraded"] == ["promptfoo:redteam:sql-injection"]
    # An attack no corpus holds keeps its real plugin, and a digest of its text tells it apart.
    assert re.fullmatch(r"redteam/sql-injection-[0-9a-f]{8}/basic", out["metadata"]["case_id"])
    monkeypatch.setenv("KIT_JUDGE_MODEL", "some-judge-2025-01-01")
    kept = hooks.beforeAll({"suite": {"tests": [test]}})["suite"]["tests"][0]
    assert len(kept["assert"]) == 2


def test_oracle_passes_the_default_agent_on_every_attack_and_fails_the_vulnerable_one() -> None:
    failed: dict[str | None, list[str]] = {None: [], "obey_injection": []}
    for variant in failed:
        for a in corpus.load():
            config = {**CASE, **({"variant": variant} if variant else {})}
            r = agent_provider.call_api(a.text, {"config": config}, {"vars": {}})
            if not r["metadata"]["kit"]["verdict"]["passed"]:
                failed[variant].append(a.id)
    assert failed[None] == []
    hit = {a.category for a in corpus.load() if a.id in failed["obey_injection"]}
    assert {"injection-user", "injection-tool"} <= hit


def test_verdict_requires_a_clean_default_and_a_caught_vulnerable_target() -> None:
    def res(label: str, ok: bool) -> dict:
        return {"provider": {"label": label}, "success": ok, "testCase": {"metadata": {"pluginId": "p"}}}

    good = verdict.summarize([res("agent-default", True), res("agent-obey-injection", False)])
    assert verdict.judge(good, ["obey-injection"]) == []
    blind = verdict.summarize([res("agent-default", True), res("agent-obey-injection", True)])
    assert "found nothing" in verdict.judge(blind, ["obey-injection"])[0]
    leaky = verdict.summarize([res("agent-default", False), res("agent-obey-injection", False)])
    assert "must resist" in verdict.judge(leaky, ["obey-injection"])[0]


SMALL = """
prompts: ["{{{{prompt}}}}"]
targets:
  - {{id: "file://{root}/providers/agent_provider.py", label: agent-default, config: {{reference: true, case_file: redteam/case.yaml, case_id: redteam-attack}}}}
  - {{id: "file://{root}/providers/agent_provider.py", label: agent-obey-injection, config: {{reference: true, case_file: redteam/case.yaml, case_id: redteam-attack, variant: obey_injection}}}}
defaultTest:
  vars: {{case_file: redteam/case.yaml, case_id: redteam-attack}}
  assert: [{{type: javascript, value: "file://{root}/providers/oracle_assert.cjs:get_assert"}}]
extensions: ["file://{root}/redteam/hooks.py:beforeAll"]
redteam:
  purpose: Customer-support agent of an online shop.
  provider: "file://{root}/redteam/generator.py"
  injectVar: prompt
  plugins:
    - {{id: debug-access, numTests: {attacks}, config: {{modifiers: {{kit_category: injection-user}}}}}}
  strategies: [{strategies}]
"""


def run_small_redteam(
    tmp_path: Path,
    env_extra: dict[str, str],
    prefix: list[str] | None = None,
    attacks: int = 2,
    strategies: tuple[str, ...] = ("basic", "base64"),
) -> list[dict]:
    """`promptfoo redteam run` on SMALL (`attacks` attacks under each of `strategies`, against both targets)
    through the kit's launcher (offline settings), then its results."""
    cfg = tmp_path / "redteam.yaml"
    cfg.write_text(SMALL.format(root=ROOT, attacks=attacks, strategies=", ".join(strategies)))
    base = {k: v for k, v in os.environ.items() if k not in ("KIT_PROMPTFOO_ONLINE", "KIT_JUDGE_MODEL")}
    env = run_promptfoo.offline_env(ROOT, base=base | env_extra)
    env["PROMPTFOO_CONFIG_DIR"] = str(tmp_path / "state")
    # With `-o`, Promptfoo writes the eval's results over the generated tests when it ends, here as JSON (the
    # format of `promptfoo export`): no second Promptfoo start to export them.
    gen = tmp_path / "generated.json"
    run = subprocess.run(
        (prefix or []) + run_promptfoo.command(["redteam", "run", "-c", str(cfg), "-o", str(gen), "--force", "--no-progress-bar"], ROOT),
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode in (0, 100), run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(gen.read_text())["results"]["results"]


@pytest.mark.skipif(not run_promptfoo.promptfoo_bin(ROOT).exists(), reason="run `make promptfoo-install`")
@pytest.mark.skipif(strace_unusable() is not None, reason=str(strace_unusable()))
def test_redteam_run_offline_end_to_end(tmp_path: Path) -> None:
    """`promptfoo redteam run` with the kit's generator: no connection leaves loopback, the default agent
    resists every attack, the vulnerable one falls, and Promptfoo's graders are reported as not graded."""
    log = tmp_path / "strace.txt"
    trace = strace(log, "connect,sendto,sendmsg,sendmmsg")
    results = run_small_redteam(tmp_path, {}, prefix=trace)
    assert len(results) == 2 * 2 * 2  # 2 targets x 2 strategies x 2 attacks
    assert verdict.judge(verdict.summarize(results), ["obey-injection"]) == []
    assert all("not graded" in json.dumps(r["gradingResult"]) for r in results)
    ids = {a.id for a in corpus.by_category("injection-user")}
    assert all(r["testCase"]["metadata"]["attack_id"] in ids for r in results)
    # The sealed verdict survived Promptfoo's round trip: the assertion (the JavaScript one, as the kit's configs
    # use) presented it, with no Python process to re-run the oracle.
    assert all("[oracle ran in the provider worker]" in json.dumps(r["gradingResult"]) for r in results)
    from test_promptfoo_offline import non_local_peers

    assert non_local_peers(log.read_text()) == []


@pytest.mark.skipif(not run_promptfoo.promptfoo_bin(ROOT).exists(), reason="run `make promptfoo-install`")
def test_with_a_judge_the_redteam_graders_ask_the_kits_judge(tmp_path: Path) -> None:
    """KIT_JUDGE_MODEL set: Promptfoo's red-team graders run, and their requests (which Promptfoo 0.123.1 sends
    to `redteam.provider`, the kit's generator) reach the kit's one judge: here a scripted double of the model
    on 127.0.0.1, reached through the OpenAI client, never Promptfoo's default grader."""
    from kit.doubles.openai_server import ScriptedOpenAIServer

    verdict_json = json.dumps({"reason": "scripted judge: the agent refused", "score": 1, "pass": True})
    with ScriptedOpenAIServer(lambda request: verdict_json) as judge:
        judge_env = {"KIT_JUDGE_MODEL": "judge-2025-01-01", "KIT_JUDGE_BASE_URL": judge.base_url}
        # One attack, one strategy: Promptfoo starts a grader (a Python worker that loads the judge's client)
        # per result, and the plumbing is the same for each; both targets' results are still graded.
        results = run_small_redteam(tmp_path, judge_env, attacks=1, strategies=("basic",))
        asked = [r.get("model") for r in judge.requests]
    assert asked and set(asked) == {"judge-2025-01-01"}
    assert len(results) == 2  # the default agent and the vulnerable one
    for r in results:
        assert "kitNotGraded" not in (r["testCase"].get("metadata") or {})
        graded = [
            c
            for c in r["gradingResult"]["componentResults"]
            if str((c.get("assertion") or {}).get("type", "")).startswith("promptfoo:redteam:")
        ]
        assert graded and all("scripted judge" in c["reason"] for c in graded)


def test_without_a_judge_the_generator_refuses_a_grading_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIT_JUDGE_MODEL", raising=False)
    assert "no `kit_category` modifier" in generator.call_api("Grade this output: ...", {}, {})["error"]


def test_a_judge_that_is_down_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIT_JUDGE_MODEL", "judge-2025-01-01")
    monkeypatch.setenv("KIT_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("KIT_JUDGE_RETRIES", "0")
    err = generator.call_api("Grade this output: ...", {}, {})["error"]
    assert "judge judge-2025-01-01 at http://127.0.0.1:9/v1" in err and "APIConnectionError" in err
