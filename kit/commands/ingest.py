"""`kit ingest promptfoo FILE.json` / `kit ingest deepeval FILE.json`: load those tools' own result files
into the store, one run per file (per provider, for Promptfoo). A file already ingested is skipped."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", choices=("promptfoo", "deepeval"), help="which tool wrote the file")
    parser.add_argument("files", nargs="+", type=Path, help="promptfoo eval -o FILE.json, or a DeepEval test-run JSON")
    parser.add_argument(
        "--git-sha", default="auto", help="the commit the results were produced at (default: HEAD here; 'none')"
    )
    parser.add_argument("--force", action="store_true", help="ingest again as a new run if already present")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")


def main(args: argparse.Namespace) -> int:
    from kit.errors import KitInputError
    from kit.store import open_store

    if args.tool == "promptfoo":
        from kit.store.ingest.promptfoo import ingest
    else:
        from kit.store.ingest.deepeval import ingest
    from kit.store import current_git_sha

    plan, problem = _plan()
    if plan is None and not args.store:
        print(f"kit ingest: {problem} (or name the store: --store FILE)", file=sys.stderr)
        return 2
    store = open_store(args.store or plan.store)
    sha = {"auto": None, "none": None}.get(args.git_sha, args.git_sha)
    if args.git_sha == "auto":
        sha = current_git_sha()
    status = 0
    # What the run ran under (the plan's cases, their floors and files, the gates file), as `kit run` records.
    rules = {"rules": _rules_by_kind(plan) if args.tool == "promptfoo" else _rules(plan)}
    # A Promptfoo eval of a `make evals` (its store hook runs this under the plan's document) belongs to it.
    evals = {"evals_id": plan.evals_id if plan is not None else None} if args.tool == "promptfoo" else {}
    for path in args.files:
        try:
            done = ingest(store, path, git_sha=sha, force=args.force, **rules, **evals)
        except KitInputError as e:
            print(f"kit ingest: {e}", file=sys.stderr)
            status = 2
            continue
        for run_id in done.skipped_runs:
            print(f"{path}: already in the store as run {run_id} (--force to ingest again)")
        if done.run_ids:
            print(f"{path}: {done.cases} cases, {done.results} check results → run {', '.join(done.run_ids)}")
    return status


def _plan() -> tuple[Any, str | None]:
    """The plan this process runs under (the `make evals` document its store hook names, else the settings),
    the agent not loaded; else None and why: the results are stored all the same, without their rules
    (`kit gate` names the settings' problem)."""
    from kit.errors import KitInputError
    from kit.plan import current_plan

    try:
        return current_plan(), None
    except KitInputError as e:
        return None, str(e)


def _rules_by_kind(plan: Any) -> Callable[[str], Any]:
    """A Promptfoo run's rules by its kind, read once per kind per command: a red team's or a control's run is
    held to the policy alone, so its cases are never loaded (its file holds attacks, none of the suite's)."""
    read: dict[str, Any] = {}

    def rules(kind: str) -> Any:
        if kind not in read:
            read[kind] = _rules(plan, with_cases=kind == "golden")
        return read[kind]

    return rules


def _rules(plan: Any, *, with_cases: bool = True) -> Any:
    """What a Promptfoo eval or a DeepEval test run of the plan's cases ran under (kit.gate.rules), recorded
    with its golden runs: the cases with their invariants (those that did not load included) and the gates
    file (`with_cases=False`: the gates file alone). The agent is not loaded for it. None where no cases are
    set up, or the plan or its gates do not load (`kit gate` names them)."""
    from kit.errors import KitInputError

    if plan is None or not Path(plan.cases).exists():
        return None
    try:
        return plan.rules(origin="ingest", with_cases=with_cases)
    except KitInputError:
        return None
