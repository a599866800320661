"""Record (or check) the golden cassettes: one live run of each case with the deterministic policy.

    python -m kit.agent.record [CASES] [--out golden/cassettes] [--check]

`--check` replays every case from its cassette and fails when one is missing or stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kit.agent.conversation import Conversation
from kit.agent.run import run_agent
from kit.names import file_in
from kit.settings import project_root


def cassette_path(folder: Path, case_id: str) -> Path:
    return file_in(folder, case_id, ".json")


def main(argv: list[str] | None = None) -> int:
    from kit.case import load_suite

    ap = argparse.ArgumentParser(prog="python -m kit.agent.record")
    ap.add_argument("cases", nargs="?", default=str(project_root() / "golden" / "cases"))
    ap.add_argument("--out", default=str(project_root() / "golden" / "cassettes"))
    ap.add_argument("--check", action="store_true", help="replay each case and report missing or stale ones")
    args = ap.parse_args(argv)
    suite = load_suite(args.cases)
    for err in suite.errors:
        print(f"error: {err}", file=sys.stderr)
    out = Path(args.out)
    bad = 0
    cases = [c for c in suite.cases if getattr(c, "user", None) is None]  # a simulated user is not replayable
    for case in cases:
        path = cassette_path(out, case.id)
        try:
            turns = getattr(case, "turns", None)
            if turns is not None:  # a conversation: one cassette for all its turns
                with Conversation(case_id=case.id, context=case.context, cassette=path, record=not args.check) as c:
                    for text in turns:
                        c.turn(text)
            else:
                run_agent(case.input, case_id=case.id, context=case.context, cassette=path, record=not args.check)
        except Exception as exc:  # one broken case never stops the others
            bad += 1
            print(f"{case.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
    verb = "checked" if args.check else "recorded"
    print(f"{verb} {len(cases) - bad} of {len(cases)} cassettes in {out}")
    return 1 if bad or suite.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
