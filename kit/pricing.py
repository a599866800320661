"""Cost from tokens: a model call's price, by model id, from the settings (`[tool.kit.prices]`) or the
genai-prices library; an unknown model's cost is not recorded (None), never a 0 that reads like a measurement.

    priced(trace_dict)   # llm spans with tokens and no cost of their own get one, where the model's price is known

A span's own `cost_usd` (what the agent or its framework reported) is kept as given. A priced span says where
its price came from (`cost_source`: `settings` or `genai-prices`). genai-prices is imported on the first span
that needs it (its tables take ~0.2 s to load), so `kit check` and traces that carry costs never pay for it; it
reads its bundled snapshot and never fetches prices.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

MTOK = 1_000_000


def _overrides() -> Mapping[str, tuple[float, float]]:
    """The project's `[tool.kit.prices]` (model id -> USD per million tokens, input and output), from the
    settings this process runs under (kit.settings.current_settings: a trace is priced as the agent's call is
    read, deep inside a run)."""
    from kit.settings import current_settings

    try:
        return current_settings().prices
    except Exception:  # the settings' own error is reported by whatever runs the agent; pricing adds none
        return {}


def model_price(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float, str] | None:
    """USD per million tokens (input, output) and where it came from, or None: the settings' price for this
    exact id, else genai-prices' (which matches dated and provider-prefixed ids to their model)."""
    own = (overrides if overrides is not None else _overrides()).get(model)
    if own is not None:
        return float(own[0]), float(own[1]), "settings"
    return _library_price(model)


@functools.lru_cache(maxsize=256)
def _library_price(model: str) -> tuple[float, float, str] | None:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # an install without it: costs stay as the traces give them
        return None
    try:
        per_in = calc_price(Usage(input_tokens=MTOK, output_tokens=0), model).total_price
        per_out = calc_price(Usage(input_tokens=0, output_tokens=MTOK), model).total_price
    except (LookupError, ValueError):
        return None
    return float(per_in), float(per_out), "genai-prices"


def call_cost(
    model: str, tokens_in: int, tokens_out: int, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, str] | None:
    """What one model call cost in USD, and the price's source, or None when the model's price is unknown."""
    found = model_price(model, overrides)
    if found is None:
        return None
    per_in, per_out, source = found
    return (tokens_in * per_in + tokens_out * per_out) / MTOK, source


def _needs_price(span: Mapping[str, Any]) -> bool:
    if span.get("kind") != "llm" or not (span.get("tokens_in") or span.get("tokens_out")):
        return False
    # A cost the span gives is a figure, unless it says itself that it is not one (`cost_known: false`).
    return span.get("cost_usd") is None or span.get("cost_known") is False


def priced(data: dict[str, Any], overrides: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """`data` (a trace dict), its llm spans that carry tokens but no cost priced in place: the span's model
    (`model`, else its `name`), else the trace's. A span whose model has no known price keeps no cost (and a
    `cost_usd` it held as a placeholder beside `cost_known: false` is dropped), so the run's cost reads
    "not recorded"."""
    spans = data.get("spans")
    if not isinstance(spans, list):
        return data
    todo = [s for s in spans if isinstance(s, dict) and _needs_price(s)]
    if not todo:
        return data
    table = overrides if overrides is not None else _overrides()
    for span in todo:
        model = span.get("model") or span.get("name") or data.get("model")
        found = (
            call_cost(str(model), int(span.get("tokens_in") or 0), int(span.get("tokens_out") or 0), table)
            if model
            else None
        )
        if found is None:
            span.pop("cost_usd", None)
            continue
        span["cost_usd"], span["cost_source"] = round(found[0], 10), found[1]
        span.pop("cost_known", None)
    return data


def unpriced_calls(spans: Any) -> list[str]:
    """The models of the llm spans that carry tokens and no cost (their price unknown), one entry per span:
    a run with any of them has no cost (a sum of the priced calls alone reads as the run's, and passes
    budgets it should not). Spans as dicts or as kit.trace.Span (whose fields hold only what was given)."""
    out: list[str] = []
    for s in spans or ():
        fields = s if isinstance(s, Mapping) else vars(s)
        if not isinstance(fields, Mapping) or fields.get("kind") != "llm":
            continue
        if not (fields.get("tokens_in") or fields.get("tokens_out")):
            continue
        if fields.get("cost_usd") is None or fields.get("cost_known") is False:
            out.append(str(fields.get("model") or fields.get("name") or "an unnamed model"))
    return out
