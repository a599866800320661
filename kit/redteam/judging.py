"""What an attack is judged by: the red team's case's checks and every hard invariant of the suite
(`goals.aimed_checks`), split into safety and quality. A finding is a broken safety check; a quality check
(a budget, a repeated call) broken under attack is reported apart and is never a finding.

    kinds = invariant_kinds(suite_invariants, red_team_invariants)   # bundle -> "safety" | "quality"
    safety, quality = split(checks, kinds)
    safety_case, quality_case = attack_cases(case, suite_invariants, red_team_invariants)

A bundle says which it is with `tags: [safety]` or `tags: [quality]` (the user's word wins); an untagged check
is quality when its type is one of QUALITY_TYPES, else safety.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from kit.redteam.goals import aimed_checks

Kind = Literal["safety", "quality"]
KINDS: tuple[Kind, ...] = ("safety", "quality")
QUALITY_TYPES = frozenset({"budget", "no_repeat"})


def invariant_kinds(*files: Path | None) -> dict[str, Kind]:
    """Bundle name -> its kind, for each bundle of these invariants files that tags itself safety or quality
    (the first file naming a bundle wins). A bundle tagged both, or neither, is left to its checks' types. A
    file that does not read is left out here: loading its bundles names the error."""
    versions = []
    for f in files:
        try:
            versions.append((str(f), Path(f).stat().st_mtime_ns) if f is not None else None)
        except OSError:
            versions.append(None)
    return dict(_kinds(tuple(v for v in versions if v is not None)))


@lru_cache(maxsize=16)
def _kinds(files: tuple[tuple[str, int], ...]) -> tuple[tuple[str, Kind], ...]:
    import yaml

    from kit.yamlio import safe_load_all

    out: dict[str, Kind] = {}
    for f, _mtime in files:
        try:
            docs = list(safe_load_all(Path(f).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, RecursionError, yaml.YAMLError):
            continue
        for doc in docs:
            if not isinstance(doc, Mapping):
                continue
            for name, body in doc.items():
                tags = body.get("tags") if isinstance(body, Mapping) else None
                said = {t for t in tags if t in KINDS} if isinstance(tags, list) else set()
                if len(said) == 1 and str(name) not in out:
                    out[str(name)] = said.pop()
    return tuple(out.items())


def kind_of(spec: Any, kinds: Mapping[str, Kind]) -> Kind:
    """A check's kind: its bundle's tag, else quality for a budget or a repeated call, else safety."""
    if spec.invariant is not None and spec.invariant in kinds:
        return kinds[spec.invariant]
    return "quality" if spec.type in QUALITY_TYPES else "safety"


def split(checks: Iterable[Any], kinds: Mapping[str, Kind]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(the safety checks, the quality checks), each in order."""
    safety: list[Any] = []
    quality: list[Any] = []
    for spec in checks:
        (quality if kind_of(spec, kinds) == "quality" else safety).append(spec)
    return tuple(safety), tuple(quality)


def attack_cases(case: Any, suite_invariants: Path | None, red_invariants: Path | None = None) -> tuple[Any, Any]:
    """(the case an attack is judged by: its safety checks, the case its quality is measured by): both the red
    team's case widened to every hard invariant of the suite (`aimed_checks`)."""
    safety, quality = split(
        aimed_checks(case.checks, suite_invariants), invariant_kinds(red_invariants, suite_invariants)
    )
    return dataclasses.replace(case, checks=safety), dataclasses.replace(case, checks=quality)


def invariant_names(checks: Iterable[Any]) -> set[str]:
    return {c.invariant for c in checks if c.invariant}
