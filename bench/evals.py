"""`make evals` before and after: a git revision beside this checkout, interleaved, in one run.

    .venv/bin/python bench/evals.py [--baseline REV] [--rounds N]

Each round runs what `make evals` runs (`python -m kit.pipeline`) once in a git worktree of REV (default:
d4760da, the last commit before the pipeline ran its tools' stages at the same time) and once in this
checkout, in alternating order, each with a scratch store and output folder. The worktree gets its own
node_modules from its own lock file (`npm ci`, once) and runs on this checkout's venv with PYTHONPATH
pointing at it, so every Python process of its pipeline (DeepEval, Promptfoo's workers) imports its kit.

Printed: per round and side the wall time, the CPU time of the pipeline and every process it waited for,
and each stage's seconds from the pipeline's own summary; then medians and the after/before ratios.
Target: `make evals` under 60 s wall on 2 cores, warm. Both sides must pass, or the figures mean nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = "d4760da"
# A stage's row of the summary, as an older kit wrote it ("exit 0") or as it is now ("passed", "3 judged failures").
STAGE_LINE = re.compile(
    r"^  ([\w-]+)\s+(?:exit \d+|passed|\d* ?judged failures?|broken: .+?|bad input: .+?)\s+([\d.]+) s"
    r"(?:\s+CPU\s+([\d.]+) s)?"
)


def worktree(rev: str) -> Path:
    """A checkout of `rev` under .kit/bench/ with its own node_modules (made once, reused)."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True)
    path = ROOT / ".kit" / "bench" / f"rev-{sha.stdout.strip()}"
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT, check=True)
    if not (path / "node_modules" / ".bin" / "promptfoo").exists():
        subprocess.run(["npm", "ci", "--loglevel=error"], cwd=path, check=True)
    # Compiled once, as this checkout's modules are: with PYTHONDONTWRITEBYTECODE set, every Python process of
    # the baseline's pipeline would otherwise compile the kit's modules it imports, and count that as its time.
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", r"node_modules|\.kit", str(path)], check=True)
    return path


def run_pipeline(checkout: Path, scratch: Path) -> dict[str, float]:
    """One `make evals` in `checkout`: wall and CPU seconds, and each stage's seconds."""
    scratch.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update({"KIT_STORE": str(scratch / "evals.duckdb"), "PYTHONPATH": str(checkout)})
    argv = [sys.executable, "-m", "kit.pipeline", "--out", str(scratch / "out")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        tail = proc.stdout[-3000:] + proc.stderr[-2000:]
        raise SystemExit(f"make evals in {checkout} exited {proc.returncode}:\n{tail}")
    got = {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}
    for line in (scratch / "out" / "summary.txt").read_text().splitlines():
        m = STAGE_LINE.match(line)
        if m:
            got[m.group(1)] = float(m.group(2))
            if m.group(3):  # the stage's own CPU, where the pipeline reports it
                got[f"{m.group(1)} cpu"] = float(m.group(3))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"the revision to compare with ({DEFAULT_BASELINE})")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sides = {"before": worktree(args.baseline), "after": ROOT}
    got: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                r = run_pipeline(sides[name], Path(tmp) / f"{name}-{i}")
                got[name].append(r)
                stages = "  ".join(f"{k} {v:.1f}" for k, v in r.items() if k not in ("wall", "cpu") and "cpu" not in k)
                print(f"round {i + 1} {name:6} wall {r['wall']:5.1f} s  cpu {r['cpu']:5.1f} s   {stages}", flush=True)
    keys = [k for k in got["after"][0] if all(k in r for r in got["before"] + got["after"])]
    med = {n: {k: statistics.median(r[k] for r in rs) for k in keys} for n, rs in got.items()}
    print(f"\nmake evals, median of {args.rounds} interleaved rounds; before = {args.baseline}, after = this checkout")
    print(f"  {'':8} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for k in keys:
        b, a = med["before"][k], med["after"][k]
        print(f"  {k:8} {b:9.1f} {a:9.1f} {a / b if b else float('nan'):13.2f}")
    cpus = {k: statistics.median(r[k] for r in got["after"]) for k in got["after"][0] if k.endswith(" cpu")}
    if cpus:
        shown = ", ".join(f"{k.removesuffix(' cpu')} {v:.1f}" for k, v in cpus.items())
        print(f"  after, each stage's own CPU s: {shown}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
