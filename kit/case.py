"""Golden cases (contract in docs/CONTRACT.md): loaded from YAML with a safe loader, their checks validated and
compiled once, named invariants expanded into checks."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kit.checks import REGISTRY
from kit.errors import KitInputError, describe_errors
from kit.frozen import freeze
from kit.trace import read_text

# Files and folders under a golden folder that are not case files.
NOT_CASE_FILES = {
    "invariants.yaml",
    "invariants.yml",
    "rubrics.yaml",
    "rubrics.yml",
    "gates.yaml",
    "labels.yaml",  # answers a person labelled, for `kit calibrate`
    "labels.yml",
}
NOT_CASE_DIRS = {"fixtures", "cassettes", "traces", "schemas"}

Turn = int | Literal["last"]

# Most runs a case may ask for: more is a typo, and would hold every result in memory before it is stored.
MAX_RUNS = 1000

# Every key a case may have. A key outside this list is a load error (with "did you mean"), so a misspelt
# key such as `invarients:` cannot silently stop applying. `cassette`, `name`, `description` and `metadata`
# (the user's own free-form fields) are kept in Case.extra.
CASE_KEYS = (
    "id",
    "input",
    "turns",
    "user",
    "reference",
    "runs",
    "min_pass_fraction",
    "invariants",
    "checks",
    "context",
    "variant",
    "tags",
    "cassette",
    "name",
    "description",
    "metadata",
)
_EXTRA_KEYS = ("cassette", "name", "description", "metadata")


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check of a case, its parameters validated and compiled. `label` is the name of its result,
    computed once here: the `name:` the case gives, else the check type and its subject (and its scope).
    `turn` scopes the check to the spans of one turn of a conversation (None: the whole trace); `agent` to
    one agent's calls, messages and handoffs, `server` to the tool calls that went to one MCP server."""

    type: str
    params: dict[str, Any]
    label: str
    invariant: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    turn: Turn | None = None
    agent: str | None = None
    server: str | None = None

    def __post_init__(self) -> None:
        # Deep-frozen, so nothing handed a case (an agent, say) can change what a check demands.
        object.__setattr__(self, "params", freeze(self.params))
        object.__setattr__(self, "raw", freeze(self.raw))

    @property
    def named(self) -> bool:
        """The case gave this check its name."""
        return self.raw.get("name") is not None


@dataclass(frozen=True, slots=True)
class UserSpec:
    """A simulated user: a user model plays the customer from `instruction` for at most `max_turns`."""

    instruction: str
    max_turns: int = 8


@dataclass(frozen=True, slots=True)
class Case:
    """One golden case. Exactly one of `input` (single turn), `turns` (scripted user turns) or `user`
    (a simulated user) is set."""

    id: str
    input: Any
    checks: tuple[CheckSpec, ...] = ()
    reference: str | None = None
    runs: int = 1
    invariants: tuple[str, ...] = ()
    context: dict[str, Any] = field(default_factory=dict)
    variant: str | None = None
    tags: tuple[str, ...] = ()
    file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    turns: tuple[str, ...] | None = None
    user: UserSpec | None = None
    # The fraction of its attempts that must pass for the case to pass the gate (None: gates.yaml's
    # hard.min_pass_fraction).
    min_pass_fraction: float | None = None

    def __post_init__(self) -> None:
        # Deep-frozen: an agent handed the case cannot change its context, its checks or their parameters.
        object.__setattr__(self, "context", freeze(self.context))
        object.__setattr__(self, "extra", freeze(self.extra))
        object.__setattr__(self, "checks", tuple(self.checks))
        object.__setattr__(self, "invariants", tuple(self.invariants))
        object.__setattr__(self, "tags", tuple(self.tags))
        if self.turns is not None:
            object.__setattr__(self, "turns", tuple(self.turns))

    @property
    def is_multi_turn(self) -> bool:
        return self.turns is not None or self.user is not None


class _UserModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use, not on import

    instruction: str = Field(min_length=1)
    max_turns: int = Field(default=8, ge=1, le=100)


