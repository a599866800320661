"""A framework agent's production traces judged by `kit serve`, end to end, and counted.

    .venv/bin/python bench/receiver_agent.py [--runs 1000] [--every 7]

The refund desk of tests/fixtures/from_trace (one OpenAI Agents SDK agent, its model the kit's double on
127.0.0.1) runs `--runs` times under OpenInference's Agents SDK instrumentation; the OTel SDK's OTLP/HTTP
exporter (protobuf, batched) sends its spans to `kit serve` (a process of its own) judging by the golden
suite's `refund_safety` and `efficient` invariants. Every `--every`-th run is the planted failure (a refund
without a lookup). Then the store is read: every run's trace must be there once, and the failing traces must
be exactly the planted ones, each failing `guarded:issue_refund`. Exit 1 naming any difference.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESK = ROOT / "tests" / "fixtures" / "from_trace"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--every", type=int, default=7, help="every N-th run refunds without a lookup")
    args = ap.parse_args()
    sys.path[:0] = [str(ROOT), str(DESK)]
    import refund_desk
    from agents import set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from kit.doubles.openai_server import ScriptedOpenAIServer
    from kit.store import open_store

    with tempfile.TemporaryDirectory(prefix="bench-receiver-agent-") as tmp:
        folder = Path(tmp)
        store = folder / "store.duckdb"
        cmd = [sys.executable, "-m", "kit.cli", "serve", "--port", "0", "--settle", "200ms", "--store", str(store)]
        cmd += ["--invariants", str(ROOT / "golden" / "invariants.yaml")]
        cmd += ["--invariant", "refund_safety", "--invariant", "efficient"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        serve = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, text=True)
        assert serve.stdout is not None
        port = int(serve.stdout.readline().split("127.0.0.1:")[1].split("/")[0])

        ids = InMemorySpanExporter()  # which trace each run made
        provider = TracerProvider(resource=Resource.create({"service.name": "refund-desk"}))
        provider.add_span_processor(SimpleSpanProcessor(ids))
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
        planted: set[str] = set()
        runs: list[str] = []
        t0 = time.perf_counter()
        os.environ["DESK_TRACING"] = "1"
        with ScriptedOpenAIServer(refund_desk.script) as srv:
            os.environ["DESK_MODEL_URL"] = srv.base_url
            set_trace_processors([])  # nothing to OpenAI's servers
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
            for n in range(args.runs):
                bug = n % args.every == args.every // 2
                os.environ["DESK_BUG"] = "1" if bug else "0"
                ids.clear()
                refund_desk.desk(refund_desk.QUESTION)
                roots = {format(s.context.trace_id, "032x") for s in ids.get_finished_spans() if s.parent is None}
                assert len(roots) == 1, roots
                runs += roots
                if bug:
                    planted |= roots
        provider.force_flush()
        provider.shutdown()
        sent = time.perf_counter() - t0
        time.sleep(1.0)  # the settle time and one store write
        serve.send_signal(signal.SIGTERM)
        out, _ = serve.communicate(timeout=120)
        with open_store(store).connect() as con:
            got = dict(con.execute("SELECT trace_id, passed FROM production_traces").fetchall())
            rows = con.execute("SELECT count(*), count(DISTINCT trace_id) FROM production_traces").fetchone()
            guarded = {
                t
                for (t,) in con.execute(
                    """SELECT trace_id FROM production_checks WHERE "check" = 'guarded:issue_refund'
                       AND outcome = 'fail'"""
                ).fetchall()
            }
    failed = {t for t, ok in got.items() if not ok}
    print(f"{args.runs} agent runs sent in {sent:.1f} s; kit serve: {out.strip().splitlines()[-1]}")
    print(f"stored {rows[0]} traces ({rows[1]} distinct); failing {len(failed)}, planted {len(planted)}")
    problems = []
    if set(got) != set(runs) or rows[0] != len(runs):
        problems.append(f"stored traces differ from the runs: {len(set(runs) - set(got))} missing, {rows[0]} rows")
    if failed != planted or guarded != planted:
        problems.append(
            f"failing {sorted(failed - planted)[:3]} not planted, planted {sorted(planted - failed)[:3]} passed"
        )
    for p in problems:
        print(f"MISMATCH: {p}")
    if not problems:
        print("every run judged once; the failing traces are exactly the planted ones, each on guarded:issue_refund")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
