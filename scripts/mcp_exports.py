"""Export real OpenTelemetry spans of an agent using MCP tools, from real instrumentation packages, against the
local model double (kit/doubles/openai_server.py) and the tests' shop MCP server (tests/unit/_mcp_shop.py).

    python scripts/mcp_exports.py VARIANT OUT.json

The OpenAI Agents SDK desk (tests/unit/_mcp_desk.py) refunds order ORD-7 through the shop server over
streamable HTTP. The server runs in this process, so its spans land in the same export as the agent's (as they
do when both send to one collector). VARIANT:
- `genai`: only the `mcp` SDK's own spans, client (this process) and server (the server's process, its
  `service.name` "shop"): `mcp.method.name`, `gen_ai.operation.name` execute_tool, `gen_ai.tool.name`;
- `openinference`: the same with OpenInference's Agents SDK and MCP instrumentations (model and tool spans);
OpenLLMetry's MCP instrumentation (0.62.4) cannot instrument mcp 2.x: it wraps `mcp.shared.session.BaseSession`
and `streamablehttp_client`, which mcp 2 removed; its span shape is read from its source (see the tests).
Written as the SDK's ConsoleSpanExporter prints spans (a JSON list of `span.to_json()`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_shop(port: int, spans: Path) -> subprocess.Popen[bytes]:
    """The shop server in a process of its own, exporting its spans (service.name shop) to `spans`."""
    env = {**os.environ, "SHOP_OTEL_OUT": str(spans)}
    shop = ROOT / "tests" / "unit" / "_mcp_shop.py"
    proc = subprocess.Popen([sys.executable, str(shop), "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    for _ in range(1000):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError("the shop server did not start")


def main(variant: str, out: Path) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)

    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    if variant == "openinference":
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        from openinference.instrumentation.mcp import MCPInstrumentor

        MCPInstrumentor().instrument(tracer_provider=provider)
    elif variant != "genai":
        raise SystemExit(f"unknown variant {variant!r}")

    from kit.doubles.openai_server import ScriptedOpenAIServer

    port = _free_port()
    server_spans = Path(tempfile.mkdtemp()) / "shop-spans.jsonl"
    shop = _serve_shop(port, server_spans)
    os.environ["DESK_TRACING"] = "1"
    os.environ["MCP_SHOP_URL"] = f"http://127.0.0.1:{port}/mcp"
    from _mcp_desk import desk_model

    with ScriptedOpenAIServer(desk_model) as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        import _mcp_desk
        from agents import set_trace_processors

        set_trace_processors([])  # nothing to OpenAI's servers
        if variant == "openinference":  # the instrumentation's processor, put back after the line above
            OpenAIAgentsInstrumentor().uninstrument()
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
        result = _mcp_desk.run("Please refund order ORD-7.")
        assert result.final_output == "Refunded 42 on order ORD-7.", result.final_output
    provider.force_flush()
    shop.terminate()
    shop.wait(10)
    spans = [json.loads(s.to_json()) for s in memory.get_finished_spans()]
    spans += [json.loads(line) for line in server_spans.read_text().splitlines() if line.strip()]
    out.write_text(json.dumps(spans, indent=1) + "\n")
    print(f"{out}: {len(spans)} spans")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
