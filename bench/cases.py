"""Case loading speed: `load_suite` on 1,000 small case files, side by side with the bare parse of the same
files (list them, read each, yaml.CSafeLoader), interleaved, median of the rounds. Case files are YAML
(the contract), so there is no JSON side.

    .venv/bin/python bench/cases.py [--files 1000] [--rounds 7]

Target: load_suite at most 2x the bare parse. Each case has five checks of its own, two of them with
parameters no other case has, and two invariants (five checks).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from kit.case import load_suite  # noqa: E402

INVARIANTS = """\
no_leak:
  - {type: no_pii}
  - {type: not_called, tool: [delete_account, list_customers]}
efficient:
  - {type: finished}
  - {type: no_repeat}
  - {type: budget, steps: 12, cost_usd: 0.05}
"""

CASE = """\
id: case-{i:04d}
tags: [refund, generated]
context: {{customer_id: C{i:03d}, email: customer{i}@example.com}}
input: "My order ORD-{n:06d} arrived damaged. Please refund it - yes, go ahead."
invariants: [no_leak, efficient]
checks:
  - {{type: called, tool: lookup_order}}
  - {{type: order, before: lookup_order, after: issue_refund}}
  - {{type: arg, tool: issue_refund, key: amount, expected: {amount}}}
  - {{type: contains, text: "ORD-{n:06d}"}}
  - {{type: called_at_most, tool: issue_refund, n: 1}}
"""


def write_suite(folder: Path, n: int) -> None:
    (folder / "invariants.yaml").write_text(INVARIANTS)
    cases = folder / "cases"
    cases.mkdir()
    for i in range(n):
        (cases / f"case-{i:04d}.yaml").write_text(CASE.format(i=i, n=100000 + i, amount=10 + i / 4))


def bare(folder: Path) -> int:
    """What a hand-written loader does at least: list the files, read and parse each one."""
    n = 0
    for p in sorted(folder.rglob("*.yaml")):
        list(yaml.load_all(p.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))
        n += 1
    return n - 1  # the invariants file


def kit(folder: Path) -> int:
    suite = load_suite(folder)
    if suite.errors:
        raise SystemExit(f"bench cases do not load: {suite.errors[0]}")
    return len(suite.cases)


def timed(fn, *args) -> tuple[float, float]:
    """(wall, CPU) seconds. CPU time is the steadier figure on a shared machine; both are printed."""
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_suite(folder, args.files)
        assert bare(folder) == kit(folder) == args.files  # warm: imports, page cache
        base, ours = [], []
        for _ in range(args.rounds):
            base.append(timed(bare, folder))
            ours.append(timed(kit, folder))
        for i, clock in enumerate(("wall", "CPU")):
            b = statistics.median(t[i] for t in base)
            k = statistics.median(t[i] for t in ours)
            print(
                f"{args.files} case files, {clock:4}: load_suite {k * 1000:7.1f} ms   "
                f"read + yaml.CSafeLoader {b * 1000:7.1f} ms   ratio {k / b:4.2f}  "
                f"(target <= 2.00; median of {args.rounds} interleaved rounds)"
            )


if __name__ == "__main__":
    main()
