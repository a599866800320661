"""Parameter types that compile once at load time: regexes (with a timeout), JSON Schemas, SQL; and the
constrained types of the catalogue's parameters.

Imported when a case's parameters are first parsed (it imports pydantic): the check modules import these
names for type checkers only, and the registry resolves their hints in `HINTS`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BeforeValidator, Field, ValidationInfo


def regex_timeout() -> float:
    """The time limit (seconds) a user-written pattern runs under: catastrophic backtracking becomes an
    `error` outcome naming the pattern, never a hung suite. The settings' `regex_timeout`, read at first use."""
    from kit.settings import process_settings

    return process_settings().regex_timeout


@dataclass(frozen=True, slots=True)
class SafeRegex:
    source: str
    compiled: Any

    def search(self, text: str) -> Any:
        return self._bounded(self.compiled.search, text)

    def fullmatch(self, text: str) -> Any:
        return self._bounded(self.compiled.fullmatch, text)

    def _bounded(self, match: Any, text: str) -> Any:
        try:
            return match(text, timeout=regex_timeout())
        except TimeoutError:
            raise TimeoutError(
                f"pattern {self.source!r} took over {regex_timeout():g} s (catastrophic backtracking)"
            ) from None


# The most a pattern may stand for once its counted repeats are multiplied out. The `regex` module expands
# them when it compiles, and no timeout covers compiling: ((a{100}){100}){100} took 1.2 s and
# (((a{1000}){1000}){1000}) gigabytes. 100,000 compiles in ~0.1 s; real patterns are hundreds.
MAX_PATTERN_SIZE = 100_000


def pattern_size(source: str) -> int:
    """An upper bound on what `source` stands for with its counted repeats multiplied out (a repeat with
    no upper bound counts its minimum plus one: it loops, it is not copied)."""
    import re._constants as c
    import re._parser as sre

    try:
        parsed = sre.parse(source)
    except Exception:  # syntax only the `regex` module knows: every counted repeat as if nested
        size = len(source)
        for lo, hi in re.findall(r"\{(\d*)(?:,(\d*))?\}", source):
            size *= max(int(hi or 0), int(lo or 0), 1)
            if size > MAX_PATTERN_SIZE:
                break
        return size

    def measure(items: Any) -> int:
        total = 0
        for op, av in items:
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                lo, hi, sub = av
                count = lo + 1 if hi == c.MAXREPEAT else hi
                total += max(count, 1) * measure(sub)
            elif op is c.SUBPATTERN:
                total += measure(av[3])
            elif op is c.BRANCH:
                total += sum(measure(b) for b in av[1])
            elif op is c.ATOMIC_GROUP:
                total += measure(av)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                total += measure(av[1])
            elif op is c.GROUPREF_EXISTS:
                total += measure(av[1]) + (measure(av[2]) if av[2] else 0)
            else:
                total += 1
            if total > MAX_PATTERN_SIZE:
                return total
        return total

    return measure(parsed)


def bounded_pattern(source: str) -> None:
    """ValueError when `source` is too big to compile safely (see MAX_PATTERN_SIZE)."""
    if pattern_size(source) > MAX_PATTERN_SIZE:
        raise ValueError(
            f"regex {source!r} stands for over {MAX_PATTERN_SIZE:,} steps once its counted repeats are "
            "multiplied out (nested {n} repeats): refused, it would take too long or too much memory to compile"
        )


def safe_regex(source: str) -> SafeRegex:
    """`source` compiled by the `regex` module, matched under regex_timeout(); ValueError when it is invalid
    or too big to compile."""
    import regex  # only cases with patterns need it (it takes ~30 ms to import)

    bounded_pattern(source)
    try:
        return SafeRegex(source, regex.compile(source))
    except regex.error as e:
        raise ValueError(f"invalid regex {source!r}: {e}") from None


def _compile_regex(v: Any) -> SafeRegex:
    if isinstance(v, SafeRegex):
        return v
    if not isinstance(v, str):
        raise ValueError(f"a regex must be a string, got {type(v).__name__}")
    return safe_regex(v)


Pattern = Annotated[SafeRegex, BeforeValidator(_compile_regex)]


@dataclass(frozen=True, slots=True)
class CompiledSchema:
    source: str  # the path, or "inline"
    schema: Any
    validate: Any  # fastjsonschema validator: raises JsonSchemaValueException


def resolve_path(path: str, info: ValidationInfo | None) -> Path:
    """A path relative to the case file's folder, else to one of its ancestors (so both `tools.json` and
    `golden/tools.json` work from `golden/cases/x.yaml`), else to the working directory."""
    p = Path(path)
    if p.is_absolute():
        return p
    base = (info.context or {}).get("base_dir") if info is not None else None
    if base is not None:
        for folder in (Path(base), *Path(base).resolve().parents):
            if (folder / p).exists():
                return folder / p
    return p


