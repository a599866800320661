"""The HTML report: one self-contained file, driven in a real headless Chromium (Debian's `chromium`).

A probe script is added to a copy of the page only; it uses the page as a person would (choose a filter,
click a row) and writes what the browser then shows into the DOM, which `--dump-dom` prints."""

from __future__ import annotations

import json
import re
import struct
import time

import pytest
from browser import chromium, needs_chromium, probe

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store

pytestmark = pytest.mark.e2e

HOSTILE = '</script><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'

# Uses the page like a person, then writes what it saw into <pre id="probe">.
PROBE = """<script>
(function () {
  var nav = performance.getEntriesByType('navigation')[0];
  var out = {render: +document.body.getAttribute('data-render-ms'),
             load: Math.round(performance.now() - nav.responseEnd), since_start: Math.round(performance.now()), rows: 0, failing: [], opened: null, flips: [],
             labels: [], pwned: window.__pwned || null, imgs: document.images.length,
             resources: performance.getEntriesByType('resource').length};
  var rows = function () { return Array.prototype.filter.call(document.querySelectorAll('#case-body tr.row'),
                                                                function (r) { return !r.hidden; }); };
  out.rows = rows().length;
  var sel = document.getElementById('f-outcome'); sel.value = 'failing'; sel.dispatchEvent(new Event('change'));
  out.failing = rows().map(function (r) { return [r.getAttribute('data-outcome'), r.cells[2].textContent]; });
  sel.value = ''; sel.dispatchEvent(new Event('change'));
  var fl = document.getElementById('f-flaky'); fl.checked = true; fl.dispatchEvent(new Event('change'));
  out.flaky = rows().map(function (r) { return r.getAttribute('data-outcome'); });
  fl.checked = false; fl.dispatchEvent(new Event('change'));
  var chk = document.getElementById('f-check'); chk.value = 'called:issue_refund'; chk.dispatchEvent(new Event('change'));
  out.bycheck = rows().map(function (r) { return r.cells[1].firstChild.textContent; });
  chk.value = ''; chk.dispatchEvent(new Event('change'));
  var q = document.getElementById('f-search'); q.value = 'refund'; q.dispatchEvent(new Event('input'));
  out.searched = rows().map(function (r) { return r.cells[1].firstChild.textContent; });
  q.value = ''; q.dispatchEvent(new Event('input')); sel.value = ''; sel.dispatchEvent(new Event('change'));
  var target = rows().find(function (r) { return r.cells[1].firstChild.textContent === 'refund' &&
                                                   r.cells[0].firstChild.textContent === 'kit'; });
  target.click();
  var d = target.nextSibling;
  out.opened = {detail: d.className, tools: Array.prototype.map.call(d.querySelectorAll('.tool .name'),
                                                                     function (e) { return e.textContent; }),
                args: Array.prototype.map.call(d.querySelectorAll('.tool pre.args'), function (e) { return e.textContent; }),
                turns: d.querySelectorAll('.turn').length, hard: d.querySelectorAll('.gate.hard tr.check').length,
                soft: d.querySelectorAll('.gate.soft tr.check').length,
                judge: Array.prototype.map.call(d.querySelectorAll('tr.judge td'), function (e) { return e.textContent; }),
                state: d.querySelectorAll('.state table').length, text: d.textContent};
  out.flips = Array.prototype.map.call(document.querySelectorAll('#flips li'), function (e) { return e.textContent; });
  document.querySelectorAll('svg.trend').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    // Each text's box in its own coordinates, turned by its transform: a rotated label is a rotated box.
    var rects = Array.prototype.map.call(svg.querySelectorAll('text'), function (t) {
      var b = t.getBBox(), m = t.getScreenCTM();
      return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(
        function (p) { var q = new DOMPoint(p[0], p[1]).matrixTransform(m); return [q.x, q.y]; }); });
    out.labels.push({box: [box.left, box.top, box.right, box.bottom], texts: rects});
  });
  rows().forEach(function (r) { if (r.cells[1].firstChild.textContent === 'hostile') r.click(); });
  out.hostile = Array.prototype.map.call(document.querySelectorAll('tr.detail pre.final'),
                                         function (e) { return e.textContent; });
  out.pwned = window.__pwned || null; out.imgs = document.images.length;
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"""


