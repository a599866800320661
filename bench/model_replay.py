"""What replaying the model's calls costs: a suite of an openai-SDK desk run through the kit's runner with its
model calls replayed from recordings (kit.recording), beside the same suite live against a zero-latency model
double (kit.doubles.sampling_model on 127.0.0.2), in interleaved rounds of fresh interpreters.

    .venv/bin/python bench/model_replay.py [--cases 20] [--runs 3] [--rounds 5] [--pool process] [--json FILE]

First one recording run (mode `record`), then `--rounds` rounds of (live, replay) in alternating order. Each
round is a fresh `python -c` that loads the suite and the agent and runs it as `kit run` does (`run_suite`,
host processes by default): `suite_s` is the suite's wall time, `total_s` the interpreter's (imports
included: replay imports vcrpy, about 0.17 s of CPU in each process that calls the agent), `cpu_s` the CPU of
the round and its hosts (the double's own CPU, in this process, is not counted: live pays it, replay not).
Every replayed round must give the recorded outcome of every (case, attempt, check); the live rounds sample
anew. Prints the medians and the ratios replay / live (the target: <= 1.1x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
MODEL = "desk-model-2025-01-01"

ONE = """
import hashlib, json, resource, sys, time
t0 = time.perf_counter()
def cpu():
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))
from pathlib import Path
sys.path.insert(0, sys.argv[5])
from kit.case import load_suite
from kit.recording import Recordings, install
from kit.runner import RunOptions, jobs_for, run_suite
from kit.runner.agents import load_agent

mode, folder, cases, pool = sys.argv[1:5]
if mode != "live":
    install(Recordings(mode, Path(folder), sys.argv[6]))
suite = load_suite(cases)
agent = load_agent("recording_desks:openai_desk")
t1 = time.perf_counter()
outs = run_suite(jobs_for(suite.cases), agent, RunOptions(mode=pool, concurrency=8, timeout=60))
t2 = time.perf_counter()
rows = sorted((o.case_run.case_id, o.case_run.attempt, o.case_run.outcome, o.case_run.error,
               [(r.name, r.passed) for r in o.case_run.results]) for o in outs)
print(json.dumps({"runs": len(outs), "passed": sum(o.case_run.passed for o in outs),
                  "errors": sum(o.case_run.error is not None for o in outs),
                  "replayed": sum(bool(o.case_run.metrics.get("replayed_calls")) for o in outs),
                  "outcomes": hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16],
                  "suite_s": t2 - t1, "total_s": time.perf_counter() - t0, "cpu_s": cpu()}))
"""

ANSWERS = ["Refund approved.", "REFUND DENIED, sorry.", "Refund approved, sorry for the wait."]


def cases_file(folder: Path, n: int, runs: int) -> Path:
    lines = []
    for i in range(n):
        lines += [
            f"- id: desk/case-{i:03d}",
            f'  input: "Order ORD-{100000 + i} arrived damaged, I want a refund."',
            f"  runs: {runs}",
            "  checks:",
            '    - {type: contains, text: "approved"}',
        ]
    path = folder / "cases.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def once(mode: str, folder: Path, cases: Path, pool: str, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", ONE, mode, str(folder), str(cases), pool, str(FIXTURES), MODEL],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        timeout=600,
    )
    if out.returncode != 0:
        raise SystemExit(f"{mode} round failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pool", choices=("process", "thread"), default="process")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from kit.doubles.sampling_model import SamplingModel

    with tempfile.TemporaryDirectory() as tmp, SamplingModel(ANSWERS, seed=1) as model:
        folder = Path(tmp) / "recordings"
        cases = cases_file(Path(tmp), args.cases, args.runs)
        env = {**os.environ, "DESK_BASE_URL": model.base_url, "DESK_API_KEY": "sk-bench-key"}
        env.pop("KIT_RECORDINGS_MODE", None)
        recorded = once("record", folder, cases, args.pool, env)
        rounds: dict[str, list[dict]] = {"live": [], "replay": []}
        for r in range(args.rounds):
            for mode in ("live", "replay") if r % 2 == 0 else ("replay", "live"):
                rounds[mode].append(once(mode, folder, cases, args.pool, env))
        calls = len(model.requests)
    for got in rounds["replay"]:
        assert got["outcomes"] == recorded["outcomes"] and got["replayed"] == got["runs"], (got, recorded)

    def median(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[mode])

    result = {
        "date": time.strftime("%Y-%m-%d"),
        "cases": args.cases,
        "runs": args.runs,
        "rounds": args.rounds,
        "pool": args.pool,
        "model_calls_live": calls,
        "recorded": {k: recorded[k] for k in ("runs", "passed", "errors")},
        **{f"{m}_{k}": round(median(m, k), 3) for m in ("live", "replay") for k in ("suite_s", "total_s", "cpu_s")},
    }
    result["ratio_suite"] = round(result["replay_suite_s"] / result["live_suite_s"], 3)
    result["ratio_total"] = round(result["replay_total_s"] / result["live_total_s"], 3)
    result["ratio_cpu"] = round(result["replay_cpu_s"] / result["live_cpu_s"], 3)
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
