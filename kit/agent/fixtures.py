"""The shop's seed data (shop.json beside this module), parsed once per process and shared read-only."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

# Column types of every sandbox table, in order (a VARCHAR holds a string, a DOUBLE a float, either may be
# NULL); the fixture rows must use exactly these keys.
TABLES: dict[str, dict[str, str]] = {
    "customers": {
        "customer_id": "VARCHAR",
        "name": "VARCHAR",
        "email": "VARCHAR",
        "phone": "VARCHAR",
        "zip": "VARCHAR",
        "address": "VARCHAR",
    },
    "orders": {
        "order_id": "VARCHAR",
        "customer_id": "VARCHAR",
        "total": "DOUBLE",
        "status": "VARCHAR",
        "items": "VARCHAR",
        "shipping_address": "VARCHAR",
        "placed_at": "VARCHAR",
    },
    "refunds": {
        "refund_id": "VARCHAR",
        "order_id": "VARCHAR",
        "amount": "DOUBLE",
        "reason": "VARCHAR",
        "created_at": "VARCHAR",
    },
    "emails": {"message_id": "VARCHAR", "to_address": "VARCHAR", "subject": "VARCHAR", "body": "VARCHAR"},
    "handoffs": {"ticket_id": "VARCHAR", "customer_id": "VARCHAR", "reason": "VARCHAR", "summary": "VARCHAR"},
    "kb_articles": {"article_id": "VARCHAR", "title": "VARCHAR", "tags": "VARCHAR", "body": "VARCHAR"},
}

DEFAULT_PATH = Path(__file__).resolve().parent / "shop.json"


def fixtures_path() -> Path:
    """The shop data the reference agent's sandbox starts from: the settings' `agent_fixtures`, else the kit's."""
    from kit.settings import process_settings

    return process_settings().agent_fixtures or DEFAULT_PATH


@lru_cache(maxsize=4)
def load_fixtures(path: str | None = None) -> dict[str, tuple[dict[str, Any], ...]]:
    """Rows per table, validated against TABLES; a bad fixture file fails with its name and the row."""
    p = Path(path) if path else fixtures_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: cannot read shop fixtures: {exc}") from None
    out: dict[str, tuple[dict[str, Any], ...]] = {}
    for table, columns in TABLES.items():
        rows = data.get(table, [])
        for n, row in enumerate(rows):
            if set(row) != set(columns):
                raise ValueError(f"{p}: {table}[{n}] has keys {sorted(row)}, expected {sorted(columns)}")
        out[table] = tuple(rows)
    return out