def _trace(case_id: str, ok: bool, *, hostile: bool = False) -> dict:
    answer = HOSTILE if hostile else ("Refund of $42.50 issued." if ok else "I cannot help.")
    spans = [
        {"kind": "message", "role": "user", "content": "Please refund ORD-123456", "turn": 0},
        {"kind": "llm", "name": "m1", "tokens_in": 800, "tokens_out": 60, "cost_usd": 0.003, "turn": 0},
        {"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-123456"}, "output": {"total": 42.5},
         "turn": 0},
        {"kind": "message", "role": "assistant", "content": "Shall I refund $42.50?", "turn": 0},
        {"kind": "message", "role": "user", "content": "Yes, go ahead.", "turn": 1},
    ]  # fmt: skip
    if ok:
        spans.append({"kind": "tool", "name": "issue_refund", "input": {"order_id": "ORD-123456", "amount": 42.5},
                      "output": {"ok": True}, "turn": 1})  # fmt: skip
    spans.append({"kind": "message", "role": "assistant", "content": answer, "turn": 1})
    state = {"refunds": [{"order_id": "ORD-123456", "amount": 42.5}] if ok else []}
    return {"case_id": case_id, "final_output": answer, "finish_reason": "finish", "spans": spans, "end_state": state}


def _record(store, source: str, plan: dict[str, list[int]], *, model: str, sha: str, agent: str = "desk") -> str:
    run_id = store.start_run(source, agent=agent, model=model, git_sha=sha)
    for case_id, oks in plan.items():
        for attempt, ok in enumerate(oks):
            result = Result("called:issue_refund", bool(ok), "" if ok else "issue_refund never called")
            trace = _trace(case_id, bool(ok), hostile=case_id == "hostile")
            store.record(run_id, CaseRun(case_id, attempt, (result, Result("finished", True))), trace)
            store.record_soft(run_id, case_id, attempt, "rubric:tone", outcome="pass", score=0.9, threshold=0.6,
                              judge_model="judge-2025-01-01", rubric_hash="ab12cd34", raw_answer="<b>9</b>/10")  # fmt: skip
    store.finish_run(run_id)
    return run_id


def _store(path):
    store = open_store(path)
    plans = [  # three runs of the same agent and cases: the last breaks "refund" and fixes "loop"
        {"refund": [1, 1, 1], "loop": [0, 0, 0], "pii": [1, 1, 1], "hostile": [1, 1, 1]},
        {"refund": [1, 1, 1], "loop": [0, 1, 0], "pii": [1, 1, 1], "hostile": [1, 1, 1]},
        {"refund": [0, 1, 0], "loop": [1, 1, 1], "pii": [1, 1, 1], "hostile": [1, 1, 1]},
    ]
    ids = [_record(store, "kit", p, model=f"model-{i}-with-a-rather-long-name", sha=f"{i}" * 40)
           for i, p in enumerate(plans)]  # fmt: skip
    _record(store, "kit", {"other": [0]}, model="model-x", sha="9" * 40, agent="another-agent")
    ids.append(_record(store, "deepeval", plans[2], model="model-2", sha="2" * 40))
    return store, ids


def _probe(page, tmp_path) -> dict:
    return probe(page, PROBE, tmp_path, profile=tmp_path / "probe-profile")


def test_html_is_one_offline_file_with_every_source(tmp_path):
    store, ids = _store(tmp_path / "evals.duckdb")
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--run", ids[2], "--html", str(out)]) == 0
    html = out.read_text()
    assert html.startswith("<!doctype html>")
    markup = re.sub(r'(?s)<script type="application/json" id="kit-data">.*?</script>', "", html)
    assert not re.search(r"(?i)<link|@import|url\(|https?://|\ssrc=", markup)  # nothing fetched from anywhere
    assert 'data-source="kit"' in html and 'data-source="deepeval"' in html  # both sources of the batch
    assert HOSTILE not in html and "</script><img" not in html  # hostile text never lands as markup
    assert html.count("<script") == 2  # the payload and the page's own script, nothing from a trace


@needs_chromium
def test_page_filters_opens_traces_and_lists_flips_inchromium(tmp_path):
    store, ids = _store(tmp_path / "evals.duckdb")
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--run", ids[2], "--html", str(out)]) == 0
    probe = _probe(out, tmp_path)
    assert probe["resources"] == 0 and probe["pwned"] is None and probe["imgs"] == 0
    assert HOSTILE in probe["hostile"]  # the hostile answer is on the page, as text
    assert probe["rows"] == 8  # 4 cases x (kit, deepeval); the other agent's run is not in this batch
    assert probe["failing"] and all(o != "pass" and c.split("/")[0] != c.split("/")[1] for o, c in probe["failing"])
    assert {c for _, c in probe["failing"]} == {"1/3"}  # refund in kit and deepeval: the only failing rows
    assert probe["searched"] == ["refund", "refund"]
    assert probe["flaky"] == ["flaky", "flaky"] and probe["bycheck"] == ["refund", "refund"]
    opened = probe["opened"]
    # The failing attempt opens first: its turn 0 called lookup_order, and issue_refund was never called.
    assert opened["tools"] == ["lookup_order"] and '"order_id": "ORD-123456"' in opened["args"][0]
    assert opened["turns"] == 2 and opened["hard"] == 2 and opened["soft"] == 1 and opened["state"] == 0
    assert (
        opened["judge"][:3] == ["rubric:tone", "judge-2025-01-01", "ab12cd34"] and opened["judge"][5] == "<b>9</b>/10"
    )
    assert "issue_refund never called" in opened["text"] and "End staterefunds(no rows)" in opened["text"]
    # The baseline of the kit run is the run before it (same agent): refund broke, loop was fixed.
    assert len(probe["flips"]) == 2
    assert probe["flips"][0].startswith("refund pass→fail") and "called:issue_refund" in probe["flips"][0]
    assert probe["flips"][1].startswith("loop fail→pass")
    # From the file's last byte read to a rendered, filterable table (the browser's own start-up not counted).
    assert probe["load"] < 1000 and probe["render"] < 500, probe
    assert probe["labels"]
    for chart in probe["labels"]:  # trend labels: inside their chart, and no two overlap
        left, top, right, bottom = chart["box"]
        quads = chart["texts"]
        assert all(left - 0.5 <= x <= right + 0.5 and top - 0.5 <= y <= bottom + 0.5 for q in quads for x, y in q)
        for i, a in enumerate(quads):
            for b in quads[i + 1 :]:
                assert _apart(a, b), (a, b)


