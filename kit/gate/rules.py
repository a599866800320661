"""The rules a run ran under, recorded with it: each case's floor and `runs`, the case files with their
sha256, the cases that did not load, and the gate policy in force. The gate, the baseline comparison and
the report judge a run by these, never by files read again later (a floor edited after the run changes
nothing, and the gate says which file changed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kit.gate.policy import GatePolicy


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaseRule(_Frozen):
    floor: float = Field(ge=0, le=1)  # the case's own min_pass_fraction, else the policy's hard floor
    own: bool = False  # the case set its own floor
    runs: int = Field(1, ge=1)
    file: str | None = None


class RunRules(_Frozen):
    """What a run is held to. `origin`: `run` when the front end that ran the cases recorded them, `ingest`
    when they were read from the settings as another tool's results were stored."""

    cases: dict[str, CaseRule] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)  # case file -> sha256 of its bytes at run time
    not_loaded: tuple[str, ...] = ()  # why each case (or case file) that did not load did not
    policy: GatePolicy = Field(default_factory=GatePolicy)
    policy_file: str | None = None  # where the policy was read from (what `kit gate --config` names beside its own)
    origin: Literal["run", "ingest"] = "run"

    def floor(self, case_id: str) -> float:
        rule = self.cases.get(case_id)
        return rule.floor if rule is not None else self.policy.hard.min_pass_fraction

    def floors(self) -> dict[str, float]:
        return {case_id: rule.floor for case_id, rule in self.cases.items()}

    def to_json(self) -> str:
        return self.model_dump_json()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, raw: str | dict[str, Any] | None) -> RunRules | None:
        """The recorded rules, or None for a run stored without them (an older kit) or with rules this kit
        cannot read (then the gate falls back to the files and says so)."""
        if raw is None:
            return None
        try:
            return cls.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
        except (ValueError, ValidationError):
            return None

    def without_cases(self) -> RunRules:
        """The policy alone: for a run of other cases than the suite's (a red team's attacks)."""
        return RunRules(policy=self.policy, policy_file=self.policy_file, origin=self.origin)

    def under(self, policy: GatePolicy, policy_file: str | None = None) -> RunRules:
        """These rules under another policy (one a person named for this gate): a case's own floor is the
        run's and stays; a case held to the policy's floor is held to the new policy's."""
        floor = policy.hard.min_pass_fraction
        cases = {c: r if r.own else r.model_copy(update={"floor": floor}) for c, r in self.cases.items()}
        return self.model_copy(update={"cases": cases, "policy": policy, "policy_file": policy_file})

    def changed_files(self) -> list[str]:
        """One line per recorded case file that is not as it was at run time (edited, or gone)."""
        out = []
        for path, sha in sorted(self.files.items()):
            now = file_sha256(Path(path))
            if now is None:
                out.append(f"case file {path} is gone since the run (its floors as recorded apply)")
            elif now != sha:
                out.append(
                    f"case file {path} changed since the run (sha256 {sha[:12]} then, {now[:12]} now): "
                    "judged by the floors and runs recorded with the run"
                )
        return out


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _resolved(path: str | None) -> str | None:
    """A case file's path as stored: resolved, so a command run from another folder finds it."""
    return str(Path(path).resolve()) if path else path


def run_rules(
    suite: Any,
    policy: GatePolicy,
    *,
    case_ids: Iterable[str] | None = None,
    runs: int | None = None,
    with_errors: bool = True,
    origin: Literal["run", "ingest"] = "run",
    policy_file: Path | None = None,
) -> RunRules:
    """The rules of a run of `suite` (a `kit.case.Suite`) under `policy`. `case_ids`: only these cases
    (a run of a selection or a shard; the files are the suite's either way); `runs`: the attempts every case
    ran when a command line set them; `with_errors=False`: a chosen selection, whose run does not answer
    for the cases that did not load. `policy_file`: where `policy` was read from, recorded to be named."""
    wanted = None if case_ids is None else set(case_ids)
    cases = {
        c.id: CaseRule(
            floor=policy.hard.min_pass_fraction if c.min_pass_fraction is None else c.min_pass_fraction,
            own=c.min_pass_fraction is not None,
            runs=runs or c.runs,
            file=_resolved(c.file),
        )
        for c in suite.cases
        if wanted is None or c.id in wanted
    }
    paths = {c.file for c in suite.cases if c.file} | {e.file for e in suite.errors if getattr(e, "file", None)}
    paths = {_resolved(p) for p in paths}
    files = {p: sha for p in sorted(paths) if (sha := file_sha256(Path(p))) is not None}
    return RunRules(
        cases=cases,
        files=files,
        not_loaded=tuple(str(e) for e in suite.errors) if with_errors else (),
        policy=policy,
        policy_file=str(policy_file.resolve()) if policy_file is not None else None,
        origin=origin,
    )
