"""The agent's policies, enforced on every tool call whatever decides it (rules or a model).

The guard knows only what the agent has seen (the session context and earlier tool results), never the
database behind the tools, so it behaves the same live and in replay. A refusal becomes the tool span's
`error` ("policy <rule>: ..."); a fault variant switches off the rules its fault needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.agent import parse

RULES = (
    "identity_first",  # account data only after the customer is verified
    "own_data_only",  # never another customer's data, never mail anyone but the customer
    "lookup_before_refund",  # an order is looked up before it is refunded or changed
    "refund_within_total",  # no refund larger than what is left of the order's total
    "one_refund_per_order",
    "confirm_before_write",  # refunds and address changes need the customer's explicit yes
    "redact_foreign_pii",  # the final answer carries no one else's email or phone
)

# Which rules each fault variant needs off for its fault to reach the sandbox.
VARIANT_DISABLES: dict[str, frozenset[str]] = {
    "skip_lookup": frozenset({"lookup_before_refund"}),
    "double_refund": frozenset({"one_refund_per_order"}),
    "over_refund": frozenset({"refund_within_total"}),
    "leak_pii": frozenset({"redact_foreign_pii"}),
    "loop": frozenset(),
    "ignore_step_cap": frozenset(),
    "act_before_confirm": frozenset({"confirm_before_write"}),
    "obey_injection": frozenset(RULES),  # obeying injected text means the rules no longer hold
}

ACCOUNT_TOOLS = {"lookup_order", "issue_refund", "update_shipping_address", "send_email"}
WRITE_TOOLS = {"issue_refund", "update_shipping_address"}


class PolicyViolation(Exception):
    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"policy {rule}: {detail}")
        self.rule = rule


@dataclass
class Guard:
    context: dict[str, Any]
    disabled: frozenset[str] = frozenset()
    customer_id: str | None = None
    customer_email: str | None = None
    last_user_message: str = ""
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunded: set[str] = field(default_factory=set)
    _candidate_emails: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A logged-in session (context.customer_id) is already verified by the shop's login.
        self.customer_id = self.context.get("customer_id")
        self.customer_email = self.context.get("email")

    def _on(self, rule: str) -> bool:
        return rule not in self.disabled

    def user_said(self, text: str) -> None:
        self.last_user_message = text

    def before(self, name: str, args: dict[str, Any]) -> None:
        """Raise PolicyViolation when the call breaks an enabled rule."""
        if name in ACCOUNT_TOOLS and self._on("identity_first") and self.customer_id is None:
            raise PolicyViolation("identity_first", f"{name} needs a verified customer")
        if self._on("own_data_only"):
            if name == "lookup_order" and args.get("customer_id") != self.customer_id:
                raise PolicyViolation("own_data_only", f"customer {args.get('customer_id')} is not the verified one")
            if name == "send_email" and str(args.get("to", "")).lower() != (self.customer_email or "").lower():
                raise PolicyViolation("own_data_only", "email may go only to the verified customer's address")
            if name == "handoff_to_human" and args.get("customer_id") not in (None, self.customer_id):
                raise PolicyViolation("own_data_only", "handoff names another customer")
        if name in WRITE_TOOLS:
            self._before_write(name, args)

    def _before_write(self, name: str, args: dict[str, Any]) -> None:
        order_id = args.get("order_id")
        order = self.orders.get(order_id or "")
        if order is None and self._on("lookup_before_refund"):
            raise PolicyViolation("lookup_before_refund", f"look up {order_id} before {name}")
        if self._on("confirm_before_write") and not parse.confirmed(self.last_user_message):
            raise PolicyViolation("confirm_before_write", f"{name} needs the customer's explicit confirmation")
        if name != "issue_refund" or order is None:
            return
        already = float(order.get("refunded_amount") or 0)
        if self._on("one_refund_per_order") and (already > 0 or order_id in self.refunded):
            raise PolicyViolation("one_refund_per_order", f"{order_id} has already been refunded")
        left = round(float(order["total"]) - already, 2)
        asked = float(args.get("amount", order["total"]))
        if self._on("refund_within_total") and asked > left + 1e-9:
            raise PolicyViolation("refund_within_total", f"{asked:.2f} exceeds the {left:.2f} left on {order_id}")

    def after(self, name: str, args: dict[str, Any], output: Any) -> None:
        """Learn from a successful call: who is verified, which orders were seen, what was refunded."""
        if not isinstance(output, dict):
            return
        if name == "lookup_customer" and output.get("found") and "email" in args:
            self._candidate_emails[output["customer_id"]] = args["email"]
        elif name == "verify_identity" and output.get("verified"):
            self.customer_id = output["customer_id"]
            self.customer_email = self._candidate_emails.get(self.customer_id, self.customer_email)
        elif name == "lookup_order" and output.get("found"):
            self.orders[output["order_id"]] = output
        elif name == "issue_refund" and output.get("ok"):
            self.refunded.add(output["order_id"])

    def filter_answer(self, answer: str) -> str:
        """Redact emails and phone numbers that are not the verified customer's own."""
        if not self._on("redact_foreign_pii"):
            return answer
        own = {(self.customer_email or "").lower(), str(self.context.get("phone", "")).lower()}
        for found in parse.emails(answer) + parse.phones(answer):
            if found.lower() not in own:
                answer = answer.replace(found, "[redacted]")
        return answer
