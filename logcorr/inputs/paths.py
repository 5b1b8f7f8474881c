"""What the inputs are: files found in folders (``discover``), compressed files unpacked or spooled
(``unpack``, ``spool``), an input's identity and hosts, and the journal entries an earlier input of
the same ingest (or OUT, with ``--append``) already holds (``SeenEntries``)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import select
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from logcorr.inputs import archives, bundle, containers, dumps, packed
from logcorr.inputs.journal import journalctl
from logcorr.inputs.sniff import head, sniff
from logcorr.inputs.source import (
    CHUNK_BYTES,
    UNPACK_FLOOR,
    UNPACK_RATIO,
    InputError,
    ReadOptions,
    SourceReport,
    failure,
)
from logcorr.interrupts import is_interrupt
from logcorr.parsers import journald

MACHINE_ID = re.compile(r"[0-9a-f]{32}")
# Files a folder walk passes over: their names say they are no log (a file named itself is read).
NOT_LOGS = frozenset(
    ".md .rst .html .htm .css .js .py .pyc .ipynb .sh .toml .yaml .yml .ini .cfg .sql .parquet .duckdb"
    " .csv .png .jpg .jpeg .gif .svg .pdf .zip .tgz .tar.gz .whl .so .markdown".split()
)


def discover(
    path: Path, opts: ReadOptions | None = None, problems: list[tuple[Path, str]] | None = None
) -> list[tuple[Path, str]]:
    """Expand one PATH argument into ``(path, format)`` inputs.

    A folder holding ``*.journal`` files, directly or in machine-id subfolders as /var/log/journal
    does, is one ``journal-dir`` input read by journalctl; every other file below PATH is sniffed on
    its own (so a folder with a journal, captures and dumps side by side is read whole), but for
    files whose suffix says they are no log (``NOT_LOGS``: documents, code, images, tables; format
    ``skipped``), hidden files and folders (``.git``) and logcorr output folders (a ``manifest.json``
    beside ``events/``) found inside, Docker's metadata files, and container logs of pods that do not
    look like SGLang (``containers.skip_pod``, by ``opts``: ``/var/log/pods`` of a whole node). Links
    to folders are followed (each folder once). A file named itself is always read. A ``logcorr
    collect`` bundle (its folder, one found inside, or its ``.tar.gz``, unpacked) gives the inputs its
    manifest lists (``bundle.inputs``); an SGLang incident bundle (``bundle.incident_inputs``) its metadata
    and its ``metrics.txt``.
    What of a folder cannot be looked at (a subfolder that cannot be listed, a file or bundle whose
    metadata raises) is left out and added to ``problems`` as ``(path, why)``, the rest still found.
    Raises ``InputError`` when the path does not exist or a folder holds nothing readable.
    """
    problems = [] if problems is None else problems
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if what := archives.kind(path):  # a tar (plain or compressed) or zip: read as the folder it holds
        path = archives.unpack(path, what, problems)
    if not path.is_dir():
        return [(path, "?")]
    if manifest := bundle.manifest_of(path):
        return bundle.inputs(path, manifest)
    if bundle.incident_metadata(path):
        return bundle.incident_inputs(path)
    below = _walk(path, problems)
    journal_dirs = set()
    for f in below:
        if f.name.endswith((".journal", ".journal~")):
            folder = f.parent
            if MACHINE_ID.fullmatch(folder.name) and folder != path:
                folder = folder.parent  # /var/log/journal/<machine-id>/system.journal
            journal_dirs.add(folder)
    outputs = {f.parent for f in below if f.name == "manifest.json" and (f.parent / "events").is_dir()}
    if path in outputs:
        raise InputError(f"{path}: a logcorr output folder, not logs (query it with -d {path})")
    bundles = {
        f.parent: m for f in below if f.name == bundle.MANIFEST and (m := bundle.manifest_of(f.parent))
    }
    incidents = {
        f.parent for f in below if f.name == bundle.INCIDENT_METADATA and bundle.incident_metadata(f.parent)
    }
    held = journal_dirs | outputs | set(bundles) | incidents
    files = sorted(p for p in below if not any(d in p.parents for d in held))
    if not journal_dirs and not files and not bundles and not incidents and not problems:
        raise InputError(f"{path}: skipped, the folder holds no journal files and no logs")
    opts = opts or ReadOptions()

    def looked_at(where: Path, what: Callable[[], list[tuple[Path, str]]]) -> list[tuple[Path, str]]:
        try:  # one file whose metadata is hostile costs only itself
            return what()
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001
            if is_interrupt(e):
                raise
            problems.append((where, failure(where, e)))
            return []

    def kind(p: Path) -> list[tuple[Path, str]]:
        return [(p, "skipped" if not_a_log(p, path) or containers.skip_pod(p, opts) else "?")]

    found = [i for p in files for i in looked_at(p, lambda p=p: kind(p))]
    found += [
        i
        for folder in sorted(bundles)
        for i in looked_at(folder / bundle.MANIFEST, lambda f=folder: bundle.inputs(f, bundles[f]))
    ]
    found += [
        i
        for folder in sorted(incidents)
        for i in looked_at(folder / bundle.INCIDENT_METADATA, lambda f=folder: bundle.incident_inputs(f))
    ]
    return [(d, "journal-dir") for d in sorted(journal_dirs)] + found


def not_a_log(path: Path, root: Path | None = None) -> str | None:
    """Why a walk of the folder ``root`` passes over ``path``, or None when it is read: a link to
    nothing; a named pipe, socket or device (reading one may never end); a link to a file outside
    ``root`` (a folder from elsewhere must not pull in other files of this machine; Kubernetes'
    ``/var/log/containers`` links to pod logs are followed; without ``root``, outside the link's own
    folder); a name that says it is no log; an archive (``archives.kind``: unpacked only when named)."""
    if not path.exists():
        return f"{path}: a link to nothing"
    kind = _special_kind(path)
    if kind:
        return f"{path}: a {kind} inside a folder is not read (it may never end; name it on the command line to read it)"
    if path.is_symlink() and not containers.CONTAINERS_LINK.search(str(path)):
        target = Path(os.path.realpath(path))
        if not target.is_relative_to(os.path.realpath(root if root is not None else path.parent)):
            return f"{path}: a link to {target}, outside the folder given: not read (name it on the command line to read it)"
    suffix = ".tar.gz" if path.name.endswith(".tar.gz") else path.suffix.lower()
    if suffix in NOT_LOGS:
        return f"{path}: a {suffix} file is not a log (name it on the command line to read it)"
    if what := archives.kind(path):  # by its bytes, whatever its name
        return f"{path}: a {what} archive inside a folder is not unpacked (name it on the command line to read it)"
    return containers.not_a_log(path)


def _special_kind(path: Path) -> str | None:
    """``named pipe``, ``socket`` or ``device`` when ``path`` (followed) is one, else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def _walk(path: Path, problems: list[tuple[Path, str]]) -> list[Path]:
    """Files below ``path`` but hidden ones (a name or folder starting with ``.``), following links
    to folders; a folder reached twice (a link loop, two links to one place) is read once. Iterative:
    any depth. A folder that cannot be listed (permission denied) is added to ``problems``."""
    files, visited, todo = [], set(), [path]
    while todo:
        folder = todo.pop()
        try:
            st = folder.stat()  # the folder's identity (not realpath: that costs a lstat per level)
            if (st.st_dev, st.st_ino) in visited:
                continue
            visited.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = sorted((e.name, e.is_dir()) for e in it if not e.name.startswith("."))
        except OSError as e:
            problems.append(
                (folder, f"{folder}: a folder that cannot be listed: {e.strerror or e}: not read")
            )
            continue
        files += [folder / name for name, is_dir in entries if not is_dir]
        todo += [folder / name for name, is_dir in reversed(entries) if is_dir]
    return files


