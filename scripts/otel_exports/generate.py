"""Export real OpenTelemetry spans from real instrumentation packages, driven against the local model double.

    python scripts/otel_exports/generate.py VARIANT OUT_DIR

Run by `regenerate.sh`, each variant in the virtual environment that holds its instrumentation (the
packages patch the same OpenAI client, so they cannot share one). Every variant runs the same scripted
support conversation twice (two runs, so two traces) against kit/doubles/openai_server.py on 127.0.0.1:

    user: Where is my order ORD-1001? If it shipped, email me the tracking number and tell me when it arrives.
    model: lookup_order({"order_id": "ORD-1001"})                      -> {"status": "shipped", ...}
    model: send_email({...}) and get_eta({"tracking": "1Z999"})        -> {"sent": true}, "Error: carrier ..."
    model: "Your order ORD-1001 has shipped ..."

and writes, with the SDK's own OTLP encoder (protobuf, rendered as OTLP JSON: hex ids, integer enums):
- OUT_DIR/<variant>.json: one export holding every span;
- OUT_DIR/<variant>.lines.jsonl: the Collector file exporter's form, one batch per line, a batch per span;
- OUT_DIR/<variant>.logs.json: the log records, for variants that record content as log events.

`library_<instrumentation>@guarded` / `@buggy` record another conversation, of two turns with a confirmation
guard (`library_agent.py`), under openinference-instrumentation-openai, opentelemetry-instrumentation-openai-v2
(`genai`) or OpenLLMetry 0.62 (`traceloop`): OUT_DIR/<instrumentation>_<v>.json holds its spans; the
OpenInference run also writes OUT_DIR/console_<v>.json, the same spans as the SDK's ConsoleSpanExporter
prints them (one JSON object after another), and OUT_DIR/messages_<v>.json, the agent's own message list.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gpt-4o-mini-2024-07-18"
SYSTEM = "You are a support agent. Use the tools."
QUESTION = "Where is my order ORD-1001? If it shipped, email me the tracking number and tell me when it arrives."
ANSWER = "Your order ORD-1001 has shipped (tracking 1Z999). I emailed you the tracking number; the ETA is unavailable."
ORDER = {"order_id": "ORD-1001", "status": "shipped", "tracking": "1Z999"}
EMAIL_ARGS = {"to": "C001", "body": "Your tracking number is 1Z999."}
ETA_ERROR = "Error: carrier API unavailable"


def _double() -> Any:
    spec = importlib.util.spec_from_file_location("openai_double", ROOT / "kit" / "doubles" / "openai_server.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def script(runs: int = 2) -> list[Any]:
    one = [
        {
            "tool_calls": [{"id": "call_lookup", "name": "lookup_order", "arguments": {"order_id": "ORD-1001"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            "finish_reason": "tool_calls",
        },
        {
            "tool_calls": [
                {"id": "call_email", "name": "send_email", "arguments": EMAIL_ARGS},
                {"id": "call_eta", "name": "get_eta", "arguments": {"tracking": "1Z999"}},
            ],
            "usage": {"prompt_tokens": 150, "completion_tokens": 20},
            "finish_reason": "tool_calls",
        },
        {"content": ANSWER, "usage": {"prompt_tokens": 200, "completion_tokens": 30}},
    ]
    return one * runs


# --- the tools --------------------------------------------------------------------------------------------


def lookup_order(order_id: str) -> dict[str, Any]:
    return dict(ORDER)


def send_email(to: str, body: str) -> dict[str, Any]:
    return {"sent": True}


def get_eta(tracking: str) -> str:
    return ETA_ERROR  # a framework-style text error: what `kit import --tool-error` is for


TOOLS = {"lookup_order": lookup_order, "send_email": send_email, "get_eta": get_eta}
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name.replace("_", " "),
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string"} for p in params},
                "required": list(params),
            },
        },
    }
    for name, params in (("lookup_order", ["order_id"]), ("send_email", ["to", "body"]), ("get_eta", ["tracking"]))
]


# --- OTLP JSON from the SDK's encoder -------------------------------------------------------------------


def _hex_ids(node: Any) -> Any:
    """Protobuf's JSON mapping writes bytes as base64; OTLP JSON writes trace and span ids as hex."""
    if isinstance(node, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex_ids(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(message: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return _hex_ids(MessageToDict(message, use_integers_for_enums=True))


def encode_spans(spans: Any) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as enc

    return otlp_json(enc(spans))


def encode_logs(records: Any) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as enc

    return otlp_json(enc(records))


class Recorder:
    """A tracer provider whose spans are kept in memory (for the one-file export) and also exported one
    batch per span to a lines file, as a Collector's file exporter receiving them would write them."""

    def __init__(self, out: Path, variant: str) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.out, self.variant = out, variant
        self.lines_path = out / f"{variant}.lines.jsonl"
        self.lines_path.write_text("")
        lines_path = self.lines_path

        class LinesExporter(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                with lines_path.open("a") as f:
                    f.write(json.dumps(encode_spans(spans), separators=(",", ":")) + "\n")
                return SpanExportResult.SUCCESS

        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "kit-otel-exports"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.provider.add_span_processor(SimpleSpanProcessor(LinesExporter()))
        trace.set_tracer_provider(self.provider)
        self.logs = None
        self.logger_provider = None

    def with_logs(self) -> Any:
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

        try:
            from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as Mem
        except ImportError:  # older SDKs
            from opentelemetry.sdk._logs.export import InMemoryLogExporter as Mem
        self.logs = Mem()
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        set_logger_provider(self.logger_provider)
        return self.logger_provider

    def write(self) -> None:
        self.provider.force_flush()
        spans = self.memory.get_finished_spans()
        (self.out / f"{self.variant}.json").write_text(json.dumps(encode_spans(spans), indent=1) + "\n")
        if self.logs is not None:
            assert self.logger_provider is not None
            self.logger_provider.force_flush()
            records = self.logs.get_finished_logs()
            (self.out / f"{self.variant}.logs.json").write_text(json.dumps(encode_logs(records), indent=1) + "\n")
        print(f"{self.variant}: {len(spans)} spans", file=sys.stderr)


# --- agents -----------------------------------------------------------------------------------------------


def openai_agent(base_url: str, tracer: Any) -> None:
    """A plain tool loop on the `openai` client (what the OpenAI instrumentations see)."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="test")
    with tracer.start_as_current_span("support agent run"):
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        for _ in range(5):
            resp = client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
            msg = resp.choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                return
            for tc in msg.tool_calls:
                result = TOOLS[tc.function.name](**json.loads(tc.function.arguments))
                content = result if isinstance(result, str) else json.dumps(result)
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})


def langchain_agent(base_url: str) -> None:
    """A LangChain tool loop (ChatOpenAI.bind_tools, tools run through their own invoke), in one chain."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look up an order."""
        return dict(ORDER)

    @tool
    def send_email(to: str, body: str) -> dict:
        """Send an email."""
        return {"sent": True}

    @tool
    def get_eta(tracking: str) -> str:
        """Estimated arrival of a parcel."""
        return ETA_ERROR

    tools = {t.name: t for t in (lookup_order, send_email, get_eta)}
    llm = ChatOpenAI(model=MODEL, base_url=base_url, api_key="test").bind_tools(list(tools.values()))

    def loop(question: str) -> dict:
        messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(question)]
        for _ in range(5):
            ai = llm.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                break
            for tc in ai.tool_calls:
                messages.append(tools[tc["name"]].invoke(tc))
        return {"messages": messages}

    RunnableLambda(loop).with_config(run_name="support_agent").invoke(QUESTION)


def pydantic_ai_agent(base_url: str, version: int, provider: Any) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="test"))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True, version=version)
    Agent.instrument_all(settings)  # this release takes the settings here, not as an Agent argument
    agent = Agent(model, system_prompt=SYSTEM, name="support_agent", tools=list(TOOLS.values()))
    agent.run_sync(QUESTION)


