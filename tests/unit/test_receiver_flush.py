"""The receiver's store writes: batched (opening the store costs more than a few verdicts), but a receiver that is
full of judged traces writes them at once rather than refusing batches until its flush time."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kit.receiver.judging import production_case
from kit.receiver.service import Options, Receiver
from kit.store import open_store

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "invariants.yaml"


def _export(n: int) -> bytes:
    """One OTLP JSON export of one OpenInference trace: an agent span and a tool span under it."""

    def span(sid: str, parent: str | None, name: str, attrs: dict[str, str]) -> dict:
        return {
            "traceId": f"{n + 1:032x}",
            "spanId": sid,
            **({"parentSpanId": parent} if parent else {}),
            "name": name,
            "startTimeUnixNano": str(1764700000000000000 + n),
            "endTimeUnixNano": str(1764700001000000000 + n),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        }

    tool = {"openinference.span.kind": "TOOL", "tool.name": "lookup_order", "input.value": '{"order_id": "ORD-1"}'}
    spans = [
        span("a" * 16, None, "agent", {"openinference.span.kind": "AGENT", "output.value": "done"}),
        span("b" * 16, "a" * 16, "lookup_order", tool),
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def test_a_full_receiver_writes_what_it_judged_at_once_not_at_its_flush_time(tmp_path):
    store = open_store(tmp_path / "store.duckdb")
    options = Options(wal=tmp_path / "wal", settle=0.0, max_spans=10, flush_s=60.0, batch=500)
    receiver = Receiver(production_case(GOLDEN), store, options)
    receiver.start()
    try:
        deadline = time.monotonic() + 20
        for n in range(30):  # 30 traces of 2 spans through a receiver that holds 10 spans
            while receiver.accept(_export(n), "application/json", None)[0] != 200:
                assert time.monotonic() < deadline, f"trace {n} refused for 20 s: {receiver.status()}"
                time.sleep(0.01)
        while receiver.status()["judged"] < 25 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert receiver.status()["judged"] >= 25  # written long before the 60 s flush time
    finally:
        receiver.stop(timeout=5)
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM production_traces").fetchone()[0] == 30
