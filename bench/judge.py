"""Cost and time of a judge: `make evals` on the golden set without a judge, then with a judge that answers
instantly (the judge double on 127.0.0.1), side by side in one run: seconds per stage and judge calls per
stage and caller (G-Eval rubrics, Promptfoo's red-team graders).

    unshare -n sh -c 'ip link set lo up; .venv/bin/python bench/judge.py'      # offline, as CI runs it
    .venv/bin/python bench/judge.py --cases golden/cases/orders.yaml           # a smaller case set

The judge double runs in this process; each call is counted under the stage `make evals` was running
when it arrived (stages run one after another).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kit.doubles.judge import JudgeDouble, judge_env  # noqa: E402
from kit.doubles.openai_server import ScriptedOpenAIServer  # noqa: E402

STAGE = re.compile(r"^==> (\w+):")
# A stage's row of the summary: its name, what happened ("passed", "3 judged failures", "broken: exit 1"), seconds.
ROW = re.compile(r"^  ([\w-]+) +(passed|\d* ?judged failures?|broken: .+?|bad input: .+?) +([\d.]+) s ")


def run(out: Path, cases: str | None, judge: JudgeDouble | None, base_url: str | None) -> tuple[dict, int, float]:
    """`make evals` once: ({stage: (seconds, exit)}, exit code, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_JUDGE_")}
    env["KIT_STORE"] = str(out / "store.duckdb")
    if base_url:
        env.update(judge_env(base_url))
    argv = ["make", "--no-print-directory", "evals", f"EVALS_OUT={out}"] + ([f"CASES={cases}"] if cases else [])
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stages: dict[str, tuple[float, str]] = {}
    summary = False
    assert proc.stdout is not None
    for line in proc.stdout:
        m = STAGE.match(line)
        if m and judge is not None:
            judge.stage = m.group(1)
        summary = summary or line.startswith("== stages")
        row = ROW.match(line) if summary else None
        if row:
            stages[row.group(1)] = (float(row.group(3)), row.group(2))
    code = proc.wait()
    return stages, code, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", help="a case file or folder (default: the golden set)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp:
        plain, plain_code, plain_wall = run(Path(tmp) / "no-judge", args.cases, None, None)
        double = JudgeDouble("good")
        with ScriptedOpenAIServer(double) as server:
            judged, judged_code, judged_wall = run(Path(tmp) / "judge", args.cases, double, server.base_url)
    per_stage: dict[str, Counter[str]] = {}
    for call in double.calls:
        per_stage.setdefault(call["stage"], Counter())[call["kind"]] += 1
    print(f"make evals on {args.cases or 'the golden set'}: no judge vs a judge answering instantly (one run)")
    print(f"{'stage':<10} {'no judge s':>11} {'judge s':>9} {'ratio':>6} {'judge calls':>12}  by caller")
    for name in sorted({*plain, *judged}, key=lambda s: [*plain, *judged].index(s)):
        a, b = plain.get(name, (0.0, ""))[0], judged.get(name, (0.0, ""))[0]
        calls = per_stage.get(name, Counter())
        ratio = f"{b / a:.2f}" if a else "-"
        by = ", ".join(f"{k} {n}" for k, n in calls.most_common()) or "-"
        print(f"{name:<10} {a:>11.1f} {b:>9.1f} {ratio:>6} {sum(calls.values()):>12}  {by}")
    print(
        f"{'total':<10} {plain_wall:>11.1f} {judged_wall:>9.1f} {judged_wall / plain_wall:>6.2f} "
        f"{len(double.calls):>12}  exit codes: no judge {plain_code}, judge {judged_code}"
    )
    return 0 if plain_code == 0 and judged_code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
