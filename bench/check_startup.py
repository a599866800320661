"""`kit check` on one trace, beside a 60-line harness in the style of a hand-written evaluator (a registry of
check functions, cases read from a folder of YAML files with PyYAML's C loader, the trace from JSON, one JSON
verdict printed): the whole command, start-up included, as a user types it.

    .venv/bin/python bench/check_startup.py [--rounds 7] [--files 1000] [--json bench/check_startup.json]

Two workloads, each in fresh interpreters, interleaved round by round (the machine is shared: medians, and
CPU time beside wall time): the trace's case alone in the cases folder, and the same case among `--files`
case files (the others with other ids). Targets: kit check <= 100 ms on one case file, and <= 2x the
harness with 1,000 case files. Both must give the same verdict. `--baseline REV` adds the kit as of a git
revision to the same interleaved rounds (before and after in one run).

Beside them, `floor`: a fresh interpreter that only imports what any `kit check` built on pydantic models
must (pydantic's BaseModel, its plugin loader, which every model's validator imports, PyYAML's C loader,
orjson) and judges nothing: what start-up costs before the kit's own code runs.
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
from baseline import extract
from oracle import CASE, fifty_span_trace  # the same trace and case as bench/oracle.py

HARNESS = r"""
import json, re, sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
import yaml

@dataclass
class Result:
    name: str
    passed: bool
    reason: str = ""

def tools(t): return [s for s in t["spans"] if s["kind"] == "tool"]
def names(t): return [s.get("name") for s in tools(t)]
def listed(v): return v if isinstance(v, list) else [v]

def called(t, tool): return Result("called:" + tool, tool in names(t))
def not_called(t, tool): return Result("not_called", not set(listed(tool)) & set(names(t)))
def called_at_most(t, tool, n=1): return Result("called_at_most:" + tool, names(t).count(tool) <= n)
def finished(t): return Result("finished", t.get("finish_reason") == "finish")
def regex(t, pattern): return Result("regex", re.search(pattern, t.get("final_output") or "") is not None)
def contains(t, text):
    out = " ".join((t.get("final_output") or "").split()).casefold()
    return Result("contains", all(x.casefold() in out for x in listed(text)))
def arg(t, tool, key, expected):
    got = [s.get("input", {}).get(key) for s in tools(t) if s.get("name") == tool]
    return Result(f"arg:{tool}.{key}", expected in got, f"got {got!r}")
def order(t, before, after):
    n = names(t)
    return Result("order", before in n and after in n and n.index(before) < n.index(after))
def no_repeat(t):
    seen = Counter((s.get("name"), json.dumps(s.get("input", {}), sort_keys=True)) for s in tools(t))
    return Result("no_repeat", all(c == 1 for c in seen.values()))
def budget(t, steps=None, tokens=None, cost_usd=None):
    sp = t["spans"]
    n = sum(s["kind"] == "llm" for s in sp)
    tok = sum(s.get("tokens_in", 0) + s.get("tokens_out", 0) for s in sp)
    c = sum(s.get("cost_usd", 0.0) for s in sp)
    return Result("budget", (steps is None or n <= steps) and (tokens is None or tok <= tokens)
                  and (cost_usd is None or c <= cost_usd))

CHECKS = {f.__name__: f for f in (called, not_called, called_at_most, finished, regex, contains, arg, order,
                                  no_repeat, budget)}

cases = {}
for f in sorted(Path(sys.argv[1]).glob("*.yaml")):
    for doc in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader):
        for case in doc if isinstance(doc, list) else [doc]:
            cases[case["id"]] = case
out = []
for path in sys.argv[2:]:
    t = json.loads(Path(path).read_text())
    rs = [CHECKS[c["type"]](t, **{k: v for k, v in c.items() if k != "type"}) for c in cases[t["case_id"]]["checks"]]
    out.append({"case_id": t["case_id"], "attempt": t["attempt"], "passed": all(r.passed for r in rs)})
