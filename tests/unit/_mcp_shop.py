"""A small MCP server of our own (the real `mcp` SDK's MCPServer): a shop's order tools, over stdio by default
or streamable HTTP with `--port PORT` (on 127.0.0.1; port 0 picks one and prints it on stderr).

SHOP_VERSION=2 serves the next version of the server (lookup_order's description changed, a new tool).
SHOP_CRASH=1 adds a tool `crash` whose call exits the server's process.
SHOP_SLOW=1 adds a tool `slow` that answers after a minute (a call in flight); SHOP_PID_FILE=FILE: the server
writes its pid there.
SHOP_OTEL_OUT=FILE: the server's own OpenTelemetry spans (the `mcp` SDK's), service.name "shop", one JSON object
per line as the SDK's ConsoleSpanExporter writes them (what a collector would get from the server's process).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ORDERS = {
    "ORD-7": {"order_id": "ORD-7", "status": "delivered", "total": 42.0, "email": "ann@example.com"},
    "ORD-8": {"order_id": "ORD-8", "status": "shipped", "total": 19.5, "email": "bob@example.com"},
}
VERSION = os.environ.get("SHOP_VERSION", "1")

shop: MCPServer = MCPServer("shop", version=VERSION)


@shop.tool(description="Look up an order by its id: its status and total." + (" (v2)" if VERSION == "2" else ""))
def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id}")
    return dict(order)


@shop.tool(description="Refund an amount on an order.")
def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    return {"refund_id": f"R-{order_id}", "order_id": order_id, "amount": amount}


if os.environ.get("SHOP_CRASH") == "1":

    @shop.tool(description="Exit the server's process (a server that crashes mid-session).")
    def crash() -> str:
        os._exit(3)


if os.environ.get("SHOP_SLOW") == "1":

    @shop.tool(description="Answer after a minute.")
    async def slow() -> str:
        import anyio

        await anyio.sleep(60)
        return "late"


if VERSION == "2":

    @shop.tool(description="Cancel an order.")
    def cancel_order(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id, "status": "cancelled"}


def _export_spans(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's whole life
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    exporter = ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


if __name__ == "__main__":
    if os.environ.get("SHOP_PID_FILE"):
        with open(os.environ["SHOP_PID_FILE"], "w") as f:
            f.write(str(os.getpid()))
    if os.environ.get("SHOP_OTEL_OUT"):
        _export_spans(os.environ["SHOP_OTEL_OUT"])
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
        shop.run("streamable-http", host="127.0.0.1", port=port)
    else:
        shop.run()