# --- variants ---------------------------------------------------------------------------------------------

VARIANTS = {
    # OpenTelemetry's own OpenAI instrumentation (opentelemetry-instrumentation-openai-v2 + util-genai)
    "genai_v2_span": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                      "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "genai_v2_events": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
    "genai_v2_nocontent": {},  # OpenTelemetry's default: no message content recorded
    "openinference_openai": {},
    "openinference_langchain": {},
    "traceloop": {"TRACELOOP_TRACE_CONTENT": "true"},
    "pydantic_ai": {},
    "library_openinference": {},
    "library_openinference_session": {},
    "library_genai": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                      "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "library_traceloop": {"TRACELOOP_TRACE_CONTENT": "true"},
}  # fmt: skip


def _instrument(instr: str, provider: Any) -> None:
    """Patch the OpenAI client with one instrumentation (each lives in its own virtual environment)."""
    if instr == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif instr == "genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    else:  # traceloop
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)


def run_library(instr: str, which: str, out: Path) -> None:
    """The two-turn library conversation (`library_agent.py`), guarded or buggy, under one instrumentation
    (the whole conversation under one span, as an app that traces its sessions does). With OpenInference it
    is also recorded as ConsoleSpanExporter prints it and as the agent's own message list. `openinference_session`:
    no span around the conversation (each model call is a trace of its own), its calls tagged with a
    `session.id` by OpenInference's `using_session`, as an app that traces requests, not sessions, does."""
    import library_agent
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    guarded = which == "guarded"
    out.mkdir(parents=True, exist_ok=True)
    rec = Recorder(out, f"{instr}_{which}")
    console = (out / f"console_{which}.json").open("w") if instr == "openinference" else None
    if console is not None:
        rec.provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    _instrument(instr.removesuffix("_session"), rec.provider)
    tracer = trace.get_tracer("library.agent")
    with _double().ScriptedOpenAIServer(library_agent.script(guarded)) as srv:
        if instr.endswith("_session"):
            from openinference.instrumentation import using_session

            with using_session(f"library-{which}-session"):
                messages = library_agent.conversation(srv.base_url, guarded)
        else:
            with tracer.start_as_current_span("library conversation"):
                messages = library_agent.conversation(srv.base_url, guarded)
        assert srv.remaining == 0, f"library_{instr}@{which}: {srv.remaining} scripted answers left"
    rec.write()
    rec.lines_path.unlink()  # one form is enough here
    if console is not None:
        console.close()
        (out / f"messages_{which}.json").write_text(json.dumps(messages, indent=1) + "\n")


