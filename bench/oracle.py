"""Oracle speed: `kit check` side by side with a bare Python script doing the same checks.

    .venv/bin/python bench/oracle.py [--traces 4000] [--rounds 5] [--per-check]

Writes N trace files of 50 spans (24 tool calls) and one case of 10 checks (called, not_called, arg, order,
no_repeat, regex, budget, called_at_most, finished, contains), and a plain ~60-line script that does the
same 10 checks on the same files (reading and JSON parsing included, one JSON line of verdicts per trace).
Both run as the user types them, in fresh interpreters, interleaved, each on N files and on 1 file; the
marginal cost per trace is (t(N) - t(1)) / (N - 1). Printed: medians, and the kit/script ratio.
Target: ratio <= 1.2. Also `import kit.evaluate` (target < 100 ms, median of fresh interpreters, with
`-X importtime`'s own total and `import pydantic` alone beside it: judging a trace imports no pydantic).
`--baseline REV` adds the kit as of a git revision to the same interleaved rounds (before and after in
one run).

`--per-check` adds the median time of each of those checks on one warm 50-span trace, and the kit's
trajectory+args beside DeepEval's deterministic ToolCorrectnessMetric (given a model that is never called).
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

from baseline import extract

ROOT = Path(__file__).resolve().parent.parent
KIT = str(Path(sys.executable).parent / "kit")
TOOLS = ["lookup_customer", "lookup_order", "search_kb", "issue_refund", "send_email"]


def fifty_span_trace(k: int) -> dict:
    """Trace k: 24 llm + 24 tool spans + 2 messages; every 7th repeats a call, every 11th never finishes."""
    spans: list[dict] = [{"kind": "message", "role": "user", "content": f"Please refund ORD-{123456 + k}"}]
    for i in range(24):
        spans.append(
            {"kind": "llm", "name": "gpt-4o-2024-08-06", "tokens_in": 800 + i, "tokens_out": 60, "cost_usd": 0.003,
             "latency_ms": 900}
        )  # fmt: skip
        n = 0 if (k % 7 == 0 and i in (3, 8)) else i
        spans.append(
            {"kind": "tool", "name": TOOLS[i % len(TOOLS)], "input": {"order_id": f"ORD-{100000 + n}", "n": n},
             "output": {"ok": True, "total": 42.5, "items": [{"sku": f"S{i}", "qty": 1}]}, "error": None,
             "latency_ms": 12}
        )  # fmt: skip
    spans.append({"kind": "message", "role": "assistant", "content": "Refund of $42.50 issued for ORD-123456."})
    return {
        "case_id": "bench",
        "attempt": k,
        "model": "gpt-4o-2024-08-06",
        "final_output": f"Your order ORD-{123456 + k} is refunded: $42.50 back on your card.",
        "finish_reason": "step_cap" if k % 11 == 0 else "finish",
        "spans": spans,
    }


CASE = """\
- id: bench
  input: Please refund my order
  checks:
    - {type: called, tool: issue_refund}
    - {type: not_called, tool: [drop_table, handoff_to_human]}
    - {type: arg, tool: issue_refund, key: order_id, expected: ORD-100003}
    - {type: order, before: lookup_order, after: issue_refund}
    - {type: no_repeat}
    - {type: regex, pattern: 'ORD-\\d{6}'}
    - {type: budget, steps: 30, tokens: 100000, cost_usd: 1.0}
    - {type: called_at_most, tool: issue_refund, n: 10}
    - {type: finished}
    - {type: contains, text: [refunded, ord-]}
"""

# The bare script: what a user would write by hand for these 10 checks. Same files, same verdicts.
SCRIPT = r"""
import json, re, sys
from collections import Counter

PATTERN = re.compile(r"ORD-\d{6}")


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def judge(t):
    spans = t.get("spans", [])
    tools = [s for s in spans if s["kind"] == "tool"]
    names = [s.get("name") for s in tools]
    out = t.get("final_output") or ""
    r = {}
    r["called:issue_refund"] = names.count("issue_refund") >= 1
    r["not_called"] = not any(n in ("drop_table", "handoff_to_human") for n in names)
    r["arg"] = any(s.get("input", {}).get("order_id") == "ORD-100003" for s in tools if s.get("name") == "issue_refund")
    if "lookup_order" in names and "issue_refund" in names:
        r["order"] = names.index("lookup_order") < names.index("issue_refund")
    else:
        r["order"] = False
    counts = Counter((s.get("name"), canon(s.get("input", {}))) for s in tools)
    r["no_repeat"] = all(c == 1 for c in counts.values())
    r["regex"] = PATTERN.search(out) is not None
    steps = sum(1 for s in spans if s["kind"] == "llm")
    tokens = sum(s.get("tokens_in", 0) + s.get("tokens_out", 0) for s in spans)
    cost = sum(s.get("cost_usd", 0.0) for s in spans)
    r["budget"] = steps <= 30 and tokens <= 100000 and cost <= 1.0
    r["called_at_most"] = names.count("issue_refund") <= 10
    r["finished"] = t.get("finish_reason") == "finish"
    text = " ".join(out.split()).casefold()
    r["contains"] = all(x in text for x in ("refunded", "ord-"))
    return r


results = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        t = json.load(f)
    r = judge(t)
    results.append({"case_id": t["case_id"], "attempt": t.get("attempt", 0), "passed": all(r.values()), "checks": r})
print(json.dumps({"results": results}))
sys.exit(0 if all(x["passed"] for x in results) else 1)
"""


def write_workload(folder: Path, n: int) -> list[str]:
    (folder / "cases").mkdir()
    (folder / "cases" / "bench.yaml").write_text(CASE)
    (folder / "script.py").write_text(SCRIPT.lstrip())
    (folder / "traces").mkdir()
    files = []
    for k in range(n):
        p = folder / "traces" / f"t{k:05d}.json"
        p.write_text(json.dumps(fifty_span_trace(k)))
        files.append(str(p.relative_to(folder)))
    return files


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall s, CPU s of the child, the finished process). CPU time is what the child itself spent, so it
    moves far less than wall time when other work shares the machine."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env={**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(cmd, proc.returncode, out.read().decode(), err.read().decode())
    return wall, usage.ru_utime + usage.ru_stime, done


def verdicts(stdout: str) -> list[tuple[int, bool]]:
    return sorted((r["attempt"], r["passed"]) for r in json.loads(stdout)["results"])


def side_by_side(folder: Path, files: list[str], rounds: int, baseline: Path | None) -> dict[str, float]:
    kit = [sys.executable, "-m", "kit.cli", "check", "--cases", "cases", "--json"]
    tools: list[tuple[str, list[str], dict[str, str]]] = [
        ("kit", kit, {}),
        ("script", [sys.executable, "script.py"], {}),
    ]
    if baseline is not None:
        tools.append(("baseline", kit, {"PYTHONPATH": str(baseline)}))
    runs: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    for r in range(rounds + 1):  # round 0 warms the page cache and the bytecode caches; not counted
        for name, cmd, env in tools:
            for chosen in (files, files[:1]):
                dt, dcpu, p = timed([*cmd, *chosen], folder, env)
                if p.returncode not in (0, 1):
                    raise SystemExit(f"{name} failed ({p.returncode}): {p.stderr[-2000:]}")
                if r == 0 and chosen is files:
                    if name == "kit":
                        kit_verdicts = verdicts(p.stdout)
                    elif verdicts(p.stdout) != kit_verdicts:
                        raise SystemExit(f"{name} and kit check disagree on some trace")
                if r:
                    runs.setdefault((name, len(chosen)), []).append(dt)
                    cpu.setdefault((name, len(chosen)), []).append(dcpu)
    n = len(files)
    names = [t[0] for t in tools]
    print(f"{n} traces of 50 spans, 10 checks each; median of {rounds} interleaved rounds, fresh interpreters")
    ratios = {}
    for label, figures in (("wall", runs), ("CPU", cpu)):
        med = {k: statistics.median(v) for k, v in figures.items()}
        marginal = {name: (med[(name, n)] - med[(name, 1)]) / (n - 1) * 1e6 for name in names}
        print(f"\n{label:10}{'1 trace s':>12}{f'{n} traces s':>16}{'marginal µs/trace':>20}{'/ script':>10}")
        for name in names:
            print(
                f"{name:10}{med[(name, 1)]:>12.3f}{med[(name, n)]:>16.3f}{marginal[name]:>20.0f}"
                f"{marginal[name] / marginal['script']:>10.2f}"
            )
        ratios[label] = (marginal["kit"] / marginal["script"], med[("kit", 1)] / med[("script", 1)])
    for label, (ratio, start) in ratios.items():
        print(
            f"{label}: marginal cost per trace, kit check / script {ratio:.2f} (target <= 1.2); start-up {start:.1f}x"
        )
    return {
        "traces": n,
        "rounds": rounds,
        "wall_per_trace_ratio": round(ratios["wall"][0], 2),
        "cpu_per_trace_ratio": round(ratios["CPU"][0], 2),
        "wall_startup_ratio": round(ratios["wall"][1], 1),
        "cpu_startup_ratio": round(ratios["CPU"][1], 1),
    }


def import_ms(module: str, baseline: Path | None, runs: int = 7) -> dict[str, float]:
    """Median wall ms of `import module` in fresh interpreters, interleaved with `import pydantic` alone
    (what the import cost while it pulled pydantic in) and with the baseline's when given; and
    `-X importtime`'s cumulative figure for ours."""
    envs: dict[str, tuple[str, dict[str, str]]] = {
        "kit": (module, {}),
        "pydantic": ("pydantic", {}),
        **({"baseline": (module, {"PYTHONPATH": str(baseline)})} if baseline else {}),
    }
    walls: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(runs):
        for name, (mod, env) in envs.items():
            code = f"import time; t=time.perf_counter(); import {mod}; print((time.perf_counter()-t)*1000)"
            p = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/",
                env={**os.environ, **env},
            )  # fmt: skip
            walls[name].append(float(p.stdout))
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT
    )
    line = next(x for x in reversed(p.stderr.splitlines()) if x.rstrip().endswith(f" {module}"))
    out = {name: statistics.median(w) for name, w in walls.items()}
    out["importtime"] = int(line.split("|")[1]) / 1000
    return out


