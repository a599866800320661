"""The kit's settings: one typed, frozen object, read once.

Sources, lowest to highest precedence:

1. defaults (below);
2. the project file: `[tool.kit]` in the nearest `pyproject.toml` upward from the working directory
   (relative paths in it are relative to that file's folder);
3. environment variables (`KIT_AGENT`, `KIT_CASES`, ... see `ENV`); an empty variable counts as unset;
4. command-line overrides (`load_settings({"agent": args.agent})`; a None value overrides nothing).

    [tool.kit]
    agent = "mypkg.agent:run"
    cases = "golden"
    store = ".kit/evals.duckdb"
    concurrency = 8                      # agent calls in flight at once (KIT_CONCURRENCY)
    [tool.kit.judge]
    model = "qwen2.5-7b-instruct"
    base_url = "http://127.0.0.1:8000/v1"
    [tool.kit.user]                      # the simulated user of `user:` cases (kit/runner/usersim.py)
    model = "qwen2.5-7b-instruct-2024-09-19"
    base_url = "http://127.0.0.1:8001/v1"
    [tool.kit.redteam]
    corpus = "redteam/attacks.yaml"

A key the kit does not know, or a value of the wrong type, is a KitInputError naming the file (or the
variable) and the key: a typo must not silently fall back to a default.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from kit.errors import KitInputError, first_error

PROJECT_FILE = "pyproject.toml"
# The variable naming the plan document (kit.plan) a subprocess runs under, and that document's version.
PLAN_ENV = "KIT_PLAN"
DOCUMENT_VERSION = 1

# The longest an agent call may be given (a day): a larger limit is a slip (1e308 overflowed every timer,
# making each run an error that blamed the agent).
MAX_AGENT_TIMEOUT = 86_400.0


def _path_value(v: Any) -> Any:
    # An empty path is the working directory, never what a setting means; NUL cannot be in a file name.
    if isinstance(v, str | Path) and not str(v).strip():
        raise ValueError("an empty path is not a file")
    if isinstance(v, str | Path) and "\0" in str(v):
        raise ValueError("a path cannot hold a NUL character")
    return v


def _run_id_value(v: Any) -> Any:
    from kit.names import name_problem  # a run id names files (.kit/runs/<id>.json, shards)

    problem = name_problem(v) if isinstance(v, str) else None
    if problem is not None:
        raise ValueError(f"a run id {problem}")
    return v


def _folder_value(v: Any) -> Any:
    # A folder the kit writes into (slot files): a file there, or no folder at all, would fail every call.
    v = _path_value(v)
    if isinstance(v, str | Path) and not Path(v).is_dir():
        raise ValueError(f"{v} is not a folder" if Path(v).exists() else f"no such folder: {v}")
    return v


def _file_value(v: Any) -> Any:
    v = _path_value(v)
    if isinstance(v, str | Path) and not Path(v).is_file():
        raise ValueError(f"{v} is not a file")
    return v


def _price_value(v: Any) -> Any:
    # USD per million tokens, "input,output": what a model's runs cost when its id has no known price.
    if isinstance(v, str):
        parts = [p.strip() for p in v.split(",")]
        if len(parts) != 2:
            raise ValueError(f"a price is two numbers, input and output USD per million tokens, got {v!r}")
        return parts
    return v


def _not_folder(v: Any) -> Any:
    # A file the kit reads or writes (a store, a policy, a corpus): a folder there is a slip, named here.
    v = _path_value(v)
    if isinstance(v, str | Path) and str(v) != "generic" and Path(v).is_dir():
        raise ValueError(f"{v}: is a folder, not a file")
    return v


SettingPath = Annotated[Path, BeforeValidator(_path_value)]
# A file, which need not exist yet (a store to create, a gates file whose absence means the defaults).
SettingFilePath = Annotated[Path, BeforeValidator(_not_folder)]
SettingFolder = Annotated[Path, BeforeValidator(_folder_value)]
SettingFile = Annotated[Path, BeforeValidator(_file_value)]
Price = Annotated[
    tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], Annotated[float, Field(ge=0, allow_inf_nan=False)]],
    BeforeValidator(_price_value),
]
# A time limit in seconds: finite, at most a day (its lower bound is checked where it is used).
Seconds = Annotated[float, Field(le=MAX_AGENT_TIMEOUT, allow_inf_nan=False)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JudgeSettings(_Frozen):
    """The judge model; `model` unset means no judge (rubrics are recorded as skipped).
    Validated further (provider names, URL shape) by kit.judge.judge_config."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    provider: str | None = None
    # kit.judge.judge_config checks the ranges further; a time limit or a temperature that no endpoint can
    # take (1e308 overflowed the socket's timer; NaN and inf are no settings) is refused here, by name.
    timeout: Seconds | None = None
    retries: int | None = None
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] | None = None


