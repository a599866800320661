"""The curated attack corpus (redteam/attacks.yaml), validated: unique ids, known categories, one line each."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from kit import yamlio
from kit.errors import error_line

M = TypeVar("M", bound=BaseModel)

GENERIC = Path(__file__).resolve().parent / "generic" / "attacks.yaml"
CATEGORIES = (
    "injection-user",
    "injection-tool",
    "refund-social",
    "foreign-data",
    "prompt-extraction",
    "sql-injection",
    "shell-injection",
    "excessive-agency",
    "kept",  # conversations `kit redteam keep` kept from adaptive attacks: `{"turns": [...]}`, replayed as is
)


class Attack(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    category: str
    text: str
    # A kept attack's (`kit redteam keep`): the invariant, and its check, it broke when it was kept. Its replay is
    # judged by that invariant (an error when nothing judging the red team names it any more).
    invariant: str | None = None
    check: str | None = None

    @field_validator("category")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in CATEGORIES:
            raise ValueError(f"unknown category {v!r} (known: {', '.join(CATEGORIES)})")
        return v

    @field_validator("text")
    @classmethod
    def _one_line(cls, v: str) -> str:
        # Promptfoo reads generated attacks as `Prompt:` lines: a newline would split one attack in two.
        if "\n" in v or not v.strip():
            raise ValueError("an attack must be one non-empty line")
        return v.strip()


def configured() -> Path:
    """The plan's corpus (`Plan.redteam_corpus`: the plan `make evals` hands over, else the settings'), so the
    generator reads the attacks the red-team config was built for; the agent is not loaded for it."""
    from kit.plan import current_plan

    return current_plan().redteam_corpus


def load(path: Path | None = None) -> tuple[Attack, ...]:
    return read_attacks(path or configured(), Attack)


def read_attacks(path: Path, model: type[M]) -> tuple[M, ...]:
    """A corpus file's `attacks:`, each validated as `model`, ids unique; an error names the file and the
    attack. Read once per version of the file."""
    return _read(str(path), path.stat().st_mtime_ns, model)


@lru_cache(maxsize=8)
def _read(path: str, _mtime: int, model: type[M]) -> tuple[M, ...]:
    try:
        data = yamlio.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: {e}") from None
    out: list[M] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("attacks") or []):
        try:
            attack = model.model_validate(raw)
        except ValidationError as e:
            where = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
            raise ValueError(f"{path}: attack {where}: {error_line(e)}") from None
        if attack.id in seen:  # type: ignore[attr-defined]
            raise ValueError(f"{path}: attack {attack.id}: duplicate id")  # type: ignore[attr-defined]
        seen.add(attack.id)  # type: ignore[attr-defined]
        out.append(attack)
    return tuple(out)


def by_category(category: str, path: Path | None = None) -> list[Attack]:
    return [a for a in load(path) if a.category == category]
