"""The multi-turn attack corpus (multiturn.yaml beside this module), validated: unique ids, known categories, at
least two turns of one line each. Each attack reaches Promptfoo as one prompt `{"turns": [...]}`."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kit_promptfoo.kit_request import encode_turns
from kit_promptfoo.redteam.corpus import read_attacks

CORPUS = Path(__file__).resolve().parent / "multiturn.yaml"
CATEGORY = "multi-turn"  # the `kit_category` modifier of its plugin in redteam/promptfooconfig.yaml
KINDS = ("trust-then-inject", "innocent-then-escalate", "authority-on-turn-3")


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    category: str
    turns: tuple[str, ...] = Field(min_length=2)

    @field_validator("category")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in KINDS:
            raise ValueError(f"unknown category {v!r} (known: {', '.join(KINDS)})")
        return v

    @field_validator("turns")
    @classmethod
    def _one_line_each(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any("\n" in t or not t.strip() for t in v):
            raise ValueError("every turn must be one non-empty line")
        return tuple(t.strip() for t in v)

    @property
    def prompt(self) -> str:
        return encode_turns(self.turns)


def load(path: Path = CORPUS) -> tuple[Conversation, ...]:
    return read_attacks(path, Conversation)
