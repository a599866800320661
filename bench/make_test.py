"""`make test` from a fresh clone, as CI runs it, with part of the machine kept busy by other work.

    .venv/bin/python bench/make_test.py [--rev HEAD] [--baseline REV] [--busy N] [--rounds 1] [--json FILE]

Each round clones this repository into a scratch folder, checks out the revision and runs `make test` there
(installs included: the venv, `npm ci`), with the venv not activated and no KIT_* variable. `--busy N`
keeps N other processes spinning on the CPU for the whole run: on a 2-core machine `--busy 1` is "the other
half of the machine busy". `--baseline REV` runs the same at REV in the same rounds, alternating which goes
first (before and after in one run).

Printed per run: wall time, the CPU time of `make test` and every process it waited for, the pytest summary
line, and the load average at the start and the end. Target: under 8 minutes on 2 cores with the other half
busy. A run that does not pass is reported as failed, and its time counts for nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^=*\s*(\d+ passed.*?) in [\d.]+s")
SPIN = "while True:\n    pass\n"


def fresh_clone(rev: str, into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(into)], check=True)
    subprocess.run(["git", "checkout", "--quiet", "--detach", rev], cwd=into, check=True)
    return into


def make_test(checkout: Path, log: Path) -> dict[str, object]:
    """One `make test` in `checkout`: wall s, CPU s (it and its waited-for descendants), passed, summary."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_") and k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(["make", "test"], cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    text = log.read_text(errors="replace")
    summary = next((m.group(1) for line in text.splitlines()[::-1] if (m := SUMMARY.match(line))), None)
    code = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "passed": code == 0,
        "exit": code,
        "summary": summary or text.strip().splitlines()[-1:],
        "load": [round(load, 1), round(os.getloadavg()[0], 1)],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", default="HEAD", help="the revision to time (HEAD)")
    ap.add_argument("--baseline", metavar="REV", help="also time this revision, in the same rounds")
    ap.add_argument("--busy", type=int, default=0, metavar="N", help="processes kept spinning during each run")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    revs = {"rev": args.rev} | ({"baseline": args.baseline} if args.baseline else {})
    shas = {
        name: subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        for name, rev in revs.items()
    }  # fmt: skip
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in revs}
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory(prefix="kit-make-test-") as tmp:
            for i in range(args.rounds):
                order = list(revs) if i % 2 == 0 else list(revs)[::-1]
                for name in order:
                    where = Path(tmp) / f"{name}-{i}"
                    got = make_test(fresh_clone(revs[name], where), Path(tmp) / f"{name}-{i}.log")
                    if not got["passed"]:
                        kept = ROOT / ".kit" / "bench" / f"make-test-{shas[name]}-{i}.log"
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        kept.write_bytes((Path(tmp) / f"{name}-{i}.log").read_bytes())
                        got["log"] = str(kept)
                    runs[name].append(got)
                    verdict = "passed" if got["passed"] else f"FAILED (exit {got['exit']}, log {got.get('log')})"
                    print(
                        f"round {i + 1} {name} {shas[name]}: {got['wall_s'] / 60:.2f} min wall, "
                        f"{got['cpu_s'] / 60:.2f} CPU-min, {verdict}; {got['summary']}; load {got['load']}",
                        flush=True,
                    )
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    figures: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "busy": args.busy,
        "rounds": args.rounds,
    }
    medians: dict[str, tuple[float, float]] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if r["passed"]]
        figures[name] = {"sha": shas[name], "runs": rs}
        if ok:
            wall = statistics.median(float(str(r["wall_s"])) for r in ok)
            cpu = statistics.median(float(str(r["cpu_s"])) for r in ok)
            medians[name] = (wall, cpu)
            print(f"{name} {shas[name]}: median {wall / 60:.2f} min wall, {cpu / 60:.2f} CPU-min ({len(ok)} passed)")
    if len(medians) == 2:
        (aw, ac), (bw, bc) = medians["rev"], medians["baseline"]
        print(f"rev / baseline: {aw / bw:.2f}x wall, {ac / bc:.2f}x CPU")
    print(f"target: under 8 min on 2 cores with {args.busy} other process(es) spinning")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if all(r["passed"] for rs in runs.values() for r in rs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
