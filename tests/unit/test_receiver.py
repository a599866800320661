"""`kit serve` in process: the real OTel SDK exporter sends agent runs over OTLP/HTTP; every trace is judged
by the suite's invariants, once, and the breaking ones are named in the store; malformed batches are a 4xx
naming why; a full receiver answers 429 with Retry-After and the exporter's retries deliver everything; a
restart judges what was acknowledged and not stored, and nothing twice."""

from __future__ import annotations

import gzip
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _receiver_traces import provider, run
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from kit.receiver.http import Front
from kit.receiver.judging import production_case
from kit.receiver.service import Options, Receiver
from kit.receiver.soft import SoftJudge
from kit.store import open_store
from kit.store import production as prod

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "invariants.yaml"


@contextmanager
def served(
    folder: Path, wal: str = "wal", soft: SoftJudge | None = None, **options: object
) -> Iterator[tuple[Receiver, Front]]:
    store = open_store(folder / "store.duckdb")
    opts = Options(wal=folder / wal, settle=0.05, flush_s=0.05, **options)  # type: ignore[arg-type]
    receiver = Receiver(production_case(GOLDEN), store, opts, soft)
    receiver.start()
    front = Front(receiver, "127.0.0.1", 0).start()
    try:
        yield receiver, front
    finally:
        receiver.stop(timeout=5)
        front.close()


def wait_judged(receiver: Receiver, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while receiver.status()["judged"] + receiver.status()["duplicates"] < n and time.monotonic() < deadline:
        time.sleep(0.02)


def stored(folder: Path) -> dict[str, tuple[bool, str]]:
    with open_store(folder / "store.duckdb").connect() as con:
        rows = con.execute("SELECT trace_id, passed, outcome FROM production_traces").fetchall()
    return {t: (p, o) for t, p, o in rows}


def post(front: Front, body: bytes, ctype: str, encoding: str | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{front.port}/v1/traces", data=body, method="POST")
    req.add_header("Content-Type", ctype)
    if encoding:
        req.add_header("Content-Encoding", encoding)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def send(front: Front, n: int, breaking: set[int], **exporter: object) -> list[str]:
    endpoint = f"http://127.0.0.1:{front.port}/v1/traces"
    tp = provider(OTLPSpanExporter(endpoint=endpoint, **exporter))  # type: ignore[arg-type]
    tracer = tp.get_tracer("desk")
    ids = [run(tracer, breaking=i in breaking) for i in range(n)]
    tp.force_flush()
    tp.shutdown()
    return ids


def test_every_trace_from_the_sdk_exporter_is_judged_once_and_every_breaking_one_named(tmp_path):
    breaking = {i for i in range(100) if i % 7 == 3}
    with served(tmp_path) as (receiver, front):
        ids = send(front, 100, breaking, compression=Compression.Gzip)
        wait_judged(receiver, 100)
    got = stored(tmp_path)
    assert len(got) == 100 and set(got) == set(ids)
    failed = {t for t, (passed, _) in got.items() if not passed}
    assert failed == {ids[i] for i in breaking}
    with open_store(tmp_path / "store.duckdb").connect() as con:
        rows = con.execute(
            """SELECT trace_id, reason, invariant FROM production_checks WHERE outcome <> 'pass'"""
        ).fetchall()
        service, agent, model = con.execute(
            "SELECT any_value(service), any_value(agent), any_value(model) FROM production_traces"
        ).fetchone()
        failing = prod.failing(con)
    assert {t for t, _, _ in rows} == failed and len(rows) == len(breaking)  # one check broken, down to it
    assert all(r == "issue_refund (step 1) called before any lookup_order" and i == "refund_safety" for _, r, i in rows)
    assert (service, agent, model) == ("desk", "desk", "desk-model-2026-01-01")
    assert {f["trace_id"] for f in failing} == failed
    assert failing[0]["checks"][0]["check"] == "guarded:issue_refund"
    assert receiver.status()["duplicates"] == 0 and receiver.status()["wal_segments"] == 1
    # `kit report` on a receiver's store: the production section, pass rate per invariant, failing traces.
    from kit.commands.report import ReportRequest, report

    shown = report(ReportRequest(store=tmp_path / "store.duckdb")).text or ""
    assert "production (kit serve): 100 traces judged, 86 passed" in shown
    lines = {line.split()[0]: line.split()[1:] for line in shown.splitlines() if line.split()[:1]}
    # Each row: a rate and a count per hour (two hours if the test ran across one's end).
    for name, rates in (("refund_safety", {"86%"}), ("no_leak", {"100%"})):
        cells = lines[name]
        assert sum(int(n.strip("()")) for n in cells[1::2]) == 100
        assert len(cells) > 2 or set(cells[::2]) == rates
    assert f"{ids[94]}" in shown and "guarded:issue_refund (refund_safety): issue_refund (step 1)" in shown


def _otlp_json(trace_id: str, *, tool: str = "issue_refund") -> dict:
    def span(sid: str, parent: str | None, name: str, attrs: dict) -> dict:
        return {
            "traceId": trace_id,
            "spanId": sid,
            **({"parentSpanId": parent} if parent else {}),
            "name": name,
            "startTimeUnixNano": "1764700000000000000",
            "endTimeUnixNano": "1764700001000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        }

    tool_attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": tool,
        "input.value": '{"customer_id": "C001", "order_id": "ORD-000123"}',
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-desk"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            span("a" * 16, None, "agent", {"openinference.span.kind": "AGENT", "output.value": "done"}),
                            span("b" * 16, "a" * 16, tool, tool_attrs),
                        ]
                    }
                ],
            }
        ]
    }


