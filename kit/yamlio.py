"""The one YAML loader of the kit and its adapters: PyYAML's C safe loader, with two refusals it lacks.

- A duplicate key in a mapping is an error naming the line of both (PyYAML keeps the last one silently,
  so a second `checks:` would drop the first list and its checks would never run).
- A document whose aliases expand to more than MAX_NODES nodes is an error (an "alias bomb": 550 bytes of
  nested aliases stand for a billion nodes; PyYAML shares them, but whatever walks the data expands them),
  and so is an alias inside its own anchor (a cycle).

Errors are `yaml.MarkedYAMLError`s carrying the line, so callers keep one `except yaml.YAMLError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

# Most nodes a document may stand for once its aliases are expanded. A case file is hundreds of nodes; a
# million is far beyond any real file and still walks in well under a second.
MAX_NODES = 1_000_000

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"


class _OneLine:
    problem: str
    problem_mark: Any

    def __str__(self) -> str:
        # One line, where first: callers print `str(e)` or its first line after the file's name.
        m = self.problem_mark
        return f"line {m.line + 1}, column {m.column + 1}: {self.problem}"


class DuplicateKeyError(_OneLine, yaml.constructor.ConstructorError):
    """A mapping names the same key twice."""


class AliasBombError(_OneLine, yaml.composer.ComposerError):
    """A document's aliases expand past MAX_NODES nodes, or an alias refers to its own anchor."""


class _Loader(_BASE):  # type: ignore[misc,valid-type]
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        pairs = node.value if isinstance(node, MappingNode) else ()
        if len(pairs) > 1:
            # A plain string key is its text (most keys); any other key is what it constructs to (cached, so
            # the base class does not build it twice), so 1 and 0x1 are one key, as in the dict built.
            keys = [
                k.value if k.tag == _STR else self.construct_object(k, deep=deep) for k, _ in pairs if k.tag != _MERGE
            ]
            try:
                unique = len(set(keys)) == len(keys)
            except TypeError:
                unique = True  # an unhashable key: the base class says so
            if not unique:
                _duplicate(pairs, keys)
        return super().construct_mapping(node, deep=deep)


def _duplicate(pairs: list[tuple[Node, Node]], keys: list[Any]) -> None:
    nodes = [k for k, _ in pairs if k.tag != _MERGE]
    seen: dict[Any, Node] = {}
    for key, key_node in zip(keys, nodes, strict=True):
        first = seen.setdefault(key, key_node)
        if first is not key_node:
            raise DuplicateKeyError(
                None,
                None,
                f"duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                key_node.start_mark,
            )


def _expanded_size(root: Node) -> int:
    """How many nodes the document stands for with every alias expanded (shared nodes counted once per
    use), stopping past MAX_NODES; AliasBombError on a cycle. Linear in the distinct nodes."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            if isinstance(node, SequenceNode):
                total = 1 + sum(sizes[id(c)] for c in node.value)
            else:
                total = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in node.value)
            if total > MAX_NODES:
                _too_big(node, total)
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            continue
        if key in open_:
            problem = "an alias refers to its own anchor (a recursive document)"
            raise AliasBombError(None, None, problem, node.start_mark)
        open_.add(key)
        stack.append((node, True))
        children = node.value if isinstance(node, SequenceNode) else [c for pair in node.value for c in pair]
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _too_big(node: Node, _total: int) -> None:
    raise AliasBombError(
        None,
        None,
        f"aliases expand this document past {MAX_NODES:,} nodes (an alias bomb?): refused",
        node.start_mark,
    )


def _documents(text: str) -> Iterator[Any]:
    loader = _Loader(text)
    # Aliases need anchors: a text without "&" has none, and is not walked (case loading's fast path).
    check = "&" in text
    try:
        while loader.check_node():
            node = loader.get_node()
            if check:
                _expanded_size(node)
            yield loader.construct_document(node)
    finally:
        loader.dispose()


def safe_load_all(text: str) -> list[Any]:
    """Every document of a YAML stream (as `yaml.safe_load_all`, with the refusals above)."""
    return list(_documents(text))


def safe_load(text: str) -> Any:
    """The one document of a YAML text, None when it is empty (as `yaml.safe_load`, with the refusals
    above). More than one document is an error, as with PyYAML."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text:
            _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
