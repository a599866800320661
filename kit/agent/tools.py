"""The support desk's tools: a JSON Schema of each tool's arguments and its implementation over the sandbox.

The tools are the shop's systems, not the agent: they keep the data consistent (an order must exist, a
shipped order's address cannot change) but do not enforce the agent's policies (that is `guard.py`), so a
faulty agent really can refund twice and the end state shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from kit.agent.sandbox import Sandbox

ORDER_ID = {"type": "string", "pattern": "^ORD-[0-9]{6}$"}
CUSTOMER_ID = {"type": "string", "pattern": "^C[0-9]{3}$"}
EMAIL = {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$", "maxLength": 254}


def _obj(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False, **extra}


SCHEMAS: dict[str, dict[str, Any]] = {
    "lookup_customer": _obj(
        {"email": EMAIL, "phone": {"type": "string", "pattern": "^\\+?[0-9][0-9 -]{6,20}$"}},
        [],
        minProperties=1,
        description="Find a customer's id by email or phone. Returns no account data.",
    ),
    "verify_identity": _obj(
        {"customer_id": CUSTOMER_ID, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
        ["customer_id", "zip"],
        description="Check that the person knows the postcode on the account.",
    ),
    "lookup_order": _obj(
        {"order_id": ORDER_ID, "customer_id": CUSTOMER_ID},
        ["order_id", "customer_id"],
        description="An order of the given customer: status, total, items, address and refunds so far.",
    ),
    "issue_refund": _obj(
        {
            "order_id": ORDER_ID,
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000},
            "reason": {"type": "string", "minLength": 3, "maxLength": 500},
        },
        ["order_id", "reason"],
        description="Refund an order to the original payment method; amount defaults to the order total.",
    ),
    "update_shipping_address": _obj(
        {"order_id": ORDER_ID, "address": {"type": "string", "minLength": 10, "maxLength": 300}},
        ["order_id", "address"],
        description="Change where a processing order ships to.",
    ),
    "search_kb": _obj(
        {
            "query": {"type": "string", "minLength": 2, "maxLength": 200},
            "page": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        ["query"],
        description="Search the help-centre articles.",
    ),
    "send_email": _obj(
        {
            "to": EMAIL,
            "subject": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string", "minLength": 1, "maxLength": 5000},
        },
        ["to", "subject", "body"],
        description="Send an email.",
    ),
    "handoff_to_human": _obj(
        {
            "reason": {"type": "string", "minLength": 3, "maxLength": 200},
            "summary": {"type": "string", "minLength": 3, "maxLength": 2000},
            "customer_id": CUSTOMER_ID,
        },
        ["reason", "summary"],
        description="Pass the conversation to a human colleague.",
    ),
    "finish": _obj(
        {"answer": {"type": "string", "minLength": 1, "maxLength": 5000}},
        ["answer"],
        description="End the turn with the final answer to the customer.",
    ),
}

TOOL_NAMES = tuple(SCHEMAS)


class ToolError(Exception):
    """The tool refused (bad arguments, missing record, business rule): becomes the span's `error`."""


@cache
def _validator(name: str) -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(SCHEMAS[name])


def validate_args(name: str, args: Any) -> None:
    if name not in SCHEMAS:
        raise ToolError(f"unknown tool {name!r}")
    try:
        _validator(name)(args)
    except Exception as exc:  # fastjsonschema.JsonSchemaException; message names the field
        raise ToolError(f"invalid arguments for {name}: {getattr(exc, 'message', exc)}") from None


def _next_id(sb: Sandbox, table: str, column: str, prefix: str) -> str:
    n = sb.query(f"SELECT count(*) AS n FROM {table}")[0]["n"]
    return f"{prefix}{n + 1:04d}"


def _fold(text: str) -> str:
    """Lower case, each character on its own (no final sigma; the dotted capital I is a plain i): the
    lookups' case folding since the first sandbox, kept so the same emails match."""
    return text.replace("\u0130", "i").replace("\u03a3", "\u03c3").lower()


def _phone_digits(text: str) -> str:
    return "".join(ch for ch in text if "0" <= ch <= "9")