print(json.dumps({"results": out}))
"""

FLOOR = (
    "import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
    "from pydantic import BaseModel\n"
    "import pydantic.plugin._loader, yaml, orjson\n"
    "print('{\"results\": []}')\n"
)


def workload(folder: Path, files: int) -> None:
    for name, n in (("one", 1), ("many", files)):
        (folder / name).mkdir()
        for i in range(n):
            # Every file holds a case like the trace's; the trace's own is the first.
            (folder / name / f"c{i:04d}.yaml").write_text(CASE if i == 0 else CASE.replace("id: bench", f"id: b{i}"))
    (folder / "trace.json").write_text(json.dumps(fifty_span_trace(1)))
    (folder / "harness.py").write_text(HARNESS.lstrip())


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, env={**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{cmd} failed: {text[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--baseline", metavar="REV", help="also time kit check as of this git revision (e.g. HEAD~5)")
    args = ap.parse_args()
    kit = [sys.executable, "-m", "kit.cli", "check", "--json", "--cases"]
    harness = [sys.executable, "harness.py"]
    floor = [sys.executable, "-c", FLOOR]
    tools = ["kit", "harness", "floor"] + (["baseline"] if args.baseline else [])
    wall: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="kit-check-bench-") as tmp:
        folder = Path(tmp)
        workload(folder, args.files)
        env: dict[str, dict[str, str]] = {"kit": {}, "harness": {}, "floor": {}}
        if args.baseline:
            env["baseline"] = {"PYTHONPATH": str(extract(args.baseline, folder / "baseline"))}
            print(f"baseline: kit as of {args.baseline}")
        for r in range(args.rounds + 1):  # round 0 warms the page and bytecode caches; not counted
            for cases in ("one", "many"):
                verdicts = {}
                for tool in tools:
                    if tool == "floor" and cases == "many":
                        continue
                    cmd = floor if tool == "floor" else [*(harness if tool == "harness" else kit), cases, "trace.json"]
                    w, c, out = timed(cmd, folder, env[tool])
                    if tool != "floor":
                        verdicts[tool] = [(x["case_id"], x["passed"]) for x in json.loads(out)["results"]]
                    if r:
                        wall.setdefault((tool, cases), []).append(w)
                        cpu.setdefault((tool, cases), []).append(c)
                if any(v != verdicts["harness"] for v in verdicts.values()):
                    raise SystemExit(f"kit check and the harness disagree: {verdicts}")
    med = {k: statistics.median(v) * 1000 for k, v in wall.items()}
    medc = {k: statistics.median(v) * 1000 for k, v in cpu.items()}
    figures: dict[str, object] = {"date": time.strftime("%Y-%m-%d"), "rounds": args.rounds, "files": args.files}
    # The machine is shared: the 1-minute load average before and after the rounds.
    figures["load"] = [round(load, 1), round(os.getloadavg()[0], 1)]
    print(f"kit check on one trace, median of {args.rounds} interleaved rounds (fresh interpreters)")
    print(f"{'cases folder':24}{'kit ms':>10}{'harness ms':>12}{'ratio':>8}   CPU: kit / harness ms")
    for cases, label in (("one", "1 case file"), ("many", f"{args.files:,} case files")):
        k, h = med[("kit", cases)], med[("harness", cases)]
        kc, hc = medc[("kit", cases)], medc[("harness", cases)]
        print(f"{label:24}{k:>10.0f}{h:>12.0f}{k / h:>8.2f}   {kc:.0f} / {hc:.0f} ({kc / hc:.2f}x)")
        figures[cases] = {
            "kit_ms": round(k),
            "harness_ms": round(h),
            "ratio": round(k / h, 2),
            "kit_cpu_ms": round(kc),
            "harness_cpu_ms": round(hc),
            "cpu_ratio": round(kc / hc, 2),
        }
        if cases == "one":
            f, fc = med[("floor", cases)], medc[("floor", cases)]
            print(f"{'  floor (imports only)':24}{f:>10.0f}{'':>12}{f / h:>8.2f}   {fc:.0f} ({fc / hc:.2f}x)")
            figures[cases].update(floor_ms=round(f), floor_cpu_ms=round(fc))
        if args.baseline:
            b, bc = med[("baseline", cases)], medc[("baseline", cases)]
            print(f"{'  baseline ' + args.baseline:24}{b:>10.0f}{'':>12}{b / h:>8.2f}   {bc:.0f} ({bc / hc:.2f}x)")
            figures[cases].update(baseline_ms=round(b), baseline_cpu_ms=round(bc))
    print("targets: kit check <= 100 ms on 1 case file; <= 2x the harness with 1,000 case files")
    if args.json:
        if args.baseline:
            figures["baseline"] = args.baseline
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
