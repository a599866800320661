"""`kit <command>`: a dispatcher that imports only the invoked command's module, so `kit check` starts fast.

A command is a module `kit.commands.<module>` with `configure(parser)` and `main(args) -> int`; adding
one is one line in COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kit.errors import KitInputError

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "set a repository up for the kit: configs, providers, tests/evals, [tool.kit], make evals"),
    "check": ("check", "evaluate traces against golden cases (exit 0 pass, 1 fail, 2 bad input)"),
    "lint": ("lint", "validate golden case files without running anything"),
    "run": ("run", "run the golden cases on an agent N times and evaluate every run"),
    "import": ("import_", "convert OpenAI message lists or OpenTelemetry spans into kit traces"),
    "report": ("report", "print (or write as HTML) the results of a run from the store"),
    "compare": ("compare", "cases that flipped between two runs of the suite"),
    "gate": ("gate", "exit non-zero when the latest run fails the gates"),
    "ingest": ("ingest", "load Promptfoo or DeepEval result files into the store"),
    "calibrate": ("calibrate", "measure how far each rubric's judge agrees with labelled answers (Cohen's kappa)"),
    "mcp": ("mcp", "record an MCP tool server's answers to a cassette, or serve a cassette with no server"),
    "recordings": ("recordings", "the model calls' recordings: `prune` removes what no case uses"),
    "redteam": ("redteam", "keep the conversations that broke an invariant as static attacks (`keep RUN`)"),
    "case": ("case", "write a regression case from a production trace (`from-trace`): checks to review, recordings"),
    "serve": ("serve", "judge production traces as they arrive: OTLP/HTTP in, every invariant, verdicts to the store"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: kit <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`kit <command> --help` for a command's options."]
    return "\n".join(lines)


def _files(args: list[str]) -> str:
    """The existing files among a command's arguments: who to blame when an error does not say."""
    from pathlib import Path

    found = [a for a in args if not a.startswith("-") and Path(a).is_file()]
    return ", ".join(found) or "input"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        from kit import __version__

        print(__version__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"kit: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, help_ = COMMANDS[name]
    try:
        module = importlib.import_module(f"kit.commands.{module_name}")
    except ModuleNotFoundError as e:
        if e.name != f"kit.commands.{module_name}":
            raise
        print(f"kit {name}: not built yet in this version", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=f"kit {name}", description=help_)
    module.configure(parser)
    args = parser.parse_args(rest)
    try:
        return int(module.main(args) or 0)
    except KitInputError as e:  # bad settings found by any command (say an unknown key in [tool.kit])
        print(f"kit {name}: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path that cannot be read or written (-o at a folder, a full disk): name it
        where = e.filename if e.filename is not None else "input/output"
        print(f"kit {name}: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    # Last resorts for input no loader should have let through: bytes that are not UTF-8, and data nested
    # too deeply to read. Both are always bad input; the files are named as far as the command knows them.
    except UnicodeDecodeError as e:
        print(f"kit {name}: {_files(rest)}: not valid UTF-8 ({e.reason} at byte {e.start})", file=sys.stderr)
        return 2
    except RecursionError:
        print(f"kit {name}: {_files(rest)}: nested too deeply to read", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
