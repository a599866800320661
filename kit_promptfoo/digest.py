"""A seal over (case, trace, verdict): the assertion trusts the provider's verdict only for the exact trace
and case it was computed on (stdlib only: the assertion imports it in a fresh process for every test).

It catches a verdict that was copied, edited or left stale; it is not a signature against a provider
that forges both the trace and the seal (such a provider could forge the trace alone just as well)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def _canonical(value: Any) -> Any:
    """The value as it survives a trip through JavaScript: Promptfoo hands metadata back with 0.0 as 0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def seal(case_id: str, trace: dict[str, Any], verdict: dict[str, Any]) -> str:
    data = _canonical([case_id, trace, verdict])
    blob = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