class _CaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use, not on import

    id: str
    input: str | list[dict[str, Any]] | None = None
    turns: list[str] | None = Field(default=None, min_length=1)
    user: _UserModel | None = None
    reference: str | None = None
    runs: int = Field(default=1, ge=1, le=MAX_RUNS)
    min_pass_fraction: float | None = Field(default=None, ge=0, le=1)
    # Pydantic copies a mutable default for each instance; `default_factory=list` made it read `list`'s
    # signature, which tokenizes its text (~2 ms of `kit check`'s start-up).
    invariants: list[str] = []
    checks: list[Any] = []
    context: dict[str, Any] = Field(default_factory=dict)
    variant: str | None = None
    tags: list[str] = []
    cassette: str | None = None
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @field_validator("id")
    @classmethod
    def _id_names_files(cls, v: str) -> str:
        # An id names the case's cassette and reaches terminals and junit.xml as it is.
        from kit.names import name_problem

        problem = name_problem(v)
        if problem is not None:
            raise ValueError(f"a case id {problem}")
        return v

    @field_validator("min_pass_fraction", mode="before")
    @classmethod
    def _a_fraction(cls, v: Any) -> Any:
        # `true` or `.nan` is a slip, never a floor: refuse it by name rather than read it as 1.0 or NaN.
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1):
            raise ValueError(f"must be a number from 0 to 1 (the fraction of attempts that must pass), got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_kind_of_input(self) -> _CaseModel:
        given = [k for k in ("input", "turns", "user") if getattr(self, k) is not None]
        if len(given) != 1:
            got = "none" if not given else " and ".join(given)
            raise ValueError(f"a case needs exactly one of 'input', 'turns' or 'user' (got {got})")
        return self


@dataclass
class Suite:
    cases: list[Case]
    errors: list[KitInputError]

    def by_id(self) -> dict[str, Case]:
        return {c.id: c for c in self.cases}


def parse_check(
    raw: Any,
    *,
    file: str | None,
    case: str | None,
    index: int,
    base_dir: Path | None,
    invariant: str | None = None,
    memo: dict[tuple[str, Path | None], CheckSpec] | None = None,
) -> CheckSpec:
    """A CheckSpec from `{type: ..., name?: ..., **params}`, or KitInputError naming file, case and check.
    `memo` shares one CheckSpec between equal checks of a load (it is immutable): most cases repeat checks."""
    if memo is not None and invariant is None and isinstance(raw, dict):
        key = (repr(raw), base_dir)
        spec = memo.get(key)
        if spec is None:
            spec = memo[key] = parse_check(raw, file=file, case=case, index=index, base_dir=base_dir)
        return spec
    where = f"#{index + 1}" + (f" of invariant {invariant!r}" if invariant else "")
    if not isinstance(raw, dict):
        raise KitInputError(f"a check must be a mapping, got {type(raw).__name__}", file=file, case=case, check=where)
    params = dict(raw)
    type_ = params.pop("type", None)
    label = params.pop("name", None)
    turn = params.pop("turn", None)
    scope = {k: params.pop(k) for k in SCOPES if k in params}
    if type_ is None:
        raise KitInputError("missing 'type'", file=file, case=case, check=where)
    if turn is not None and turn != "last" and (type(turn) is not int or turn < 0):
        raise KitInputError(
            f"turn must be a whole number >= 0 or 'last', got {turn!r}",
            file=file,
            case=case,
            check=f"{where} ({type_})",
        )
    for key, value in scope.items():
        if not isinstance(value, str) or not value.strip():
            raise KitInputError(
                f"{key} must be the name of {'an agent' if key == 'agent' else 'an MCP server'}, got {value!r}",
                file=file,
                case=case,
                check=f"{where} ({type_})",
            )
    definition = REGISTRY.get(type_) if isinstance(type_, str) else None
    if definition is None:
        raise KitInputError(
            f"unknown check type {type_!r}{did_you_mean(type_, REGISTRY)}",
            file=file,
            case=case,
            check=f"{where} ({type_})",
        )
    allowed = [f.alias or n for n, f in definition.params.model_fields.items()]
    for key in params:
        if key not in allowed:
            raise KitInputError(
                f"unknown parameter {key!r}{did_you_mean(key, allowed)}",
                file=file,
                case=case,
                check=f"{where} ({type_})",
            )
    try:
        parsed = definition.parse(params, {"base_dir": base_dir})
    except ValueError as e:
        raise KitInputError(str(e), file=file, case=case, check=f"{where} ({type_})") from None
    if label:
        name = str(label)
    else:
        name = definition.name_for(parsed) + ("" if turn is None else "@last" if turn == "last" else f"@turn{turn}")
        name += "".join(f"@{key}:{value}" for key, value in scope.items())
    return CheckSpec(type_, parsed, name, invariant, raw, turn, scope.get("agent"), scope.get("server"))


# Keys any check takes besides its parameters, each scoping it to part of the trace.
SCOPES = ("agent", "server")


def did_you_mean(word: Any, known: Any) -> str:
    """` (did you mean 'x'?)` for the closest of `known`, else ` (known: a, b, ...)`."""
    names = sorted(str(k) for k in known)
    close = difflib.get_close_matches(str(word), names, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(names)})" if names else ""