# What SeenEntries knows a journal entry by: a 64-bit hash of its receive time, boot id, pid and message.
ENTRY_KEY = pl.struct("ts", "boot_id", "pid", "message").hash()


class AlreadyIngested(ValueError):
    """An input to be added with ``--append`` holds journal entries OUT already has."""


class SeenEntries:
    """Records an earlier input of the same ingest already gave.

    A journal folder given together with an ``-o export`` or ``-o json`` capture of it (or with the
    export it was built from by systemd-journal-remote, or two captures of one journal) holds the
    same entries twice: those are read once. An entry is known by its receive time
    (``__REALTIME_TIMESTAMP``, µs), boot id, pid and ``MESSAGE``: fields every journald format
    carries unchanged (cursors are not: a journal rebuilt by systemd-journal-remote numbers its
    entries anew), and that two distinct entries cannot share, since journald stamps each entry as
    it stores it. Records without a time (a line that was not a whole entry) are never dropped.

    A plain log or a short capture holding the same lines as a journal (``router.log`` beside the
    router unit's journal), or two copies of one log, cannot be matched entry for entry: two access
    lines may be equal. Such an input is a copy when at least ``COPY_SHARE`` of the records of its first
    chunk (and at least 10) have the text of an earlier input's records: then each of its records is
    skipped while an earlier input holds that text more times than this input has used it (counted once
    wherever it comes from), and a note says how many. Otherwise its records are kept, and a note says
    how many lines (when at least 10 and a tenth of the input) have the text of another input's lines.

    With ``--append``, ``in_output`` gives the keys of the single-line journal records OUT already
    holds (loaded when a journald input first needs them): an input holding any of them is refused
    (``AlreadyIngested``), as its multi-line records could not be matched line by line.

    Memory: 16 bytes per record (two 64-bit hashes).
    """

    def __init__(
        self,
        in_output: tuple[Path, Callable[[], np.ndarray]] | None = None,
        window: tuple[datetime | None, datetime | None] | None = None,
    ) -> None:
        self.entries: dict[str, np.ndarray] = {}  # journald input → sorted hashes of (ts, boot, pid, message)
        self.texts: dict[str, np.ndarray] = {}  # input → sorted hashes of its messages
        self.in_output = in_output
        self.window = window
        self._output_keys: np.ndarray | None = None
        self._merged_for: tuple[str, ...] = ()
        self._merged = np.empty(0, np.uint64)

    def unseen(
        self, chunks: Iterable[pl.DataFrame], report: SourceReport, *, journald: bool
    ) -> Iterator[pl.DataFrame]:
        """``chunks`` (record frames of one input); for a journald format (``journald``: journal,
        export, json) without the entries an earlier journald input gave. Notes on ``report`` say
        how many were skipped, and how many of its lines have the text of another input's lines."""
        entries, texts = [], []
        dropped, same_text = dict.fromkeys(self.entries, 0), dict.fromkeys(self.texts, 0)
        copy: _TextCopy | None = None
        try:
            for recs in chunks:
                seen = np.zeros(recs.height, dtype=bool)
                if not journald and self.texts:
                    if copy is None:
                        copy = _TextCopy(self._earlier_texts, recs["message"].hash().to_numpy())
                    if copy.is_copy:
                        seen |= copy.take(recs["message"].hash().to_numpy())
                if journald:
                    timed = recs["ts"].is_not_null().to_numpy()
                    keys = recs.select(ENTRY_KEY).to_series().to_numpy()
                    self._refuse_if_in_output(recs, keys[timed], report)
                    for source, done in self.entries.items():
                        found = timed & ~seen & _in_sorted(keys, done)
                        dropped[source] += int(found.sum())
                        seen |= found
                    entries.append(keys[timed & ~seen])
                text = recs["message"].hash().to_numpy()[~seen]
                for source, done in self.texts.items():
                    same_text[source] += int(_in_sorted(text, done).sum())
                texts.append(text)
                yield recs.filter(pl.Series(~seen)) if seen.any() else recs
        finally:
            if hasattr(chunks, "close"):
                chunks.close()  # a refusal stops the reader (and journalctl) now, not at exit
        if journald:
            self.entries[report.source] = _sorted(entries)
        self.texts[report.source] = _sorted(texts)
        for source, n in dropped.items():
            if n:
                report.notes.append(
                    f"{n:,} entries already read from {source} (same time, boot, pid and message): skipped"
                )
        if copy is not None and copy.skipped:
            others = ", ".join(k for k, t in self.texts.items() if len(t) and k != report.source)
            report.notes.append(
                f"{copy.skipped:,} of its lines are also in {others}, word for word: a copy, skipped (counted once)"
            )
        lines = sum(len(t) for t in texts)
        for source, n in same_text.items():
            if copy is not None and copy.is_copy:
                continue
            if n >= max(10, lines // 10):  # a few equal lines (a blank one, a banner) are no copy
                report.notes.append(
                    f"{n:,} of its lines are also in {source}, word for word: the same lines counted twice? "
                    "give one of the two"
                )

    def _earlier_texts(self) -> np.ndarray:
        """The sorted text hashes of every input read so far (merged once per new input)."""
        if self._merged_for != tuple(self.texts):
            self._merged_for, self._merged = tuple(self.texts), _sorted(list(self.texts.values()))
        return self._merged

    def _refuse_if_in_output(self, recs: pl.DataFrame, keys: np.ndarray, report: SourceReport) -> None:
        """Raise ``AlreadyIngested`` when OUT holds any of ``keys`` (of the timed ``recs``) inside
        ``--since/--until``: journalctl reads a minute wider, and those extra entries (cut later, per
        record) may be what OUT already holds from the window before."""
        if self.in_output is None:
            return
        if self.window:
            timed = recs.filter(pl.col("ts").is_not_null())
            keys = keys[timed.select(in_window(self.window).fill_null(False)).to_series().to_numpy()]
        out, load = self.in_output
        if self._output_keys is None:
            self._output_keys = load()
        n = int(_in_sorted(keys, self._output_keys).sum())
        if n:
            raise AlreadyIngested(
                f"{report.source}: {n:,} of its first {len(keys):,} entries are already in {out} (an earlier "
                "ingest read them); --append would count them twice: ingest the journal and its captures "
                "together, without --append"
            )


def in_window(window: tuple[datetime | None, datetime | None]) -> pl.Expr:
    """Is ``ts`` inside ``(since, until)`` (either may be None: open)? Null where ``ts`` is null."""
    since, until = window
    inside = pl.lit(True)
    if since:
        inside = inside & (pl.col("ts") >= since)
    if until:
        inside = inside & (pl.col("ts") <= until)
    return inside


def _sorted(parts: list[np.ndarray]) -> np.ndarray:
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)


