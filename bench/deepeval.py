"""Figures for the DeepEval path: the golden suite through `deepeval test run tests/evals`, whole-command
wall time per case run, side by side with the same oracle checks through `kit run`.

    .venv/bin/python bench/deepeval.py [--sizes 100 400] [--skip-stock-above 400]

The golden cases are replicated (new ids, runs: 1) to 100 and 400 case runs in a temporary folder, with the
golden folder's invariants, tool schemas and fixtures beside them. Every command runs in a fresh process
with its own store and working directory (DeepEval's `.deepeval/` files land there), offline, no judge
(rubrics are recorded as skipped). Configurations:

- deepeval stock: KIT_DEEPEVAL_CACHE=1 leaves DeepEval's per-test bookkeeping alone: after every test it
  rewrites its result cache twice and re-reads and rewrites the whole test run so far (O(n^2) in cases).
- deepeval kit:   the default of tests/evals: cache pinned off (its key ignores the trace, so it would be
  wrong for trajectory checks anyway) and, in one process, the run kept in memory (O(1) per test).
- kit run serial: `kit run --pool serial` (one process, like DeepEval), and `kit run` (its process pool).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv" / "bin"
OFFLINE = {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_DISABLE_DOTENV": "1", "NO_COLOR": "1"}


def build_suite(dest: Path, n: int) -> int:
    """n case runs: the golden cases replicated round-robin, each with runs: 1. Returns the count."""
    import sys

    sys.path.insert(0, str(ROOT))
    from kit.case import NOT_CASE_FILES, case_files

    golden = ROOT / "golden"
    dest.mkdir(parents=True)
    for item in golden.iterdir():  # invariants, tool schemas, fixtures: everything that is not a case file
        if item.is_dir() and item.name != "cases":
            shutil.copytree(item, dest / item.name)
        elif item.is_file() and (item.name in NOT_CASE_FILES or item.suffix not in (".yaml", ".yml")):
            shutil.copy(item, dest / item.name)
    originals = []
    for f in case_files(golden):
        for doc in yaml.safe_load_all(f.read_text()):
            originals.extend(doc if isinstance(doc, list) else [doc])
    originals = [c for c in originals if isinstance(c, dict) and "id" in c]
    cases = []
    for i in range(n):
        c = dict(originals[i % len(originals)])
        c["id"] = f"{c['id']}-x{i:04d}"
        c["runs"] = 1
        cases.append(c)
    (dest / "cases.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))
    return len(cases)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - started, out.returncode, out.stdout[-2000:] + out.stderr[-2000:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--skip-stock-above", type=int, default=10_000, help="skip DeepEval stock above n")
    args = parser.parse_args()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "DEEPEVAL_", "CONFIDENT_"))}
    rows: list[tuple[int, str, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-deepeval-") as tmp:
        for n in args.sizes:
            suite = Path(tmp) / f"suite{n}"
            runs = build_suite(suite, n)
            configs: list[tuple[str, list[str], dict[str, str]]] = [
                (
                    "deepeval kit",
                    [str(VENV / "deepeval"), "test", "run", str(ROOT / "tests/evals"), "-d", "failing"],
                    {},
                ),
                (
                    "kit run --pool serial",
                    [str(VENV / "kit"), "run", "--cases", str(suite), "--pool", "serial", "-q"],
                    {},
                ),
                ("kit run (process pool)", [str(VENV / "kit"), "run", "--cases", str(suite), "-q"], {}),
            ]
            if n <= args.skip_stock_above:
                configs.insert(
                    0,
                    (
                        "deepeval stock",
                        [str(VENV / "deepeval"), "test", "run", str(ROOT / "tests/evals"), "-d", "failing"],
                        {"KIT_DEEPEVAL_CACHE": "1"},
                    ),
                )
            for name, cmd, extra in configs:
                work = Path(tmp) / f"work-{n}-{name.split()[0]}-{len(rows)}"
                work.mkdir()
                # The `tool_schemas` check's default path (golden/tools.json) is read relative to the cwd.
                (work / "golden").symlink_to(suite)
                env = {
                    **base_env,
                    **OFFLINE,
                    **extra,
                    "KIT_CASES": str(suite),
                    "KIT_STORE": str(work / "evals.duckdb"),
                    "KIT_GATES": str(work / "none.yaml"),
                }
                seconds, rc, tail = timed(cmd, env, work)
                if rc not in (0, 1):
                    raise SystemExit(f"{name} at n={n} exited {rc}:\n{tail}")
                rows.append((runs, name, seconds, rc))
                print(
                    f"  n={runs:4d} {name:24s} {seconds:7.2f} s  {1000 * seconds / runs:7.1f} ms/case  exit {rc}",
                    flush=True,
                )
    print("\nwhole-command wall time per case run (fresh process each; lower is better)")
    names = list(dict.fromkeys(r[1] for r in rows))
    sizes = sorted({r[0] for r in rows})
    print(f"{'configuration':26s}" + "".join(f"{f'n={s}':>16s}" for s in sizes) + f"{'growth':>10s}")
    for name in names:
        per = {r[0]: 1000 * r[2] / r[0] for r in rows if r[1] == name}
        cells = "".join(f"{(f'{per[s]:.1f} ms' if s in per else '-'):>16s}" for s in sizes)
        growth = f"{per[sizes[-1]] / per[sizes[0]]:.2f}x" if len(sizes) > 1 and all(s in per for s in sizes) else "-"
        print(f"{name:26s}{cells}{growth:>10s}")
    print("growth: ms per case at the largest n over ms per case at the smallest (1.00x = linear)")


if __name__ == "__main__":
    main()
