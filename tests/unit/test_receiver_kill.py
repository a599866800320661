"""`kit serve` killed with SIGKILL, or stopped with SIGTERM, mid-stream, then started again on its log and store:
every batch it acknowledged is judged, none twice (a sender retrying a batch whose answer it lost included). The
second life runs in this process (the same Receiver the command runs), so each test starts one interpreter, not
two."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_receiver import GOLDEN, _otlp_json, served, stored, wait_judged

from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e  # each starts `kit serve` in a subprocess


def _start(tmp: Path) -> tuple[subprocess.Popen[str], int]:
    cmd = [sys.executable, "-m", "kit.cli", "serve", "--port", "0", "--invariants", str(GOLDEN)]
    cmd += ["--store", str(tmp / "store.duckdb"), "--settle", "300ms"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, int(line.split("127.0.0.1:")[1].split("/")[0])


def _post(port: int, trace_id: str, part: str = "whole") -> bool:
    """One trace's batch (`part`: the whole trace, or its root or its tool span alone); whether it was
    acknowledged."""
    doc = _otlp_json(trace_id, tool="lookup_order")
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    if part != "whole":
        spans[:] = [s for s in spans if ("parentSpanId" in s) == (part == "child")]
    body = json.dumps(doc).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def test_sigkill_mid_stream_then_restart_loses_nothing_acknowledged_and_judges_nothing_twice(tmp_path):
    ids = [f"{n:032x}" for n in range(1, 41)]
    proc, port = _start(tmp_path)
    acked: list[str] = []
    for n, tid in enumerate(ids):
        if n == 25:
            proc.send_signal(signal.SIGKILL)  # mid-stream: some traces judged, some acknowledged and pending
            proc.wait(timeout=10)
        if _post(port, tid):
            acked.append(tid)
    assert len(acked) == 25  # every batch sent before the kill was acknowledged, none after
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]

    before = len(stored(tmp_path))
    assert before < len(acked)  # killed with acknowledged traces not yet judged
    with served(tmp_path, wal="store.duckdb.serve-wal") as (receiver, front):
        assert receiver.replayed > 0  # acknowledged before the kill, not yet stored: judged now
        unacked = [t for t in ids if t not in acked]
        # The sender retries what was not acknowledged, and a few it was (its answers lost): judged once.
        for tid in unacked + acked[-5:]:
            assert _post(front.port, tid)
        wait_judged(receiver, len(ids) - before)
    with open_store(tmp_path / "store.duckdb").connect() as con:
        rows = con.execute("SELECT trace_id, passed FROM production_traces").fetchall()
        checks = con.execute("SELECT count(*), count(DISTINCT trace_id) FROM production_checks").fetchone()
    assert sorted(t for t, _ in rows) == ids  # every one, once
    assert all(p for _, p in rows)  # a span sent twice is taken once (no_repeat would fail)
    assert checks[1] == len(ids) and checks[0] % len(ids) == 0  # each trace's checks once


def test_sigterm_mid_stream_judges_what_is_complete_keeps_the_rest_and_a_restart_judges_it_once(tmp_path):
    ids = [f"{n:032x}" for n in range(1, 1001)]  # more than a busy sender sends before the stop is acted on
    rootless = f"{999:032x}"  # its tool span comes before the stop, its root only after the restart
    proc, port = _start(tmp_path)
    acked: list[str] = []
    assert _post(port, rootless, part="child")
    for n, tid in enumerate(ids):
        if n == 20:
            proc.send_signal(signal.SIGTERM)  # mid-stream: the last ones sent are acknowledged, not yet judged
        if not _post(port, tid):
            break  # refused (503) or closed: the receiver is stopping
        acked.append(tid)
    sent = ids[: len(acked) + 1]
    assert proc.wait(timeout=10) == 0
    out = proc.stdout.read()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    # The stop is taken at once, whatever thread the kernel hands the signal: while the main thread looked every
    # 0.2 s, a sender on a quiet host got 100-140 more batches in.
    assert 20 <= len(acked) < 20 + 40
    # What was acknowledged and complete was judged before the exit; the rootless trace waits in the log.
    assert set(stored(tmp_path)) == set(acked)
    assert f"stopped: {len(acked)} traces judged (0 failed), 1 without their root kept in the log" in out

    with served(tmp_path, wal="store.duckdb.serve-wal") as (receiver, front):
        assert receiver.replayed == 1  # the rootless trace, from the log; nothing stored is judged again
        for tid in [sent[-1], *acked[-3:]]:  # the sender retries what was refused, and a few answers it lost
            assert _post(front.port, tid)
        assert _post(front.port, rootless, part="root")
        wait_judged(receiver, 2)  # the three sent again are late spans of stored traces, dropped
    with open_store(tmp_path / "store.duckdb").connect() as con:
        rows = con.execute("SELECT trace_id, passed, spans FROM production_traces").fetchall()
        checks = con.execute("SELECT count(*), count(DISTINCT trace_id) FROM production_checks").fetchone()
    assert sorted(t for t, _, _ in rows) == sorted([*sent, rootless])  # every one, once
    assert all(p for _, p, _ in rows)  # the rootless trace whole: its tool span from the log, its root since
    assert dict((t, n) for t, _, n in rows)[rootless] == 2
    assert checks[1] == len(sent) + 1 and checks[0] % (len(sent) + 1) == 0  # each trace's checks once
