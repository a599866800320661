"""Names that come from data (case ids, run ids) and end up as file names or on a terminal: what such a name
may hold, and the one way a file is named after one, inside its folder."""

from __future__ import annotations

import unicodedata
from pathlib import Path

# Unicode categories that never belong in a name: control characters (ESC drives the terminal, NUL and
# most C0 characters are invalid in XML), surrogates, and line and paragraph separators.
_REFUSED_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}
# Bidirectional overrides and isolates reorder what a terminal or a page shows around them.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
MAX_LENGTH = 200  # a file name is at most 255 bytes on common file systems; ids are far shorter


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a file inside a folder or be printed as it is, or None when it can.

    A `/` inside a name is allowed (it makes a subfolder, still inside), but not an absolute path, a `..`
    or `.` part, an empty part, or a backslash (a separator on Windows)."""
    if not name.strip():
        return "is empty"
    # Printable ASCII (nearly every id) holds none of them: no per-character look-up.
    if not (name.isascii() and name.isprintable()):
        bad = next((ch for ch in name if unicodedata.category(ch) in _REFUSED_CATEGORIES or ch in _BIDI), None)
        if bad is not None:
            return f"holds the control character U+{ord(bad):04X}"
    if len(name) > MAX_LENGTH:
        return f"is {len(name)} characters long (at most {MAX_LENGTH})"
    if "\\" in name:
        return "holds a backslash (it names files: use '/' or '-')"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path (it names files, which must stay inside their folder)"
    if any(part in ("", ".", "..") for part in name.split("/")):
        return "has an empty, '.' or '..' path part (it names files, which must stay inside their folder)"
    return None


def file_in(folder: Path, name: str, suffix: str = "") -> Path:
    """`folder/name+suffix`, or ValueError when `name` is no file name or the path would leave `folder`
    (through a link, say)."""
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"{name!r} cannot name a file: it {problem}")
    path = folder / f"{name}{suffix}"
    if not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"{name!r} cannot name a file: {path} leaves {folder}")
    return path


def printable(name: str) -> str:
    """`name` with every character `name_problem` refuses written as its escape (`\\x1b`, `\\u202e`): for
    names that come from other tools' files, which are stored and shown, never refused."""
    if name.isascii() and name.isprintable():
        return name
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in _REFUSED_CATEGORIES or ch in _BIDI
        else ch
        for ch in name
    )


def terminal(text: str) -> str:
    """Text for a terminal: every line `printable` (an escape sequence, a CR, a bidi override from a trace
    shown as its escape), the line breaks the kit wrote kept. A field that may hold a line break of its own
    (a reason, a model id) is `printable` itself, so it cannot start a line that looks like the kit's."""
    return "\n".join(printable(line) for line in text.split("\n"))
