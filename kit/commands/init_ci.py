"""What the CI workflow `kit init` writes takes from this installation and the repository: where CI installs
the kit from (where this installation came from: a git URL, an archive URL or an index version; a local
folder CI cannot reach is named as the one line to change), how it installs the project as the project
declares itself (pyproject.toml, requirements files), and the secrets and variables the agent reads to reach
its model (by the model SDKs the project depends on)."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DISTRIBUTION = "agent-eval-kit"
WORKFLOW = ".github/workflows/evals.yml"
# The model SDKs whose variables an agent reads: (prefix of <PREFIX>_API_KEY and <PREFIX>_BASE_URL, the SDK's
# own default address). An unset GitHub variable is an empty string, which these SDKs take as an address.
SDKS: dict[str, tuple[str, str]] = {
    "anthropic": ("ANTHROPIC", "https://api.anthropic.com"),
    "openai": ("OPENAI", "https://api.openai.com/v1"),
}
REQUIREMENTS = ("requirements.txt", "requirements/base.txt", "requirements/main.txt")


@dataclass(frozen=True)
class KitSource:
    """What pip installs the kit from in CI ("" when CI cannot reach where this installation came from), and
    where this installation came from, as the workflow and `kit init` say it."""

    spec: str
    origin: str

    @property
    def local(self) -> bool:
        return not self.spec


def installed_direct_url() -> dict[str, Any] | None:
    """The installed kit's direct_url.json (PEP 610), None when it came from an index. The first record that
    has one: a source folder on the path (its `*.egg-info`, from a build there) records none."""
    for dist in metadata.distributions(name=DISTRIBUTION):
        raw = dist.read_text("direct_url.json")
        try:
            info = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            continue
        if isinstance(info, dict):
            return info
    return None


def kit_source(direct_url: Mapping[str, Any] | None, version: str) -> KitSource:
    """Where CI installs the kit from, by where this installation came from (`direct_url`, PEP 610)."""
    if not direct_url:
        return KitSource(f"{DISTRIBUTION}=={version}", f"version {version} from a package index")
    url = str(direct_url.get("url") or "")
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and url and not url.startswith("file:"):
        rev = vcs.get("commit_id") or vcs.get("requested_revision") or "main"
        return KitSource(f"{DISTRIBUTION} @ git+{url}@{rev}", f"git {url} at {rev}")
    if "archive_info" in direct_url and url.startswith(("https://", "http://")):
        return KitSource(f"{DISTRIBUTION} @ {url}", f"the archive {url}")
    where = url.removeprefix("file://") or "a local path"
    kind = "folder" if "dir_info" in direct_url else "file"
    return KitSource("", f"the local {kind} {where}, which CI cannot reach")


def local_source_note(source: KitSource) -> str:
    """What `kit init` says when the workflow cannot install the kit as written."""
    return (
        f"{WORKFLOW}: the kit was installed from {source.origin}: set KIT_SOURCE there (the one line to "
        f'change) to a git URL ("{DISTRIBUTION} @ git+https://<host>/<owner>/<repo>@<commit>") or a version on '
        f'your index ("{DISTRIBUTION}==<version>")'
    )


def _pyproject(root: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _requirements(root: Path) -> list[str]:
    return [name for name in REQUIREMENTS if (root / name).is_file() and not (root / name).is_symlink()]


def project_install(root: Path) -> list[str]:
    """The workflow's commands that install the project as it declares itself: a pyproject.toml with a build
    system is installed (with its dependencies); a [project] without one has its dependencies installed;
    each requirements file is installed. [] when it declares nothing."""
    project = _pyproject(root)
    run = []
    if isinstance(project.get("project"), dict) and isinstance(project.get("build-system"), dict):
        run.append(".venv/bin/pip install --quiet -e .")
    elif isinstance(project.get("project"), dict):
        # No build system: the dependencies alone, read when CI runs (so an added one is installed too).
        run.append(
            ".venv/bin/python -c 'import subprocess, sys, tomllib; "
            'deps = tomllib.load(open("pyproject.toml", "rb"))["project"].get("dependencies", []); '
            'deps and subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *deps], check=True)\''
        )
    run += [f".venv/bin/pip install --quiet -r {name}" for name in _requirements(root)]
    return run


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def dependency_names(root: Path) -> set[str]:
    """The distributions the project names (pyproject.toml's dependencies and optional ones, requirements
    files), normalised (PEP 503)."""
    project = _pyproject(root).get("project")
    specs: list[str] = []
    if isinstance(project, dict):
        specs += [s for s in project.get("dependencies") or [] if isinstance(s, str)]
        for extra in (project.get("optional-dependencies") or {}).values():
            specs += [s for s in extra or [] if isinstance(s, str)]
    for name in _requirements(root):
        specs += (root / name).read_text(encoding="utf-8", errors="replace").splitlines()
    names = set()
    for spec in specs:
        m = _NAME.match(spec.split("#", 1)[0])
        if m and not spec.lstrip().startswith("-"):
            names.add(re.sub(r"[-_.]+", "-", m.group(1)).lower())
    return names


def model_env(root: Path) -> list[str]:
    """The workflow's `env:` lines for what the agent reads to reach its model: each SDK's key (a secret)
    and address (a variable, the SDK's default when unset), by the SDKs the project depends on; the kit's own
    KIT_AGENT_* when it names none. The rubric judge's too (KIT_JUDGE_*: unset, [tool.kit.judge] applies)."""
    used = [prefix_default for sdk, prefix_default in SDKS.items() if sdk in dependency_names(root)]
    lines = []
    for prefix, default in used:
        lines += [
            f"  {prefix}_API_KEY: ${{{{ secrets.{prefix}_API_KEY }}}}",
            f"  {prefix}_BASE_URL: ${{{{ vars.{prefix}_BASE_URL || '{default}' }}}}",
        ]
    if used:
        # .env sends every other host to a closed port (Promptfoo's telemetry); the weekly run records live.
        hosts = ",".join(["127.0.0.1", "localhost", "::1", *(urlsplit(default).hostname or "" for _, default in used)])
        lines += [
            "  # .env sends every host but these to a closed port: add your base URL's host when it is another.",
            f'  NO_PROXY: "{hosts}"',
        ]
    if not used:
        lines += [
            "  # No model SDK among the project's dependencies: the kit's model policy's variables. Name yours here.",
            "  KIT_AGENT_API_KEY: ${{ secrets.KIT_AGENT_API_KEY }}",
            "  KIT_AGENT_BASE_URL: ${{ vars.KIT_AGENT_BASE_URL }}",
        ]
    lines += [
        "  KIT_JUDGE_API_KEY: ${{ secrets.KIT_JUDGE_API_KEY }}",
        "  KIT_JUDGE_BASE_URL: ${{ vars.KIT_JUDGE_BASE_URL }}",
    ]
    return lines


def workflow_values(root: Path, source: KitSource) -> dict[str, str]:
    """The workflow template's placeholders, filled for this repository and installation."""
    install = project_install(root) or ["echo 'the project declares no dependencies (pyproject.toml, requirements)'"]
    said = " ".join(source.origin.split())  # one comment line, whatever the path holds
    origin = f"  # kit init: this kit was installed from {said}."
    if source.local:
        origin += (
            "\n  # The one line to change: where CI gets the kit, a git URL "
            f'("{DISTRIBUTION} @ git+https://<host>/<owner>/<repo>@<commit>")\n'
            f'  # or a version on your index ("{DISTRIBUTION}==<version>").'
        )
    return {
        "@KIT_SOURCE@": json.dumps(source.spec),  # a YAML double-quoted string
        "@KIT_ORIGIN@": origin,
        "@PROJECT_INSTALL@": "\n".join(f"          {line}" for line in install),
        "@MODEL_ENV@": "\n".join(model_env(root)),
    }
