"""A stand-in agent whose per-case pass counts are fixed (examples/flaky/flaky_agent.py), run through the
real runner into a real store.

Its versions v1..v3 (FLAKY_VERSION) hold the counts of docs/gates.md's worked example, else a case's `metadata: {passes: K}`. Either way
it passes the first K calls of each case and fails the rest, so a case with `runs: N` ends at exactly K/N
whatever order the pool runs attempts in. The verdicts the tests assert are then certain, never flaky.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from kit.cli import main as kit
from kit.store import open_store
from kit.store import queries as q

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flaky"
MODULE = "flaky_agent"


def write_agent(folder: Path) -> None:
    """The example's stand-in agent (examples/flaky/flaky_agent.py), importable from `folder`."""
    shutil.copy(EXAMPLE / f"{MODULE}.py", folder / f"{MODULE}.py")


def cases_yaml(counts: dict[str, tuple[int, int]], floors: dict[str, float] | None = None) -> str:
    """One case per id, at (passes, runs); `floors`: the cases' own min_pass_fraction."""
    docs = []
    for case_id, (passes, runs) in counts.items():
        floor = (floors or {}).get(case_id)
        docs.append(
            f"id: {case_id}\ninput: hello\nruns: {runs}\nmetadata: {{passes: {passes}}}\n"
            + (f"min_pass_fraction: {floor}\n" if floor is not None else "")
            + "checks: [{type: contains, text: fine}]\n"
        )
    return "---\n".join(docs)


def run_suite(folder: Path, store: Path, name: str, counts: dict[str, tuple[int, int]], **kw: dict) -> str:
    """`kit run` of the stand-in agent on `counts` (case files written to folder/name.yaml, the counts in
    each case's metadata): the run id. The folder must be the current directory (the agent is imported
    from it)."""
    cases = folder / f"{name}.yaml"
    cases.write_text(cases_yaml(counts, **kw))
    return run_cases(cases, store, counts)


def run_cases(cases: Path, store: Path, counts: dict[str, tuple[int, int]], version: str = "v1") -> str:
    """`kit run` of the stand-in agent (its `version`, where the cases name no counts) on a case file,
    checked to have ended at `counts`: the run id."""
    module = sys.modules.get(MODULE)
    if module is not None:
        module.calls.clear()  # a new run: every case starts from its first attempt again
    argv = ["run", "--cases", str(cases), "--agent", f"{MODULE}:agent", "--store", str(store)]
    before = os.environ.get("FLAKY_VERSION")
    os.environ["FLAKY_VERSION"] = version
    try:
        kit([*argv, "--pool", "thread", "--workers", "2", "-q"])
    finally:
        if before is None:
            os.environ.pop("FLAKY_VERSION")
        else:
            os.environ["FLAKY_VERSION"] = before
    with open_store(store).connect() as con:
        run_id = q.resolve_run(con, "latest")
        got = q.case_counts(con, run_id)
    assert got == {c: (p, n) for c, (p, n) in counts.items()}, got  # the stand-in did what it says
    return run_id


def forget_agent() -> None:
    sys.modules.pop(MODULE, None)
