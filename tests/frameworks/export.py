"""A fresh OTLP JSON export of one desk run, with the instrumentation its recording used
(tests/fixtures/frameworks/record.py's function of that name), against the model double already listening at
DESK_MODEL_URL (tests/frameworks/live.py's, which counts the calls): `python export.py NAME OUT.json [MODULE]`,
DESK_BUG as for the desk. Run in the framework's own venv, in the team's repository. MODULE (a framework that
loads the project's .env when imported) is imported first, and the kit's closed-port proxy it brought taken
away again, as the kit does before each agent call."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"


class _Listening:
    """Stands in for record.py's double: the one live.py started, at DESK_MODEL_URL."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.base_url = os.environ["DESK_MODEL_URL"]

    def __enter__(self) -> _Listening:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def main(name: str, out: Path, preload: str | None = None) -> None:
    if preload:
        from kit.offline import agent_environment

        __import__(preload)
        agent_environment()
    sys.path.insert(0, str(FIXTURES))
    import record
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import kit.doubles.anthropic_server
    import kit.doubles.openai_server

    kit.doubles.openai_server.ScriptedOpenAIServer = _Listening  # type: ignore[misc,assignment]
    kit.doubles.anthropic_server.ScriptedAnthropicServer = _Listening  # type: ignore[misc,assignment]
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    getattr(record, name)(provider)
    provider.force_flush()
    spans = list(memory.get_finished_spans())
    # A framework whose export is not the SDK's spans (the Claude Code CLI's traces and logs) left it in EXPORTED.
    export = record.EXPORTED.popitem()[1] if record.EXPORTED else record.otlp_json(spans)
    out.write_text(json.dumps(export, indent=1) + "\n")
    print(f"{name}: {len(spans)} spans to {out}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:4])
