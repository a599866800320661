"""`kit serve` beside `kit check`: traces judged per CPU-second on 50-span traces held to 10 invariants, and the
receiver's memory as the traces go by.

    .venv/bin/python bench/receiver.py [--traces 20000] [--marks 2000,10000,20000] [--out bench/receiver.json]

The traces: an OpenInference-instrumented agent's runs as the OTel SDK exports them (a root AGENT span, 24
rounds of a model call asking for a tool and the tool's span, a last model call), sent as OTLP protobuf
batches of 10 traces (500 spans) over one keep-alive connection, retried on 429 as an exporter does.
`kit serve` runs as the command does, in a process of its own; its CPU time (utime + stime from /proc) and
resident memory are read each time the judged count passes a mark. `kit check` judges the same traces, as
the importer makes them, from a JSON Lines file, in a process of its own (CPU from os.wait4), at the first
mark's size and at the full size. The rate compared is the marginal one: traces between the first mark and
the last over the CPU seconds spent between them, so neither side's start-up counts.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INVARIANTS = """
refund_guarded: [{type: guarded, tool: issue_refund, requires: lookup_order}]
one_refund: [{type: called_at_most, tool: issue_refund, n: 1}]
no_leak: [{type: no_pii}]
no_loop: [{type: no_repeat}]
budget: [{type: budget, steps: 200, tool_calls: 100}]
finished: [{type: finished}]
known_tools: [{type: allowed_tools, tools: [lookup_order, search_kb, send_email, issue_refund]}]
no_wipe: [{type: not_called, tool: delete_account}]
tools_ok: [{type: no_tool_errors}]
lookup_first: [{type: order, before: lookup_order, after: send_email}]
"""
CASES = """
- id: production
  input: ""
  invariants: [refund_guarded, one_refund, no_leak, no_loop, budget, finished, known_tools, no_wipe, tools_ok,
               lookup_first]
"""
BATCH = 10  # traces per OTLP request


def _traces(n: int) -> bytes:
    """`n` runs through the real SDK, encoded as one ExportTraceServiceRequest."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "desk"}))
    tp.add_span_processor(SimpleSpanProcessor(mem))
    tracer = tp.get_tracer("bench")
    for i in range(n):
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            root.set_attribute("agent.name", "desk")
            root.set_attribute("input.value", f"Where is my order ORD-{i:06d}?")
            for k in range(24):
                tool = "lookup_order" if k == 0 else ("send_email" if k == 23 else "search_kb")
                args = json.dumps({"order_id": f"ORD-{i:06d}", "query": f"step {k}", "page": k})
                with tracer.start_as_current_span("generation") as s:
                    s.set_attribute("openinference.span.kind", "LLM")
                    s.set_attribute("llm.model_name", "desk-model-2026-01-01")
                    s.set_attribute("llm.token_count.prompt", 800 + k)
                    s.set_attribute("llm.token_count.completion", 40)
                    s.set_attribute("llm.input_messages.0.message.role", "user")
                    s.set_attribute("llm.input_messages.0.message.content", f"Where is my order ORD-{i:06d}?")
                    p = "llm.output_messages.0.message"
                    s.set_attribute(f"{p}.role", "assistant")
                    s.set_attribute(f"{p}.tool_calls.0.tool_call.id", f"call_{k}")
                    s.set_attribute(f"{p}.tool_calls.0.tool_call.function.name", tool)
                    s.set_attribute(f"{p}.tool_calls.0.tool_call.function.arguments", args)
                with tracer.start_as_current_span(tool) as s:
                    s.set_attribute("openinference.span.kind", "TOOL")
                    s.set_attribute("tool.name", tool)
                    s.set_attribute("input.value", args)
                    out = {"status": "shipped", "items": [{"sku": f"SKU-{j}", "note": "x" * 40} for j in range(4)]}
                    s.set_attribute("output.value", json.dumps(out))
            with tracer.start_as_current_span("generation") as s:
                s.set_attribute("openinference.span.kind", "LLM")
                s.set_attribute("llm.model_name", "desk-model-2026-01-01")
                s.set_attribute("llm.output_messages.0.message.role", "assistant")
                s.set_attribute("llm.output_messages.0.message.content", f"Your order ORD-{i:06d} has shipped.")
            root.set_attribute("output.value", f"Your order ORD-{i:06d} has shipped.")
    spans = mem.get_finished_spans()
    assert len(spans) == 50 * n, len(spans)
    return encode_spans(spans).SerializeToString()