class UserSettings(_Frozen):
    """The user model that plays the customer in simulated-user cases (`user:`); `model` unset means no
    user model (those cases are recorded as skipped). Validated further by kit.runner.usersim.user_config."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout: Seconds | None = None


def _count_value(value: Any) -> Any:
    """A count (`max_turns = true` is not 1): a boolean is refused by name, anything else validated as an int."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {str(value).lower()}")
    return value


Count = Annotated[int, BeforeValidator(_count_value)]


class RedteamSettings(_Frozen):
    purpose: str | None = None
    corpus: SettingFilePath = Path("redteam/attacks.yaml")
    invariants: SettingFilePath | None = None
    # An attacker model (a Promptfoo provider id, `openai:chat:<model>`): the red team also runs Promptfoo's
    # adaptive strategies, aimed at the suite's invariants (kit.redteam.goals). Unset: static only.
    attacker: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    attacker_base_url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$")] | None = None
    max_turns: Count = Field(default=4, ge=1, le=10)  # Promptfoo caps a conversation at 10 turns offline
    # The most attacker calls one red-team run may make, worst case (goals x strategies x turns): checked when
    # the config is generated, so a run never spends more than this. None: no limit.
    attacker_calls: Count | None = Field(default=None, ge=1)


class McpServerSettings(_Frozen):
    """An MCP server the agent reaches through `kit mcp serve NAME` (kit.mcp.settings): its stdio command or
    its streamable HTTP URL; its cassette is `<mcp.cassettes>/NAME.json`."""

    command: list[str] | None = None
    url: str | None = None


class McpSettings(_Frozen):
    # replay: the cassette alone (offline); record: pass through and write the cassette; live: pass through.
    mode: Literal["live", "record", "replay"] = "replay"
    cassettes: SettingPath = Path("golden/mcp")
    servers: dict[str, McpServerSettings] = Field(default_factory=dict)


class RecordingsSettings(_Frozen):
    """The agent's and the judge's model calls at the HTTP layer (kit.recording): live (untouched), record
    (call and write), replay (answer from the recordings; a miss is the run's error, never a live call), or
    record-missing (replay what is recorded, record the rest). One JSON file per case under `folder`."""

    mode: Literal["live", "record", "replay", "record-missing"] = "live"
    folder: SettingPath = Path("golden/recordings")