def test_otlp_json_gzip_and_malformed_batches_answered_by_name(tmp_path):
    with served(tmp_path) as (receiver, front):
        body = gzip.compress(json.dumps(_otlp_json("1" * 32)).encode())
        status, _, out = post(front, body, "application/json", "gzip")
        assert (status, out) == (200, b"{}")
        cases = [
            (b"\x0a\xff\xff", "application/x-protobuf", None, 400, "not an OTLP ExportTraceServiceRequest"),
            (b"{not json", "application/json", None, 400, "malformed JSON"),
            (b'{"resourceSpans": 3}', "application/json", None, 400, "expected a JSON object with resourceSpans"),
            (json.dumps(_otlp_json("")).encode(), "application/json", None, 400, "traceId is empty"),
            (b"plain", "text/plain", None, 415, "unsupported Content-Type 'text/plain'"),
            (b"notgzip", "application/json", "gzip", 400, "body is not valid gzip"),
            (b"{}", "application/json", "br", 415, "unsupported Content-Encoding 'br'"),
        ]
        for body, ctype, enc, want, words in cases:
            status, _, out = post(front, body, ctype, enc)
            assert status == want and words in out.decode(errors="replace"), (words, status, out)
        wait_judged(receiver, 1)
        assert receiver.status()["bad"] == len(cases)
    assert stored(tmp_path) == {"1" * 32: (False, "fail")}  # a refund, no lookup: guarded


def test_full_receiver_answers_429_with_retry_after_and_the_exporters_retries_deliver_everything(tmp_path):
    # Room for 20 spans (4 runs): the exporter's bursts of up to 256 spans are refused until judging frees it.
    with served(tmp_path, max_spans=20, retry_after=1) as (receiver, front):
        status, headers, _ = (None, None, None)
        ids = send(front, 60, {5})
        wait_judged(receiver, 60)
        refused = receiver.status()["refused"]
        receiver.assembler.held = 10**9  # full: what a refused sender is told
        status, headers, out = post(front, json.dumps(_otlp_json("2" * 32)).encode(), "application/json")
        receiver.assembler.held = 0
    assert refused > 0
    assert status == 429 and headers["Retry-After"] == "1" and b"spans held" in out
    got = stored(tmp_path)
    assert set(got) == set(ids) and [t for t, (p, _) in got.items() if not p] == [ids[5]]


def test_a_restart_judges_what_was_acknowledged_and_not_stored_and_nothing_twice(tmp_path):
    # First life: its traces are acknowledged, one judged and stored; then it dies before judging the rest
    # (settle far away, no stop: what a SIGKILL leaves).
    store = open_store(tmp_path / "store.duckdb")
    first = Receiver(production_case(GOLDEN), store, Options(wal=tmp_path / "wal", settle=0.05, flush_s=0.05))
    first.start()
    front = Front(first, "127.0.0.1", 0).start()
    assert post(front, json.dumps(_otlp_json("3" * 32)).encode(), "application/json")[0] == 200
    wait_judged(first, 1)
    first.assembler.settle = 3600.0
    for tid in ("4" * 32, "5" * 32):
        assert post(front, json.dumps(_otlp_json(tid, tool="lookup_order")).encode(), "application/json")[0] == 200
    # The trace stored already comes again (a sender's retry after a lost answer): it is not judged again.
    assert post(front, json.dumps(_otlp_json("3" * 32)).encode(), "application/json")[0] == 200
    front.close()
    first._stopped.set()  # the judging thread ends; the log is left as a crash leaves it
    assert stored(tmp_path) == {"3" * 32: (False, "fail")}

    with served(tmp_path) as (second, _):
        assert second.replayed == 2
        wait_judged(second, 2)
        status = second.status()
    assert stored(tmp_path) == {"3" * 32: (False, "fail"), "4" * 32: (True, "pass"), "5" * 32: (True, "pass")}
    assert status["judged"] == 2 and status["duplicates"] == 0
    with served(tmp_path) as (third, _):  # a third start finds nothing left to judge
        assert third.replayed == 0
    assert not list((tmp_path / "wal").glob("wal-0000000[12].log"))  # judged segments deleted


