"""The check registry: a check is one function and one decorator line.

A check is `fn(trace, **params) -> Verdict`. Its parameters are its keyword arguments, and their type
hints are the parameter schema: the registry builds a pydantic model from the signature, so a case's
parameters are validated (and regexes, schemas and SQL compiled) once, when the case is loaded, never
while it runs. A check does not name its result: the runner does, from the decorator's label.

Pydantic is imported when a case's parameters are first parsed, not with the registry: judging a trace
(`kit.evaluate`) needs neither. So hint names a check module imports only for type checkers (`Field`,
`Pattern`, ...) are resolved then, from `kit.checks.params.HINTS`; the module's own names come first.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import string
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from kit.checks.limits import bounded
from kit.errors import describe_errors
from kit.result import Verdict

if TYPE_CHECKING:
    from pydantic import BaseModel

CheckFn = Callable[..., Verdict]


@dataclass(frozen=True, slots=True)
class CheckDef:
    type: str
    fn: CheckFn  # the check under its time limit (kit.checks.limits)
    plain: CheckFn  # the check as written: its signature is the parameter schema
    label: str  # format string for the result name, e.g. "called:{tool}"
    validate: Callable[[dict[str, Any]], None] | None  # cross-parameter rules
    _model: list[type[BaseModel]] = field(default_factory=list, repr=False, compare=False)

    @property
    def params(self) -> type[BaseModel]:
        """The parameters' pydantic model, built from the signature on first use (a process that loads
        a few check types does not pay for all of them)."""
        if not self._model:
            self._model.append(_params_model(self.type, self.plain))
        return self._model[0]

    def parse(self, raw: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        """Validated (and compiled) parameters, or ValueError with a one-line message."""
        from pydantic import ValidationError

        try:
            model = self.params.model_validate(raw, context=context)
        except ValidationError as e:
            raise ValueError(describe_errors(e, "parameter")) from None
        params = {f.alias or name: getattr(model, name) for name, f in self.params.model_fields.items()}
        if self.validate is not None:
            self.validate(params)
        return params

    def name_for(self, params: dict[str, Any]) -> str:
        """The result name: the label with the parameters filled in (lists joined by commas), or the bare
        type when the label names a parameter the case left unset."""
        fields = [f for _, f, _, _ in string.Formatter().parse(self.label) if f]
        if any(params.get(f) is None for f in fields):
            return self.type
        try:
            return self.label.format(**{k: _shown(v) for k, v in params.items()})
        except (KeyError, IndexError, ValueError):
            return self.type


def _shown(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ",".join(_shown(x) for x in v)
    return str(getattr(v, "source", v))


REGISTRY: dict[str, CheckDef] = {}


def check(
    type_: str, label: str | None = None, validate: Callable[[dict[str, Any]], None] | None = None
) -> Callable[[CheckFn], CheckFn]:
    """Register `fn(trace, **params) -> Verdict` under `type_`; `label` formats the result name."""

    def register(fn: CheckFn) -> CheckFn:
        if type_ in REGISTRY:
            raise RuntimeError(f"check type {type_!r} registered twice")
        _keyword_only(type_, fn)
        # The registry holds the check under its time limit; the module keeps the plain function.
        REGISTRY[type_] = CheckDef(type_, bounded(_by_case_names(fn)), fn, label or type_, validate)
        return fn

    return register


def param_name(name: str) -> str:
    """A parameter's name in a case: the Python name, but `from` for `from_` (a keyword cannot be one)."""
    bare = name[:-1]
    return bare if name.endswith("_") and keyword.iskeyword(bare) else name


def _by_case_names(fn: CheckFn) -> CheckFn:
    """`fn` called with parameters under their names in a case (`from`), as the parsed parameters are keyed."""
    renamed = {param_name(n): n for n in list(inspect.signature(fn).parameters)[1:] if param_name(n) != n}
    if not renamed:
        return fn

    @functools.wraps(fn)
    def call(trace: Any, **params: Any) -> Verdict:
        return fn(trace, **{renamed.get(k, k): v for k, v in params.items()})

    return call


def _keyword_only(type_: str, fn: CheckFn) -> None:
    for name, p in list(inspect.signature(fn).parameters.items())[1:]:  # skip the trace
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"check {type_}: parameter {name} must be keyword-only")


def _param_hints(fn: CheckFn) -> dict[str, Any]:
    """The type hints of the parameters after the trace (the trace's and the return's are not needed, so
    a module may import `Trace` and `Verdict` for type checkers only)."""
    from kit.checks.params import HINTS

    wanted = list(inspect.signature(fn).parameters)[1:]
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k in wanted}
    holder = types.SimpleNamespace(__annotations__=annotations)
    return typing.get_type_hints(holder, globalns={**HINTS, **_globals(fn)}, include_extras=True)


def _globals(fn: Any) -> dict[str, Any]:
    """The names `typing.get_type_hints(fn)` would resolve hints in: a function's (a wrapper's: the
    wrapped function's) globals, else its module's."""
    inner = inspect.unwrap(fn)
    found = getattr(inner, "__globals__", None)
    if found is None:
        module = sys.modules.get(getattr(inner, "__module__", None) or "")
        found = vars(module) if module is not None else {}
    return found


def _params_model(type_: str, fn: CheckFn) -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field, create_model

    hints = _param_hints(fn)
    fields: dict[str, Any] = {}
    for name, p in list(inspect.signature(fn).parameters.items())[1:]:  # skip the trace
        default = ... if p.default is inspect.Parameter.empty else p.default
        # A parameter named like a BaseModel attribute (`schema`) is stored under another field name.
        field_name = f"{name}_" if hasattr(BaseModel, name) else name
        fields[field_name] = (Annotated[hints[name], Field(alias=param_name(name))], default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_default=True)
    return create_model(f"{type_}_params", __config__=config, **fields)
