"""What the kit adds to each Promptfoo start, beside a git revision's kit in the same interleaved rounds:

- `worker`: one Python worker of Promptfoo's provider (`import kit_promptfoo.agent_provider`, what each worker
  runs before its first call; Promptfoo starts one per call in flight);
- `fresh state`: a launch on a fresh state folder making Promptfoo's database (`run_promptfoo.created_state`:
  the kit's Promptfoo launcher, once per checkout, CI machine and test copy);
- `node start`: Promptfoo itself started (`promptfoo --version`) in the environment the launcher gives it
  (`run_promptfoo.offline_env`), the Node part of every eval and red team the kit launches.

    .venv/bin/python bench/promptfoo_start.py [--baseline 77de15e] [--rounds 7] [--json bench/promptfoo_start.json]

Each measurement is a fresh interpreter; its CPU time is its own and its children's (`os.wait4`). Medians over
the rounds, the two revisions alternating first (the machine is shared).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import ROOT, extract

WORKER = "import kit_promptfoo.agent_provider"
# The offline environment the launcher gives Promptfoo, for the checkout at argv[1].
LAUNCHER_ENV = """
import os, subprocess, sys
from pathlib import Path
from kit_promptfoo import run_promptfoo
root = Path(sys.argv[1])
env = run_promptfoo.offline_env(root, {k: v for k, v in os.environ.items() if k != "KIT_PROMPTFOO_ONLINE"})
"""
# One launch's database step on a fresh folder.
FRESH = (
    LAUNCHER_ENV
    + """
env["PROMPTFOO_CONFIG_DIR"] = sys.argv[2]
problem = run_promptfoo.created_state(run_promptfoo.promptfoo_bin(root), env)
assert problem is None, problem
assert (Path(sys.argv[2]) / "promptfoo.db").is_file()
"""
)
# Promptfoo started as the launcher starts it, waited for: its CPU is this process's child's.
NODE_START = (
    LAUNCHER_ENV
    + """
subprocess.run([str(run_promptfoo.promptfoo_bin(root)), "--version"], env=env, check=True, stdout=subprocess.DEVNULL)
"""
)


def timed(argv: list[str], pythonpath: Path, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the process and the children it waited for)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env["PYTHONPATH"] = str(pythonpath)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="77de15e", metavar="REV", help="the kit to compare with (77de15e)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (ROOT / "node_modules" / ".bin" / "promptfoo").exists():
        raise SystemExit("needs Promptfoo: make promptfoo-install")
    figures: dict[str, dict[str, list[tuple[float, float]]]] = {"worker": {}, "fresh state": {}, "node start": {}}
    with tempfile.TemporaryDirectory(prefix="bench-pf-") as scratch:
        tmp = Path(scratch)
        old = extract(args.baseline, tmp / "baseline", ("kit", "kit_promptfoo"))
        # HEAD finds the database it kept beside Promptfoo (made by its first fresh folder); the baseline's
        # launcher never looks for one.
        revs = {"HEAD": ROOT, args.baseline: old}
        for rnd in range(args.rounds):
            order = list(revs.items()) if rnd % 2 == 0 else list(reversed(revs.items()))
            for name, path in order:
                figures["worker"].setdefault(name, []).append(timed([sys.executable, "-c", WORKER], path, tmp))
                state = tmp / f"state-{name}-{rnd}"
                figures["fresh state"].setdefault(name, []).append(
                    timed([sys.executable, "-c", FRESH, str(ROOT), str(state)], path, tmp)
                )
                figures["node start"].setdefault(name, []).append(
                    timed([sys.executable, "-c", NODE_START, str(ROOT)], path, tmp)
                )
    out: dict[str, object] = {"date": time.strftime("%Y-%m-%d"), "rounds": args.rounds, "baseline": args.baseline}
    for what, by_rev in figures.items():
        row = {}
        for name, runs in by_rev.items():
            row[name] = {
                "wall_s": round(statistics.median(w for w, _ in runs), 3),
                "cpu_s": round(statistics.median(c for _, c in runs), 3),
            }
            print(f"{what:12s} {name:8s} median {row[name]['wall_s']:6.3f} s wall, {row[name]['cpu_s']:6.3f} CPU-s")
        ratio = row["HEAD"]["cpu_s"] / row[args.baseline]["cpu_s"]
        row["cpu_ratio"] = round(ratio, 3)
        print(f"{what:12s} HEAD / {args.baseline}: {ratio:.2f}x CPU")
        out[what] = row
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
