"""A seal over (case, trace, verdict): the assertion trusts the provider's verdict only for the exact trace
and case it was computed on (stdlib only: the assertion imports it in a fresh process for every test).

It catches a verdict that was copied, edited or left stale; it is not a signature against a provider
that forges both the trace and the seal (such a provider could forge the trace alone just as well)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def seal(case_id: str, trace: dict[str, Any], verdict: dict[str, Any]) -> str:
    blob = json.dumps([case_id, trace, verdict], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
