"""The HTML report's size and opening time for the golden suite x N runs, against its budget (2 MB, 1 s).

    .venv/bin/python bench/report_page.py [--runs 5] [--redteam-store .kit/evals.duckdb] [--keep DIR]

The reference agent runs every golden case N times; the same case runs are recorded as a kit, a DeepEval
and a Promptfoo run (the three front ends run the same agent through the same oracle, so their traces are
the same size), plus the red-team runs copied from a store of a real `make evals` when one is given. The
page is written by `kit report --html` and opened in headless Chromium, which reports how long the page's
script took and the time from the file's last byte to a laid-out, filterable table.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_BYTES = 2_000_000
BUDGET_MS = 1_000
PROBE = """<script>
var nav = performance.getEntriesByType('navigation')[0];
document.body.offsetHeight;  // lay the page out before reading the clock
var pre = document.createElement('pre'); pre.id = 'probe';
pre.textContent = JSON.stringify({render: +document.body.getAttribute('data-render-ms'),
  load: Math.round(performance.now() - nav.responseEnd), rows: document.querySelectorAll('#case-body tr.row').length});
document.body.appendChild(pre);
</script></body>"""


def build_store(path: Path, runs: int, redteam_store: Path | None) -> list[str]:
    """The store, and the ids of the runs the page is to hold."""
    from kit.case import load_suite
    from kit.runner import invoke
    from kit.runner.agents import configured_agent
    from kit.settings import load_settings
    from kit.store import open_store

    settings = load_settings()
    suite = load_suite(settings.cases)
    agent = configured_agent(settings)
    done = [invoke(agent, case, a, timeout=60) for case in suite.cases for a in range(runs)]
    store = open_store(path)
    ids = []
    for source in ("kit", "deepeval", "promptfoo"):
        run_id = store.start_run(source, agent="reference", model="deterministic-reference-agent")
        store.record_many(run_id, [(d.case_run, d.trace) for d in done])
        store.finish_run(run_id)
        ids.append(run_id)
    if redteam_store and redteam_store.is_file():
        with store.connect() as con:
            con.execute(f"ATTACH '{redteam_store}' AS red (READ_ONLY)")
            found = con.execute("SELECT DISTINCT run_id FROM red.case_results WHERE starts_with(case_id, 'redteam/')")
            red = [r[0] for r in found.fetchall()]
            for table in ("runs", "case_results", "check_results", "judge_calls"):
                cols = ", ".join(f'"{c[0]}"' for c in con.execute(f"DESCRIBE red.{table}").fetchall())
                con.execute(
                    f"INSERT INTO {table} ({cols}) SELECT {cols} FROM red.{table} "
                    "WHERE run_id IN (SELECT unnest(?::VARCHAR[]))",
                    [red],
                )
            con.execute("DETACH red")
        ids += red
    return ids


def open_in_chromium(page: Path, work: Path, repeats: int = 5) -> dict:
    """Median over `repeats` openings of the page and, interleaved, of an empty page (the browser's own
    cost on this machine at this moment, since a loaded machine slows both alike)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return {}
    probed = work / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE, 1), encoding="utf-8")
    empty = work / "empty.html"
    empty.write_text('<!doctype html><html><body data-render-ms="0"><table id="case-body"></table>' + PROBE)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={work / 'profile'}"]  # fmt: skip

    def one(path: Path) -> dict:
        out = subprocess.run(
            [chromium, *flags, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120
        )
        found = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
        return json.loads(found.group(1).replace("&quot;", '"')) if found else {}

    pages, empties = [], []
    for _ in range(repeats):
        pages.append(one(probed))
        empties.append(one(empty))
    return {
        "rows": pages[0]["rows"],
        "render": statistics.median(p["render"] for p in pages),
        "load": statistics.median(p["load"] for p in pages),
        "empty": statistics.median(e["load"] for e in empties),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--redteam-store", type=Path, help="a store of a real make evals to take the red team from")
    parser.add_argument("--keep", type=Path, help="keep the store and the page in this folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kit-report-bench-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    store = work / "evals.duckdb"
    t0 = time.perf_counter()
    ids = build_store(store, args.runs, args.redteam_store)
    built = time.perf_counter() - t0
    page = work / "report.html"
    t0 = time.perf_counter()
    code = subprocess.run(
        [sys.executable, "-m", "kit.cli", "report", "--store", str(store), "--runs", *ids, "--html", str(page)],
        capture_output=True,
        text=True,
    ).returncode
    written = time.perf_counter() - t0
    if code != 0:
        print(f"kit report exited {code}", file=sys.stderr)
        return 1
    size = page.stat().st_size
    seen = open_in_chromium(page, work)
    print(f"golden suite x {args.runs} runs; store built in {built:.1f} s; kit report --html in {written:.1f} s")
    print(f"page size   {size / 1e6:6.2f} MB   budget {BUDGET_BYTES / 1e6:.1f} MB   ratio {size / BUDGET_BYTES:.2f}")
    if seen:
        print(f"case rows   {seen['rows']} laid out")
        print(f"script      {seen['render']:6.0f} ms (median of 5)")
        ratio = seen["load"] / max(seen["empty"], 1)
        print(f"opened in   {seen['load']:6.0f} ms   an empty page {seen['empty']:.0f} ms   ratio {ratio:.1f}")
        print(f"budget      {BUDGET_MS} ms")
    else:
        print("chromium not found: opening time not measured")
    print(f"page: {page}")
    return 0 if size < BUDGET_BYTES and (not seen or seen["load"] < BUDGET_MS) else 1


if __name__ == "__main__":
    sys.exit(main())