COPY_SHARE = 0.9  # of a first chunk's records found in earlier inputs: the input is a copy of them


class _TextCopy:
    """Whether a text input copies earlier inputs' lines (judged on its first chunk), and which of its
    records to skip: a text is skipped as many times as the earlier inputs hold it, no more."""

    def __init__(self, earlier: Callable[[], np.ndarray], first: np.ndarray) -> None:
        self.earlier = earlier() if len(first) >= 10 else np.empty(0, np.uint64)
        self.is_copy = len(first) >= 10 and _in_sorted(first, self.earlier).mean() >= COPY_SHARE
        self.used = pl.DataFrame(schema={"h": pl.UInt64, "used": pl.UInt32})  # records skipped per text
        self.skipped = 0

    def take(self, hashes: np.ndarray) -> np.ndarray:
        """The records of ``hashes`` (one chunk, in order) to skip: a text's n-th record here (after the
        ones skipped in earlier chunks) while the earlier inputs hold it more than n times."""
        held = np.searchsorted(self.earlier, hashes, "right") - np.searchsorted(self.earlier, hashes, "left")
        rows = (
            pl.DataFrame({"h": hashes, "held": held.astype(np.uint32)})
            .join(self.used, on="h", how="left", maintain_order="left")
            .with_columns(
                (pl.int_range(pl.len(), dtype=pl.UInt32).over("h") + pl.col("used").fill_null(0)).alias("n")
            )
            .with_columns((pl.col("n") < pl.col("held")).alias("skip"))
        )
        taken = rows.filter("skip").group_by("h").agg(pl.len().cast(pl.UInt32).alias("more"))
        self.used = self.used.join(taken, on="h", how="full", coalesce=True).select(
            "h", (pl.col("used").fill_null(0) + pl.col("more").fill_null(0)).alias("used")
        )
        skip = rows["skip"].to_numpy()
        self.skipped += int(skip.sum())
        return skip


