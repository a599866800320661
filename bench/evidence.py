"""What telling changes from chance costs a comparison: `kit.aggregate.evidence` (per-case Fisher exact
tests, Holm, Wilson intervals, the suite's pass^k intervals from the exact moments of the cases' Jeffreys
posteriors) beside the same pass^k intervals by Monte Carlo (1,000 posterior draws per case, the usual way),
and beside the flips-only comparison the kit had before (`kit.aggregate.flips`), on the same counts,
interleaved, median of the rounds (CPU time).

    .venv/bin/python bench/evidence.py [--cases 61] [--runs 5] [--rounds 5]

Target: the evidence for the golden suite's size (61 cases) in well under 0.1 s, so `kit compare`, the
report and the gate stay interactive.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from kit.aggregate import evidence, flips  # noqa: E402

Counts = dict[str, tuple[int, int]]


def monte_carlo(counts: Counts, ks: tuple[int, ...], draws: int = 1000) -> dict[int, tuple[float, float]]:
    """The alternative: the middle 95% of the suite's mean p^k over `draws` Jeffreys posterior draws."""
    rng = random.Random(0)
    pairs = list(counts.values())
    means: dict[int, list[float]] = {k: [] for k in ks}
    for _ in range(draws):
        rates = [rng.betavariate(c + 0.5, n - c + 0.5) for c, n in pairs]
        for k in ks:
            means[k].append(sum(r**k for r in rates) / len(rates))
    return {k: (sorted(v)[int(0.025 * draws)], sorted(v)[int(0.975 * draws)]) for k, v in means.items()}


def timed(fn) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=61)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(1)
    n = args.runs
    before = {f"c{i}": (rng.randint(n * 7 // 10, n), n) for i in range(args.cases)}
    after = {f"c{i}": (rng.randint(n * 6 // 10, n), n) for i in range(args.cases)}
    ways = {
        "evidence (exact intervals)": lambda: evidence(before, after, 0.05, ks=(1, 2)),
        "pass^k intervals by Monte Carlo": lambda: (monte_carlo(before, (1, 2)), monte_carlo(after, (1, 2))),
        "flips only (before)": lambda: flips(
            {c: p == m for c, (p, m) in before.items()}, {c: p == m for c, (p, m) in after.items()}
        ),
    }
    times: dict[str, list[float]] = {w: [] for w in ways}
    for _ in range(args.rounds):
        for name, fn in ways.items():
            times[name].append(timed(fn))
    base = statistics.median(times["evidence (exact intervals)"])
    print(f"{args.cases} cases x {n} runs, median of {args.rounds} rounds (CPU):")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<34} {med * 1000:9.2f} ms  ({med / base:.2f}x evidence)")


if __name__ == "__main__":
    main()
