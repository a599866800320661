"""The check registry: a check is one function and one decorator line.

A check's parameters are its keyword arguments. Their type hints are the parameter schema: the registry
builds a pydantic model from the signature, so a case's parameters are validated (and regexes, schemas
and SQL compiled) once, when the case is loaded, never while it runs.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from kit.result import Result

CheckFn = Callable[..., Result]


@dataclass(frozen=True, slots=True)
class CheckDef:
    type: str
    fn: CheckFn
    params: type[BaseModel]
    label: str  # format string for the result name, e.g. "called:{tool}"
    validate: Callable[[dict[str, Any]], None] | None  # cross-parameter rules

    def parse(self, raw: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        """Validated (and compiled) parameters, or ValueError with a one-line message."""
        try:
            model = self.params.model_validate(raw, context=context)
        except ValidationError as e:
            raise ValueError(_describe(e)) from None
        params = {f.alias or name: getattr(model, name) for name, f in self.params.model_fields.items()}
        if self.validate is not None:
            self.validate(params)
        return params

    def name_for(self, params: dict[str, Any]) -> str:
        shown = {k: getattr(v, "source", v) for k, v in params.items()}
        try:
            return self.label.format(**shown)
        except (KeyError, IndexError, ValueError):
            return self.type


REGISTRY: dict[str, CheckDef] = {}


def check(
    type_: str, label: str | None = None, validate: Callable[[dict[str, Any]], None] | None = None
) -> Callable[[CheckFn], CheckFn]:
    """Register `fn(trace, case, **params) -> Result` under `type_`."""

    def register(fn: CheckFn) -> CheckFn:
        if type_ in REGISTRY:
            raise RuntimeError(f"check type {type_!r} registered twice")
        REGISTRY[type_] = CheckDef(type_, fn, _params_model(type_, fn), label or type_, validate)
        return fn

    return register


def _params_model(type_: str, fn: CheckFn) -> type[BaseModel]:
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for name, p in list(inspect.signature(fn).parameters.items())[2:]:  # skip (trace, case)
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"check {type_}: parameter {name} must be keyword-only")
        default = ... if p.default is inspect.Parameter.empty else p.default
        # A parameter named like a BaseModel attribute (`schema`) is stored under another field name.
        field_name = f"{name}_" if hasattr(BaseModel, name) else name
        fields[field_name] = (Annotated[hints[name], Field(alias=name)], default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_default=True)
    return create_model(f"{type_}_params", __config__=config, **fields)


def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "missing":
            parts.append(f"missing parameter {loc!r}")
        elif err["type"] == "extra_forbidden":
            parts.append(f"unknown parameter {loc!r}")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f"parameter {loc!r}: {msg}" if loc else msg)
    # Union types report one error per branch; say each problem once.
    return "; ".join(dict.fromkeys(parts))