def _in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


STREAM_CAP_ENV = "LOGCORR_STREAM_CAP"
STREAM_CAP = 2 << 30  # bytes of a pipe or device spooled at most, unless $LOGCORR_STREAM_CAP says more


class StreamTooLong(OSError):
    """A pipe or device gave more than the stream cap; ``strerror`` names the cap and how to raise it."""


def stream_cap() -> int:
    """The byte cap on a spooled stream: ``$LOGCORR_STREAM_CAP`` (bytes, a suffix K/M/G allowed) or
    ``STREAM_CAP`` (2 GiB). Raises ``ValueError`` naming the variable when it is not a size."""
    given = os.environ.get(STREAM_CAP_ENV, "")
    text = given.strip().upper()
    if not text:
        return STREAM_CAP
    m = re.fullmatch(r"(\d+)([KMG]?)I?B?", text)
    if not m:
        raise ValueError(
            f"${STREAM_CAP_ENV}={given!r}: not a size; give bytes, with K, M or G if you like (8G), or unset it"
        )
    return int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2]]


def spool(path: Path, into: Path) -> Path:
    """Copy a stream that can be read only once (a named pipe, ``<(…)`` process substitution, a
    device) into the folder ``into``, so it can be sniffed and then read. Returns the copy's path.

    Raises ``StreamTooLong`` (an ``OSError``; the copy removed) when the stream gives more than
    ``stream_cap()`` bytes: ``/dev/zero`` would otherwise fill the disk."""
    cap = stream_cap()
    target = into / f"stream-{abs(hash(str(path)))}"
    written = 0
    with open(path, "rb", buffering=0) as src, open(target, "wb") as dst:
        while True:
            # wait at most a second at a time: a signal taken by another thread (a SIGTERM) is then
            # handled here too, instead of after a writer that may never write again
            if not select.select([src], [], [], 1.0)[0]:
                continue
            block = src.read(min(CHUNK_BYTES, cap + 1 - written))
            if not block:
                break
            dst.write(block)
            written += len(block)
            if written > cap:
                break
    if written > cap:
        target.unlink()
        raise StreamTooLong(
            errno.EFBIG,
            f"not read: the stream gave more than {cap:,} bytes (set ${STREAM_CAP_ENV}=BYTES to read "
            "a longer one, or save it to a file and name the file)",
        )
    return target