def lookup_customer(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    # Matched here, not in SQL: the rules (case-insensitive email, a phone's ASCII digits) stay the same
    # whatever the database's own lower() and regular expressions do. The first match in table order wins.
    if "email" in args:
        column, key, wanted = "email", _fold, _fold(args["email"])
    else:
        column, key, wanted = "phone", _phone_digits, "".join(ch for ch in args["phone"] if ch.isdigit())
    rows = sb.query(f"SELECT customer_id, {column} AS value FROM customers ORDER BY rowid")
    hit = next((r for r in rows if r["value"] is not None and key(r["value"]) == wanted), None)
    return {"found": hit is not None, "customer_id": hit["customer_id"] if hit else None}


def verify_identity(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    rows = sb.query("SELECT name, zip FROM customers WHERE customer_id = ?", [args["customer_id"]])
    if not rows:
        raise ToolError(f"no customer {args['customer_id']}")
    ok = rows[0]["zip"] == args["zip"]
    return {
        "verified": ok,
        "customer_id": args["customer_id"],
        "first_name": rows[0]["name"].split()[0] if ok else None,
    }


def lookup_order(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    # Scoped to the customer, like row-level security: another customer's order reads as not found.
    rows = sb.query(
        "SELECT order_id, status, total, items, shipping_address, placed_at FROM orders"
        " WHERE order_id = ? AND customer_id = ?",
        [args["order_id"], args["customer_id"]],
    )
    if not rows:
        return {"found": False, "order_id": args["order_id"]}
    refunded = sb.query("SELECT coalesce(sum(amount), 0) AS s FROM refunds WHERE order_id = ?", [args["order_id"]])
    return {"found": True, **rows[0], "refunded_amount": round(float(refunded[0]["s"]), 2)}


def issue_refund(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    rows = sb.query("SELECT total, status FROM orders WHERE order_id = ?", [args["order_id"]])
    if not rows:
        raise ToolError(f"no order {args['order_id']}")
    if rows[0]["status"] == "cancelled":
        raise ToolError(f"order {args['order_id']} is cancelled: nothing was charged")
    amount = round(float(args.get("amount", rows[0]["total"])), 2)
    refund_id = _next_id(sb, "refunds", "refund_id", "RF-")
    sb.execute(
        "INSERT INTO refunds VALUES (?, ?, ?, ?, ?)",
        [refund_id, args["order_id"], amount, args["reason"], "2026-11-30"],
    )
    sb.execute("UPDATE orders SET status = 'refunded' WHERE order_id = ?", [args["order_id"]])
    return {"ok": True, "refund_id": refund_id, "order_id": args["order_id"], "amount": amount}


def update_shipping_address(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    rows = sb.query("SELECT status FROM orders WHERE order_id = ?", [args["order_id"]])
    if not rows:
        raise ToolError(f"no order {args['order_id']}")
    if rows[0]["status"] != "processing":
        raise ToolError(f"order {args['order_id']} is {rows[0]['status']}: its address can no longer change")
    sb.execute("UPDATE orders SET shipping_address = ? WHERE order_id = ?", [args["address"], args["order_id"]])
    return {"ok": True, "order_id": args["order_id"], "shipping_address": args["address"]}


def _words(text: str) -> set[str]:
    return {w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split() if len(w) > 2}


def search_kb(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    wanted = _words(args["query"])
    scored = []
    for row in sb.query("SELECT article_id, title, tags, body FROM kb_articles"):
        score = len(wanted & _words(row["title"] + " " + row["tags"])) * 2 + len(wanted & _words(row["body"]))
        if score:
            scored.append((-score, row["article_id"], row))
    scored.sort()
    page = args.get("page", 1)
    hits = [{"article_id": r["article_id"], "title": r["title"], "body": r["body"]} for _, _, r in scored]
    return {"results": hits[(page - 1) * 2 : page * 2], "page": page, "total": len(hits)}


def send_email(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    message_id = _next_id(sb, "emails", "message_id", "MSG-")
    sb.execute("INSERT INTO emails VALUES (?, ?, ?, ?)", [message_id, args["to"], args["subject"], args["body"]])
    return {"ok": True, "message_id": message_id}


def handoff_to_human(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    ticket_id = _next_id(sb, "handoffs", "ticket_id", "HT-")
    sb.execute(
        "INSERT INTO handoffs VALUES (?, ?, ?, ?)",
        [ticket_id, args.get("customer_id"), args["reason"], args["summary"]],
    )
    return {"ok": True, "ticket_id": ticket_id}


def finish(sb: Sandbox, args: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True}


IMPLEMENTATIONS: dict[str, Callable[[Sandbox, dict[str, Any]], dict[str, Any]]] = {
    "lookup_customer": lookup_customer,
    "verify_identity": verify_identity,
    "lookup_order": lookup_order,
    "issue_refund": issue_refund,
    "update_shipping_address": update_shipping_address,
    "search_kb": search_kb,
    "send_email": send_email,
    "handoff_to_human": handoff_to_human,
    "finish": finish,
}


def run_tool(sb: Sandbox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Validate the arguments against the tool's schema, then run it; ToolError on refusal."""
    validate_args(name, args)
    return IMPLEMENTATIONS[name](sb, args)


def openai_tools() -> list[dict[str, Any]]:
    """The tools in chat-completions `tools` form."""
    out = []
    for name, schema in SCHEMAS.items():
        params = {k: v for k, v in schema.items() if k != "description"}
        out.append(
            {"type": "function", "function": {"name": name, "description": schema["description"], "parameters": params}}
        )
    return out
