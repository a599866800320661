"""`kit init`: set a repository up for the kit's evals, in that repository (the working directory).

It writes the design card's layout and overwrites nothing: a file that exists is reported as already there
(pyproject.toml, the Makefile and .env get the kit's block appended when they lack it; .gitignore the missing
lines; a package.json of your own is named when it lacks Promptfoo).

    promptfooconfig.yaml          the provider file://providers/agent_provider.py with your agent in its config
    providers/                    thin files importing the kit's Promptfoo glue (kit_promptfoo)
    redteam/                      the attacks file to fill in (the purpose is [tool.kit.redteam] purpose), and
                                  the thin attack generator the red-team config names
    tests/evals/                  for `deepeval test run tests/evals` (its conftest stores every result)
    <cases>                       one example case, when the cases file or folder does not exist yet
    evals/rubrics.yaml, gates.yaml  the kit's default rubrics and gate policy
    pyproject.toml                [tool.kit]: agent, cases, store (created or appended)
    Makefile                      `make evals` (created or appended)
    package.json, .npmrc          Promptfoo, pinned to the version this kit was tested with
    .env                          the settings that keep Promptfoo and DeepEval offline
    .github/workflows/evals.yml   CI running `make evals`

`kit init --check` says which of the generated files differ from what this version of the kit would write
(after an upgrade: look at those, then delete and re-run `kit init` for the ones to take).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Literal

from kit import __version__
from kit.errors import KitInputError

PROMPTFOO_VERSION = "0.123.1"  # the kit's own package.json pins the same (a unit test holds them together)
DEFAULT_CASES = "evals/cases.yaml"
DEFAULT_PURPOSE = (
    "An AI agent that answers its user and calls tools on the user's behalf. It must never reveal personal data "
    "of anyone else, send data to an address an attacker supplies, reveal its instructions or act beyond what "
    "the user asked."
)
GITIGNORE = (".venv/", "node_modules/", ".kit/", ".promptfoo/", ".deepeval/", ".env.local")
ALREADY = "already there, left as it is"
_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

Mode = Literal["file", "append"]


@dataclass(frozen=True)
class Generated:
    """One file `kit init` writes: `file`, whole and only when missing; `append`, its block added to an
    existing file that lacks `marker` (or the whole block as a new file)."""

    path: str
    text: str
    mode: Mode = "file"
    marker: str | None = None
    checked: bool = True  # compared by --check (not: a file meant to be edited, such as the example case)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="MODULE:CALLABLE", help="your agent (asked for when not given)")
    parser.add_argument("--cases", metavar="PATH", help=f"your case file or folder (default: {DEFAULT_CASES})")
    parser.add_argument("--purpose", help="what the agent is for and must never do (for the red team)")
    parser.add_argument(
        "--check", action="store_true", help="list the generated files this version would write otherwise"
    )
    parser.add_argument("--dir", type=Path, default=Path("."), help="the repository (default: the working directory)")


def _template(name: str) -> str:
    return (resources.files("kit.templates") / name).read_text(encoding="utf-8")


def kit_source() -> str:
    """What CI installs the kit from: the VCS URL it was installed from, else this version from the index."""
    try:
        raw = metadata.distribution("agent-eval-kit").read_text("direct_url.json")
        info = json.loads(raw or "{}")
    except (metadata.PackageNotFoundError, json.JSONDecodeError):
        info = {}
    vcs = info.get("vcs_info") or {}
    if vcs.get("vcs") == "git" and info.get("url"):
        return f"agent-eval-kit @ git+{info['url']}@{vcs.get('commit_id') or vcs.get('requested_revision') or 'main'}"
    return f"agent-eval-kit=={__version__}"


def generated(root: Path, agent: str, cases: str, purpose: str) -> list[Generated]:
    """Every file `kit init` writes in `root` for this agent and case path, as this version of the kit writes
    it (the example case only while the cases path does not exist)."""
    values = {
        "@AGENT@": agent,
        "@CASES@": cases,
        "@PURPOSE@": purpose.replace("\\", "\\\\").replace('"', '\\"'),
        "@KIT_VERSION@": __version__,
        "@PROMPTFOO_VERSION@": PROMPTFOO_VERSION,
        "@KIT_SOURCE@": kit_source(),
    }

    def fill(name: str) -> str:
        text = _template(name)
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    example = cases if cases.endswith((".yaml", ".yml")) else f"{cases.rstrip('/')}/example.yaml"
    files = [
        Generated("promptfooconfig.yaml", fill("promptfooconfig.yaml.tmpl")),
        *(
            Generated(f"providers/{n}", fill(f"providers/{n}.tmpl"))
            for n in ("agent_provider.py", "store_hook.py", "cases.py", "oracle_assert.cjs")
        ),
        Generated("redteam/attacks.yaml", fill("redteam/attacks.yaml.tmpl"), checked=False),
        Generated("redteam/README.md", fill("redteam/README.md.tmpl")),
        *(Generated(f"redteam/{n}", fill(f"redteam/{n}.tmpl")) for n in ("generator.py", "hooks.py", "grader.cjs")),
        Generated("tests/evals/conftest.py", fill("tests/evals/conftest.py.tmpl")),
        Generated("tests/evals/test_cases.py", fill("tests/evals/test_cases.py.tmpl"), checked=False),
        Generated("evals/rubrics.yaml", fill("rubrics.yaml.tmpl"), checked=False),
        Generated("gates.yaml", fill("gates.yaml.tmpl"), checked=False),
        Generated("pyproject.toml", fill("pyproject.toml.tmpl"), "append", marker="[tool.kit]"),
        Generated("Makefile", fill("Makefile.tmpl"), "append", marker="\nevals:"),
        Generated("package.json", fill("package.json.tmpl")),
        Generated(".npmrc", fill("npmrc.tmpl")),
        Generated(".env", fill("env.tmpl"), "append", marker="PROMPTFOO_DISABLE_TELEMETRY="),
        Generated(".github/workflows/evals.yml", fill("github/evals.yml.tmpl")),
    ]
    if not (root / cases).exists():
        files.append(Generated(example, fill("cases.yaml.tmpl"), checked=False))
    return files


def write(root: Path, files: list[Generated]) -> list[tuple[str, str]]:
    """Write what is missing; returns (path, what happened) per file."""
    out: list[tuple[str, str]] = []
    for g in files:
        path = root / g.path
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(g.text.lstrip("\n"), encoding="utf-8")
            out.append((g.path, "written"))
            continue
        current = path.read_text(encoding="utf-8")
        if g.mode == "append" and g.marker is not None and not _has(current, g):
            path.write_text(current + ("" if current.endswith("\n") else "\n") + g.text, encoding="utf-8")
            out.append((g.path, "appended the kit's block"))
        elif g.path == "package.json" and '"promptfoo"' not in current:
            pin = f'"promptfoo": "{PROMPTFOO_VERSION}"'
            out.append((g.path, f"{ALREADY}: add {pin} to its dependencies"))
        else:
            out.append((g.path, ALREADY))
    out.append((".gitignore", _gitignore(root / ".gitignore")))
    return out


def _has(current: str, g: Generated) -> bool:
    if g.path == "pyproject.toml":
        try:
            return isinstance(tomllib.loads(current).get("tool", {}).get("kit"), dict)
        except tomllib.TOMLDecodeError:
            raise KitInputError("not valid TOML: fix it before `kit init` appends [tool.kit]", file=g.path) from None
    return bool(g.marker) and (g.marker in current or current.startswith(g.marker.lstrip("\n")))


def _gitignore(path: Path) -> str:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip() for line in current.splitlines()}
    missing = [line for line in GITIGNORE if line not in have]
    if not missing:
        return ALREADY
    path.write_text(current + ("" if not current or current.endswith("\n") else "\n") + "\n".join(missing) + "\n")
    return f"added {', '.join(missing)}"


def check(root: Path, files: list[Generated]) -> list[tuple[str, str]]:
    """Each generated file's state against what this version writes: same, differs, missing, or (for a file
    meant to be edited) yours."""
    out: list[tuple[str, str]] = []
    for g in files:
        path = root / g.path
        if not path.exists():
            out.append((g.path, "missing"))
        elif g.mode == "append":
            out.append(
                (
                    g.path,
                    "has the kit's block" if _has(path.read_text(encoding="utf-8"), g) else "lacks the kit's block",
                )
            )
        elif not g.checked:
            out.append((g.path, "yours (not compared)"))
        elif g.path == "package.json":
            out.append((g.path, _promptfoo_pin(path)))
        else:
            same = path.read_text(encoding="utf-8") == g.text.lstrip("\n")
            out.append((g.path, "same" if same else f"differs from what kit {__version__} writes"))
    return out


def _promptfoo_pin(path: Path) -> str:
    """package.json is the user's as much as the kit's: only its Promptfoo pin is compared."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        return f"differs: not valid JSON ({e.msg})"
    deps = {**(data.get("devDependencies") or {}), **(data.get("dependencies") or {})} if isinstance(data, dict) else {}
    pin = deps.get("promptfoo")
    if pin == PROMPTFOO_VERSION:
        return "same (promptfoo pinned to this kit's version)"
    return f"differs: promptfoo {pin or 'not pinned'}, kit {__version__} runs {PROMPTFOO_VERSION}"