def load_json_file(path: str, info: ValidationInfo | None) -> Any:
    p = resolve_path(path, info)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON (line {e.lineno}: {e.msg})") from None


class _LocalRefs(Mapping[str, Callable[[str], Any]]):
    """fastjsonschema's `$ref` loaders for every URI scheme: a reference may point inside its document or
    to a JSON file inside `root` (the case's folder), never to the network or elsewhere on the disk.
    fastjsonschema resolves references while it compiles, so a refused one is a load error."""

    def __init__(self, doc_dir: Path, root: Path) -> None:
        self.doc_dir, self.root = doc_dir, root

    def __contains__(self, scheme: object) -> bool:
        return True  # every scheme comes here, so fastjsonschema never opens a URL itself

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return self._load

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def _load(self, uri: str) -> Any:
        parts = urlsplit(uri)
        where = f"a file inside {self.root}"
        if parts.scheme or parts.netloc or not parts.path or Path(unquote(parts.path)).is_absolute():
            raise ValueError(f"$ref {uri!r} is refused: a reference may point inside the schema or to {where}")
        target = (self.doc_dir / unquote(parts.path)).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise ValueError(f"$ref {uri!r} is refused: it leaves the case's folder (allowed: {where})")
        try:
            return json.loads(target.read_text(encoding="utf-8"))
        except OSError as e:
            raise ValueError(f"$ref {uri!r}: cannot read {target.name}: {e.strerror}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"$ref {uri!r}: {target.name} is not valid JSON ({e})") from None


def compile_schema(
    schema: Any, source: str = "inline", *, doc_dir: Path | None = None, root: Path | None = None
) -> CompiledSchema:
    """A compiled JSON Schema. Its `$ref`s resolve against `doc_dir` (the folder of the file that holds it)
    and must stay inside `root` (both default to the working directory)."""
    import fastjsonschema  # compiled per schema; imported only by cases that use schemas

    if not isinstance(schema, dict | bool):
        raise ValueError(f"a JSON Schema must be an object, got {type(schema).__name__}")
    here = Path.cwd()
    refs = _LocalRefs(doc_dir or root or here, root or doc_dir or here)
    try:
        validate = fastjsonschema.compile(schema, handlers=refs)
        _bound_patterns(validate, source)
        return CompiledSchema(source, schema, validate)
    except fastjsonschema.JsonSchemaDefinitionException as e:
        raise ValueError(f"invalid JSON Schema ({source}): {e}") from None
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as e:
        raise ValueError(f"invalid JSON Schema ({source}): {e}") from None


def _bound_patterns(validate: Any, source: str) -> None:
    """Swap the `re` patterns of a compiled schema (`pattern`, `patternProperties`) for the `regex` module's,
    matched under regex_timeout(): `re` cannot be stopped, and a backtracking pattern held a thread-pool
    worker (and the GIL) past every timeout. ValueError for a pattern too big to compile."""
    patterns = getattr(validate, "__globals__", {}).get("REGEX_PATTERNS")
    for key, compiled in list((patterns or {}).items()):
        try:
            patterns[key] = SafeRegex(key, safe_regex(compiled.pattern).compiled)
        except ValueError as e:
            raise ValueError(f"{e} (schema {source})") from None


def _schema_dirs(path: str | None, info: ValidationInfo | None) -> tuple[Path, Path]:
    """(doc_dir, root) for a schema inline in a case (path None) or in a file: references resolve from the
    file's folder and stay inside the case's folder, or inside the schema file's own folder when the
    file lives above the case (a shared `golden/tools.json`)."""
    base = (info.context or {}).get("base_dir") if info is not None else None
    case_dir = Path(base) if base is not None else Path.cwd()
    if path is None:
        return case_dir, case_dir
    doc_dir = resolve_path(path, info).parent
    inside = doc_dir.resolve().is_relative_to(case_dir.resolve())
    return doc_dir, case_dir if inside else doc_dir


def _schema(v: Any, info: ValidationInfo) -> CompiledSchema:
    if isinstance(v, CompiledSchema):
        return v
    path = v if isinstance(v, str) else None
    doc_dir, root = _schema_dirs(path, info)
    data = load_json_file(v, info) if path is not None else v
    return compile_schema(data, path or "inline", doc_dir=doc_dir, root=root)


Schema = Annotated[CompiledSchema, BeforeValidator(_schema)]


@dataclass(frozen=True, slots=True)
class SchemaMap:
    source: str
    schemas: dict[str, CompiledSchema]


def _schema_map(v: Any, info: ValidationInfo) -> SchemaMap:
    if isinstance(v, SchemaMap):
        return v
    source = v if isinstance(v, str) else "inline"
    data = load_json_file(v, info) if isinstance(v, str) else v
    if isinstance(data, list):  # OpenAI's (or Anthropic's) tool list
        from kit.toolspec import tool_schemas

        data = tool_schemas(data)
    if not isinstance(data, dict):
        raise ValueError(f"schemas must map tool names to JSON Schemas ({source})")
    doc_dir, root = _schema_dirs(v if isinstance(v, str) else None, info)
    compiled = {name: compile_schema(s, f"{source}#{name}", doc_dir=doc_dir, root=root) for name, s in data.items()}
    return SchemaMap(source, compiled)


ToolSchemas = Annotated[SchemaMap, BeforeValidator(_schema_map)]


def regex_sources(value: Any) -> list[str]:
    """The patterns a compiled parameter matches with: a regex's, or a schema's `pattern`s and
    `patternProperties` (what `kit lint` inspects)."""
    if isinstance(value, SafeRegex):
        return [value.source]
    if isinstance(value, CompiledSchema):
        schemas = [value]
    elif isinstance(value, SchemaMap):
        schemas = list(value.schemas.values())
    else:
        return []
    return [key for s in schemas for key in getattr(s.validate, "__globals__", {}).get("REGEX_PATTERNS") or {}]


@dataclass(frozen=True, slots=True)
class ReadOnlySql:
    source: str


# What an end_state query may not name: DuckDB's catalogue functions (its settings, secrets, extensions,
# logs, files, memory: `duckdb_*`, `pragma_*`, `pg_settings`), the ones that read a setting, a secret or a
# variable, and the ones that run SQL given as text (which would hide any name from this look). An end state's
# own tables need none of them. Matched as whole words, quoted or not, anywhere in the text (DuckDB's names
# are case-insensitive); `query` is a function only when a parenthesis follows it, so a column may be named so.
_REFUSED_NAME = re.compile(
    r"\b(duckdb_\w+|pragma_\w+|pg_settings|current_setting|which_secret|getvariable|query_table|"
    r"\w*grammar_extension\w*|extension_versions|query(?=\"?\s*(?:/\*.*?\*/\s*)*\())\b",
    re.IGNORECASE | re.DOTALL,
)


def refused_sql(source: str) -> str | None:
    """Why an end_state query is refused (it names a function that lists or reads the database's settings,
    secrets, extensions or other catalogue data, or runs SQL from text), or None."""
    found = _REFUSED_NAME.search(source)
    if found is None:
        return None
    return (
        f"query uses {found.group(1)}: an end_state query reads the end state's tables only (DuckDB's "
        "settings, secrets, extensions and catalogue functions, and SQL run from text, are refused)"
    )


def _sql(v: Any) -> ReadOnlySql:
    if isinstance(v, ReadOnlySql):
        return v
    if not isinstance(v, str) or not v.strip():
        raise ValueError("query must be a non-empty SQL string")
    import duckdb

    try:
        statements = duckdb.extract_statements(v)
    except duckdb.Error as e:
        raise ValueError(f"SQL does not parse: {str(e).splitlines()[0]}") from None
    if len(statements) != 1:
        raise ValueError(f"query must be one statement, got {len(statements)}")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise ValueError(f"query must be a SELECT, got {statements[0].type.name}")
    refused = refused_sql(v)
    if refused is not None:
        raise ValueError(refused)
    return ReadOnlySql(v)


Sql = Annotated[ReadOnlySql, BeforeValidator(_sql)]


# Constrained types of the catalogue's parameters.
NonEmpty = Annotated[list[str], Field(min_length=1)]  # an empty list of tools passes or fails vacuously
# Numbers a check can meet: NaN equals nothing and an infinite target is no answer.
Finite = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# A negative limit can never hold and a NaN one always does (nothing compares greater than NaN).
Count = Annotated[int, Field(ge=0)]
Amount = Annotated[float, Field(ge=0)]  # NaN fails ge=0; .inf (no limit) is allowed

# The names a check's hints may use without importing them at run time (a check module's own names win).
HINTS: dict[str, Any] = {
    "Annotated": Annotated,
    "Any": Any,
    "Literal": Literal,
    "Field": Field,
    "Pattern": Pattern,
    "Schema": Schema,
    "ToolSchemas": ToolSchemas,
    "Sql": Sql,
    "NonEmpty": NonEmpty,
    "Finite": Finite,
    "NonNegative": NonNegative,
    "Count": Count,
    "Amount": Amount,
}
