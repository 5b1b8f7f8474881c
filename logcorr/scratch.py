"""Scratch folders in TMPDIR that a later run can tell apart and clean up.

An ingest unpacks a compressed input (up to 200 times its size), an archive or a piped
input into a scratch folder, and the timeline lets DuckDB spill there. Ctrl-C and SIGTERM remove it on
the way out; a run killed outright (SIGKILL, the OOM killer) cannot. So each folder is named
``logcorr-WHAT-HOST-PID-XXXXXXXX`` (``tempfile.mkdtemp``'s random tail): logcorr's by its prefix, made on
this host (a TMPDIR shared between containers holds other hosts' pids, which this one cannot see) by
the process PID. Every new scratch folder first removes the ones whose process is gone, so repeated
kills cost at most one folder per live run, not one per kill.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "logcorr-"
# logcorr-WHAT-HOST-PID- and mkdtemp's eight characters from [a-z0-9_]
NAME = re.compile(r"^logcorr-(?P<what>[a-z]+)-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]{8}$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "_"


def _alive(pid: int) -> bool:
    """True when a process ``pid`` exists (of any user) in this pid namespace."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(tmpdir: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders (``NAME``) in ``tmpdir`` (default: TMPDIR, ``tempfile.gettempdir()``)
    made on this host by processes that no longer run and owned by this user; returns them. A folder
    of a live run, of another host or user, a link or anything not named so is never touched. Never
    raises."""
    removed: list[Path] = []
    host, uid = _host(), os.getuid()
    try:
        entries = list(os.scandir(tmpdir or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        m = NAME.match(entry.name)
        if not m or m["host"] != host:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        if not _alive(int(m["pid"])):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def folder(what: str) -> Path:
    """A new private folder in TMPDIR for ``what`` (``ingest``, ``bundle``, ``spill``: lowercase
    letters), named ``logcorr-WHAT-HOST-PID-XXXXXXXX``, after removing what killed runs left
    (``remove_stale``). The caller removes it; ``scratch`` does so for a block. Raises ``OSError``
    when TMPDIR cannot be written."""
    remove_stale()
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{what}-{_host()}-{os.getpid()}-"))


@contextlib.contextmanager
def scratch(what: str) -> Iterator[Path]:
    """``folder(what)`` for the block, removed with everything in it when the block ends (an
    exception or an interrupt included)."""
    path = folder(what)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