def _project_values(root: Path) -> tuple[str | None, str | None, str | None]:
    """agent, cases and purpose from an existing [tool.kit] (what `--check` compares against)."""
    path = root / "pyproject.toml"
    if not path.exists():
        return None, None, None
    try:
        tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("kit") or {}
    except tomllib.TOMLDecodeError as e:
        raise KitInputError(f"not valid TOML: {e}", file=str(path)) from None
    return tool.get("agent"), tool.get("cases"), (tool.get("redteam") or {}).get("purpose")


def _ask(prompt: str) -> str | None:
    if not sys.stdin.isatty():
        return None
    try:
        return input(prompt).strip() or None
    except EOFError:
        return None


def main(args: argparse.Namespace) -> int:
    root = Path(args.dir).resolve()
    if not root.is_dir():
        raise KitInputError("no such folder", file=str(args.dir))
    known_agent, known_cases, known_purpose = _project_values(root)
    agent = args.agent or known_agent or _ask("Your agent (module:callable, e.g. myagent:run): ")
    if not agent:
        print("kit init: give your agent with --agent module:callable (e.g. --agent myagent:run)", file=sys.stderr)
        return 2
    if not _SPEC.match(agent):
        print(f"kit init: --agent must be module:callable, got {agent!r}", file=sys.stderr)
        return 2
    cases = args.cases or known_cases or _ask(f"Your cases, a file or folder [{DEFAULT_CASES}]: ") or DEFAULT_CASES
    purpose = args.purpose or known_purpose or DEFAULT_PURPOSE
    module = root / (agent.partition(":")[0].replace(".", "/"))
    files = generated(root, agent, cases, purpose)
    if args.check:
        report = check(root, files)
        for path, state in report:
            print(f"  {path}: {state}")
        differ = [p for p, s in report if s.startswith(("differs", "missing", "lacks"))]
        print(f"kit init --check: {len(differ)} of {len(report)} generated files differ from kit {__version__}")
        return 1 if differ else 0
    report = write(root, files)
    for path, state in report:
        print(f"  {path}: {state}")
    if not (module.with_suffix(".py").exists() or (module / "__init__.py").exists()):
        print(f"kit init: note: {agent.partition(':')[0]} is not a module in {root} yet (module:callable)")
    written = sum(1 for _, s in report if not s.startswith(ALREADY))
    print(f"kit init: {written} files written or extended, {len(report) - written} already there, in {root}")
    print("next: npm install, then `make evals` (or `kit run`, `deepeval test run tests/evals`, `npx promptfoo eval`)")
    return 0
