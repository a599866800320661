"""Per-test cost of Promptfoo evals with the kit, against Promptfoo's own floor on the same tests.

    .venv/bin/python bench/promptfoo.py [--quick]

Scenarios, each run with `-j 1` so per-test figures are serial costs:
  floor        the same tests with a trivial persistent Python provider and a trivial JavaScript assertion
               file: what Promptfoo costs by itself (worker IPC, loading the assertion, its database, logs)
  kit          providers/agent_provider.py + providers/oracle_assert.cjs, as the configs run them (the
               verdict computed in the warm worker and sealed; the assertion checks the seal inside Promptfoo)
  kit-python   the same provider with the Python assertion oracle_assert.py: one Python process per test
Workloads: the golden eval (promptfooconfig.yaml) and a 100-attack red team (generated offline from
redteam/promptfooconfig.yaml, default agent). Per test = (T(all) - T(first 1)) / (N - 1), so Promptfoo's
start-up is left out. The kit's share is kit minus floor. Target: under 50 ms per test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "redteam"))

from kit_promptfoo import run_promptfoo  # noqa: E402

WORK = ROOT / ".promptfoo" / "bench"
TRIVIAL_PROVIDER = "def call_api(prompt, options, context):\n    return {'output': prompt[:80]}\n"
TRIVIAL_ASSERT = "module.exports.get_assert = () => ({ pass: true, score: 1.0, reason: 'ok' });\n"


def env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("KIT_PROMPTFOO_RECHECK", "KIT_JUDGE_MODEL")}
    e = run_promptfoo.offline_env(ROOT, base=base)
    e["PROMPTFOO_CONFIG_DIR"] = str(WORK / "state")
    return e


def timed_eval(config: Path, e: dict[str, str], first: int | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s of Promptfoo and all its children, tests run)."""
    out = WORK / "out.json"
    args = ["eval", "-c", str(config), "-j", "1", "--no-progress-bar", "--no-table", "-o", str(out)]
    if first:
        args += ["--filter-first-n", str(first)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(run_promptfoo.command(args), env=e, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 100):
        raise SystemExit(f"promptfoo eval failed ({proc.returncode}): {proc.stderr[-2000:]}")
    results = json.loads(out.read_text())["results"]["results"]
    errors = [r for r in results if r.get("failureReason") == 2]
    if errors:
        raise SystemExit(f"{config}: {len(errors)} errors, e.g. {errors[0].get('error', '')[:300]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, len(results)


def per_test(config: Path, e: dict[str, str]) -> dict[str, float]:
    w1, c1, _ = timed_eval(config, e, first=1)
    wn, cn, n = timed_eval(config, e)
    return {"n": n, "wall_ms": (wn - w1) / (n - 1) * 1000, "cpu_ms": (cn - c1) / (n - 1) * 1000, "total_s": wn}


def write_config(name: str, tests: list[dict[str, Any]], provider: dict[str, Any], assertion: str) -> Path:
    cfg = {
        "prompts": ["{{input}}"] if "input" in tests[0]["vars"] else ["{{prompt}}"],
        "providers": [provider],
        "defaultTest": {
            "assert": [{"type": "python" if assertion.endswith(".py") else "javascript", "value": assertion}]
        },
        "tests": tests,
    }
    path = WORK / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def golden_tests() -> list[dict[str, Any]]:
    return yaml.safe_load((ROOT / "promptfooconfig.yaml").read_text())["tests"]


def redteam_tests(n: int) -> list[dict[str, Any]]:
    from kit_promptfoo.redteam import hooks

    gen = WORK / "redteam-generated.yaml"
    args = ["redteam", "generate", "-c", "redteam/promptfooconfig.yaml", "-o", str(gen), "--force"]
    subprocess.run(run_promptfoo.command(args), env=env(), cwd=ROOT, capture_output=True, check=True)
    tests = yaml.safe_load(gen.read_text())["tests"]
    out = []
    for t in tests[:n]:
        t = hooks.strip_graders(t)
        t["vars"] = {**t["vars"], "case_file": "redteam/case.yaml", "case_id": "redteam-attack"}
        out.append({"vars": t["vars"], "metadata": t.get("metadata", {})})
    return out


def scenarios(name: str, tests: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    (WORK / "trivial_provider.py").write_text(TRIVIAL_PROVIDER)
    (WORK / "trivial_assert.cjs").write_text(TRIVIAL_ASSERT)
    floor = write_config(
        f"{name}-floor",
        tests,
        {"id": f"file://{WORK}/trivial_provider.py"},
        f"file://{WORK}/trivial_assert.cjs:get_assert",
    )
    kit_provider = {"id": f"file://{ROOT}/providers/agent_provider.py", "config": {"policy": "deterministic"}}
    kit = write_config(f"{name}-kit", tests, kit_provider, f"file://{ROOT}/providers/oracle_assert.cjs:get_assert")
    python = write_config(f"{name}-python", tests, kit_provider, f"file://{ROOT}/kit_promptfoo/oracle_assert.py")
    return {"floor": per_test(floor, env()), "kit": per_test(kit, env()), "kit-python": per_test(python, env())}


def in_process() -> dict[str, float]:
    """What the kit does inside one call, without Promptfoo around it."""
    from kit_promptfoo import agent_provider

    tests = golden_tests()
    agent_provider.call_api(tests[0]["vars"]["input"], {}, {"vars": tests[0]["vars"]})  # warm imports
    times = []
    for t in tests:
        t0 = time.perf_counter()
        agent_provider.call_api(t["vars"]["input"], {}, {"vars": t["vars"]})
        times.append((time.perf_counter() - t0) * 1000)

    def spawn(code: str) -> float:
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
            runs.append((time.perf_counter() - t0) * 1000)
        return statistics.median(runs)

    bare = spawn("pass")
    return {
        "call_api_ms": statistics.median(times),
        "assert_import_ms": spawn("import kit_promptfoo.oracle_assert, kit_promptfoo.digest") - bare,
        "oracle_import_ms": spawn("import kit.evaluate, kit.trace, kit_promptfoo.kit_request") - bare,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 golden tests and a 30-attack red team")
    args = ap.parse_args()
    if not run_promptfoo.promptfoo_bin().exists():
        print("node_modules missing: run `make promptfoo-install`", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    golden = golden_tests()[: 20 if args.quick else None]
    attacks = redteam_tests(30 if args.quick else 100)
    rows = {"golden": scenarios("golden", golden), f"redteam-{len(attacks)}": scenarios("redteam", attacks)}
    print(f"{'workload':14} {'scenario':10} {'tests':>5} {'total s':>8} {'wall ms/test':>13} {'cpu ms/test':>12}")
    for workload, by in rows.items():
        for scen, r in by.items():
            print(f"{workload:14} {scen:10} {r['n']:5d} {r['total_s']:8.1f} {r['wall_ms']:13.1f} {r['cpu_ms']:12.1f}")
        for scen in ("kit", "kit-python"):
            share = by[scen]["wall_ms"] - by["floor"]["wall_ms"]
            cpu = by[scen]["cpu_ms"] - by["floor"]["cpu_ms"]
            verdict = "meets" if share < 50 else "misses"
            print(
                f"{'':14} {scen:10} kit's share over the floor: {share:+.1f} ms wall, {cpu:+.1f} ms cpu "
                f"({verdict} <50 ms)"
            )
    ip = in_process()
    print(
        f"in process: call_api (fresh agent + sandbox + oracle) {ip['call_api_ms']:.1f} ms median; "
        f"assertion imports {ip['assert_import_ms']:.1f} ms; the oracle's imports {ip['oracle_import_ms']:.1f} ms "
        "(paid once per worker by kit; the Python assertion's per test by kit-python)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