def run(variant: str, out: Path, tag: str = "") -> None:
    base = variant.split("@")[0]
    os.environ.update(VARIANTS[base])
    if base.startswith("library_"):
        run_library(base.removeprefix("library_"), variant.split("@")[1], out)
        return
    name = variant.replace("@", "_v") + tag
    rec = Recorder(out, name)
    double = _double()
    from opentelemetry import trace

    tracer = trace.get_tracer("kit.otel_exports")
    with double.ScriptedOpenAIServer(script()) as srv:
        base_url = srv.base_url
        if base.startswith("genai_v2"):
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            if base == "genai_v2_events":
                rec.with_logs()
            OpenAIInstrumentor().instrument(tracer_provider=rec.provider, logger_provider=rec.logger_provider)
            for _ in range(2):
                openai_agent(base_url, tracer)
        elif base == "openinference_openai":
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=rec.provider)
            for _ in range(2):
                openai_agent(base_url, tracer)
        elif base == "openinference_langchain":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=rec.provider)
            for _ in range(2):
                langchain_agent(base_url)
        elif base == "traceloop":
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=rec.provider)
            for _ in range(2):
                openai_agent(base_url, tracer)
        elif base == "pydantic_ai":
            version = int(variant.split("@")[1]) if "@" in variant else 2
            for _ in range(2):
                pydantic_ai_agent(base_url, version, rec.provider)
        assert srv.remaining == 0, f"{variant}: {srv.remaining} scripted answers left: the agent stopped early"
    rec.write()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1].split("@")[0] not in VARIANTS:
        sys.exit(f"usage: generate.py {{{'|'.join(VARIANTS)}}}[@VERSION] OUT_DIR [NAME_SUFFIX]")
    run(sys.argv[1], Path(sys.argv[2]), sys.argv[3] if len(sys.argv) == 4 else "")