def _batches(template: bytes, total: int):
    """The template batch again and again, each time with new trace ids (one per trace)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest.FromString(template)
    spans = [sp for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans]
    order = list(dict.fromkeys(sp.trace_id for sp in spans))
    slot = [order.index(sp.trace_id) for sp in spans]
    for b in range(total // BATCH):
        for sp, k in zip(spans, slot, strict=True):
            sp.trace_id = (b * BATCH + k + 1).to_bytes(16, "big")
        yield req.SerializeToString()


def _contract_lines(template: bytes) -> list[bytes]:
    """The template's traces as `kit import` makes them: what `kit check` reads."""
    import orjson

    from kit.importers.otlp import OtelSpan
    from kit.importers.semconv import build_trace
    from kit.receiver.decode import PROTOBUF, spans_of

    by: dict[str, list[OtelSpan]] = {}
    for s in spans_of(template, PROTOBUF):
        by.setdefault(s.trace_id, []).append(s)
    out = []
    for spans in by.values():
        spans.sort(key=lambda x: (x.start_ns, -x.end_ns))
        out.append(orjson.dumps(build_trace(spans, case_id="production")))
    return out


def _otlp_json_lines(template: bytes, total: int) -> list[bytes]:
    """The same batches as OTLP JSON, a Collector file's lines (`kit import` reads them): the template's trace
    ids swapped for each batch's."""
    import orjson

    from kit.receiver.decode import PROTOBUF, spans_of

    def attrs(d: dict) -> list[dict]:
        out = []
        for k, v in d.items():
            if isinstance(v, bool):
                val = {"boolValue": v}
            elif isinstance(v, int):
                val = {"intValue": str(v)}
            elif isinstance(v, float):
                val = {"doubleValue": v}
            else:
                val = {"stringValue": str(v)}
            out.append({"key": k, "value": val})
        return out

    spans = spans_of(template, PROTOBUF)
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs(spans[0].resource)},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": s.trace_id,
                                "spanId": s.span_id,
                                **({"parentSpanId": s.parent_id} if s.parent_id else {}),
                                "name": s.name,
                                "startTimeUnixNano": str(s.start_ns),
                                "endTimeUnixNano": str(s.end_ns),
                                "attributes": attrs(s.attrs),
                            }
                            for s in spans
                        ]
                    }
                ],
            }
        ]
    }
    line = orjson.dumps(doc)
    ids = list(dict.fromkeys(s.trace_id for s in spans))
    out = []
    for b in range(total // BATCH):
        text = line
        for k, tid in enumerate(ids):
            text = text.replace(tid.encode(), f"{b * BATCH + k + 1:032x}".encode())
        out.append(text)
    return out


def _run(cmd: list[str], folder: Path, stdout: object = None) -> dict[str, float]:
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=stdout or devnull, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT)})
        _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[2:4])} exited {code}")
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": time.perf_counter() - t0,
        "rss_mb": usage.ru_maxrss / 1024,
    }


def import_and_check(folder: Path, template: bytes, n: int) -> dict[str, float]:
    """`kit import` of the OTLP JSON file, then `kit check` of what it wrote: the file road to a verdict."""
    otlp, traces = folder / f"otlp-{n}.jsonl", folder / f"imported-{n}.jsonl"
    otlp.write_bytes(b"\n".join(_otlp_json_lines(template, n)) + b"\n")
    cmd = [sys.executable, "-m", "kit.cli", "import", str(otlp), "--case-id", "production", "-o", str(traces)]
    imp = _run(cmd, folder)
    cmd = [sys.executable, "-m", "kit.cli", "check", str(traces), "--cases", str(folder / "cases.yaml")]
    chk = _run([*cmd, "--invariants", str(folder / "invariants.yaml"), "--json"], folder)
    otlp.unlink()
    traces.unlink()
    return {
        "traces": n,
        "cpu_s": imp["cpu_s"] + chk["cpu_s"],
        "wall_s": imp["wall_s"] + chk["wall_s"],
        "rss_mb": max(imp["rss_mb"], chk["rss_mb"]),
    }


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def kit_check(folder: Path, lines: list[bytes], n: int) -> dict[str, float]:
    path = folder / f"traces-{n}.jsonl"
    with path.open("wb") as f:
        for i in range(n):
            f.write(lines[i % len(lines)] + b"\n")
    cmd = [sys.executable, "-m", "kit.cli", "check", str(path), "--cases", str(folder / "cases.yaml")]
    out = _run([*cmd, "--invariants", str(folder / "invariants.yaml"), "--json"], folder)
    path.unlink()
    return {"traces": n, **out}