_LAYERS: dict[
    Path, tuple[Path, int]
] = {}  # an unpacked file → (the file given, bytes it may still unpack to)
_PIECE = 1 << 20


def _inflate(d, data: bytes, fmt: str) -> Iterator[bytes]:
    """What ``data`` unpacks to, in pieces of at most 1 MiB (a bomb never sits whole in memory).
    Raises ``packed.Damaged`` where the data is damaged."""
    if fmt == "gz":
        while data:
            yield d.decompress(data, _PIECE)
            data = d.unconsumed_tail
        return
    yield d.decompress(data, max_length=_PIECE)
    while not d.eof and not d.needs_input:
        yield d.decompress(b"", max_length=_PIECE)


def unpack(path: Path, into: Path, fmt: str) -> tuple[Path, str | None]:
    """Decompress a ``packed.COMPRESSED`` file (``gz``, ``xz``, ``bz2``, ``zst``: a compressed journal,
    a rotated ``router.log.1.gz``; concatenated streams too) into the folder ``into``, streaming, 1 MiB
    at a time. Returns the new file's path, and an error text when the data ends early or is damaged
    part way (what came before is kept, as for a cut log).

    Raises ``InputError`` when not a byte of it can be unpacked, when it unpacks to more than
    ``UNPACK_RATIO`` times its size (and ``UNPACK_FLOOR``): a decompression bomb is not read at all,
    or when it is zstd and Python's ``zstandard`` module is not installed."""
    suffix = "." + fmt
    target = into / (
        path.name.removesuffix(suffix) if path.name.endswith(suffix) else path.name + ".unpacked"
    )
    # a packed file inside a packed file shares the outer file's bound (what is left of it): the bound
    # is on the total written, whatever the layers; and a refusal names the file the user gave
    given, limit = _LAYERS.pop(path, (path, max(UNPACK_FLOOR, UNPACK_RATIO * path.stat().st_size)))
    try:
        d = packed.decompressor(fmt)
    except packed.MissingModule as e:
        raise InputError(f"{given}: a {fmt} file: not read: {e}") from None
    fed, error, written = False, None, 0
    try:
        with open(path, "rb") as src, open(target, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                data = block
                while data:
                    try:
                        for piece in _inflate(d, data, fmt):
                            dst.write(piece)
                            written += len(piece)
                            if written > limit:
                                raise InputError(
                                    f"{given}: not read: it unpacks to over {UNPACK_RATIO} times its size (more "
                                    f"than {limit:,} bytes): a decompression bomb, not a log (unpack it yourself "
                                    "and name the file if it is one)"
                                )
                    except packed.Damaged as e:
                        error = str(e)
                        break
                    fed, data = True, b""
                    if d.eof:  # the next stream of a concatenated file, if any (not zero padding)
                        d, fed, data = packed.decompressor(fmt), False, d.unused_data.lstrip(b"\0")
                if error:
                    break
    except BaseException:  # a full TMPDIR, an interrupt: no partial copy left taking its room
        target.unlink(missing_ok=True)
        raise
    if error is None and fed and not d.eof:
        error = "the data ends early (cut short)"
    size = target.stat().st_size
    _LAYERS[target] = (given, limit - written)
    if error and size == 0:
        raise InputError(f"{given}: not readable as {fmt}: {error}")
    return target, f"{given}: unpacked {size:,} bytes, then: {error} (the rest is lost)" if error else None


_HOST_IN_HEAD = re.compile(rb'(?m)(?:^_HOSTNAME=|"_HOSTNAME"\s*:\s*")([A-Za-z0-9][A-Za-z0-9._-]{0,252})')


def hosts_in(path: Path, fmt: str) -> set[str]:
    """The host names the data of one input says it came from (journald's ``_HOSTNAME``): of a
    journal folder or file (``fmt`` "?" sniffed first) through ``journalctl -F _HOSTNAME``, since a
    journal file's field values lie past its hash tables, far beyond its head; of an export or json
    capture (packed or not) from its first 64 KiB; of a short capture from its lines' host field. Empty
    for logs that do not name their host (plain SGLang logs, py-spy dumps) or that cannot be read; of a
    bundle's files the host its manifest names; of an SGLang crash dump its folder's name. Never raises."""
    if fmt in bundle.FORMATS:  # a logcorr collect bundle names its host in its manifest
        return bundle.hosts(path, fmt)
    try:
        if fmt == "?" and path.is_file():  # not a pipe: that is read once, by the ingest
            fmt = sniff(path)
        if fmt == "journal-dir" or (fmt == "journal" and shutil.which("journalctl")):
            return {h for h in journalctl(path, "-F", "_HOSTNAME").stdout.splitlines() if h}
        if not path.is_file():
            return set()
        if fmt == dumps.FORMAT:  # a crash dump sits in <crash folder>/<host>/
            return {path.parent.name} if dumps.CRASH_NAME.search(path.name) else set()
        first = head(path, fmt)
    except (OSError, InputError, subprocess.SubprocessError):
        return set()
    if fmt == "short":
        short = re.compile(journald.SHORT_LINE)
        lines = first.decode("utf-8", errors="replace").splitlines()[:200]
        return {m["host"] for ln in lines if (m := short.match(ln))}
    return {m.decode() for m in _HOST_IN_HEAD.findall(first)}


# A file this large (bytes) given to an ingest without --append has its content digest taken while it is
# read, not in a pass of its own before: a second read of a 1 GB capture was 0.7-0.9 CPU s (issue 49).
DIGEST_WHILE_READING = 64 << 20


def identity(path: Path, captured_at: datetime | None = None, *, content: bool = True) -> dict[str, object]:
    """What an input is, whatever path names it: ``dev`` and ``ino`` of the file or folder, and for a
    file ``sha256``, of its whole content, streamed (a copy of the file elsewhere has the same one; a
    log that grew since, or another of the same size and ends, has another). A bare py-spy dump given
    with ``captured_at`` (UTC) keeps that time as ``captured_at``: a stuck process dumped twice gives
    the same bytes twice, and the second round is the evidence of no progress, not a repeat.
    ``--append`` refuses an input OUT holds by either. ``{}`` when it cannot be read (the ingest says why).
    ``content=False``: no ``sha256`` (the reader takes it, ``ContentDigest``, or ``finish`` does)."""
    try:
        st = path.stat()
        ident: dict[str, object] = {"dev": st.st_dev, "ino": st.st_ino}
        if path.is_file() and content:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while block := f.read(CHUNK_BYTES):
                    h.update(block)
            ident["sha256"] = h.hexdigest()
            if captured_at is not None and sniff(path) in ("pyspy", "pyspy-json"):
                ident["captured_at"] = captured_at.isoformat()
    except OSError:
        return {}
    return ident
