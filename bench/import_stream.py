"""Peak memory of `kit check` and `kit import` on a day of recordings: N traces of 50 spans as JSON Lines.

    .venv/bin/python bench/import_stream.py [--sizes 2000,20000] [--what check,import] [--whole]

Each command runs in a subprocess of its own, per size; its peak resident memory is the child's
`ru_maxrss` (os.wait4). Printed per size: the file's size, wall time, peak memory, and for the largest size
the ratio to the smallest (the target: peak memory at most 1.5x for 10x the traces; time linear).
`--whole` also runs each command with streaming off (every file read whole, as before), beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = """
- id: day
  input: "Where is my order?"
  checks:
    - {type: called, tool: lookup_order}
    - {type: called_at_most, tool: issue_refund, n: 1}
    - {type: no_repeat}
    - {type: order, before: lookup_order, after: send_email}
    - {type: no_tool_errors}
    - {type: contains, text: shipped}
    - {type: budget, steps: 30, tokens: 100000}
"""
RUN = """
import resource, sys
import kit.trace
if {whole}:
    kit.trace.STREAM_BYTES = 1 << 62
from kit.cli import main
sys.exit(main({argv!r}))
"""


def trace(i: int) -> dict:
    """50 spans: a user message, then 16 rounds of model call, tool call and a short assistant note, and an answer."""
    spans: list[dict] = [{"kind": "message", "role": "user", "content": f"Where is my order ORD-{i:06d}?"}]
    for k in range(16):
        tool = "lookup_order" if k == 0 else ("send_email" if k == 15 else "search_kb")
        spans.append({"kind": "llm", "name": "gpt-4o-mini-2024-07-18", "tokens_in": 800 + k, "tokens_out": 40})
        spans.append(
            {
                "kind": "tool",
                "name": tool,
                "input": {"order_id": f"ORD-{i:06d}", "query": f"step {k}", "page": k},
                "output": {"status": "shipped", "items": [{"sku": f"SKU-{j}", "note": "x" * 40} for j in range(4)]},
                "latency_ms": 12.5,
            }
        )
        spans.append({"kind": "message", "role": "assistant", "content": f"Checking step {k} of your order. " * 3})
    spans.append({"kind": "message", "role": "assistant", "content": f"Your order ORD-{i:06d} has shipped."})
    return {"case_id": "day", "attempt": i, "model": "gpt-4o-mini-2024-07-18", "final_output": spans[-1]["content"],
            "finish_reason": "finish", "spans": spans}  # fmt: skip


def write(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps(trace(i), separators=(",", ":")) + "\n")


def measure(argv: list[str], whole: bool) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of `kit ARGV` in a fresh process."""
    code = RUN.format(argv=argv, whole=whole)
    started = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - started
    err = p.stderr.read().decode() if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1):
        sys.exit(f"kit {' '.join(argv)} exited {p.returncode}: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000,20000")
    ap.add_argument("--what", default="check,import")
    ap.add_argument("--whole", action="store_true", help="also measure with streaming off")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="kit-stream-bench-") as d:
        tmp = Path(d)
        (tmp / "cases.yaml").write_text(CASES)
        files = {}
        for n in sizes:
            files[n] = tmp / f"day-{n}.jsonl"
            write(files[n], n)
        modes = [False, True] if args.whole else [False]
        for what in args.what.split(","):
            for whole in modes:
                label = f"kit {what}" + (" (read whole)" if whole else "")
                peaks: dict[int, tuple[float, float]] = {}
                for n in sizes:
                    if what == "check":
                        argv = ["check", str(files[n]), "--cases", str(tmp / "cases.yaml"), "--json"]
                    else:
                        argv = ["import", str(files[n]), "-o", str(tmp / f"out-{n}.json")]
                    peaks[n] = measure(argv, whole)
                    mb = files[n].stat().st_size / 1e6
                    wall, peak = peaks[n]
                    print(f"{label:24} {n:>6} traces ({mb:6.1f} MB): {wall:7.2f} s, {1e3 * wall / n:6.3f} ms/trace, "
                          f"peak {peak:7.1f} MB")  # fmt: skip
                lo, hi = min(sizes), max(sizes)
                if lo != hi:
                    mem = peaks[hi][1] / peaks[lo][1]
                    per = (peaks[hi][0] / hi) / (peaks[lo][0] / lo)
                    print(f"{label:24} {hi}/{lo}: peak memory x{mem:.2f} (target <= 1.5), time per trace x{per:.2f}")


if __name__ == "__main__":
    main()
