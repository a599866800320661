"""The one way the kit opens DuckDB: with extension auto-install and auto-load off.

DuckDB fetches a missing extension from the network when a statement needs it (a SQLite file opened as a
store asked for `sqlite_scanner`), against the kit's promise to stay offline. With both settings off, such a
statement fails at once with an error that names the extension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NO_EXTENSIONS: dict[str, Any] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# How a database file starts: SQLite's header opens with this; DuckDB's holds DUCKDB_MAGIC at byte 8.
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"


def connect(database: str = ":memory:", *, read_only: bool = False, config: dict[str, Any] | None = None) -> Any:
    """`duckdb.connect` with NO_EXTENSIONS (and `config` beside it; it cannot turn them back on)."""
    import duckdb  # imported by the callers that open a database, not by `import kit`

    return duckdb.connect(database, read_only=read_only, config={**(config or {}), **NO_EXTENSIONS})


def join_held(database: str, *, read_only: bool) -> Any:
    """A connection to a database file this process already holds open, with the holder's configuration:
    DuckDB shares one database per file in a process and refuses a connection of another configuration (our
    NO_EXTENSIONS included). No database is opened anew, so nothing is loaded that the holder did not load.
    Call it only after `connect` was refused with DuckDB's "different configuration" error."""
    import duckdb

    return duckdb.connect(database, read_only=read_only)


def foreign_file(path: Path) -> str | None:
    """What a file that is not a DuckDB database is, for the error that refuses it (None: it may be one).
    DuckDB's header holds "DUCK" at byte 8; SQLite's starts "SQLite format 3"."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head.startswith(SQLITE_MAGIC):
        return "it is a SQLite database, not a DuckDB file"
    if len(head) < 12 or head[8:12] != DUCKDB_MAGIC:
        return "it is not a DuckDB file"
    return None
