"""Store: rows → Parquet tables under OUT/, written whole or not at all.

Layout: ``OUT/<table>/origin=<name>/part-<n>-<run>.parquet`` for every table, plus ``OUT/manifest.json``.
``origin`` names the host the data comes from (``ingest`` decides it): outputs of several hosts
combine by copying their folders into one, hive-style, and every reader globs ``<table>/**/*.parquet``.
Everything is written into a hidden sibling folder first and exchanged into place when complete
(``Output.commit``), so an ingest killed half way leaves OUT old or new, never missing; one run at a
time holds OUT (``locked``); a command reading OUT holds it (``reading``) so that no swap happens
under it. With ``append=True`` the previous OUT's
parts are kept (hard-linked) and new parts added beside them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import polars as pl
import pyarrow.parquet as pq

from logcorr.store.schema import conform

DERIVED = ("logcorr.duckdb", "logcorr.duckdb.wal", "views.sql")  # rebuilt from the tables after each ingest
SWAP_TEMP = re.compile(r"^\..+\.tmp-\d+$")  # the folder an ingest writes before it becomes OUT
# what a killed run leaves in OUT (a DuckDB file being written, write_atomic's temporary files): never
# carried into a new OUT, and removed by the next run that holds the lock
LEFTOVERS = (".logcorr.duckdb.tmp-*", ".*.tmp")


def remove_leftovers(out: Path) -> None:
    """Remove ``LEFTOVERS`` of killed runs from OUT's top folder. Call with OUT's lock held (no other
    run can be writing them then). Never raises."""
    for pattern in LEFTOVERS:
        for left in Path(out).glob(pattern):
            with contextlib.suppress(OSError):
                left.unlink()


def glob_escape(path: str | Path) -> str:
    """``path`` as a DuckDB or polars glob pattern that matches only itself: each of ``[ ] * ?``
    wrapped in a bracket class (``out[1]`` → ``out[[]1[]]``), so an OUT named ``out[1]`` never
    reads the files of a sibling ``out1``. Append ``/**/*.parquet`` after escaping."""
    return re.sub(r"([\[\]*?])", r"[\1]", str(path))


def real_out(out: Path) -> Path:
    """The folder an OUT path names: a symbolic link (``-o alias``) resolved to its target, so two runs
    given the link and the folder lock and replace one folder, and the link stays a link."""
    out = Path(out)
    if not out.is_symlink():
        return out
    real = Path(os.path.realpath(out))
    return out if SWAP_TEMP.match(real.name) else real  # an ingest's own swap (OUT → its new folder)


def stable_out(out: Path, wait_s: float = 10.0) -> Path:
    """OUT's folder for a reader: its real path, once OUT is a completed folder. While an ingest swaps
    a new OUT in, OUT is for a moment a link to the temporary folder (``.OUT.tmp-PID``), which the
    next exchange renames: a reader that took that name would find no files. Waits up to ``wait_s``
    seconds for the swap to end (it takes milliseconds, or the writing of a DuckDB file of views),
    then returns whatever OUT resolves to; at once when the ingest that swaps is gone (killed: its
    folder is complete, and the next ingest finishes the swap). Never raises."""
    deadline = time.monotonic() + wait_s
    while True:
        real = Path(os.path.realpath(out))
        swapping = SWAP_TEMP.match(real.name) and _pid_alive(real.name.rsplit("-", 1)[-1])
        if not swapping or time.monotonic() > deadline:
            return real
        time.sleep(0.05)


def _pid_alive(pid: str) -> bool:
    return pid == str(os.getpid()) or Path(f"/proc/{pid}").exists()


READERS_WAIT_S = 60.0  # how long a swap waits for the commands still reading the OUT it replaces


def _swap_pending(out: Path) -> bool:
    """Whether a live ingest is about to swap a new folder in at ``out``: its ``.OUT.link-PID`` is a
    link (made before it waits for OUT's readers; the name of the old folder once swapped)."""
    for link in out.parent.glob(f"{glob_escape('.' + out.name)}.link-*"):
        pid = link.name.rsplit("-", 1)[-1]
        if link.is_symlink() and pid.isdigit() and pid != str(os.getpid()) and _pid_alive(pid):
            return True
    return False


@contextlib.contextmanager
def reading(out: Path, wait_s: float = READERS_WAIT_S + 10) -> Iterator[None]:
    """Hold OUT for a command that reads it, by name, for the whole block: an ingest replacing OUT
    swaps its new folder in only once no such block holds the old one (``flock`` shared on OUT's
    folder, which the swap takes exclusively), so every query, the report, a timeline read one OUT
    from start to end, old or new, and never a part file removed under them. A block that starts
    while a swap waits for older readers waits for the swap, then reads the new OUT (at most
    ``wait_s`` seconds; then it reads whatever OUT is). Wrap the reading only, not the printing (a
    pager would hold the lock while the user reads). OUT missing, unreadable or on a file system
    without ``flock``: the block runs unguarded (the command says what it finds). Never raises."""
    out = real_out(Path(out))
    deadline = time.monotonic() + wait_s
    fd = None
    while True:
        while _swap_pending(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        real = stable_out(out, max(deadline - time.monotonic(), 0.0))
        try:
            fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            while True:  # held exclusively only for the instant of a swap of this folder
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
            same = os.path.samestat(os.fstat(fd), os.stat(out))  # still OUT, not swapped out meanwhile
        except OSError:
            same = True  # no folder or no flock here: read unguarded
        if same or time.monotonic() > deadline:
            break
        os.close(fd)
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _readers_gone(out: Path) -> int | None:
    """Wait until no command reads the folder ``out`` (``reading``), for at most ``READERS_WAIT_S``,
    and lock it exclusively: returns the descriptor that holds the lock (close it once the folder is
    swapped out), or None when it cannot be locked (a file system without ``flock``) or the wait ran
    out (a reader that long may then find its files gone). Never raises."""
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    deadline = time.monotonic() + READERS_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        except OSError:
            break
    os.close(fd)
    return None


def _remove_stale(out: Path) -> None:
    """Finish or undo what an ingest that was killed left beside ``out`` (its process is gone):

    * OUT a link to ``.OUT.tmp-PID``: the new OUT was complete (tables and manifest) and was being
      swapped in; the swap is finished (its DuckDB file holds its tables, or views that read it by the
      temporary name: the run that called this rebuilds it, or ``query`` and ``report`` re-point it);
    * ``.OUT.link-PID`` a folder: the previous OUT, set aside by a swap that then finished: removed;
      when OUT is missing (an ingest of an older version killed between its two renames), it is put
      back, as is a ``.OUT.old-PID``;
    * any other ``.OUT.tmp-PID``, ``.OUT.link-PID``, ``.OUT.old-PID``, and the lock file ``..OUT.tmp-PID.lock``
      of a DuckDB file being written in the new folder: removed.
    """
    if out.is_symlink():
        target = os.readlink(out)
        pid = target.rsplit("-", 1)[-1]
        if target == f".{out.name}.tmp-{pid}" and pid.isdigit() and not _pid_alive(pid):
            tmp = out.parent / target
            if tmp.is_dir() and not tmp.is_symlink():
                _exchange(tmp, out)  # OUT the folder; the link now at tmp's name, removed below
                tmp.unlink()
    for kind in ("link", "old", "tmp"):
        for left in out.parent.glob(f"{glob_escape('.' + out.name)}.{kind}-*"):
            pid = left.name.rsplit("-", 1)[-1]
            if not pid.isdigit() or (_pid_alive(pid) and pid != str(os.getpid())):
                continue
            if left.is_symlink():
                left.unlink()
            elif kind in ("link", "old") and not out.exists() and not out.is_symlink():
                left.rename(out)  # the previous OUT, set aside and never put back
            else:
                shutil.rmtree(left, ignore_errors=True)
    for lock in out.parent.glob(f"{glob_escape('..' + out.name)}.tmp-*.lock"):  # DuckDB file of the new
        pid = lock.name.rsplit("-", 1)[-1].removesuffix(".lock")  # folder killed while written (``locked``)
        if pid.isdigit() and not _pid_alive(pid):
            lock.unlink(missing_ok=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap the names ``a`` and ``b`` (both exist) in one atomic step: Linux ``renameat2`` with
    ``RENAME_EXCHANGE``. Where the file system cannot (``EINVAL``), two renames, undone on failure.
    Raises ``OSError``."""
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(a))
    aside = a.with_name(a.name + ".swap")
    os.rename(a, aside)
    try:
        os.rename(b, a)
    except BaseException:
        os.rename(aside, a)
        raise
    os.rename(aside, b)


class OutputError(Exception):
    """OUT cannot be written (not a logcorr output folder, no permission)."""


PARQUET_MAGIC = b"PAR1"  # a Parquet file's first and last four bytes
REINGEST = "ingest its inputs again into a new folder (OUT/manifest.json lists them)"
REMANIFEST = "ingest the inputs again without --append (OUT is then written anew)"


def check_intact(out: Path) -> None:
    """Raise ``OutputError`` naming the first damaged file of OUT, why, and what to do: a Parquet part
    (``OUT/<table>/**/*.parquet``) that does not begin and end with ``PAR1`` (cut short by a full disk
    or a copy, overwritten), or a ``manifest.json`` that is not the JSON object ingest writes
    (``manifest_problem``). Reads eight bytes of each part and the manifest; a file that cannot be
    opened is left to the reader that needs it, and an OUT that does not exist passes."""
    out = Path(out)
    for part in sorted(out.glob("*/**/*.parquet")):
        try:
            with open(part, "rb") as f:
                head = f.read(4)
                f.seek(max(f.seek(0, os.SEEK_END) - 4, 0))
                tail = f.read(4)
        except OSError:
            continue
        if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
            raise OutputError(
                f"{part}: damaged: a Parquet file begins and ends with PAR1, this one does not (cut short?): "
                + REINGEST
            )
    manifest = out / "manifest.json"
    try:
        why = manifest_problem(manifest.read_text(errors="replace"))
    except OSError:
        return
    if why:
        raise OutputError(f"{manifest}: damaged: {why}: {REMANIFEST}")


def manifest_problem(text: str) -> str | None:
    """What is wrong with the text of a ``manifest.json`` (not JSON, not an object, ``inputs`` not a
    list of objects, ``next_event_id`` not an object), or None when it has the shape ingest writes."""
    try:
        m = json.loads(text)
    except (ValueError, RecursionError) as e:
        return f"not JSON ({e})"
    if not isinstance(m, dict):
        return f"a JSON {type(m).__name__}, not an object"
    inputs = m.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(i, dict) for i in inputs):
        return "its inputs is not a list of objects"
    if not isinstance(m.get("next_event_id", {}), dict):
        return "its next_event_id is not an object"
    return None


class LockedError(OutputError):
    """Another logcorr run holds the lock on OUT; the message names its pid."""


_held: dict[str, int] = {}  # lock file → depth, for the runs of this process (reentrant)


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the lock on ``out`` (``.OUT.lock`` beside it, ``flock``) for the whole block: one ingest,
    append or database run at a time. The lock file holds the holder's pid and is removed when the
    block ends (a run refused or failed included), so none is left beside OUT. Reentrant in one
    process. Raises ``LockedError`` naming the holder's pid when another process holds it, and
    ``OutputError`` when the lock file cannot be made (OUT's parent missing or read-only)."""
    out = real_out(out)
    path = out.parent / f".{out.name}.lock"
    key = str(path.resolve())
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    fd = _take_lock(out, path)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]
            path.unlink(missing_ok=True)  # while still held: the next run makes a new one
    finally:
        os.close(fd)  # releases the flock


def _take_lock(out: Path, path: Path) -> int:
    """Open the lock file ``path`` and ``flock`` it; returns the descriptor. A lock file removed by the
    run that held it, after this run opened it, is locked in vain (a third run can make a new one):
    then the new file is opened and locked instead. Raises ``LockedError`` and ``OutputError`` as
    ``locked`` says."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise OutputError(f"{out}: cannot make the lock file {path.name}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockedError(
                f"{out}: another logcorr run (pid {holder}) is writing it; wait for it to end, then run again"
            ) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def write_atomic(path: Path, write: Callable[[IO], None], binary: bool = False) -> None:
    """Write the file ``path`` whole or not at all: ``write(f)`` fills a temporary file (text, UTF-8;
    bytes with ``binary``) created exclusively (``O_EXCL``, a fresh random name) beside ``path``,
    which then replaces ``path``. A link planted at the temporary name is never followed; a link at
    ``path`` itself is replaced, not written through. Raises ``OSError``; the temporary file is
    removed on any failure."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes it 0600; the file is a report to share
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def safe_name(text: str) -> str:
    """``text`` usable as one path component (hive partition value): letters, digits, ``._-`` kept."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def _dictionary_columns(df: pl.DataFrame) -> list[str]:
    """The text columns whose values repeat (a quarter or fewer distinct in ``df``, a table's first
    chunk): Parquet dictionary encoding pays for those. On unique text (messages, journal cursors)
    pyarrow builds a dictionary only to drop it: measured on a day of events, half the write time
    and 12 % larger files."""
    return [c for c, t in df.schema.items() if t == pl.String and df[c].n_unique() * 4 <= df.height]


class Parts:
    """The Parquet parts one ingest writes into a folder being made (``folder``, the hidden sibling of
    OUT): one open ``ParquetWriter`` per table, its file ``<table>/<partition>/part-<n><run>.parquet``,
    ``n`` one more than the largest part already there (the previous OUT's, with ``--append``).
    ``rows`` counts the rows written per table."""

    def __init__(self, folder: Path, schemas: dict[str, dict], partition: str, run: str) -> None:
        self.folder, self.schemas, self.partition, self.run = folder, schemas, partition, run
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.finished: set[str] = set()
        self.rows: dict[str, int] = dict.fromkeys(schemas, 0)
        parts = [int(p.stem.split("-")[1]) for p in folder.glob(f"*/{partition}/part-*.parquet")]
        self.part = max(parts, default=-1) + 1

    def path(self, table: str) -> Path:
        """Where this ingest's part of ``table`` is written."""
        return self.folder / table / self.partition / f"part-{self.part}{self.run}.parquet"

    def write(self, table: str, df: pl.DataFrame) -> None:
        """Append rows to ``table`` (conformed to its schema: missing columns null, extras dropped)."""
        if df.height == 0:
            return
        if table in self.finished:
            raise RuntimeError(f"{table}: written after finish()")
        frame = conform(df, self.schemas[table])
        arrow = frame.to_arrow(compat_level=pl.CompatLevel.newest())  # string views: no copy
        writer = self.writers.get(table)
        if writer is None:
            path = self.path(table)
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(
                path,
                arrow.schema,
                compression="zstd",
                use_dictionary=_dictionary_columns(frame),
                store_schema=False,  # Parquet's own types only: text reads back as plain strings
            )
            self.writers[table] = writer
        writer.write_table(arrow)
        self.rows[table] += df.height

    def finish(self, table: str) -> list[Path]:
        """Close the part of ``table``, so it can be read back (e.g. by DuckDB), and return its path
        ([] when no row was written). Writing to ``table`` afterwards raises ``RuntimeError``."""
        self.finished.add(table)
        writer = self.writers.pop(table, None)
        if writer is None:
            return []
        writer.close()
        return [self.path(table)]

    def close(self) -> None:
        """Close every table; a table with no part in the folder gets a zero-row one with its schema."""
        for table, columns in self.schemas.items():
            if table not in self.writers and not any((self.folder / table).glob("**/*.parquet")):
                self.path(table).parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(pl.DataFrame(schema=columns).to_arrow(), self.path(table))
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()

    def abort(self) -> None:
        """Close the open writers, never raising: a broken writer must not hide the first error."""
        for writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        self.writers.clear()


def _prepare(out: Path, tmp: Path, append: bool) -> None:
    """Check that ``out`` (locked, its stale leftovers cleared) can be an OUT, and make ``tmp``, the
    folder the new OUT is written in: empty, or with ``append`` the previous OUT's parts hard-linked
    and its manifest copied. Raises ``OutputError``, ``OSError``."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: is a file, not a folder; -o names the output folder")
    if out.exists() and not (out / "manifest.json").exists() and any(out.iterdir()):
        raise OutputError(
            f"{out}: exists and is not a logcorr output folder (no manifest.json); choose another -o"
        )
    if not os.access(out.parent, os.W_OK):
        raise OutputError(f"{out}: its folder {out.parent} is read-only; choose another -o")
    if append and out.exists():
        # Parquet parts are never modified once written: hard links cost nothing. The manifest is
        # rewritten, and the DuckDB file is rebuilt, so those must not share the old inodes.
        shutil.copytree(
            out,
            tmp,
            copy_function=os.link,
            ignore=shutil.ignore_patterns("manifest.json", *DERIVED, *LEFTOVERS),
        )
        shutil.copy2(out / "manifest.json", tmp / "manifest.json")
    else:
        tmp.mkdir()


def _swap_in(
    out: Path,
    tmp: Path,
    build: Callable[[Path], object] | None,
    derive: Callable[[Path], object] | None,
    provisional: Callable[[Path], object] | None,
) -> Path | None:
    """Put the complete folder ``tmp`` in place of ``out``, every step leaving a readable OUT, old or new,
    whose DuckDB file reads the tables beside it (see ``Output.commit``). Returns where the old OUT was
    set aside (None for a first OUT); the link now at ``tmp``'s name and that old folder are the
    caller's to remove. Raises what ``build``, ``derive`` or a rename raises, the old OUT put back."""
    if build is not None:  # the DuckDB file of the new tables, before anything is exposed
        build(tmp)
    if derive is not None and provisional is not None:  # never the old OUT's file beside new tables
        provisional(tmp)
        (tmp.parent / f".{tmp.name}.lock").unlink(missing_ok=True)
    had_old = out.is_dir()
    link = out.parent / f".{out.name}.link-{os.getpid()}"
    link.unlink(missing_ok=True)
    os.symlink(tmp.name, link)  # also tells new readers that a swap is coming (``reading``)
    readers, exposed = None, False
    try:
        readers = _readers_gone(out) if had_old else None
        if had_old:
            _exchange(link, out)  # OUT → the new folder; the old one at link's name
        else:
            os.rename(link, out)
        exposed = True
        if derive is not None:
            derive(out)
        _exchange(tmp, out)  # OUT the new folder itself; the link at tmp's name
    except BaseException:
        if exposed and had_old:
            _exchange(link, out)  # the old folder back at OUT; the link at link's name
        if exposed:
            (link if had_old else out).unlink()
        else:
            link.unlink(missing_ok=True)
        raise
    finally:
        if readers is not None:
            os.close(readers)  # readers that waited for the old folder find it gone and take the new
    return link if had_old else None


class Output:
    """An OUT folder being written. Use ``write`` per chunk, then ``commit`` or ``abort``.

    Holds the lock on OUT (``locked``) from creation to ``commit``/``abort``. Parts are named
    ``part-<n>-<run>.parquet`` (``Parts``): ``run`` (a digest of what the ingest read, see ``ingest``)
    keeps two outputs of one origin from naming the same file when their folders are combined.
    Raises ``OutputError`` (``LockedError`` when another run holds OUT)."""

    def __init__(
        self,
        out: Path,
        schemas: dict[str, dict],
        *,
        origin: str = "unknown",
        append: bool = False,
        run: str = "",
    ) -> None:
        out = self.out = real_out(out)  # through a link: the folder it names is locked and replaced
        for ch, name, why in (
            ("?", "a ?", "as the start of URL parameters"),
            ("\\", "a backslash", "as a path separator"),
        ):
            if ch in str(out.resolve()):
                raise OutputError(
                    f"{out}: its path holds {name}, which DuckDB reads {why}: choose another -o"
                )
        self.schemas = schemas
        self.partition = f"origin={safe_name(origin)}"
        self.run = f"-{safe_name(run)}" if run else ""
        self.tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        self.parts: Parts | None = None  # made once the folder is
        self.previous: Path | None = None  # where commit kept the OUT it replaced (keep_previous)
        self._committed = False
        self.rows: dict[str, int] = dict.fromkeys(schemas, 0)
        for parent in out.parents:
            if parent.exists() and not parent.is_dir():
                raise OutputError(f"{out}: {parent} is a file, not a folder")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{out}: cannot make its folder {out.parent}: {e.strerror or e}") from None
        self._lock = contextlib.ExitStack()  # closed (once) by commit or abort
        self._lock.enter_context(locked(out))
        try:
            _remove_stale(out)
            remove_leftovers(out)
            if append:  # its parts are read (ids, journal keys) and kept: refused when damaged
                check_intact(out)
            _prepare(out, self.tmp, append)
        except OSError as e:
            self.abort()
            raise OutputError(f"{out}: cannot be written: {e.strerror or e}") from None
        except BaseException:
            self.abort()
            raise
        self.parts = Parts(self.tmp, schemas, self.partition, self.run)
        self.rows = self.parts.rows

    def previous_manifest(self) -> dict | None:
        """The manifest of the OUT added to (with ``append``), else None. Raises ``OutputError`` (OUT
        left as it was) when it is damaged (``manifest_problem``)."""
        m = self.tmp / "manifest.json"
        if not m.exists():
            return None
        text = m.read_text(errors="replace")
        if why := manifest_problem(text):
            self.abort()
            raise OutputError(
                f"{self.out / 'manifest.json'}: damaged: {why}: {REINGEST}, or without --append"
            )
        return json.loads(text)

    def write(self, table: str, df: pl.DataFrame) -> None:
        """Append rows to ``table`` (``Parts.write``)."""
        self.parts.write(table, df)  # type: ignore[union-attr]

    def finish(self, table: str) -> list[Path]:
        """Close the part of ``table`` this ingest wrote and return its path (``Parts.finish``)."""
        return self.parts.finish(table)  # type: ignore[union-attr]

    def commit(
        self,
        manifest: dict,
        build: Callable[[Path], object] | None = None,
        derive: Callable[[Path], object] | None = None,
        provisional: Callable[[Path], object] | None = None,
        keep_previous: bool = False,
    ) -> Path:
        """Close every table (an empty one gets a zero-row part with its schema), write manifest.json,
        build the derived files and put the new OUT in place of the old one. Returns OUT.

        Every step leaves a readable OUT, old or new, and the DuckDB file in the folder OUT shows
        always reads that folder's tables, never another OUT's. A file that names no path (the tables
        copied in) is made by ``build(folder)`` inside the new folder before anything is exposed. A
        file of views naming OUT's own path is made by ``derive(OUT)`` once OUT shows the new folder:
        until then the new folder holds ``provisional(folder)``'s, whose views read it by its
        temporary name. The new folder becomes OUT in one atomic exchange (through a link to it, so
        ``derive`` writes through OUT's name), after the commands still reading the old OUT are done
        (``reading``, at most ``READERS_WAIT_S``); a second exchange makes OUT the folder itself.
        When anything fails before that (disk full while the DuckDB file is written, an interrupt),
        the old OUT is put back as it was and the error raised. A run killed half way is finished or
        undone by the next one (``_remove_stale``). With ``keep_previous`` the old OUT is kept as
        ``OUT.prev`` (an earlier ``OUT.prev`` removed), not deleted: ``previous`` names it."""
        self.parts.close()  # type: ignore[union-attr]
        (self.tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        old = _swap_in(self.out, self.tmp, build, derive, provisional)
        self._committed = True
        self.tmp.unlink()
        if old is not None and keep_previous:
            self.previous = self.out.parent / f"{self.out.name}.prev"
            if self.previous.is_symlink() or self.previous.is_file():
                self.previous.unlink()
            shutil.rmtree(self.previous, ignore_errors=True)
            old.rename(self.previous)
        elif old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self._lock.close()
        return self.out

    def abort(self) -> None:
        """Drop everything written; OUT stays as it was."""
        if self.parts is not None:
            self.parts.abort()
        if not self._committed and self.tmp.is_dir() and not self.tmp.is_symlink():
            shutil.rmtree(self.tmp, ignore_errors=True)
        self._lock.close()