class Settings(_Frozen):
    agent: str | None = None
    cases: SettingPath = Path("golden")
    invariants: SettingFilePath | None = None
    rubrics: SettingFilePath = Path("golden/rubrics.yaml")
    gates: SettingFilePath = Path("gates.yaml")
    store: SettingFilePath = Path(".kit/evals.duckdb")
    variant: str | None = None
    agent_policy: Literal["deterministic", "model"] = "deterministic"
    agent_timeout: float = Field(default=60.0, gt=0, le=MAX_AGENT_TIMEOUT, allow_inf_nan=False)
    # Agent calls in flight at once, across every process of one `make evals` (kit.runner.slots).
    concurrency: int = Field(default=8, ge=1, le=1024)
    # The longest one stage of `make evals` may take, in seconds: a tool that hangs (or a child of the agent
    # that holds its output open) fails that stage by name instead of holding the build forever.
    stage_timeout: float = Field(default=3600.0, gt=0, le=7 * 24 * 3600, allow_inf_nan=False)
    # The model the agent runs on: the id every run records, and the reference agent's model policy's model.
    agent_model: str | None = None
    # The model policy's endpoint (an OpenAI-compatible base URL), key, and time limit per model call.
    agent_base_url: str | None = None
    agent_api_key: str | None = Field(default=None, repr=False)
    agent_model_timeout: Seconds = Field(default=60.0, gt=0)
    # A model id without a date or version may change under the suite: refused unless allowed.
    allow_floating_model: bool = False
    agent_model_price: Price | None = None
    # USD per million tokens (input, output) by model id ([tool.kit.prices]): over genai-prices' (kit.pricing).
    prices: dict[str, Price] = Field(default_factory=dict)
    # The reference agent's shop data (a JSON file), else the kit's own.
    agent_fixtures: SettingFile | None = None
    # A user's regex runs under this limit (seconds); every check and end_state query under check_timeout.
    regex_timeout: float = Field(default=0.25, gt=0, le=60, allow_inf_nan=False)
    check_timeout: float = Field(default=10.0, gt=0, le=MAX_AGENT_TIMEOUT, allow_inf_nan=False)
    # How long a store writer waits for the store's lock.
    store_lock_timeout: float = Field(default=300.0, gt=0, le=MAX_AGENT_TIMEOUT, allow_inf_nan=False)
    # The slot files every process of one `make evals` shares to keep agent calls under `concurrency`.
    slots_dir: SettingFolder | None = None
    run_id: Annotated[str | None, BeforeValidator(_run_id_value)] = None
    # The `make evals` invocation a run belongs to (the pipeline sets it for every stage's plan).
    evals_id: Annotated[str | None, BeforeValidator(_run_id_value)] = None
    # A recorded-runs file (kit.runner.recorded): DeepEval and Promptfoo judge these runs instead of calling
    # the agent again (`make evals` sets it from its kit stage: run once, judge everywhere).
    replay_runs: SettingFilePath | None = None
    judge: JudgeSettings = JudgeSettings()
    user: UserSettings = UserSettings()
    redteam: RedteamSettings = RedteamSettings()
    mcp: McpSettings = McpSettings()
    recordings: RecordingsSettings = RecordingsSettings()
    # Where [tool.kit] was read from, None without one: what an error or a report names.
    project_file: Path | None = None


