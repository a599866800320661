"""The model's calls, recorded once and replayed: at the HTTP layer, for any Python agent as it comes.

format    the file format (one JSON file per case, by attempt): `read`, `write`, `Recording`
match     the request's key (method, path, canonical JSON body) and a miss's first difference
wire      a response between vcrpy's stubs and the format (JSON parsed, streams as their events)
tape      one attempt's calls while it runs: answered, kept, missed
router    the object vcrpy's stubs call instead of a cassette: the current attempt's tape
files     an attempt merged into its case's file under a lock; pruning
session   the process's recordings (mode, folder, pinned model): install, attempt, finish
"""

from kit.recording.files import prune, save_attempt
from kit.recording.format import Exchange, Recording, Request, Response, path_for, read, write
from kit.recording.session import MODES, Recordings, active, attempt, from_settings, install, judging, uninstall

__all__ = [
    "MODES",
    "Exchange",
    "Recording",
    "Recordings",
    "Request",
    "Response",
    "active",
    "attempt",
    "from_settings",
    "install",
    "judging",
    "path_for",
    "prune",
    "read",
    "save_attempt",
    "uninstall",
    "write",
]
