"""Where the case's files go: a folder inside the user's repository, reached through no symbolic link, each
file named after the case inside it (`kit.names.file_in`), none already there. All are written or none."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from kit.errors import KitInputError
from kit.names import file_in


def out_folder(out: Path, root: Path) -> Path:
    """`out` as an absolute path, refused (naming it) when it is outside the repository `root`, is or passes
    through a symbolic link, or is not a folder."""
    root = root.resolve()
    given = Path(os.path.abspath(out))
    if not given.is_relative_to(root):
        raise KitInputError(f"--out {out}: outside the repository ({root}): a case belongs in the repository")
    here = root
    for part in given.relative_to(root).parts:
        here = here / part
        if here.is_symlink():
            raise KitInputError(f"--out {out}: {here} is a symbolic link: give the folder itself")
        if here.exists() and not here.is_dir():
            raise KitInputError(f"--out {out}: {here} is not a folder")
    return given


def target(folder: Path, name: str, suffix: str) -> Path:
    """`folder/name+suffix`, or KitInputError when the name cannot name a file there."""
    try:
        return file_in(folder, name, suffix)
    except ValueError as e:
        raise KitInputError(str(e)) from None


def taken(paths: list[Path]) -> Path | None:
    """The first of `paths` that exists (or is a dangling link)."""
    return next((p for p in paths if p.exists() or p.is_symlink()), None)


def write_all(bases: Sequence[Path], files: Mapping[Path, str]) -> None:
    """Every file (each inside one of `bases`, checked folders) written, or none: each goes to a temporary file
    beside it first, and only when all are there are they moved into place. A file already there is never
    overwritten; the folders made inside a base are checked to be no links as they are made."""
    there = taken(list(files))
    if there is not None:
        raise KitInputError("already exists: nothing written", file=str(there))
    made: list[Path] = []
    parts: list[tuple[Path, Path]] = []
    try:
        for path, text in files.items():
            base = next((b for b in bases if path.is_relative_to(b)), None)
            if base is None:
                raise KitInputError(f"{path} is outside the folders checked for writing: nothing written")
            for parent in reversed(path.parents):
                if not parent.is_relative_to(base) or (parent == base and parent.exists()):
                    continue
                if not parent.exists():
                    parent.mkdir(parents=True)
                    made.append(parent)
                elif parent.is_symlink():
                    raise KitInputError(f"{parent} is a symbolic link: nothing written")
            part = path.with_name(f".{path.name}.{os.getpid()}.part")
            part.write_text(text, encoding="utf-8")
            parts.append((part, path))
        for part, path in parts:
            part.replace(path)
    except BaseException:
        for part, _ in parts:
            part.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
