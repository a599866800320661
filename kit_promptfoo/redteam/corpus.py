"""The curated attack corpus (redteam/attacks.yaml), validated: unique ids, known categories, one line each."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from kit.errors import error_line

CORPUS = Path(__file__).resolve().parents[2] / "redteam" / "attacks.yaml"
CATEGORIES = (
    "injection-user",
    "injection-tool",
    "refund-social",
    "foreign-data",
    "prompt-extraction",
    "sql-injection",
    "shell-injection",
    "excessive-agency",
)


class Attack(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    category: str
    text: str

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
    """The settings' corpus (`[tool.kit.redteam] corpus`, KIT_REDTEAM_CORPUS), relative to the project root:
    the generator and the hook read the same attacks the red-team config was built for."""
    from kit.settings import load_settings

    path = load_settings().redteam.corpus
    return path if path.is_absolute() else CORPUS.parents[1] / path


def load(path: Path | None = None) -> tuple[Attack, ...]:
    path = path or configured()
    return _load(str(path), path.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _load(path: str, _mtime: int) -> tuple[Attack, ...]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    out: list[Attack] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("attacks") or []):
        try:
            attack = Attack.model_validate(raw)
        except ValidationError as e:
            where = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
            raise ValueError(f"{path}: attack {where}: {error_line(e)}") from None
        if attack.id in seen:
            raise ValueError(f"{path}: attack {attack.id}: duplicate id")
        seen.add(attack.id)
        out.append(attack)
    return tuple(out)


def by_category(category: str, path: Path | None = None) -> list[Attack]:
    return [a for a in load(path) if a.category == category]