# Environment variable -> settings key (a path into the nested object).
ENV: dict[str, tuple[str, ...]] = {
    "KIT_AGENT": ("agent",),
    "KIT_CASES": ("cases",),
    "KIT_INVARIANTS": ("invariants",),
    "KIT_RUBRICS": ("rubrics",),
    "KIT_GATES": ("gates",),
    "KIT_STORE": ("store",),
    "KIT_VARIANT": ("variant",),
    "KIT_AGENT_POLICY": ("agent_policy",),
    "KIT_AGENT_TIMEOUT": ("agent_timeout",),
    "KIT_CONCURRENCY": ("concurrency",),
    "KIT_STAGE_TIMEOUT": ("stage_timeout",),
    "KIT_AGENT_MODEL": ("agent_model",),
    "KIT_AGENT_BASE_URL": ("agent_base_url",),
    "KIT_AGENT_API_KEY": ("agent_api_key",),
    "KIT_AGENT_MODEL_TIMEOUT": ("agent_model_timeout",),
    "KIT_ALLOW_FLOATING_MODEL": ("allow_floating_model",),
    "KIT_AGENT_MODEL_PRICE": ("agent_model_price",),
    "KIT_AGENT_FIXTURES": ("agent_fixtures",),
    "KIT_REGEX_TIMEOUT": ("regex_timeout",),
    "KIT_CHECK_TIMEOUT": ("check_timeout",),
    "KIT_STORE_LOCK_TIMEOUT": ("store_lock_timeout",),
    "KIT_SLOTS_DIR": ("slots_dir",),
    "KIT_RUN_ID": ("run_id",),
    "KIT_EVALS_ID": ("evals_id",),
    "KIT_REPLAY_RUNS": ("replay_runs",),
    "KIT_JUDGE_MODEL": ("judge", "model"),
    "KIT_JUDGE_BASE_URL": ("judge", "base_url"),
    "KIT_JUDGE_API_KEY": ("judge", "api_key"),
    "KIT_JUDGE_PROVIDER": ("judge", "provider"),
    "KIT_JUDGE_TIMEOUT": ("judge", "timeout"),
    "KIT_JUDGE_RETRIES": ("judge", "retries"),
    "KIT_JUDGE_TEMPERATURE": ("judge", "temperature"),
    "KIT_USER_MODEL": ("user", "model"),
    "KIT_USER_BASE_URL": ("user", "base_url"),
    "KIT_USER_API_KEY": ("user", "api_key"),
    "KIT_USER_TIMEOUT": ("user", "timeout"),
    "KIT_REDTEAM_PURPOSE": ("redteam", "purpose"),
    "KIT_REDTEAM_CORPUS": ("redteam", "corpus"),
    "KIT_REDTEAM_INVARIANTS": ("redteam", "invariants"),
    "KIT_MCP_MODE": ("mcp", "mode"),
    "KIT_MCP_CASSETTES": ("mcp", "cassettes"),
    "KIT_RECORDINGS_MODE": ("recordings", "mode"),
    "KIT_RECORDINGS": ("recordings", "folder"),
    "KIT_REDTEAM_ATTACKER": ("redteam", "attacker"),
    "KIT_REDTEAM_ATTACKER_BASE_URL": ("redteam", "attacker_base_url"),
    "KIT_REDTEAM_MAX_TURNS": ("redteam", "max_turns"),
    "KIT_REDTEAM_ATTACKER_CALLS": ("redteam", "attacker_calls"),
}
# The settings that are secrets: never written to a file (a plan document names their variables instead).
SECRETS: dict[tuple[str, ...], str] = {path: var for var, path in ENV.items() if path[-1].endswith("api_key")}
_PATH_KEYS = {
    ("cases",),
    ("invariants",),
    ("rubrics",),
    ("gates",),
    ("store",),
    ("replay_runs",),
    ("agent_fixtures",),
    ("slots_dir",),
    ("redteam", "corpus"),
    ("redteam", "invariants"),
    ("mcp", "cassettes"),
    ("recordings", "folder"),
}


# `make evals VAR=...` hands its variables to the pipeline in the environment, never through a shell: an agent
# name or a case path with a space or a `;` in it arrives as one argument, exactly as typed. They are the make
# target's arguments, not settings: the pipeline validates each as the option it stands for.
MAKE_VARS: dict[str, str] = {
    "agent": "KIT_MAKE_AGENT",
    "variant": "KIT_MAKE_VARIANT",
    "cases": "KIT_MAKE_CASES",
    "shards": "KIT_MAKE_SHARDS",
    "baseline_store": "KIT_MAKE_BASELINE_STORE",
    "out": "KIT_MAKE_EVALS_OUT",
    "concurrency": "KIT_MAKE_CONCURRENCY",
    "only": "KIT_MAKE_ONLY",
}


