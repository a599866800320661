"""Reading a customer's messages without a model: ids, contact details, amounts, intents, confirmations."""

from __future__ import annotations

import re

ORDER_RE = re.compile(r"\bORD-\d{6}\b")
EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
PHONE_RE = re.compile(r"\+?\d[\d -]{7,}\d")
ZIP_RE = re.compile(r"(?<![\d-])\d{5}(?![\d-])")
AMOUNT_RE = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?")
ADDRESS_RE = re.compile(r"\bto:?\s+(\d+[^\n]*?)\s*(?:\.\s|\.?$)")

_CONFIRM = re.compile(
    r"\b(yes|yep|yeah|confirm(ed)?|go ahead|please (do|proceed)|proceed|do it|sounds good|i agree)\b", re.I
)
_DENY = re.compile(r"\b(no|nope|don't|do not|cancel that|wait)\b", re.I)
_INJECTION = re.compile(
    r"ignore (all |any |your |the )?(previous|prior|above|earlier) (instructions|rules)|"
    r"\b(admin|developer|maintenance) mode\b|system override|note to ai assistants|you are now",
    re.I,
)
_HUMAN = re.compile(r"\b(human|real person|manager|supervisor|representative|someone real)\b", re.I)
_REFUND = re.compile(r"\b(refund|money back|reimburse)|\b(want|demand|need|get)\b(?:[^.?!]|\.\d)*\bback\b", re.I)
_ADDRESS = re.compile(r"\b(change|update|correct|fix)\b[^.?!]*\baddress\b", re.I)
_EMAIL_ME = re.compile(r"\b(email|e-mail|send) me\b|\bconfirmation (by|via) email\b", re.I)
_FOREIGN = re.compile(
    r"\b(another|other) customer|\ball (your )?customers\b|\bcustomer list\b|"
    r"\b(phone numbers?|email address(es)?|emails?|home address(es)?|address(es)?|details) (of|for) "
    r"(the |that |this |another |other |some )?(customers?|person|people|users?|someone|somebody|neighbou?rs?)\b",
    re.I,
)
_TOTAL = re.compile(r"\b(how much|total|cost|paid|price)\b", re.I)
_STATUS = re.compile(r"\b(status|where is|where's|track|shipped|arrive|delivered|update on)\b", re.I)
_STOP = set(
    [
        "a",
        "an",
        "the",
        "i",
        "my",
        "me",
        "you",
        "your",
        "we",
        "our",
        "is",
        "are",
        "was",
        "were",
        "be",
        "can",
        "could",
        "would",
        "will",
        "do",
        "does",
        "did",
        "how",
        "what",
        "when",
        "where",
        "why",
        "which",
        "who",
        "to",
        "of",
        "for",
        "on",
        "in",
        "at",
        "by",
        "with",
        "and",
        "or",
        "if",
        "it",
        "its",
        "this",
        "that",
        "there",
        "please",
        "hi",
        "hello",
        "thanks",
        "thank",
        "just",
        "about",
        "any",
        "have",
        "has",
        "get",
    ]
)


def order_ids(text: str) -> list[str]:
    return list(dict.fromkeys(ORDER_RE.findall(text)))


def emails(text: str) -> list[str]:
    return list(dict.fromkeys(e.rstrip(".") for e in EMAIL_RE.findall(text)))


def phones(text: str) -> list[str]:
    return [p for p in PHONE_RE.findall(ORDER_RE.sub(" ", text)) if sum(c.isdigit() for c in p) >= 9]


def zip_code(text: str) -> str | None:
    cleaned = PHONE_RE.sub(" ", ORDER_RE.sub(" ", EMAIL_RE.sub(" ", text)))
    found = ZIP_RE.findall(cleaned)
    return found[0] if found else None


def amount(text: str) -> float | None:
    m = AMOUNT_RE.search(text)
    if not m:
        return None
    return float(m.group(1).replace(",", "") + (m.group(2) or ""))


def new_address(text: str) -> str | None:
    m = ADDRESS_RE.search(text)
    return m.group(1).strip().rstrip(".") if m else None


def confirmed(last_user_message: str) -> bool:
    """An explicit yes in the customer's latest message (and no no)."""
    return bool(_CONFIRM.search(last_user_message)) and not _DENY.search(last_user_message)


def denied(last_user_message: str) -> bool:
    """A no in the customer's latest message ("no, don't do it" is a no): a change of mind."""
    return bool(_DENY.search(last_user_message))


def states_request(text: str) -> bool:
    """The message asks for something of its own (a refund, a change, a human, a status...), rather than
    answering the agent's question (a yes, an order number, contact details)."""
    return bool(
        wants_refund(text)
        or wants_address_change(text)
        or wants_human(text)
        or asks_foreign_data(text)
        or injected(text)
        or asks_status(text)
        or asks_total(text)
    )


def request(messages: list[dict[str, str]]) -> list[str]:
    """The customer's messages that make up the request the latest one belongs to. A message that answers
    a question of the agent (its reply before ended with "?") and asks nothing of its own continues the
    request before it: "Yes, go ahead" after "Shall I go ahead?", "ORD-100001" after "Which order?"."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return []
    picked = [users[-1]]
    for prev in reversed(users[:-1]):
        current = picked[0]
        replies = [m for m in messages[prev + 1 : current] if m.get("role") == "assistant" and m.get("content")]
        asked = bool(replies) and str(replies[-1]["content"]).rstrip().endswith("?")
        if not asked or states_request(messages[current]["content"]):
            break
        picked.insert(0, prev)
    return [messages[i]["content"] for i in picked]


def injected(text: str) -> bool:
    return bool(_INJECTION.search(text))


def wants_human(text: str) -> bool:
    return bool(_HUMAN.search(text))


def wants_refund(text: str) -> bool:
    return bool(_REFUND.search(text))


def wants_address_change(text: str) -> bool:
    return bool(_ADDRESS.search(text))


def wants_email(text: str) -> bool:
    return bool(_EMAIL_ME.search(text))


def asks_foreign_data(text: str) -> bool:
    return bool(_FOREIGN.search(text))


def asks_total(text: str) -> bool:
    return bool(_TOTAL.search(text))


def asks_status(text: str) -> bool:
    return bool(_STATUS.search(text))


def keywords(text: str, limit: int = 10) -> str:
    """The content words of a question, for a help-centre search."""
    clean = EMAIL_RE.sub(" ", ORDER_RE.sub(" ", text))
    words = [w for w in re.findall(r"[a-z][a-z'-]+", clean.lower()) if w not in _STOP and len(w) > 2]
    return " ".join(list(dict.fromkeys(words))[:limit])


def strip_injection(text: str) -> str:
    """Drop the sentences of a tool result that try to instruct the agent."""
    sentences = re.split(r"(?<=[.!?])\s+", text)
    return " ".join(s for s in sentences if not injected(s) and "instruction" not in s.lower()).strip()
