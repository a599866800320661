"""The adaptive red team's target (kit_promptfoo.redteam.target): one agent per attack conversation, kept across
its turns, judged by the oracle after every turn. Written by `kit init`; used when an attacker is configured."""

from kit_promptfoo.redteam.target import call_api

__all__ = ["call_api"]
