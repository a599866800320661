"""The stages of `make evals`: which exist, in which order, under which names, and what each must leave in the
store. How they run (processes, threads, time limits, logs) is kit.pipeline.executor's.

A stage is a few steps. A step is either a kit function called in this process (lint, the kit's runner,
storing a Promptfoo result file) or a tool's own command (`deepeval test run`, the Promptfoo launcher), never
`make` or `kit` again.

Lint runs first and alone, and a problem there stops the build before any agent call (`required`). The tools'
stages (DeepEval, Promptfoo eval, the red team) run at the same time, after the kit's runner: each is mostly
one tool process waiting on its own workers, so together they fill the cores that each alone leaves idle.
The kit's runner runs alone because it forks its workers, which is unsafe while other threads run.

Run once, judge everywhere: the kit's runner calls the agent once per case and attempt and saves those runs
(kit.runner.recorded); DeepEval and the Promptfoo eval judge the same runs (KIT_REPLAY_RUNS) and call no
agent. Only the red team calls the agent again, once per attack. Every stage is built from the one plan
(kit.plan), has a time limit, and says which runs it must leave in the store: a stage that breaks, or whose
runs are missing, fails the build by name.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

from kit.errors import KitInputError
from kit.offline import DEEPEVAL, deepeval_upload_requested
from kit.pipeline.executor import Stage, Step
from kit.plan import Plan, generic_corpus

PROMPTFOO_EVAL = ("eval", "-c", "promptfooconfig.yaml", "--no-progress-bar", "--no-table", "-o")
# No `-o`: the generated tests go to redteam.yaml beside the config all the same, and with `-o` Promptfoo
# also writes the whole eval's results over that file as YAML when it ends (seconds, for nothing).
PROMPTFOO_REDTEAM = ("redteam", "run", "-c", "redteam/promptfooconfig.yaml", "--force")

# The red team's Promptfoo expands no `{{env.X}}`. Its configs are the kit's and template no variable, while an
# attack's text is data: expanded, a `{{env.OPENAI_API_KEY}}` in an attack would reach the agent (and the store)
# as the key itself. It also spares Promptfoo a copy of the whole environment for every string of the config.
NO_ENV_TEMPLATES = {"PROMPTFOO_DISABLE_TEMPLATE_ENV_VARS": "true"}

OUT = Path(".kit")  # where the summary, reports and logs go; Promptfoo's configs and results under promptfoo/
# Where an OpenAI-compatible client with no base URL of its own sends its calls (Promptfoo's openai: provider).
OPENAI_BASE = "https://api.openai.com/v1"
# The kit's recordings endpoints this process started (kit.recording.endpoint): they serve until it exits.
_SERVING: list[object] = []


def _tool(name: str) -> str:
    """A console script installed beside this Python (the project's venv), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def _launcher() -> tuple[str, ...]:
    return (sys.executable, "-m", "kit_promptfoo.run_promptfoo")


def lint_stage(plan: Plan) -> Stage:
    """`kit lint` on the plan's cases, with the plan's settings (its invariants, rubrics and gates)."""
    from kit.commands.lint import lint, show

    def run() -> int:
        return show(lint(Path(plan.cases), settings=plan.settings))

    return Stage(
        "lint", f"kit lint {plan.cases}", (Step(f"kit lint {plan.cases}", call=run),), timeout=600.0, required=True
    )


def kit_stage(plan: Plan, runs_file: Path, shards: Path | None = None) -> Stage:
    """The kit's runner on the plan's agent (or variant of the reference agent), its run under the plan's
    evals id, saving every run for the other front ends to judge; or the merge of CI shards (a folder of
    them), whose runs are saved the same way."""
    from kit.runner.store_writer import RunRequest, run_plan

    if shards is not None:
        parts = shard_parts(shards)

        def merged() -> int:
            return merge_shards(plan, parts, runs_file)

        return Stage(
            "kit",
            "the kit's runner (merged from CI shards)",
            (Step(f"kit run --merge {len(parts)} shards", call=merged),),
            (("kit", "golden"),),
            judged=frozenset({1}),
            timeout=plan.settings.stage_timeout,
        )

    def run() -> int:
        return run_plan(plan, RunRequest(quiet=True, save_runs=str(runs_file)))

    who = (
        plan.agent.name
        if not plan.reference
        else "the reference agent" + (f" (variant {plan.variant})" if plan.variant else "")
    )
    return Stage(
        "kit",
        f"the kit's runner on {who}",
        (Step(f"kit run (plan: {plan.agent.name} on {plan.cases})", call=run),),
        (("kit", "golden"),),
        judged=frozenset({1}),
        timeout=plan.settings.stage_timeout,
    )


def shard_parts(shards: Path, setting: str = "--shards") -> list[str]:
    """The shard files or folders in a CI matrix's download folder; a folder that is not there, or holds no
    shard, is bad input naming the setting (the kit's runner never runs in their place)."""
    if not shards.exists():
        raise KitInputError(f"{setting}={shards}: no such folder")
    if not shards.is_dir():
        raise KitInputError(f"{setting}={shards}: not a folder")
    try:
        parts = sorted(str(p) for p in shards.iterdir() if not p.name.startswith("."))
    except OSError as e:
        raise KitInputError(f"{setting}={shards}: cannot read the folder: {e.strerror}") from None
    if not parts:
        raise KitInputError(f"{setting}={shards}: holds no shards (kit run --shard i/n --out writes them)")
    return parts


def merge_shards(plan: Plan, parts: list[str], runs_file: Path) -> int:
    """`kit run --merge` of the CI matrix's shard files into the plan's store, then their runs saved for
    DeepEval and the Promptfoo eval to judge (the agent ran in the shards; nothing here calls it)."""
    from kit.runner.recorded import write_rows
    from kit.runner.store_writer import RunRequest, run_merge
    from kit.store import open_store
    from kit.store import queries as q

    code, run_ids = run_merge(RunRequest(quiet=True, merge=parts, store=str(plan.store)))
    if code == 2:
        return code
    with open_store(plan.store).connect() as con:
        n = write_rows(runs_file, q.recorded_runs(con, run_ids))
    print(f"kit: {n} runs of {', '.join(run_ids)} saved for the other front ends: {runs_file}")
    return code


def store_promptfoo(plan: Plan, results: str, *, always: bool = False) -> Step:
    """Promptfoo's result file into the store under the plan's evals id, when its store hook (which stores
    every eval as it ends) could not: a run the hook stored is named, not stored twice."""

    def run() -> int:
        from kit.store import current_git_sha, open_store
        from kit.store.ingest.promptfoo import ingest

        try:
            done = ingest(open_store(plan.store), Path(results), git_sha=current_git_sha(), evals_id=plan.evals_id)
        except KitInputError as e:
            print(f"kit ingest: {e}", file=sys.stderr)
            return 2
        for run_id in done.skipped_runs:
            print(f"{results}: stored by Promptfoo's store hook as run {run_id}")
        if done.run_ids:
            print(f"{results}: {done.cases} cases, {done.results} check results -> run {', '.join(done.run_ids)}")
        return 0

    return Step(f"store {Path(results).name} (if Promptfoo's hook did not)", call=run, always=always)


def own_promptfoo_config(plan: Plan) -> bool:
    """Another agent, or cases other than golden/, get a generated Promptfoo config: the committed
    promptfooconfig.yaml is the reference agent on golden/ and stays untouched."""
    return not plan.reference or Path(plan.cases).resolve() != (plan.root / "golden").resolve()


def promptfoo_stage(plan: Plan, work: Path, runs_file: Path | None) -> Stage:
    """`work`: this invocation's folder for generated configs and results (concurrent runs never share one).
    The eval judges the kit stage's runs (`runs_file`, handed over in the plan): no agent call; None: it calls
    the agent. `plan`: the tools' plan (no run id of its own)."""
    judging = plan.derive(replay_runs=runs_file) if runs_file is not None else plan
    out_json = str((work / "golden.json").resolve())
    if own_promptfoo_config(plan):
        config = (work / "promptfooconfig.yaml").resolve()
        # The agent, its model id and the cases' invariants come from the plan (KIT_PLAN), as the provider's do.
        gen = (sys.executable, "-m", "kit_promptfoo.genconfig", "--golden", str(Path(plan.cases).resolve()))
        first = Step("genconfig", (*gen, "--out", str(config)), env=plan.env())
        note = f"promptfoo eval ({plan.agent.name} on {plan.cases}; config {config})"
        eval_argv = ("eval", "-c", str(config), "--no-progress-bar", "--no-table", "-o", out_json)
    else:
        first = Step("genconfig", (sys.executable, "-m", "kit_promptfoo.genconfig", "--check"), env=plan.env())
        note = "promptfoo eval (golden cases)"
        eval_argv = (*PROMPTFOO_EVAL, out_json)
    return Stage(
        "promptfoo",
        note + (", judging the kit stage's runs" if runs_file is not None else ""),
        (
            first,
            Step(
                "promptfoo eval",
                (*_launcher(), *eval_argv),
                env=judging.env(),
            ),
            store_promptfoo(plan, out_json, always=True),
        ),
        (("promptfoo", "golden"),),
        together=True,
        judged=frozenset({100}),
        timeout=plan.settings.stage_timeout,
    )


def redteam_stage(plan: Plan, work: Path) -> Stage:
    """The red team of the plan's agent, once per attack. The reference agent runs the committed
    configuration, with its deliberately vulnerable control target; another agent gets one generated for it
    (no control target: that belongs to the reference agent), from the user's purpose, the plan's corpus and
    the invariants where given, with as many attacks in flight as `concurrency` allows. `plan`: the tools'
    plan (no run id of its own)."""
    settings = plan.settings
    out_json = str((work / "redteam.json").resolve())
    plan_env = plan.env()  # every step reads the plan (KIT_PLAN), and only the plan
    steps: list[Step] = []
    writes: tuple[tuple[str, str], ...] = (("promptfoo", "redteam"),)
    if not plan.reference:
        config = (work / "redteam" / "promptfooconfig.yaml").resolve()
        # Everything else the config takes from the plan (KIT_PLAN): purpose, corpus, invariants, attacker, tools.
        gen = (sys.executable, "-m", "kit_promptfoo.redteam.config", "--out", str(config))
        corpus = plan.redteam_corpus
        steps.append(Step("red-team config", gen, env=plan_env))
        run = ("redteam", "run", "-c", str(config), "--force", "-j", str(settings.concurrency))
        whose = "generic" if corpus.resolve() == generic_corpus().resolve() else "your"
        note = f"promptfoo redteam run ({plan.agent.name}: {whose} attacks)"
    else:
        run = PROMPTFOO_REDTEAM
        note = "promptfoo redteam run (offline attacks)"
        writes += (("promptfoo", "control"),)
    steps += [
        # Promptfoo exits 100 when some attacks succeed, as they must against the vulnerable
        # control target: the verdict step decides instead.
        # Promptfoo's store hook (providers/store_hook.py) writes this eval's results to out_json: no
        # second Promptfoo start to export them, and never another process's "latest" eval.
        Step(
            "promptfoo redteam run",
            (*_launcher(), *run, "--no-progress-bar"),
            env={**plan_env, "KIT_PROMPTFOO_RESULTS": out_json, **NO_ENV_TEMPLATES},
            ok=frozenset({0, 100}),
        ),
        store_promptfoo(plan, out_json),
        Step("red team verdict", (sys.executable, "-m", "kit_promptfoo.redteam.verdict", out_json), env=plan_env),
    ]
    # Exit 1 is the verdict's: attacks succeeded (or errored) on an agent that must resist them all; a red team
    # that never ran leaves its run out of the store, which fails the stage all the same.
    return Stage(
        "redteam", note, tuple(steps), writes, together=True, judged=frozenset({1}), timeout=settings.stage_timeout
    )


def node_side(plan: Plan) -> Plan:
    """The plan with the model calls that leave from Node (Promptfoo's attacker, the red team's grader.cjs, which
    no Python recorder sees) pointed at the kit's recordings endpoints (`Plan.node_endpoints`), started here and
    serving until this process ends, when the recordings are not live: they record or replay those calls with the
    same files and matcher as the agent's. Live, or no Node-side model: the plan as it is."""
    from kit.recording.endpoint import Endpoint
    from kit.recording.files import ATTACKER, GRADER

    recordings = plan.recordings
    if recordings is None:
        return plan
    rt = plan.settings.redteam
    wanted: dict[str, tuple[str, str | None, str]] = {}
    if rt.attacker:
        if not rt.attacker_base_url and not rt.attacker.startswith("openai:"):
            raise KitInputError(
                f"[tool.kit.recordings] mode is {recordings.mode}, but the attacker {rt.attacker} has no base URL the "
                "kit's endpoint can stand in for: set [tool.kit.redteam] attacker_base_url, or mode = live"
            )
        wanted["attacker"] = (ATTACKER, rt.attacker_base_url or OPENAI_BASE, rt.attacker)
    try:
        judge = plan.judge
    except KitInputError:  # a bad judge setting: the stages that judge report it by name
        judge = None
    if judge is not None and judge.provider in ("openai-compatible", "openai"):  # what grader.cjs can ask
        wanted["grader"] = (GRADER, judge.base_url or OPENAI_BASE, judge.model)
    urls: dict[str, str] = {}
    for who, (name, upstream, model) in wanted.items():
        try:
            endpoint = Endpoint(recordings, name, upstream=upstream, model=model).start()
        except (ValueError, OSError) as e:
            raise KitInputError(f"the recordings endpoint for the {who}: {e}") from None
        _SERVING.append(endpoint)
        urls[who] = endpoint.base_url
    return replace(plan, node_endpoints=urls) if urls else plan


def stages(plan: Plan, shards: Path | None = None, out: Path = OUT, *, replay: bool = True) -> list[Stage]:
    """`make evals`' stages, in order, every one running the plan (its evals id on every run they write).
    `replay`: DeepEval and the Promptfoo eval judge the kit stage's runs (False when the kit stage does not
    run: they call the agent themselves). The tools' processes get the plan as its document (KIT_PLAN); the
    Promptfoo stages' Node-side model calls go through the kit's recordings endpoints (`node_side`)."""
    work = out / "promptfoo"
    runs_file = (out / "runs.jsonl").resolve()
    tools = plan.derive(run_id=None)  # one run id for every stage would merge their runs
    node = node_side(tools)
    judging = tools.derive(replay_runs=runs_file) if replay else tools
    upload = deepeval_upload_requested()
    deepeval_env = {
        # DeepEval reads .env and builds its telemetry client at import, before tests/evals loads.
        "DEEPEVAL_DISABLE_DOTENV": "1",
        **DEEPEVAL,
        # The key reaches DeepEval (from the stage's environment, this process's) only when an upload was asked.
        **({} if upload else {"CONFIDENT_API_KEY": ""}),
        **judging.env(),
    }
    return [
        lint_stage(plan),
        kit_stage(plan, runs_file, shards),
        Stage(
            "deepeval",
            "deepeval test run tests/evals"
            + (f" ({plan.agent.name})" if not plan.reference else "")
            + (", judging the kit stage's runs" if replay else ", calling the agent"),
            (Step("deepeval", (_tool("deepeval"), "test", "run", "tests/evals", "-d", "failing"), env=deepeval_env),),
            (("deepeval", "golden"),),
            together=True,
            judged=frozenset({1}),
            timeout=plan.settings.stage_timeout,
        ),
        promptfoo_stage(node, work, runs_file if replay else None),
        redteam_stage(node, work),
    ]