def kit_serve(folder: Path, template: bytes, total: int, marks: list[int]) -> list[dict[str, float]]:
    cmd = [sys.executable, "-m", "kit.cli", "serve", "--port", "0", "--settle", "0ms"]
    cmd += ["--invariants", str(folder / "invariants.yaml"), "--store", str(folder / "serve.duckdb")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.split("127.0.0.1:")[1].split("/")[0])
    samples: list[dict[str, float]] = []
    done = threading.Event()

    def watch() -> None:
        todo = list(marks)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        t0 = time.perf_counter()
        while todo:
            conn.request("GET", "/status")
            judged = json.loads(conn.getresponse().read())["judged"]
            if judged >= todo[0]:
                s = {"traces": judged, "cpu_s": _proc_cpu(proc.pid), "wall_s": time.perf_counter() - t0}
                samples.append({**s, "rss_mb": _proc_rss_mb(proc.pid)})
                print(f"  (judged {judged}: {samples[-1]})", file=sys.stderr, flush=True)
                todo = [m for m in todo if m > judged]
            time.sleep(0.05)
        done.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    refused = 0
    for body in _batches(template, total):
        while True:
            conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                break
            if r.status not in (429, 503):
                raise SystemExit(f"kit serve answered {r.status}")
            refused += 1
            time.sleep(float(r.getheader("Retry-After") or 1) / 10)  # a tenth: keep the receiver busy, not idle
    done.wait(timeout=3600)
    proc.terminate()
    proc.wait(timeout=60)
    for s in samples:
        s["refused"] = refused
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=20_000)
    ap.add_argument("--marks", default="2000,10000,20000", help="judged counts at which the receiver is sampled")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--import-traces", type=int, default=2000, help="traces for kit import + kit check (read whole)")
    args = ap.parse_args()
    marks = sorted(int(m) for m in args.marks.split(","))
    total = max(args.traces, marks[-1])
    with tempfile.TemporaryDirectory(prefix="bench-receiver-") as tmp:
        folder = Path(tmp)
        (folder / "invariants.yaml").write_text(INVARIANTS)
        (folder / "cases.yaml").write_text(CASES)
        template = _traces(BATCH)
        lines = _contract_lines(template)
        check = [kit_check(folder, lines, marks[0]), kit_check(folder, lines, total)]
        small, large = args.import_traces // 4, args.import_traces
        imported = [import_and_check(folder, template, small), import_and_check(folder, template, large)]
        serve = kit_serve(folder, template, total, marks)
    c0, c1 = check
    s0, s1 = serve[0], serve[-1]
    check_rate = (c1["traces"] - c0["traces"]) / (c1["cpu_s"] - c0["cpu_s"])
    serve_rate = (s1["traces"] - s0["traces"]) / (s1["cpu_s"] - s0["cpu_s"])
    i0, i1 = imported
    import_rate = (i1["traces"] - i0["traces"]) / (i1["cpu_s"] - i0["cpu_s"])
    print(f"traces of 50 spans, 10 invariants; {total} traces; marginal rate from {marks[0]} to {total}")
    print(f"kit check   {check_rate:8.0f} traces per CPU-second   (whole run: {c1['cpu_s']:.1f} CPU s, "
          f"{c1['wall_s']:.1f} s wall, peak {c1['rss_mb']:.0f} MB)")  # fmt: skip
    print(f"kit import + kit check (OTLP JSON file, {i0['traces']}..{i1['traces']} traces) {import_rate:8.0f} "
          f"traces per CPU-second   (peak {i1['rss_mb']:.0f} MB)")  # fmt: skip
    print(f"kit serve   {serve_rate:8.0f} traces per CPU-second   ({serve_rate / check_rate:.2f}x kit check, "
          f"{serve_rate / import_rate:.2f}x kit import + kit check)")  # fmt: skip
    for s in serve:
        print(f"  judged {s['traces']:>7.0f}: receiver CPU {s['cpu_s']:7.1f} s, wall {s['wall_s']:7.1f} s, "
              f"resident {s['rss_mb']:6.0f} MB")  # fmt: skip
    print(f"  batches refused with 429 and retried: {serve[-1]['refused']:.0f}")
    figures = {
        "run": f"bench/receiver.py --traces {total} --marks {args.marks} --import-traces {args.import_traces}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        "check": check,
        "import_check": imported,
        "serve": serve,
        "check_rate": check_rate,
        "import_check_rate": import_rate,
        "serve_rate": serve_rate,
        "serve_over_check": serve_rate / check_rate,
        "serve_over_import_check": serve_rate / import_rate,
    }
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