def test_a_wal_record_cut_short_by_a_crash_is_skipped_and_the_rest_read(tmp_path):
    from kit.receiver.wal import JSON, Wal

    wal = Wal(tmp_path)
    _, mark = wal.append(JSON, b'{"a": 1}', holds={"t"})
    wal.sync(mark)
    wal.append(JSON, b'{"b": 2}')
    wal.close()
    seg = next(tmp_path.glob("wal-*.log"))
    seg.write_bytes(seg.read_bytes()[:-3])  # the second record torn
    assert [r.payload for r in Wal(tmp_path).replay()] == [b'{"a": 1}']


def test_store_shards_of_several_receivers_merge_each_trace_once(tmp_path, capsys):
    from kit.cli import main
    from kit.store.merge import import_runs

    rows = [
        {"trace_id": t, "receiver": r, "passed": t != "b", "outcome": "pass" if t != "b" else "fail", "spans": 5}
        for t, r in (("a", "r1"), ("b", "r1"), ("c", "r2"))
    ]
    checks = [{"trace_id": "b", "check": "guarded:issue_refund", "invariant": "refund_safety", "outcome": "fail"}]
    shards = []
    for name, mine in (("r1", rows[:2]), ("r2", rows[1:])):  # "b" reached both (a rebalance): kept once
        shard = open_store(tmp_path / f"{name}.duckdb")
        with shard.connect() as con:
            prod.write(con, mine, [c for c in checks if any(r["trace_id"] == c["trace_id"] for r in mine)])
        shards.append(shard.path)
    merged = open_store(tmp_path / "all.duckdb")
    argv = ["serve", "--store", str(merged.path), "--merge", *map(str, shards)]
    assert main(argv) == 0
    assert "2 shard(s) merged" in capsys.readouterr().out
    import_runs(merged, shards[1])  # merging again adds nothing
    with merged.connect() as con:
        got = sorted(con.execute("SELECT trace_id, receiver FROM production_traces").fetchall())
        n_checks = con.execute("SELECT count(*) FROM production_checks").fetchone()[0]
    assert got == [("a", "r1"), ("b", "r1"), ("c", "r2")] and n_checks == 1


@pytest.mark.parametrize("names", [["no_such"], None])
def test_production_case_names_what_it_leaves_out_and_refuses_unknown_bundles(names):
    from kit.errors import KitInputError

    if names:
        with pytest.raises(KitInputError, match="no invariant 'no_such' \\(known: efficient, no_exfiltration"):
            production_case(GOLDEN, names)
        return
    p = production_case(GOLDEN)
    assert "guarded:issue_refund" in p.labels and not any("end_state" in c.type for c in p.case.checks)
    assert any("one_refund_per_order" in line and "end state" in line for line in p.left_out)


def test_hostile_bodies_are_each_a_4xx_naming_why_never_a_crash(tmp_path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    store = open_store(tmp_path / "store.duckdb")
    receiver = Receiver(production_case(GOLDEN), store, Options(wal=tmp_path / "wal"))

    def deep(n: int) -> bytes:  # an attribute nested n arrays deep (past the JSON reader's depth limit)
        nested = '{"arrayValue": {"values": [' * n + '{"stringValue": "x"}' + "]}}" * n
        span = '{"traceId": "' + "1" * 32 + '", "spanId": "' + "2" * 16 + '", "attributes": [{"key": "k", "value": '
        return ('{"resourceSpans": [{"scopeSpans": [{"spans": [' + span + nested + "}]}]}]}]}").encode()

    fixed = [
        (deep(2000), "application/json"),
        (b'{"resourceSpans": [3]}', "application/json"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "attributes": "x"}]}]}]}', "application/json"),
        (b"\x0a\x05\x12\x03\x12\x01\xff", "application/x-protobuf"),
        (b"\xff" * 64, "application/x-protobuf"),
    ]
    for body, ctype in fixed:
        status, _, out = receiver.accept(body, ctype, None)
        assert 400 <= status < 500 and out, (body[:40], status)

    @settings(max_examples=80, deadline=None, database=None)
    @given(st.binary(max_size=300), st.sampled_from(["application/json", "application/x-protobuf"]))
    def any_bytes(body: bytes, ctype: str) -> None:
        status, _, _ = receiver.accept(body, ctype, None)
        assert status in (200, 400), status  # an empty request is a 200 with nothing in it

    any_bytes()
    assert receiver.status()["batches"] == 0 or receiver.status()["spans"] >= receiver.status()["batches"]


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe garbage", b"- {type: no_such_check}\n", b""],
)
def test_a_bad_checks_invariants_or_shard_file_is_exit_2_naming_it(tmp_path, content, capsys):
    from kit.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    for argv in (
        ["serve", "--checks", str(bad), "--invariants", str(GOLDEN), "--port", "0"],
        ["serve", "--invariants", str(bad), "--port", "0"],
        ["serve", "--store", str(tmp_path / "all.duckdb"), "--merge", str(bad)],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "bad.yaml" in err and "Traceback" not in err, (argv, err)
