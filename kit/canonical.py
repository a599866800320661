"""Canonical forms of JSON values, so that argument comparison ignores key order and 1 vs 1.0."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def normalise(value: Any) -> Any:
    """A JSON value with integral floats made ints and tuples made lists; bools stay bools."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """One string per JSON value up to key order and int/float spelling: the loop-signature key."""
    return json.dumps(normalise(value), sort_keys=True, separators=(",", ":"), default=str)


_SCALARS = frozenset({str, int, bool, type(None)})


class _NotPlainJson(Exception):
    pass


def _plain(value: Any) -> Any:
    """`normalise` for `canonical_key`; raises on what orjson would write differently from `canonical`
    (NaN and infinities become null there)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        if value.is_integer():
            return int(value)
        if value != value or value in (math.inf, -math.inf):
            raise _NotPlainJson
        return value
    if t is dict:
        return {k if type(k) is str else str(k): _plain(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [_plain(v) for v in value]
    raise _NotPlainJson


def canonical_key(value: Any) -> bytes:
    """Bytes that are equal exactly when `canonical` strings are (the loop signature's key), several
    times faster: orjson on the normalised value, and `canonical` itself for what orjson cannot write the
    same way (NaN, infinities, integers beyond 64 bits, values that are not JSON)."""
    try:
        # A flat object of strings, integers, booleans and nulls is already normal (a key that is not a
        # string makes orjson raise, and the slow path below turns it into one).
        if type(value) is dict and _SCALARS.issuperset(map(type, value.values())):
            try:
                return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
            except TypeError:
                pass
        return orjson.dumps(_plain(value), option=orjson.OPT_SORT_KEYS)
    except (_NotPlainJson, TypeError, ValueError):
        return canonical(value).encode()


def deep_equal(a: Any, b: Any, tol: float = 0.0) -> bool:
    """Deep equality of JSON values: numbers by value (within `tol`), bool never equal to a number."""
    if type(a) is str and type(b) is str:  # the usual argument, decided before the isinstance chain below
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if tol:
            return math.isclose(a, b, rel_tol=0.0, abs_tol=tol)
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k], tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(deep_equal(x, y, tol) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def partial_equal(expected: Any, got: Any) -> bool:
    """Like `deep_equal`, except that keys `expected` does not name are ignored at every depth (objects
    inside objects or inside lists). Lists still compare element by element and by length."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(k in got and partial_equal(v, got[k]) for k, v in expected.items())
    if isinstance(expected, list | tuple) and isinstance(got, list | tuple):
        return len(expected) == len(got) and all(partial_equal(x, y) for x, y in zip(expected, got, strict=True))
    return deep_equal(expected, got)


def dotted(value: Any, path: str) -> tuple[bool, Any]:
    """Follow a dotted path (`address.zip`, `items.0.sku`) into a JSON value: (found, value)."""
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value