def _read_yaml(path: Path) -> list[Any]:
    import yaml  # imported when a file is read: `import kit.evaluate` stays fast

    from kit.yamlio import safe_load_all

    text = read_text(path, "file")
    try:
        return [d for d in safe_load_all(text) if d is not None]
    except RecursionError:
        raise KitInputError("malformed YAML: nested too deeply", file=str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise KitInputError(f"malformed YAML{at}: {problem}", file=str(path)) from None


def read_invariants(path: str | Path) -> tuple[dict[str, list[CheckSpec]], dict[str, KitInputError]]:
    """Named bundles, `name: [checks]` or `name: {description, checks: [...]}`, and the error of each bundle
    that is invalid: one bad bundle loses only itself. A file that cannot be read at all raises KitInputError."""
    p = Path(path)
    docs = _read_yaml(p)
    data: dict[str, Any] = {}
    for d in docs:
        if not isinstance(d, dict):
            raise KitInputError("invariants must be a mapping of name to checks", file=str(p))
        data.update(d)
    good: dict[str, list[CheckSpec]] = {}
    bad: dict[str, KitInputError] = {}
    for key, body in data.items():
        name = str(key)
        checks = body.get("checks") if isinstance(body, dict) else body
        try:
            if not isinstance(checks, list):
                raise KitInputError(f"invariant {name!r} must be a list of checks", file=str(p))
            good[name] = [
                parse_check(c, file=str(p), case=None, index=i, base_dir=p.parent, invariant=name)
                for i, c in enumerate(checks)
            ]
        except KitInputError as e:
            bad[name] = e
        except RecursionError:
            bad[name] = KitInputError(f"invariant {name!r} is nested too deeply", file=str(p))
    return good, bad


def load_invariants(path: str | Path) -> dict[str, list[CheckSpec]]:
    """Every named bundle of an invariants file, or the first error in it."""
    good, bad = read_invariants(path)
    if bad:
        raise next(iter(bad.values()))
    return good


def find_upwards(start: Path, *names: str) -> Path | None:
    """The first of `names` in `start`'s folder or the nearest ancestor holding one."""
    folder = start if start.is_dir() else start.parent
    for d in (folder, *folder.resolve().parents):
        for name in names:
            if (d / name).is_file():
                return d / name
    return None


def find_invariants_file(start: Path) -> Path | None:
    """The invariants.yaml beside or above `start` (what `invariants_of` falls back on)."""
    return find_upwards(start, "invariants.yaml", "invariants.yml")


def invariants_of(
    path: str | Path, *, configured: str | Path | None = None, suite: str | Path | None = None
) -> Path | None:
    """The invariants the cases of `path` (a case file or folder) expand: the one rule every front end, `kit
    lint` and `load_suite` follow. A file of the suite (`suite`, default: `path` itself) expands the suite's:
    the `configured` file (the settings' `invariants`), else the one beside or above the suite. A file outside
    the suite (a test naming another case file) expands its own, beside or above it, else the suite's."""
    p = Path(path)
    if suite is not None:
        top = Path(suite).resolve()
        here = p.resolve()
        if here != top and top not in here.parents:
            return find_invariants_file(p) or invariants_of(suite, configured=configured)
        p = Path(suite)
    return Path(configured) if configured is not None else find_invariants_file(p)


def parse_case(
    raw: Any,
    *,
    file: str | None,
    base_dir: Path | None,
    invariants: Mapping[str, list[CheckSpec]],
    unavailable: Mapping[str, str] | None = None,
    invariants_error: str | None = None,
    memo: dict[tuple[str, Path | None], CheckSpec] | None = None,
) -> Case:
    """A Case from one decoded case mapping, its invariants expanded. `unavailable` says why an invariant of
    the file is not usable (it is invalid); `invariants_error` why no invariant is (the file is unreadable)."""
    case_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(raw, dict):
        raise KitInputError(f"a case must be a mapping, got {type(raw).__name__}", file=file)
    where = str(case_id) if case_id is not None else None
    for key in raw:
        if key not in CASE_KEYS:
            raise KitInputError(f"unknown key {key!r}{did_you_mean(key, CASE_KEYS)}", file=file, case=where)
    try:
        m = _CaseModel.model_validate(raw)
    except ValidationError as e:
        msg = describe_errors(e, "field", limit=1)
        raise KitInputError(msg, file=file, case=str(case_id) if case_id else None) from None
    checks = [
        parse_check(c, file=file, case=m.id, index=i, base_dir=base_dir, memo=memo) for i, c in enumerate(m.checks)
    ]
    for name in m.invariants:
        bundle = invariants.get(name)
        if bundle is None:
            why = (unavailable or {}).get(name) or invariants_error
            if why is not None:
                raise KitInputError(f"invariant {name!r} is not available: {why}", file=file, case=m.id)
            if not invariants:
                raise KitInputError(
                    f"unknown invariant {name!r}: no invariants.yaml beside or above the case "
                    "file (give one with --invariants FILE)",
                    file=file,
                    case=m.id,
                )
            known = ", ".join(sorted(invariants))
            raise KitInputError(f"unknown invariant {name!r} (known: {known})", file=file, case=m.id)
        checks.extend(bundle)
    return Case(
        id=m.id,
        input=m.input,
        turns=tuple(m.turns) if m.turns is not None else None,
        user=UserSpec(m.user.instruction, m.user.max_turns) if m.user is not None else None,
        checks=unique_labels(checks, file=file, case=m.id),
        reference=m.reference,
        runs=m.runs,
        min_pass_fraction=m.min_pass_fraction,
        invariants=tuple(m.invariants),
        context=m.context,
        variant=m.variant,
        tags=tuple(m.tags),
        file=file,
        extra={k: getattr(m, k) for k in _EXTRA_KEYS if k in raw},
    )


def unique_labels(checks: list[CheckSpec], *, file: str | None, case: str | None) -> tuple[CheckSpec, ...]:
    """The checks with one result name each, unique within the case: a name the case gives is kept as
    given (two equal given names are an error); a computed name seen before gets `#2`, `#3`, ..."""
    if len({spec.label for spec in checks}) == len(checks) and not any(spec.named for spec in checks):
        return tuple(checks)  # the usual case: nothing to rename
    given: dict[str, int] = {}
    for i, spec in enumerate(checks):
        if not spec.named:
            continue
        if spec.label in given:
            first = given[spec.label]
            raise KitInputError(
                f"duplicate check name {spec.label!r} (also check {_where(checks, first)})",
                file=file,
                case=case,
                check=_where(checks, i),
            )
        given[spec.label] = i
    taken = set(given)
    out: list[CheckSpec] = []
    for spec in checks:
        if not spec.named:
            label, n = spec.label, 1
            while label in taken:
                n += 1
                label = f"{spec.label}#{n}"
            taken.add(label)
            if label != spec.label:
                spec = replace(spec, label=label)
        out.append(spec)
    return tuple(out)


def _where(checks: list[CheckSpec], i: int) -> str:
    """How an error names check i of a case's list: its place among the case's own checks or its invariant's."""
    spec = checks[i]
    if spec.invariant is None:
        return f"#{i + 1} ({spec.type})"
    bundle = [c for c in checks if c.invariant == spec.invariant]
    place = next(k for k, c in enumerate(bundle, 1) if c is spec)
    return f"#{place} of invariant {spec.invariant!r} ({spec.type})"


def _why_unavailable(name: str, e: KitInputError) -> str:
    """An invalid invariant's error as a case that lists it quotes it (the invariant is named already)."""
    if e.check is None:
        return e.message
    return f"check {e.check.replace(f' of invariant {name!r}', '')}: {e.message}"


def _case_docs(docs: list[Any]) -> list[Any]:
    out: list[Any] = []
    for d in docs:
        if isinstance(d, list):
            out.extend(d)
        elif isinstance(d, dict) and "cases" in d and "id" not in d:
            out.extend(d["cases"] if isinstance(d["cases"], list) else [d["cases"]])
        else:
            out.append(d)
    return out


def case_files(path: Path, errors: list[KitInputError] | None = None) -> list[Path]:
    """The case files under `path`, in path order: YAML files outside the folders and names that are not
    cases. One directory listing per folder, no stat per file: loading a large suite starts here. A folder
    that cannot be listed is an error in `errors`; the others are still listed."""
    if path.is_file():
        return [path]
    found: list[tuple[tuple[str, ...], str]] = []
    _walk(str(path), (), found, errors if errors is not None else [])
    found.sort()
    return [Path(full) for _, full in found]


def _walk(
    folder: str, parts: tuple[str, ...], found: list[tuple[tuple[str, ...], str]], errors: list[KitInputError]
) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError as e:
        errors.append(KitInputError(f"cannot list folder: {e.strerror}", file=folder))
        return
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if e.name not in NOT_CASE_DIRS:
                _walk(e.path, (*parts, e.name), found, errors)
        elif e.name.endswith((".yaml", ".yml")) and e.name not in NOT_CASE_FILES and e.is_file():
            found.append(((*parts, e.name), e.path))


def load_suite(path: str | Path, invariants_file: str | Path | None = None) -> Suite:
    """Every case under `path` (a case file or a folder). A broken case is an error in `Suite.errors`;
    the other cases still load."""
    root = Path(path)
    errors: list[KitInputError] = []
    cases: list[Case] = []
    if not root.exists():
        return Suite([], [KitInputError("no such file or folder", file=str(root))])
    inv_path = Path(invariants_file) if invariants_file else invariants_of(root)
    invariants: dict[str, list[CheckSpec]] = {}
    unavailable: dict[str, str] = {}
    invariants_error: str | None = None
    if inv_path is not None:
        try:
            invariants, bad = read_invariants(inv_path)
        except KitInputError as e:
            errors.append(e)
            invariants_error = str(e)
        else:
            errors.extend(bad.values())
            unavailable = {name: _why_unavailable(name, e) for name, e in bad.items()}
    seen: dict[str, str] = {}
    memo: dict[tuple[str, Path | None], CheckSpec] = {}
    for f in case_files(root, errors):
        try:
            docs = _case_docs(_read_yaml(f))
        except KitInputError as e:
            errors.append(e)
            continue
        for raw in docs:
            try:
                case = parse_case(
                    raw,
                    file=str(f),
                    base_dir=f.parent,
                    invariants=invariants,
                    unavailable=unavailable,
                    invariants_error=invariants_error,
                    memo=memo,
                )
            except KitInputError as e:
                errors.append(e)
                continue
            except RecursionError:
                case_id = raw.get("id") if isinstance(raw, dict) else None
                errors.append(KitInputError("nested too deeply", file=str(f), case=str(case_id) if case_id else None))
                continue
            if case.id in seen:
                errors.append(KitInputError(f"duplicate case id (first in {seen[case.id]})", file=str(f), case=case.id))
                continue
            seen[case.id] = str(f)
            cases.append(case)
    return Suite(cases, errors)
