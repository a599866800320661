"""The multi-turn attack corpus (redteam/multiturn.yaml), validated: unique ids, known categories, at least
two turns of one line each. Each attack reaches Promptfoo as one prompt `{"turns": [...]}`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kit.errors import error_line
from kit_promptfoo.kit_request import encode_turns

CORPUS = Path(__file__).resolve().parents[2] / "redteam" / "multiturn.yaml"
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
    return _load(str(path), path.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _load(path: str, _mtime: int) -> tuple[Conversation, ...]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    out: list[Conversation] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("attacks") or []):
        try:
            attack = Conversation.model_validate(raw)
        except ValidationError as e:
            where = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
            raise ValueError(f"{path}: attack {where}: {error_line(e)}") from None
        if attack.id in seen:
            raise ValueError(f"{path}: attack {attack.id}: duplicate id")
        seen.add(attack.id)
        out.append(attack)
    return tuple(out)