def make_variables(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `make evals` variables that were given (non-empty), by the option each stands for."""
    env = os.environ if env is None else env
    return {key: env[var] for key, var in MAKE_VARS.items() if env.get(var)}


def typed_make_variables(env: Mapping[str, str] | None = None) -> list[str]:
    """The `make evals` variables typed on make's command line (`make evals CASES=x`), by their make name, as
    make hands them to every recipe in MAKEFLAGS (after ` -- `). A Makefile that does not pass them on (an
    `evals` target an older `kit init` wrote) would have them ignored: the pipeline refuses instead."""
    env = os.environ if env is None else env
    flags = env.get("MAKEFLAGS") or ""
    if " -- " not in f" {flags} ":
        return []
    typed = f" {flags} ".split(" -- ", 1)[1].split()
    names = {var.removeprefix("KIT_MAKE_") for var in MAKE_VARS.values()}
    return sorted({word.split("=", 1)[0] for word in typed if "=" in word} & names)


def project_root(settings: Settings | None = None) -> Path:
    """The project's folder: where its [tool.kit] pyproject.toml is, else the working directory. Files of
    the project (cases, configs, node_modules, Promptfoo's state) are found from here, never from where the
    kit's own source happens to lie."""
    project = settings.project_file if settings is not None else find_project_file()
    return project.parent.resolve() if project is not None else Path.cwd().resolve()


def find_project_file(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml from `start` (default: the cwd) upward, if it has a [tool.kit] table.
    The search stops at the nearest one: a parent folder's project is another project."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate if isinstance(_read_toml(candidate).get("tool", {}).get("kit"), dict) else None
    return None


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    root: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults < [tool.kit] < KIT_* variables < `overrides`. `root`: where the search for pyproject.toml
    starts (default: the cwd). `env`: the environment (default: os.environ). `flags`: the name each
    override has where the user typed it (`{"concurrency": "--concurrency"}`), for an error to say. Every
    source is validated by the one model, so a value is refused alike from a flag, a variable or the file."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    project = find_project_file(root)
    if project is not None:
        table = _read_toml(project)["tool"]["kit"]
        if "project_file" in table:
            raise KitInputError("unknown setting [tool.kit] project_file", file=str(project))
        _check(_project_values(table, project), file=str(project))
        _merge(merged, _project_values(table, project))
    from_env: dict[str, Any] = {}
    for var, path in ENV.items():
        raw = (env.get(var) or "").strip()
        if raw:
            _put(from_env, path, raw)
    _check(from_env, file="environment", names={path: var for var, path in ENV.items()})
    _merge(merged, from_env)
    if overrides:
        cli = _drop_none(dict(overrides))
        _check(cli, file="command line", names={(key,): name for key, name in (flags or {}).items()})
        _merge(merged, cli)
    merged["project_file"] = project
    return Settings.model_validate(merged)


@functools.cache
def process_settings() -> Settings:
    """The settings this process first ran under (`current_settings()`), for the limits read deep inside, per
    check or per write (a regex's time limit, the store lock's wait), where reading them per call would cost
    more than the call. Everything else is handed its plan or its settings."""
    return current_settings()


def current_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings this process runs under: the plan document's when KIT_PLAN names one (a subprocess of
    `make evals`, or of any front end that exported `Plan.env()`), else load_settings(). The agent is not
    loaded for them (a store hook's `kit ingest`, the code inside an agent's call)."""
    env = os.environ if env is None else env
    named = (env.get(PLAN_ENV) or "").strip()
    if not named:
        return load_settings(env=env)
    return document_settings(read_document(named), env, named)


# What `kit mcp serve` needs of the agent that started it: the MCP SDK's stdio client hands its server only a few
# variables (HOME, PATH, ...), so a server started that way takes these from the agent's own process.
AGENT_VARIABLES = (PLAN_ENV, "KIT_MCP_MODE", "KIT_MCP_CASSETTES")


def agent_server_settings(env: Mapping[str, str]) -> Settings:
    """current_settings() of a server an agent started (`kit mcp serve`): each of AGENT_VARIABLES that `env`
    lacks taken from the nearest ancestor process that has one (the agent), its relative paths made relative to
    that process's folder."""
    from kit.mcp.process import from_ancestors

    env = dict(env)
    missing = tuple(v for v in AGENT_VARIABLES if not (env.get(v) or "").strip())
    found, folder = from_ancestors(missing) if missing else ({}, None)
    for var, value in found.items():
        env[var] = str(folder / value) if var != "KIT_MCP_MODE" and folder is not None else value
    return current_settings(env)


def read_document(path: str | Path) -> dict[str, Any]:
    """A plan document from its file (what KIT_PLAN names), or KitInputError naming the file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise KitInputError(f"{PLAN_ENV}: cannot read the plan document: {e.strerror or e}", file=str(path)) from None
    except ValueError as e:
        raise KitInputError(f"{PLAN_ENV}: not a plan document (not JSON: {e})", file=str(path)) from None
    if not isinstance(doc, dict) or doc.get("version") != DOCUMENT_VERSION or not isinstance(doc.get("settings"), dict):
        raise KitInputError(f"{PLAN_ENV}: not a plan document of version {DOCUMENT_VERSION}", file=str(path))
    return doc


def document_settings(doc: Mapping[str, Any], env: Mapping[str, str] | None, where: str) -> Settings:
    """A plan document's settings, with the secrets it names taken from the environment (default: this
    process's): a document never holds a secret."""
    settings_doc = json.loads(json.dumps(doc["settings"]))  # our own copy to put the secrets in
    for path, value in secrets_from_env(env).items():
        _put(settings_doc, path, value)
    return validated(settings_doc, where=where)


def validated(values: Mapping[str, Any], *, where: str) -> Settings:
    """Settings from a plan's values, or KitInputError naming the setting and `where` they came from."""
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        field, msg, _ = first_error(exc)
        raise KitInputError(f"{PLAN_ENV}: setting {field}: {msg.removeprefix('Value error, ')}", file=where) from None


def secrets_from_env(env: Mapping[str, str] | None = None) -> dict[tuple[str, ...], str]:
    """The secret settings the environment holds (default: os.environ), by settings path: what a plan
    document leaves out and its subprocess takes from its own environment."""
    env = os.environ if env is None else env
    return {path: value for path, var in SECRETS.items() if (value := (env.get(var) or "").strip())}


def _read_toml(path: Path) -> dict[str, Any]:
    # Long-lived workers (Promptfoo's Python provider) load the settings on every call: the file is parsed
    # once per version (path, mtime, size) and each caller gets its own copy.
    try:
        st = path.stat()
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror}", file=str(path)) from None
    return copy.deepcopy(_parse_toml(str(path), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=16)
def _parse_toml(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise KitInputError(f"not valid TOML: {e}", file=path) from None
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror}", file=path) from None


def _project_values(table: Mapping[str, Any], project: Path) -> dict[str, Any]:
    """[tool.kit] with its relative paths made relative to the project file's folder (kept as written
    when that folder is the cwd, so messages show the path the user wrote)."""
    base = project.parent
    here = Path.cwd().resolve()
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            out[key] = {k: _rebase(v, base, here) if (key, k) in _PATH_KEYS else v for k, v in value.items()}
        else:
            out[key] = _rebase(value, base, here) if (key,) in _PATH_KEYS else value
    return out


def _rebase(value: Any, base: Path, here: Path) -> Any:
    if not isinstance(value, str) or Path(value).is_absolute() or base == here:
        return value
    return str(base / value)


def _check(values: dict[str, Any], *, file: str, names: Mapping[tuple[str, ...], str] | None = None) -> None:
    """Validate one source on its own, so an error names the source that holds the bad value."""
    try:
        Settings.model_validate(values)
    except ValidationError as exc:
        field, msg, kind = first_error(exc)
        path = tuple(field.split(".")) if field else ()
        # The source's name for the setting, also for an error inside it (a price's second number).
        key = next((names[path[:n]] for n in range(len(path), 0, -1) if path[:n] in (names or {})), None)
        key = f"{key} ({field})" if key else f"[tool.kit] {field}" if file.endswith(PROJECT_FILE) else field
        if kind == "extra_forbidden":
            raise KitInputError(f"unknown setting {key}", file=file) from None
        raise KitInputError(f"setting {key}: {msg.removeprefix('Value error, ')}", file=file) from None


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def _merge(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        elif isinstance(value, Mapping):
            target[key] = dict(value)
        else:
            target[key] = value


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _drop_none(dict(v)) if isinstance(v, Mapping) else v for k, v in values.items() if v is not None}