def median_us(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1000


def deepeval_tool_correctness_us(raw: dict, n: int) -> float:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall

    class NeverCalled(DeepEvalBaseLLM):
        """A judge that fails loudly if used: the deterministic path must not need it."""

        def __init__(self):
            super().__init__(model="never-called")

        def load_model(self):
            return None

        def generate(self, *a, **k):
            raise AssertionError("ToolCorrectnessMetric called the model")

        async def a_generate(self, *a, **k):
            raise AssertionError("ToolCorrectnessMetric called the model")

        def get_model_name(self):
            return "never-called"

    calls = [
        ToolCall(name=s["name"], input_parameters=s["input"], output=s["output"])
        for s in raw["spans"]
        if s["kind"] == "tool"
    ]
    tc = LLMTestCase(
        input="Please refund ORD-123456", actual_output=raw["final_output"], tools_called=calls, expected_tools=calls
    )
    metric = ToolCorrectnessMetric(model=NeverCalled(), async_mode=False, include_reason=True)

    def once():
        metric.measure(tc, _show_indicator=False)
        assert metric.success

    return median_us(once, n)


def per_check(n: int = 2000) -> None:
    # bench/deepeval.py would shadow the deepeval package: import from the project root, not from bench/.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    import yaml

    from kit.case import parse_case
    from kit.evaluate import run_check
    from kit.trace import parse_trace

    raw = fifty_span_trace(3)
    case = parse_case(yaml.safe_load(CASE)[0], file="bench", base_dir=ROOT, invariants={})
    trace = parse_trace(raw)
    print(f"\n{'check':<16}{'median µs':>12}   (one warm 50-span trace, {n} runs each)")
    for spec in case.checks:
        times = []
        for _ in range(n):
            t = time.perf_counter_ns()
            run_check(spec, trace)
            times.append(time.perf_counter_ns() - t)
        print(f"{spec.type:<16}{statistics.median(times) / 1000:>12.2f}")
    pair = [
        {"type": "trajectory", "tools": TOOLS, "mode": "in_order"},
        {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-100003", "n": 3}},
    ]
    trajectory = parse_case({"id": "t", "input": "x", "checks": pair}, file="b", base_dir=ROOT, invariants={}).checks
    kit_us = median_us(lambda: [run_check(spec, trace) for spec in trajectory], n)
    de_us = deepeval_tool_correctness_us(raw, 500)
    print(f"\nkit trajectory+args            {kit_us:>8.2f} µs")
    print(f"DeepEval ToolCorrectnessMetric {de_us:>8.2f} µs   ({de_us / kit_us:.0f}x slower; target >= 10x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-check", action="store_true")
    ap.add_argument("--baseline", metavar="REV", help="also time kit check as of this git revision (e.g. HEAD~5)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the per-trace figures here")
    a = ap.parse_args()
    load = [os.getloadavg()[0]]  # the machine is shared: the 1-minute load average before and after
    with tempfile.TemporaryDirectory(prefix="kit-oracle-bench-") as tmp:
        folder = Path(tmp)
        files = write_workload(folder, a.traces)
        baseline = None
        if a.baseline:
            baseline = extract(a.baseline, folder / "baseline")
            print(f"baseline: kit as of {a.baseline}")
        figures = side_by_side(folder, files, a.rounds, baseline)
        ms = import_ms("kit.evaluate", baseline)
    shown = f"import kit.evaluate: {ms['kit']:.0f} ms (median of 7 fresh interpreters"
    shown += f"; -X importtime {ms['importtime']:.0f} ms; target < 100)"
    shown += f"\n  beside, interleaved: import pydantic alone {ms['pydantic']:.0f} ms"
    if "baseline" in ms:
        shown += f"; import kit.evaluate as of the baseline {ms['baseline']:.0f} ms"
    print(f"\n{shown}")
    if a.json:
        load.append(os.getloadavg()[0])
        figures.update(
            date=time.strftime("%Y-%m-%d"), import_kit_evaluate_ms=round(ms["kit"]), load=[round(x, 1) for x in load]
        )
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    if a.per_check:
        per_check()


if __name__ == "__main__":
    main()
