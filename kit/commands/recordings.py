"""`kit recordings serve [--name NAME] --upstream URL [-- COMMAND...]`: the kit's endpoint for the model calls
that leave from Node (Promptfoo's attacker, the red team's grader.cjs): give them the printed base URL instead
of the model's; it records them (`<folder>/NAME.json`) or replays them as `[tool.kit.recordings] mode` says, until
stopped, or while COMMAND runs (its environment names the endpoint in KIT_RECORDINGS_ENDPOINT; the exit code
is COMMAND's). Exit 1 when a replayed request had no recording.

    KIT_REDTEAM_ATTACKER_BASE_URL=http://127.0.0.1:8765/v1 \
        kit recordings serve --upstream https://attacker.example/v1 --port 8765 -- make evals

`kit recordings prune`: remove the model-call recordings no case uses (kit.recording.prune): a case's file
when the suite has no such case any more, and the attempts past what its case runs (`runs:`, or `--runs`).
The judge's recordings (`_judge/<case id>.json`) follow their case; the red team's (its attacks' case ids)
are kept. A suite with a case file that does not load
prunes nothing: its cases' recordings would look unused."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kit.settings import Settings


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    serve = sub.add_parser("serve", help="an endpoint recording or replaying the calls made to it (Node's)")
    serve.add_argument(
        "--name", default="_attacker/redteam", help="the recording's id: its file is <folder>/NAME.json (%(default)s)"
    )
    serve.add_argument("--upstream", help="the model's base URL to forward to when recording")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--model", help="the model id these calls are pinned to (default: none)")
    serve.add_argument("command", nargs="*", help="after --: a command to run with the endpoint up")
    prune = sub.add_parser("prune", help="remove the recordings no case uses")
    prune.add_argument("--cases", help="the suite (default: the settings' cases)")
    prune.add_argument("--runs", type=int, default=0, help="keep attempts up to N per case even past its `runs:`")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")


def main(args: argparse.Namespace) -> int:
    from kit.settings import load_settings

    settings = load_settings()
    if args.action == "serve":
        import os

        return serve(args, settings, dict(os.environ))
    return prune_unused(args, settings)


def serve(args: argparse.Namespace, settings: Settings, environ: dict[str, str]) -> int:
    import signal
    import subprocess
    import threading

    from kit.errors import KitInputError
    from kit.names import name_problem
    from kit.recording import from_settings
    from kit.recording.endpoint import Endpoint

    problem = name_problem(args.name)
    if problem is not None:
        raise KitInputError(f"recording name {args.name!r} {problem}")
    recordings = from_settings(settings)
    if recordings is None:
        raise KitInputError("[tool.kit.recordings] mode is live: give the Node side the model's own base URL")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        endpoint = Endpoint(recordings, args.name, upstream=args.upstream, model=args.model, port=args.port)
    except (ValueError, OSError) as e:
        raise KitInputError(str(e)) from None
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    code = 0
    with endpoint:
        print(endpoint.base_url, flush=True)
        if command:
            try:
                code = subprocess.call(command, env={**environ, "KIT_RECORDINGS_ENDPOINT": endpoint.base_url})
            except OSError as e:
                raise KitInputError(f"cannot run {command[0]}: {e.strerror or e}") from None
        else:
            stop.wait()
    for miss in endpoint.misses:
        print(f"recording miss: {miss}", file=sys.stderr)
    return code or (1 if endpoint.misses else 0)


def prune_unused(args: argparse.Namespace, settings: Settings) -> int:
    from kit.case import MAX_RUNS
    from kit.commands.init import REDTEAM_CASE_ID
    from kit.errors import KitInputError
    from kit.mcp.attacked import CASE_ID as MCP_ATTACK_CASE_ID
    from kit.plan import make_plan
    from kit.recording import prune
    from kit.recording.files import JUDGE_PREFIX
    from kit.recording.format import case_ids

    plan = make_plan(settings, cases=args.cases, defer_agent=True)
    suite = plan.suite
    if suite.errors:
        raise KitInputError(f"the suite does not load, nothing pruned: {suite.errors[0]}")
    used = {c.id: max(c.runs, args.runs) for c in suite.cases}
    # The red team's attacks run under a case id of their own, every attack in one attempt: always kept.
    for kept in (REDTEAM_CASE_ID, MCP_ATTACK_CASE_ID):
        used.setdefault(kept, MAX_RUNS)
    folder = plan.settings.recordings.folder
    if args.dry_run:
        unused = [name for name, _ in case_ids(folder) if name.removeprefix(JUDGE_PREFIX) not in used]
        for name in unused:
            print(f"would remove {name}: no case uses it")
        return 0
    gone = prune(folder, used)
    for line in gone:
        print(f"removed {line}")
    print(f"{len(gone)} recording(s) pruned in {folder}", file=sys.stderr)
    return 0
