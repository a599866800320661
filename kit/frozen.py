"""Deep-frozen data for the oracle's cases: an agent handed a case cannot change its context or a check's
parameters. The frozen types are `dict` and `list` subclasses, so they compare equal to plain data, pass
`isinstance` checks, serialise with json, pickle, and copy (a copy is frozen too; `thaw` gives plain data)."""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only: this case belongs to the oracle (thaw a copy to change it)")


class FrozenDict(dict[Any, Any]):
    """A dict that refuses every change after it is built."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses every change after it is built."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it, at any depth, frozen. Other objects are kept as they are."""
    kind = type(value)
    if kind is dict:
        # Scalars, most of a case, skip the call: loading a thousand cases freezes tens of thousands of values.
        return FrozenDict({k: v if type(v) in _SCALARS else freeze(v) for k, v in value.items()})
    if kind is list:
        return FrozenList([v if type(v) in _SCALARS else freeze(v) for v in value])
    if kind is tuple:
        return tuple(freeze(v) for v in value)
    if kind in _SCALARS or isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of frozen data: what to hand an agent that may change what it is given."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(thaw(v) for v in value)
    return value


def _represent_frozen() -> None:
    """Let YAML writers (a generated Promptfoo config, say) write frozen data as plain YAML."""
    import yaml

    dumpers = [yaml.SafeDumper, yaml.Dumper, getattr(yaml, "CSafeDumper", None), getattr(yaml, "CDumper", None)]
    for dumper in filter(None, dumpers):
        dumper.add_representer(FrozenDict, yaml.representer.SafeRepresenter.represent_dict)
        dumper.add_representer(FrozenList, yaml.representer.SafeRepresenter.represent_list)


_represent_frozen()
