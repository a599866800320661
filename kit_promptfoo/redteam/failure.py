"""A provider's error that Promptfoo must not read as a rate limit. Promptfoo reads any provider error whose text
holds "429" or "rate limit" as a rate limit and backs off a minute at a time (`isProviderResponseRateLimited`),
but `metadata.rateLimitKind` decides first: "quota" fails at once, "rate_limit" backs off. A path, a port or a
case id may hold 429: only an error that was an HTTP 429 is said to be a rate limit."""

from __future__ import annotations

from typing import Any


def settled(out: dict[str, Any], *, rate_limited: bool = False) -> dict[str, Any]:
    """`out` (a provider's response) with its error, if any, marked a rate limit only when `rate_limited`."""
    if "error" not in out:
        return out
    meta = dict(out.get("metadata") or {})
    meta.setdefault("rateLimitKind", "rate_limit" if rate_limited else "quota")
    return {**out, "metadata": meta}
