"""Promptfoo extension hook (beforeAll): name each attack, and let Promptfoo's LLM graders take part only
when a judge is configured.

Naming: each generated test gets `metadata.case_id` = `redteam/<attack id>/<strategy>` (the attack found by
its original text in any corpus the generator may have answered from: the settings', the generic one, the
scripted conversations), so the store keeps one case per attack and strategy. An attack no corpus holds (a
model wrote it) is `redteam/<plugin>-<digest of its text>/<strategy>`: its real plugin, never "unknown".

Every red-team plugin attaches its own LLM-graded assertion (`promptfoo:redteam:<plugin>`). With no judge
model in the plan (no `[tool.kit.judge] model`, KIT_JUDGE_MODEL) those assertions cannot be graded
offline: this hook removes them from each test and lists them in the test's `metadata.kitNotGraded`, which
the oracle assertion reports as "not graded" - never as a pass. Pass and fail then rest on the oracle's
invariants alone. With a judge configured the graders stay: Promptfoo sends their requests to
`redteam.provider` (redteam/generator.py), which forwards them to the kit's one judge.

Under recordings (`[tool.kit.recordings] mode` not live), the model calls that leave from Node (the attacker's,
the graders' through grader.cjs) are recorded and replayed only through the kit's endpoints `make evals` starts
and names in the plan (`Plan.node_endpoints`). A red team typed by hand (`npx promptfoo redteam run`) has none:
this hook refuses it, naming `make evals`, rather than let those calls reach the model unrecorded.

A deliberately vulnerable control target (a `control-` label) gets only the attacks it can read: an attack
that a strategy encoded (base64, leetspeak, ...) goes to the other targets alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from kit.mcp import attacked
from kit_promptfoo.redteam import corpus, multiturn

PREFIX = "promptfoo:redteam:"


def strip_graders(test: dict[str, Any]) -> dict[str, Any]:
    kept, dropped = [], []
    for a in test.get("assert") or []:
        kind = a.get("type", "") if isinstance(a, dict) else ""
        (dropped if kind.startswith(PREFIX) else kept).append(a)
    if not dropped:
        return test
    meta = dict(test.get("metadata") or {})
    meta["kitNotGraded"] = sorted({*meta.get("kitNotGraded", []), *(a["type"] for a in dropped)})
    return {**test, "assert": kept, "metadata": meta}


def _texts(test: dict[str, Any]) -> list[str]:
    """What the attack said before a strategy changed it: Promptfoo's `originalText`, else the var it was
    injected into (the config's `injectVar`: `prompt`, `input`, ...)."""
    meta = test.get("metadata") or {}
    vars_ = test.get("vars") or {}
    found = [meta.get("originalText"), *vars_.values()]
    return [str(t).strip() for t in found if isinstance(t, str) and t.strip()]


def attack_name(test: dict[str, Any], ids: dict[str, str]) -> str:
    """The goal's id (an adaptive attack aimed at an invariant), the attack's id in a corpus, else
    `<plugin>-<digest>` of its text."""
    meta = test.get("metadata") or {}
    goal = ((meta.get("pluginConfig") or {}).get("modifiers") or {}).get("kit_goal_id")
    if goal:
        return str(goal)
    texts = _texts(test)
    for text in texts:
        if text in ids:
            return ids[text]
    plugin = str((test.get("metadata") or {}).get("pluginId") or "attack").replace("/", "-")
    digest = hashlib.sha256((texts[0] if texts else "").encode("utf-8")).hexdigest()[:8]
    return f"{plugin}-{digest}"


def name_attack(test: dict[str, Any], ids: dict[str, str], kept: dict[str, str] | None = None) -> dict[str, Any]:
    """The attack named in its metadata and its vars: the red-team target judges every named attack by the suite's
    invariants too, and a kept one (`kept`: its id -> the invariant it broke) by that invariant at least."""
    meta = dict(test.get("metadata") or {})
    attack = attack_name(test, ids)
    meta.setdefault("case_id", f"redteam/{attack}/{meta.get('strategyId') or 'basic'}")
    meta.setdefault("attack_id", attack)
    vars_ = {**(test.get("vars") or {}), "kit_attack": meta["attack_id"]}
    invariant = (kept or {}).get(str(meta["attack_id"]))
    if invariant:
        vars_["kit_invariant"] = invariant
    return {**test, "metadata": meta, "vars": vars_}


def kept_invariants(configured: Path) -> dict[str, str]:
    """Each kept attack of the plan's corpus -> the invariant it broke when `kit redteam keep` kept it."""
    try:
        return {a.id: a.invariant for a in corpus.load(configured) if a.invariant}
    except (OSError, ValueError):
        return {}  # the generator names a corpus that does not load


def known_attacks(configured: Path, mcp_tools: set[str] | None = None) -> dict[str, str]:
    """Attack text -> id over every corpus the generator may have answered from: the plan's (`configured`, when
    it loads), the generic one, the scripted conversations and the MCP attacks' questions (built from the team's
    tool names, `mcp_tools`)."""
    ids: dict[str, str] = {}
    for path in (corpus.GENERIC, configured):
        try:
            ids |= {a.text: a.id for a in corpus.load(path)}
        except (OSError, ValueError):
            continue
    mcp = {q: attacked.attack_id(a) for a, q in attacked.questions(mcp_tools or set()).items()}
    return ids | {a.prompt: a.id for a in multiturn.load()} | mcp


def mcp_case(root: Path, tool_names: set[str]) -> Path:
    """The case judging the MCP attacks, built from the team's tool names (kit.mcp.attacked.case) and written under
    the project's .kit/: a case of the kit's own domain is never shipped into a team's repository."""
    path = root / ".kit" / "redteam" / "mcp" / "case.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# GENERATED by the red team's hook from the team's MCP tools (kit.mcp.attacked.case)\n"
    text = header + yaml.safe_dump(attacked.case(tool_names), sort_keys=False, width=110)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def mcp_attack(test: dict[str, Any], tool_names: set[str], case_file: Path) -> dict[str, Any]:
    """An attack through the agent's MCP servers: which one (the red-team target serves it, kit.mcp.attacked)
    and the case that judges it. A test of the plugin whose text is none of its questions is an error."""
    by_text = {q: a for a, q in attacked.questions(tool_names).items()}
    attack = next((by_text[t] for t in _texts(test) if t in by_text), None)
    if attack is None:
        raise RuntimeError(f"a {attacked.PLUGIN} test asks none of the MCP attacks' questions: {_texts(test)[:1]}")
    vars_ = {**(test.get("vars") or {}), "kit_mcp_attack": attack, "case_file": str(case_file)}
    return {**test, "vars": {**vars_, "case_id": attacked.CASE_ID}}


def is_mcp_attack(test: dict[str, Any]) -> bool:
    mods = (((test.get("metadata") or {}).get("pluginConfig") or {}).get("modifiers")) or {}
    return mods.get("kit_category") == attacked.PLUGIN


# Promptfoo's strategies that hold a conversation with an attacker model: judged per conversation (target.py).
ADAPTIVE = ("crescendo", "jailbreak:tree", "iterative", "goat", "jailbreak:hydra", "jailbreak:meta")
ASSERTION = "file://" + (Path(__file__).resolve().parent / "conversation_assert.cjs").as_posix() + ":get_assert"


def is_adaptive(test: dict[str, Any]) -> bool:
    return str((test.get("metadata") or {}).get("strategyId") or "") in ADAPTIVE


STALE_S = 24 * 3600  # an eval's conversations folder this old was left by a run that died before its afterAll


def conversations_folder(root: Path, now: float | None = None) -> Path:
    """Where this eval's adaptive attacks leave their conversations' sealed verdicts (one folder per eval, under
    the project's `root`). conversation_assert.cjs:afterAll removes it once the results are stored; folders
    older than a day (a run that died first) are pruned here."""
    parent = root / ".kit" / "redteam" / "conversations"
    now = time.time() if now is None else now
    for old in parent.glob("*") if parent.is_dir() else ():
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink() and now - old.stat().st_mtime > STALE_S:
                shutil.rmtree(old)
    return parent / uuid.uuid4().hex[:12]


def judge_by_conversation(test: dict[str, Any], folder: Path) -> dict[str, Any]:
    """An adaptive attack: its conversations go to the red-team target's sessions and their ledger in a folder
    of its own, and conversation_assert.cjs judges them (the default oracle assertion reads the provider's
    metadata, which a multi-turn strategy drops)."""
    meta = test.get("metadata") or {}
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", str(meta.get("case_id") or "attack"))
    vars_ = {**(test.get("vars") or {}), "kit_ledger": str(folder / slug)}
    options = {**(test.get("options") or {}), "disableDefaultAsserts": True}
    kept = [a for a in test.get("assert") or [] if not (isinstance(a, dict) and a.get("type") == "javascript")]
    return {**test, "vars": vars_, "options": options, "assert": [*kept, {"type": "javascript", "value": ASSERTION}]}


# Promptfoo's strategies that encode an attack's text. The control target is the reference agent with no model:
# it cannot read them, so it can only resist them, and running them there proves nothing (a third of the red
# team's calls). The control target gets the attacks it can read; the agent gets every one.
ENCODINGS = frozenset({"base64", "camelcase", "emoji", "hex", "homoglyph", "leetspeak", "morse", "piglatin", "rot13"})


def readers(suite: dict[str, Any]) -> list[str] | None:
    """The labels of the targets that are not a control (`control-...`, as the store tells a control run): the
    targets an encoded attack goes to. None when there is no control, or a target has no label to name it by."""
    labels = [p.get("label") if isinstance(p, dict) else None for p in suite.get("providers") or []]
    if not any(isinstance(lbl, str) and lbl.startswith("control-") for lbl in labels):
        return None
    if not all(isinstance(lbl, str) and lbl for lbl in labels):
        return None
    return [lbl for lbl in labels if isinstance(lbl, str) and not lbl.startswith("control-")]


def spare_control(test: dict[str, Any], targets: list[str]) -> dict[str, Any]:
    """An encoded attack goes to `targets` only (Promptfoo's per-test `providers`), never to the control."""
    if str((test.get("metadata") or {}).get("strategyId") or "") not in ENCODINGS or "providers" in test:
        return test
    return {**test, "providers": targets}


def is_attack(test: dict[str, Any]) -> bool:
    return bool((test.get("metadata") or {}).get("pluginId"))


def unserved(plan: Any, tests: list[dict[str, Any]]) -> str | None:
    """Why this red team may not run under the plan's recordings: a Node-side model (the attacker; the judge, when
    a test keeps an LLM grader) whose calls no kit endpoint records or replays. None: it may."""
    recordings = plan.recordings
    if recordings is None:
        return None
    served = plan.node_endpoints
    attacker = plan.settings.redteam.attacker
    asserts = [a for t in tests for a in t.get("assert") or [] if isinstance(a, dict)]
    graded = any(str(a.get("type", "")).startswith(PREFIX) for a in asserts)
    missing = [
        *([f"the attacker ({attacker})"] if attacker and "attacker" not in served else []),
        *(["the judge's graders (grader.cjs)"] if graded and plan.judge is not None and "grader" not in served else []),
    ]
    if not missing:
        return None
    return (
        f"[tool.kit.recordings] mode is {recordings.mode}, and {' and '.join(missing)} call their model from Node, "
        "which only `make evals` records and replays (it serves those calls from the kit's recordings endpoint): "
        'run `make evals`, or set mode = "live" to call the model'
    )


def beforeAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> dict[str, Any]:
    from kit.plan import current_plan

    # The plan `make evals` hands over (KIT_PLAN), else the settings'; the agent is not loaded (the hook needs none).
    plan = current_plan()
    suite = context["suite"]
    mcp_tools = attacked.all_names(plan.settings) if plan.settings.mcp.servers else set()
    ids = known_attacks(plan.redteam_corpus, mcp_tools)
    # Only generated attacks are named: the root config's golden tests share this hook and keep their ids.
    kept = kept_invariants(plan.redteam_corpus)
    tests = [name_attack(t, ids, kept) if is_attack(t) else t for t in suite.get("tests") or []]
    if any(is_mcp_attack(t) for t in tests):
        case_file = mcp_case(plan.root, mcp_tools)
        tests = [mcp_attack(t, mcp_tools, case_file) if is_mcp_attack(t) else t for t in tests]
    if plan.judge is None:
        tests = [strip_graders(t) for t in tests]
    refused = unserved(plan, tests)
    if refused is not None:
        raise RuntimeError(refused)
    targets = readers(suite)
    if targets is not None:
        tests = [spare_control(t, targets) for t in tests]
    if any(is_adaptive(t) for t in tests):
        if not any(str(e).endswith("keep_providers.cjs:restore") for e in suite.get("extensions") or []):
            # This hook hands tests back as JSON: without keep_providers.cjs around it, each adaptive attack's
            # strategy provider would be lost and the attack sent to the target as one plain prompt.
            raise RuntimeError(
                "adaptive red-team strategies need kit_promptfoo/redteam/keep_providers.cjs:stash before this hook "
                "and :restore after it in `extensions` (kit_promptfoo.redteam.config writes them)"
            )
        folder = conversations_folder(plan.root)
        tests = [judge_by_conversation(t, folder) if is_adaptive(t) else t for t in tests]
    suite["tests"] = tests
    return context