def _apart(a: list[list[float]], b: list[list[float]]) -> bool:
    """Two convex quadrilaterals do not overlap (by more than half a pixel): some edge normal separates them."""
    for quad in (a, b):
        for (x1, y1), (x2, y2) in zip(quad, quad[1:] + quad[:1], strict=True):
            nx, ny = y1 - y2, x2 - x1
            norm = (nx * nx + ny * ny) ** 0.5 or 1.0
            pa = [(x * nx + y * ny) / norm for x, y in a]
            pb = [(x * nx + y * ny) / norm for x, y in b]
            if max(pa) <= min(pb) + 0.5 or max(pb) <= min(pa) + 0.5:
                return True
    return False


@needs_chromium
def test_compare_page_lists_the_flips_the_store_holds(tmp_path):
    store, _ = _store(tmp_path / "evals.duckdb")
    out, md = tmp_path / "cmp.html", tmp_path / "cmp.md"
    # A and B by model id: the third run's model against the first one's
    argv = ["report", "--store", str(store.path), "--compare", "model-0-with-a-rather-long-name",
            "model-2-with-a-rather-long-name", "--source", "kit", "--html", str(out), "--md", str(md)]  # fmt: skip
    assert kit(argv) == 0
    probe = _probe(out, tmp_path)
    assert probe["rows"] == 8  # A and B, 4 cases each
    assert [f.split(" ")[0:2] for f in probe["flips"]] == [["refund", "pass→fail"], ["loop", "fail→pass"]]
    text = md.read_text()
    # before and after (passed, fraction, its 95% interval, pass^2), p, verdict, the flip and the check
    row = (
        r"\| refund \| 3/3 \| 1\.00 \| [\d.]+-[\d.]+ \| 1\.00 \| 1/3 \| 0\.33 \| [\d.]+-[\d.]+ \| 0\.00 \| [\d.]+ \| "
        r"(under floor|regression) \| pass→fail \| now failing: called:issue\\_refund"
    )
    assert re.search(row, text), text
    assert "**2 flips**" in text

    shot = tmp_path / "compare.png"
    started = time.monotonic()
    res = chromium("--window-size=1280,1600", f"--screenshot={shot}", out.as_uri(), profile=tmp_path / "shot")
    assert res.returncode == 0, res.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 1600)
    assert time.monotonic() - started < 60


@needs_chromium
def test_a_long_table_shows_100_rows_then_all_of_them(tmp_path):
    store = open_store(tmp_path / "evals.duckdb")
    run_id = store.start_run("promptfoo", agent="red team", model="m")
    for i in range(230):
        ok = i % 2 == 0
        result = Result("no_pii", ok, "" if ok else "output leaks an email")
        store.record(run_id, CaseRun(f"redteam/attack-{i:03d}/basic", 0, (result,)), _trace("x", ok))
    store.finish_run(run_id)
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--html", str(out)]) == 0
    probed = tmp_path / "more.html"
    probed.write_text(
        out.read_text().replace(
            "</body>",
            """<script>
var n = function () { return document.querySelectorAll('#case-body tr.row').length; };
var seen = [n(), document.getElementById('count').textContent];
document.getElementById('more').click();
seen.push(n(), document.getElementById('more').hidden);
var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(seen);
document.body.appendChild(pre);
</script></body>""",
            1,
        )
    )
    dom = chromium("--dump-dom", probed.as_uri(), profile=tmp_path / "p")
    seen = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S).group(1).replace("&quot;", '"'))
    assert seen == [100, "100 shown of 230 matching of 230 case rows", 230, True]
