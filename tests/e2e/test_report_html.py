"""The HTML report: one self-contained file, checked in a real headless Chromium (Debian's `chromium`)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess

import pytest

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=127.0.0.1:9",  # belt and braces: nothing the page asks for may leave the machine
]

# Injected into a copy of the report only: reports what the browser actually laid out.
PROBE = """<script>
document.addEventListener('DOMContentLoaded', () => {
  const svgs = [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {label: s.getAttribute('aria-label'), w: r.width, h: r.height,
            rects: [...s.querySelectorAll('rect')].map(x => x.getBoundingClientRect().width),
            points: s.querySelectorAll('circle').length};
  });
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify({svgs, resources: performance.getEntriesByType('resource').length});
  document.body.appendChild(pre);
});
</script></body>"""


def _store_with_history(path):
    store = open_store(path)
    plans = [  # three suite runs: the last one breaks "refund" and fixes "loop"
        {"refund": [1, 1, 1], "loop": [0, 0, 1], "pii": [1, 1, 1]},
        {"refund": [1, 1, 1], "loop": [0, 1, 0], "pii": [1, 1, 1]},
        {"refund": [0, 1, 0], "loop": [1, 1, 1], "pii": [1, 1, 1]},
    ]
    for i, plan in enumerate(plans):
        run_id = store.start_run("kit", model=f"model-{i}", git_sha=f"{i}" * 8)
        for case_id, oks in plan.items():
            for attempt, ok in enumerate(oks):
                result = Result("called:lookup_order", bool(ok), "" if ok else "lookup_order never called")
                store.record(run_id, CaseRun(case_id, attempt, (result,)))
        store.record_soft(run_id, "pii", 0, "geval:tone", outcome="pass", score=0.9, judge_model="j")
        store.finish_run(run_id)
    return store


def _chromium(*args: str, profile) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=90
    )


def test_html_is_self_contained(tmp_path, capsys):
    store = _store_with_history(tmp_path / "evals.duckdb")
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--html", str(out)]) == 0
    html = out.read_text()
    assert html.startswith("<!doctype html>") and html.count("<svg") == 3
    assert not re.search(r"(?i)<script|<link|@import|url\(|https?://|src=", html)
    assert "pass→fail" in html and "refund" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_renders_in_headless_chromium(tmp_path):
    store = _store_with_history(tmp_path / "evals.duckdb")
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--html", str(out)]) == 0
    probed = tmp_path / "probed.html"
    probed.write_text(out.read_text().replace("</body>", PROBE, 1))

    dom = _chromium("--dump-dom", probed.as_uri(), profile=tmp_path / "p1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    probe = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S).group(1).replace("&quot;", '"'))
    assert probe["resources"] == 0  # no fetch of any kind: fonts, images, styles
    charts = {s["label"]: s for s in probe["svgs"]}
    assert set(charts) == {"pass fraction per case", "pass rate across recent runs", "flips since the previous run"}
    assert all(s["w"] > 300 and s["h"] > 50 for s in charts.values())
    bars = charts["pass fraction per case"]["rects"]  # sorted by pass fraction: refund 1/3, loop 3/3, pii 3/3
    assert len(bars) == 3 and bars[0] < bars[1] == bars[2]
    assert charts["pass rate across recent runs"]["points"] == 3
    assert len(charts["flips since the previous run"]["rects"]) == 2  # refund down, loop up

    shot = tmp_path / "report.png"
    res = _chromium("--window-size=1200,1400", f"--screenshot={shot}", out.as_uri(), profile=tmp_path / "p2")
    assert res.returncode == 0, res.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1200, 1400)
