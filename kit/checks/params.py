"""Parameter types that compile once at load time: regexes (with a timeout), JSON Schemas, SQL."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import regex
from pydantic import BeforeValidator, ValidationInfo

# A user-written pattern runs under this timeout (seconds): catastrophic backtracking becomes an
# `error` outcome naming the pattern, never a hung suite.
REGEX_TIMEOUT = float(os.environ.get("KIT_REGEX_TIMEOUT", "0.25"))


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
            return match(text, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            raise TimeoutError(
                f"pattern {self.source!r} took over {REGEX_TIMEOUT:g} s (catastrophic backtracking)"
            ) from None


def _compile_regex(v: Any) -> SafeRegex:
    if isinstance(v, SafeRegex):
        return v
    if not isinstance(v, str):
        raise ValueError(f"a regex must be a string, got {type(v).__name__}")
    try:
        return SafeRegex(v, regex.compile(v))
    except regex.error as e:
        raise ValueError(f"invalid regex {v!r}: {e}") from None


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


def compile_schema(schema: Any, source: str = "inline") -> CompiledSchema:
    import fastjsonschema  # compiled per schema; imported only by cases that use schemas

    if not isinstance(schema, dict | bool):
        raise ValueError(f"a JSON Schema must be an object, got {type(schema).__name__}")
    try:
        return CompiledSchema(source, schema, fastjsonschema.compile(schema))
    except fastjsonschema.JsonSchemaDefinitionException as e:
        raise ValueError(f"invalid JSON Schema ({source}): {e}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ValueError(f"invalid JSON Schema ({source}): {e}") from None


def _schema(v: Any, info: ValidationInfo) -> CompiledSchema:
    if isinstance(v, CompiledSchema):
        return v
    if isinstance(v, str):
        return compile_schema(load_json_file(v, info), v)
    return compile_schema(v)


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
    return SchemaMap(source, {name: compile_schema(s, f"{source}#{name}") for name, s in data.items()})


ToolSchemas = Annotated[SchemaMap, BeforeValidator(_schema_map)]


@dataclass(frozen=True, slots=True)
class ReadOnlySql:
    source: str


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
    return ReadOnlySql(v)


Sql = Annotated[ReadOnlySql, BeforeValidator(_sql)]
