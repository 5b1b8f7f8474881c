"""Readers: bytes on disk → record chunks (polars DataFrames of ``parsers.journald.RECORD_COLUMNS``).

One reader per input kind. Each streams its input in bounded chunks and never holds a whole file:
- a journal directory or ``.journal`` file through ``journalctl … -o export`` (a subprocess whose pipe
  is read on a thread while the main thread parses the previous chunk);
- captures users attach: ``journalctl -o export``, ``-o json``, ``-o short-iso[-precise]``,
  ``-o short-unix``;
- plain SGLang logs (stdout to a file, ``docker compose logs`` with ``name  | `` prefixes), py-spy
  dumps and router logs: one record per line (re-joined later);
- container runtimes' logs (Docker json-file, CRI, kubectl, stern, log platform exports): ``containers``.
Formats are detected from content (``sniff``), not from file names.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from logcorr import containers
from logcorr.parsers import journald
from logcorr.parsers.prefix import HEADER_START
from logcorr.parsers.roles import role_from_text
from logcorr.parsers.server_args import LAUNCH
from logcorr.schema import UTC_US
from logcorr.threads import ahead

CHUNK_BYTES = 16 << 20
MAX_LINE_BYTES = 16 << 20  # a longer "line" is no log line (a binary, a bomb): kept in pieces
LINE_PIECE = "a line over {mib} MiB, kept in pieces: this is one"
JOURNAL_ONLY_FOR_UNITS = ("_CMDLINE", "_COMM", "SYSLOG_IDENTIFIER")
# A journal whose last UNIT_SAMPLE entries are at least READ_THROUGH_SHARE of the chosen units is read
# without journalctl --unit matches (see read_journal).
UNIT_SAMPLE = 5000
READ_THROUGH_SHARE = 0.8
# An ISO --since/--until window is read this much wider from a journal, then cut per record.
WINDOW_MARGIN = timedelta(seconds=60)
JOURNAL_MAGIC = b"LPKSHHRH"
XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
# A unit is an SGLang engine or router when its name, command line or process name says so.
SGLANG_UNIT = re.compile(r"sglang|sgl[-_]|prefill|decode|router|model[-_]gateway|\bsmg\b", re.IGNORECASE)
SGLANG_PROCESS = re.compile(r"sglang|sgl_router|sgl-router|sgl-model-gateway|\bsmg\b", re.IGNORECASE)
MACHINE_ID = re.compile(r"[0-9a-f]{32}")
# Files a folder walk passes over: their names say they are no log (a file named itself is read).
NOT_LOGS = frozenset(
    ".md .rst .html .htm .css .js .py .pyc .ipynb .sh .toml .yaml .yml .ini .cfg .sql .parquet .duckdb"
    " .csv .png .jpg .jpeg .gif .svg .pdf .zip .tgz .tar.gz .whl .so .markdown".split()
)
CAPTURE_FORMATS = "journalctl -o export, -o json, -o short-iso, -o short-iso-precise, -o short-unix"


class InputError(Exception):
    """An input could not be read at all; the message names the input and the reason."""


@dataclass
class SourceReport:
    """What was read from one input: the row of the ``sources`` table, plus notes for the summary."""

    source: str
    format: str
    bytes: int = 0
    records: int = 0
    unparsed: int = 0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unread: bool = False  # nothing of it could be read: missing, permission denied, refused by journalctl
    zoneless: int = 0  # records whose only time is one printed without a zone (read as UTC)


@dataclass
class ReadOptions:
    """Options passed through to journalctl and used for unit selection and roles."""

    units: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    all_units: bool = False
    roles: dict[str, str] = field(default_factory=dict)


def sniff(path: Path) -> str:
    """Detect the format of one file from its first 64 KiB.

    Returns one of ``journal`` (binary journal file), ``xz`` or ``gz`` (compressed file), ``export``,
    ``json``, ``short`` (journalctl short-iso/short-iso-precise/short-unix), a container format
    (``containers.FORMATS``: ``docker-json``, ``cri``, ``kubectl``, ``stern``, ``log-export``),
    ``pyspy-json``, ``pyspy``, ``text`` (plain SGLang or router log), or ``empty``.
    Raises ``OSError`` when the file cannot be opened.
    """
    with open(path, "rb") as f:
        return sniff_bytes(f.read(65536))


def sniff_bytes(head: bytes) -> str:
    """``sniff`` of the first bytes of an input (64 KiB is what ``sniff`` reads); never raises."""
    head = head.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark says nothing of the format
    if not head.strip():
        return "empty"
    if head.startswith(JOURNAL_MAGIC):
        return "journal"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(GZIP_MAGIC):
        return "gz"
    text = head.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines()[:200] if ln.strip()]
    if re.match(r"(?s)\s*(?:\S[^\n]*\n){0,5}?\s*\[\s*\{\s*\"(?:pid|thread_id|frames)\"", text):
        return "pyspy-json"
    if re.search(r"(?m)^__CURSOR=|^__REALTIME_TIMESTAMP=\d+$", text):
        return "export"
    if lines and sum(ln.startswith('{"log":') for ln in lines) >= max(1, len(lines) // 2):
        return containers.sniff_lines(lines) or "text"  # Docker json-file: its log may hold "__
    if lines and sum(ln.lstrip().startswith('{"') and '"__' in ln for ln in lines) >= max(1, len(lines) // 2):
        return "json"
    short = re.compile(journald.SHORT_LINE)
    if lines and sum(bool(short.match(ln)) for ln in lines) >= max(1, len(lines) // 2):
        return "short"
    if container := containers.sniff_lines(lines):
        return container
    if re.search(
        r"(?m)^(?:Process \d+: |Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active))", text
    ) and not re.search(r"(?m)^\[\d{4}-\d\d-\d\d", text):
        return "pyspy"
    return "text"


def discover(path: Path, opts: ReadOptions | None = None) -> list[tuple[Path, str]]:
    """Expand one PATH argument into ``(path, format)`` inputs.

    A folder holding ``*.journal`` files, directly or in machine-id subfolders as /var/log/journal
    does, is one ``journal-dir`` input read by journalctl; every other file below PATH is sniffed on
    its own (so a folder with a journal, captures and dumps side by side is read whole), but for
    files whose suffix says they are no log (``NOT_LOGS``: documents, code, images, tables; format
    ``skipped``), hidden files and folders (``.git``) and logcorr output folders (a ``manifest.json``
    beside ``events/``) found inside, Docker's metadata files, and container logs of pods that do not
    look like SGLang (``containers.skip_pod``, by ``opts``: ``/var/log/pods`` of a whole node). Links
    to folders are followed (each folder once). A file named itself is always read.
    Raises ``InputError`` when the path does not exist or a folder holds nothing readable.
    """
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if not path.is_dir():
        return [(path, "?")]
    below = _walk(path)
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
    files = sorted(p for p in below if not any(d in p.parents for d in journal_dirs | outputs))
    if not journal_dirs and not files:
        raise InputError(f"{path}: skipped, the folder holds no journal files and no logs")
    opts = opts or ReadOptions()
    found = [(p, "skipped" if not_a_log(p) or containers.skip_pod(p, opts) else "?") for p in files]
    return [(d, "journal-dir") for d in sorted(journal_dirs)] + found


def not_a_log(path: Path) -> str | None:
    """Why a folder walk passes over ``path`` (its name says it is no log, or it is a link to
    nothing), or None when it is read."""
    if not path.exists():
        return f"{path}: a link to nothing"
    suffix = ".tar.gz" if path.name.endswith(".tar.gz") else path.suffix.lower()
    if suffix in NOT_LOGS:
        return f"{path}: a {suffix} file is not a log (name it on the command line to read it)"
    return containers.not_a_log(path)


def _walk(path: Path) -> list[Path]:
    """Files below ``path`` but hidden ones (a name or folder starting with ``.``), following links
    to folders; a folder reached twice (a link loop, two links to one place) is read once."""
    files, visited = [], set()
    for root, dirs, names in os.walk(path, followlinks=True):
        real = os.path.realpath(root)
        if real in visited:
            dirs[:] = []
            continue
        visited.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files += [Path(root) / n for n in names if not n.startswith(".")]
    return files


def _char_boundary(data: bytes, at: int) -> int:
    """The largest cut ``<= at`` that does not split a UTF-8 character."""
    while at > 0 and data[at] & 0xC0 == 0x80:
        at -= 1
    return at or len(data)


def _lines_chunks(path: Path, first_line: int = 1) -> Iterator[tuple[pl.Series, int, bool]]:
    """Yield ``(lines, first_line_number, is_piece)`` chunks of a text file, cut at line ends, bytes decoded
    as UTF-8 with replacement, NUL bytes and carriage returns at line ends removed. A carriage
    return no newline follows ends a line too (tqdm-style progress, old Mac files), and a UTF-8
    byte order mark at the start is dropped. A line longer than ``MAX_LINE_BYTES`` is yielded in
    pieces of that size (``is_piece`` True), each numbered as the line, never whole in memory."""
    line_no = first_line
    with open(path, "rb") as f:
        rest = f.read(3)
        rest = rest.removeprefix(b"\xef\xbb\xbf")
        while True:
            block = f.read(CHUNK_BYTES)
            data = rest + block
            if b"\r" in data:
                held = data.endswith(b"\r") and bool(block)  # its newline may open the next block
                data = data[:-1] if held else data
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
            if not block:
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0 and len(data) <= MAX_LINE_BYTES:  # one very long line: keep reading
                    rest = data
                    continue
                if cut == 0:  # longer than any log line: kept in pieces, each numbered as the line
                    cut = _char_boundary(data, MAX_LINE_BYTES)
                    piece, rest = data[:cut], data[cut:]
                    yield journald.split_lines(piece + b"\n"), line_no, True
                    continue
            piece, rest = data[:cut], data[cut:]
            if piece:
                lines = journald.split_lines(piece)
                if b"\x00" in piece:
                    lines = lines.str.replace_all("\x00", "", literal=True)
                yield lines, line_no, False
                line_no += len(lines)
            if not block:
                return


def read_text(path: Path, fmt: str, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of a text file: ``json`` / ``short`` captures, or one record per line for ``text``,
    ``pyspy`` and ``pyspy-json`` (``ts`` null there; the line's own time is read later).

    A ``docker compose logs`` prefix (``name  | ``) is stripped and its name kept in ``stream``.
    """
    compose = None
    pieces = 0
    for lines, first, piece in _lines_chunks(path):
        if compose is None and fmt not in ("json", "short"):
            compose = has_compose_prefix(lines)
        report.bytes += int(lines.str.len_bytes().sum() or 0) + len(lines)
        records = text_records(lines, fmt, report.source, first, compose=bool(compose))
        if piece:
            pieces += 1
            records = records.with_columns(
                pl.lit(LINE_PIECE.format(mib=MAX_LINE_BYTES >> 20)).alias("entry_error")
            )
        yield records
    if pieces:
        report.notes.append(
            f"{pieces} piece(s) of {MAX_LINE_BYTES >> 20} MiB cut from lines longer than that"
        )


# Text around a log line that is not the log's: markdown residue of a paste (a leading backtick or
# `**`, their closing pair), a log platform's `<epoch-ms>\t<ISO>\t` export envelope, a `docker compose
# logs` service prefix, a Ray/vLLM worker prefix `(Worker_DP1_TP0 pid=N)`.
MARKDOWN_OPEN = r"^(?:`{1,3}|\*\*)(?P<c>\S)"
MARKDOWN_CLOSE = r"(?:\*\*|`{1,3})\s*$"
TSV_ENVELOPE = r"^(?P<ms>\d{12,13})\t(?P<iso>\d{4}-\d\d-\d\dT[^\t]*)\t(?P<rest>.*)$"
COMPOSE_PREFIX = r"^(?P<svc>[\w.-]+)\s*\| ?(?P<rest>.*)$"
COMPOSE_START = r"^[\w.-]+\s*\| "  # the same prefix, when a line carries one
WORKER_PREFIX = r"^\((?P<worker>[A-Za-z]\w*) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\) (?P<rest>.*)$"


def _strip_markdown(line: pl.Expr) -> pl.Expr:
    """A paste's markdown residue off a line that is a log line underneath: a leading backtick or
    ``**`` and the closing ``**`` or unpaired backtick at its end, only when what they wrap starts
    with a known header or a compose prefix (any other line is kept exactly as it is)."""
    opened = line.str.contains(MARKDOWN_OPEN)
    body = line.str.replace(MARKDOWN_OPEN, "${c}")
    unpaired = (body.str.count_matches("`") % 2 == 1) | (opened & body.str.contains(r"\*\*\s*$"))
    unwrapped = pl.when(unpaired).then(body.str.replace(MARKDOWN_CLOSE, "")).otherwise(body)
    looks_like_log = unwrapped.str.contains(HEADER_START) | unwrapped.str.contains(COMPOSE_START)
    return pl.when((opened | unpaired) & looks_like_log).then(unwrapped).otherwise(line)


def has_compose_prefix(lines: pl.Series) -> bool:
    """Do half or more of the first 200 non-blank lines carry a ``docker compose logs`` prefix
    (``name  | ``), markdown residue and export envelopes aside?"""
    sample = lines.head(200).drop_nulls()
    sample = pl.select(_strip_markdown(pl.lit(sample)).str.replace(TSV_ENVELOPE, "$rest")).to_series()
    sample = sample.filter(sample.str.strip_chars() != "")
    hits = int(sample.str.contains(COMPOSE_START).sum())
    return hits >= 1 and hits * 2 >= len(sample)


def text_records(lines: pl.Series, fmt: str, source: str, first: int, *, compose: bool) -> pl.DataFrame:
    """One reader record per line of ``lines`` (a String Series of one chunk, line ``first`` first),
    in ``journald.RECORD_COLUMNS``: journalctl ``json``/``short`` captures parsed as such, any other
    text one record per line, its envelope taken off (``MARKDOWN_*``, ``TSV_ENVELOPE`` whose epoch-ms
    becomes ``ts`` (UTC), the compose service when ``compose`` (→ ``unit``), ``WORKER_PREFIX`` (→
    ``unit`` and ``pid``)); ``ts`` null otherwise (the line's own time is read later); ``stream`` =
    the source plus the service or worker. ``source_pos`` is ``line N``."""
    if fmt == "json":
        return journald.parse_json_lines(lines, source=source, first_line=first)
    if fmt == "short":
        return journald.parse_short_lines(lines, source=source, first_line=first)
    frame = pl.DataFrame({"line": lines}).with_columns(journald.clean_text(pl.col("line")).alias("line"))
    frame = frame.with_columns(_strip_markdown(pl.col("line")).alias("line"))
    tsv = pl.col("line").str.extract_groups(TSV_ENVELOPE)
    frame = frame.with_columns(tsv.alias("t")).with_columns(
        pl.coalesce(pl.col("t").struct.field("rest"), pl.col("line")).alias("line"),
        pl.from_epoch(pl.col("t").struct.field("ms").cast(pl.Int64, strict=False), time_unit="ms")
        .dt.replace_time_zone("UTC")
        .cast(UTC_US)
        .alias("ts"),
    )
    if compose:
        parts = pl.col("line").str.extract_groups(COMPOSE_PREFIX)
        frame = frame.with_columns(parts.alias("p")).with_columns(
            pl.coalesce(pl.col("p").struct.field("rest"), pl.col("line")).alias("line"),
            pl.col("p").struct.field("svc").alias("svc"),
        )
    else:
        frame = frame.with_columns(pl.lit(None, pl.String).alias("svc"))
    worker = pl.col("line").str.extract_groups(WORKER_PREFIX)
    frame = frame.with_columns(worker.alias("w")).with_columns(
        pl.coalesce(pl.col("w").struct.field("rest"), pl.col("line")).alias("line"),
        pl.coalesce(pl.col("svc"), pl.col("w").struct.field("worker")).alias("svc"),
        pl.col("w").struct.field("pid").cast(pl.Int32, strict=False).alias("pid"),
    )
    return frame.with_row_index("n", offset=first).select(
        pl.col("ts"),
        pl.lit(None, pl.String).alias("host"),
        pl.lit(None, pl.String).alias("boot_id"),
        pl.col("svc").alias("unit"),
        pl.col("pid"),
        pl.col("line").alias("message"),
        pl.lit(source).alias("source"),
        pl.format("line {}", pl.col("n")).alias("source_pos"),
        pl.concat_str([pl.lit(source), pl.col("svc"), pl.col("pid")], separator="|", ignore_nulls=True).alias(
            "stream"
        ),
        pl.lit(None, pl.String).alias("cmdline"),
        pl.lit(None, pl.String).alias("comm"),
        pl.lit(None, pl.String).alias("entry_error"),
    )


def read_export_file(path: Path, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of a ``journalctl -o export`` capture file, streamed in chunks cut between entries."""
    with open(path, "rb") as f:
        yield from _export_chunks(iter(lambda: f.read(CHUNK_BYTES), b""), report.source, report)


def _safe_cut(buf: bytes) -> int:
    """Index just after the last entry separator (blank line) that is not inside a binary field."""
    spans, pos = [], 0
    while m := journald._BINARY_FIELD.search(buf, pos):
        size_at = m.end()
        if size_at + 8 > len(buf):
            spans.append((m.start(), len(buf)))
            break
        size = int.from_bytes(buf[size_at : size_at + 8], "little")
        end = size_at + 8 + size
        if (end < len(buf) and buf[end : end + 1] != b"\n") or size > journald.MAX_FIELD_BYTES:
            pos = size_at  # a damaged length prefix: not a span (parse_export keeps it as damaged)
            continue
        spans.append((m.start(), end))
        pos = end + 1
    cut = buf.rfind(b"\n\n")
    while cut >= 0 and any(a <= cut < b for a, b in spans):
        start = next(a for a, b in spans if a <= cut < b)
        cut = buf.rfind(b"\n\n", 0, start)
    return cut + 2 if cut >= 0 else 0


def _export_chunks(blocks: Iterator[bytes], source: str, report: SourceReport) -> Iterator[pl.DataFrame]:
    rest, entries = b"", 0  # entries so far: "entry N" for an entry without a cursor
    for block in blocks:
        report.bytes += len(block)
        buf = rest + block
        cut = buf.rfind(b"\n\n") + 2  # fast guess; wrong only when a binary field spans it
        if cut == 1:
            rest = buf
            continue
        try:
            df = journald.parse_export(buf[:cut], source=source, whole=True, first_entry=entries)
        except journald.CutInsideBinaryField:
            cut = _safe_cut(buf)
            if cut == 0:
                rest = buf
                continue
            df = journald.parse_export(buf[:cut], source=source, first_entry=entries)
        rest = buf[cut:]
        entries += df.height
        yield df
    if rest.strip():
        yield _cut_entry(rest, source, entries)


def _cut_entry(rest: bytes, source: str, first_entry: int) -> pl.DataFrame:
    """The entries after the last blank line of a capture. Without a blank line after it, the last
    entry was cut short (a capture copied while written, a truncated upload): it is kept, with
    ``entry_error`` saying so, and a cut ``__REALTIME_TIMESTAMP`` line is not read as its time (a few
    digits of it would put the entry in 1970)."""
    df = journald.parse_export(rest, source=source, first_entry=first_entry)
    if rest.endswith(b"\n\n") or df.height == 0:
        return df
    last_line = rest[rest.rfind(b"\n", 0, len(rest) - 1) + 1 :]
    cut_time = not rest.endswith(b"\n") and last_line.startswith(b"__REALTIME_TIMESTAMP=")
    note = "the capture ends inside this entry (cut short" + (f": {last_line.decode()})" if cut_time else ")")
    last = pl.int_range(pl.len()) == pl.len() - 1
    error = pl.concat_str([pl.col("entry_error"), pl.lit(note)], separator="; ", ignore_nulls=True)
    return df.with_columns(
        pl.when(last).then(error).otherwise(pl.col("entry_error")).alias("entry_error"),
        pl.when(last & cut_time).then(None).otherwise(pl.col("ts")).alias("ts"),
    )


def journalctl_path() -> str:
    """Path of journalctl, or raise ``InputError`` naming the formats that work without it."""
    exe = shutil.which("journalctl")
    if not exe:
        raise InputError(
            "journalctl not found: install systemd (Debian: apt-get install systemd) to read binary journals, "
            f"or ingest a capture made on the host with {CAPTURE_FORMATS}"
        )
    return exe


def _journal_args(path: Path) -> list[str]:
    return ["--directory", str(path)] if path.is_dir() else ["--file", str(path)]


def _journalctl(path: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [journalctl_path(), *_journal_args(path), *args],
        check=False,
        capture_output=True,
        text=text,
        errors="replace" if text else None,
    )


def unit_role(unit: str, overrides: dict[str, str], process_text: Callable[[str], str]) -> str | None:
    """The role of a unit that looks like an SGLang engine or router, else None: from ``--role``
    (``overrides``), else the unit's name, else its ``_CMDLINE`` (``unknown`` when the command is
    SGLang's but names no role), else its ``_COMM``. ``process_text(field)`` gives the field's values
    for the unit as one text; it is asked only when the name does not decide."""
    role = overrides.get(unit) or (role_from_text(unit) if SGLANG_UNIT.search(unit) else None)
    if role:
        return role
    cmdlines = process_text("_CMDLINE")
    if SGLANG_PROCESS.search(cmdlines):
        return role_from_text(cmdlines) or "unknown"
    return "unknown" if SGLANG_PROCESS.search(process_text("_COMM")) else None


def _skipped_note(skipped: dict[str, int]) -> str:
    """``units skipped: cron.service (6 entries), … (use --unit or --all-units to read them)``."""
    listed = ", ".join(f"{u} ({n:,} entr{'y' if n == 1 else 'ies'})" for u, n in sorted(skipped.items()))
    return f"units skipped: {listed} (use --unit or --all-units to read them)"


def _count_skipped(recs: pl.DataFrame, keep: pl.Expr, skipped: dict[str, int]) -> None:
    for unit, n in recs.filter(~keep).group_by("unit").len().iter_rows():
        name = unit or "(no unit)"
        skipped[name] = skipped.get(name, 0) + n


def _chosen_note(roles: dict[str, str]) -> str:
    return "units chosen: " + ", ".join(f"{u} ({r})" for u, r in sorted(roles.items()))


NO_SGLANG_UNIT = "no unit looks like an SGLang engine or router"


def select_units(
    path: Path, opts: ReadOptions, report: SourceReport
) -> tuple[list[str], dict[str, str], list[str]]:
    """Choose the units to read from a journal and the role of each.

    Returns ``(units, roles, skipped)``. ``units`` empty means every entry. With ``opts.units`` those
    are taken as given; with ``opts.all_units`` every entry; otherwise the units that look like SGLang
    engines or routers by name, ``_CMDLINE`` or ``_COMM`` (``journalctl -F``), and every entry when
    none does; ``skipped`` names the units left out then. The choice is written to ``report.notes``
    (the skipped units by ``read_journal``, which may count their entries).
    """
    found = _journalctl(path, "-F", "_SYSTEMD_UNIT")
    units = sorted(u for u in found.stdout.splitlines() if u)
    roles: dict[str, str] = {}
    for unit in units:
        role = unit_role(
            unit, opts.roles, lambda f, u=unit: _journalctl(path, f"_SYSTEMD_UNIT={u}", "-F", f).stdout
        )
        if role:
            roles[unit] = role
    if opts.units:
        report.notes.append(f"units given: {', '.join(opts.units)}")
        return list(opts.units), roles, []
    if opts.all_units:
        report.notes.append("--all-units: every entry, with or without a unit")
        return [], roles, []
    chosen = [u for u in units if u in roles]
    if not chosen:
        report.notes.append(f"{NO_SGLANG_UNIT} ({len(units)} unit(s)): reading every entry")
        return [], roles, []
    report.notes.append(_chosen_note({u: roles[u] for u in chosen}))
    return chosen, roles, [u for u in units if u not in roles]


def of_units(units: Iterable[str]) -> pl.Expr:
    """True for the records ``journalctl --unit U`` gives for the units (systemd 252
    ``add_matches_for_unit``): the unit's own entries (``_SYSTEMD_UNIT``), systemd's messages about
    it (``UNIT``), its coredumps (``COREDUMP_UNIT``) and other daemons' messages about it
    (``OBJECT_SYSTEMD_UNIT``); a superset, as the ``_PID=1``/``_UID=0`` conditions are not checked.
    Needs the ``unit``, ``systemd_unit`` and ``about_unit`` columns of the journald parsers."""
    wanted = list(units)
    return pl.any_horizontal(
        pl.col(c).is_in(wanted).fill_null(False) for c in ("unit", "systemd_unit", "about_unit")
    )


class CaptureUnits:
    """Unit selection for a journald capture (``-o export`` or ``-o json`` file) as ``select_units``
    makes it for a journal, decided while the capture streams by.

    ``filter(recs)`` keeps the records of the chosen units: those given with ``--unit``; else every
    record with ``--all-units``; else the units whose name, or the ``_CMDLINE``/``_COMM`` of their
    entries, look like an SGLang engine or router (journald puts those fields on every entry of a
    process, so a unit is known from its first entry). Records without a unit (the kernel) go with
    the others skipped; a line that could not be read whole (``entry_error``) is always kept. When
    the first chunk shows no such unit at all, every record is kept, as for a journal where no unit
    looks like SGLang. Units are judged by ``unit_role``, as for a journal. ``notes()`` says what was chosen and skipped.
    """

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.keep_all: bool | None = True if opts.all_units else None
        self.roles: dict[str, str] = {}
        self.skipped: dict[str, int] = {}

    def filter(self, recs: pl.DataFrame) -> pl.DataFrame:
        if self.keep_all or recs.height == 0:
            return recs
        if self.opts.units:
            keep = of_units(self.opts.units)
        else:
            self._learn(recs)
            if self.keep_all is None:  # the first chunk decides: does anything look like SGLang?
                self.keep_all = not self.roles
                if self.keep_all:
                    return recs
            keep = of_units(self.roles)
        keep = keep | pl.col("entry_error").is_not_null()  # a broken line's unit is unknown: kept
        _count_skipped(recs, keep, self.skipped)
        return recs.filter(keep)

    def _learn(self, recs: pl.DataFrame) -> None:
        sglang = "(?i)" + SGLANG_PROCESS.pattern
        seen = (
            recs.filter(pl.col("unit").is_not_null() & ~pl.col("unit").is_in(list(self.roles)))
            .group_by("unit")
            .agg(  # per unit, its first SGLang-looking command line and command name, if any
                pl.col(c).filter(pl.col(c).str.contains(sglang)).first().fill_null("").alias(c)
                for c in ("cmdline", "comm")
            )
        )
        for unit, cmdline, comm in seen.iter_rows():
            text = {"_CMDLINE": cmdline, "_COMM": comm}
            if role := unit_role(unit, self.opts.roles, text.__getitem__):
                self.roles[unit] = role

    def notes(self) -> list[str]:
        """What ``filter`` chose and skipped, for the summary (``SourceReport.notes``)."""
        if self.opts.all_units:
            return ["--all-units: every entry, with or without a unit"]
        if self.opts.units:
            notes = [f"units given: {', '.join(self.opts.units)}"]
        elif self.keep_all:
            return [f"{NO_SGLANG_UNIT}: reading every entry"]
        else:
            notes = [_chosen_note(self.roles)]
        if self.skipped:
            notes.append(_skipped_note(self.skipped))
        return notes


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
    lines may be equal. Those are kept, and a note says how many lines (when at least 10 and a tenth
    of the input) have the text of another input's lines.

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
        self.texts: dict[str, tuple[bool, np.ndarray]] = {}  # input → (journald?, sorted message hashes)
        self.in_output = in_output
        self.window = window
        self._output_keys: np.ndarray | None = None

    def unseen(
        self, chunks: Iterable[pl.DataFrame], report: SourceReport, *, journald: bool
    ) -> Iterator[pl.DataFrame]:
        """``chunks`` (record frames of one input); for a journald format (``journald``: journal,
        export, json) without the entries an earlier journald input gave. Notes on ``report`` say
        how many were skipped, and how many of its lines have the text of another input's lines."""
        earlier = {src: done for src, (_, done) in self.texts.items()}
        entries, texts = [], []
        dropped, same_text = dict.fromkeys(self.entries, 0), dict.fromkeys(earlier, 0)
        try:
            for recs in chunks:
                seen = np.zeros(recs.height, dtype=bool)
                if journald:
                    timed = recs["ts"].is_not_null().to_numpy()
                    keys = recs.select(ENTRY_KEY).to_series().to_numpy()
                    self._refuse_if_in_output(keys[timed & self._in_window(recs)], report)
                    for source, done in self.entries.items():
                        found = timed & ~seen & _in_sorted(keys, done)
                        dropped[source] += int(found.sum())
                        seen |= found
                    entries.append(keys[timed & ~seen])
                text = recs["message"].hash().to_numpy()[~seen]
                for source, done in earlier.items():
                    same_text[source] += int(_in_sorted(text, done).sum())
                texts.append(text)
                yield recs.filter(pl.Series(~seen)) if seen.any() else recs
        finally:
            if hasattr(chunks, "close"):
                chunks.close()  # a refusal stops the reader (and journalctl) now, not at exit
        if journald:
            self.entries[report.source] = _sorted(entries)
        self.texts[report.source] = (journald, _sorted(texts))
        for source, n in dropped.items():
            if n:
                report.notes.append(
                    f"{n:,} entries already read from {source} (same time, boot, pid and message): skipped"
                )
        lines = sum(len(t) for t in texts)
        for source, n in same_text.items():
            if n >= max(10, lines // 10):  # a few equal lines (a blank one, a banner) are no copy
                report.notes.append(
                    f"{n:,} of its lines are also in {source}, word for word: the same lines counted twice? "
                    "give one of the two"
                )

    def _in_window(self, recs: pl.DataFrame) -> np.ndarray:
        """Entries inside ``--since/--until``: journalctl reads a minute wider, and those extra
        entries (cut later, per record) may be what OUT already holds from the window before."""
        if not self.window:
            return np.ones(recs.height, dtype=bool)
        return recs.select(in_window(self.window).fill_null(False)).to_series().to_numpy()

    def _refuse_if_in_output(self, keys: np.ndarray, report: SourceReport) -> None:
        if self.in_output is None:
            return
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


def _in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def journalctl_time(text: str, widen: timedelta = timedelta(0)) -> str:
    """``--since/--until`` for journalctl: an ISO time (``2025-10-29 21:30``, offset optional) is
    meant as UTC, like for every other input, so it is passed with an explicit ``UTC`` (journalctl
    would read it in the machine's local zone), moved by ``widen``; anything else (``yesterday``,
    ``-1h``) is passed as journalctl's own syntax (systemd.time(7))."""
    t = iso_utc(text)
    if t is None:
        return text
    t += widen
    return t.strftime("%Y-%m-%d %H:%M:%S.%f UTC" if t.microsecond else "%Y-%m-%d %H:%M:%S UTC")


def iso_utc(text: str) -> datetime | None:
    """An ISO 8601 time as an aware UTC datetime (no offset: UTC), or None when it is not one."""
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def journalctl_window(since: str | None, until: str | None) -> list[str]:
    """``--since/--until`` arguments for journalctl. When both given times are ISO times, the window
    is widened by ``WINDOW_MARGIN`` on each side: journalctl cuts between entries, so a traceback or
    dump that began just before ``--since`` would lose its first lines and one running past
    ``--until`` its last; ingest keeps the records whose first line is inside the window, as for
    every other input. journalctl's own forms are passed as they are (and cut as journalctl cuts)."""
    given = [(flag, text) for flag, text in (("--since", since), ("--until", until)) if text]
    margin = WINDOW_MARGIN if all(iso_utc(text) for _, text in given) else timedelta(0)
    return [
        arg
        for flag, text in given
        for arg in (flag, journalctl_time(text, margin if flag == "--until" else -margin))
    ]


def _unit_share(path: Path, units: list[str], window_args: list[str]) -> float:
    """Share of the chosen units' entries among the last ``UNIT_SAMPLE`` entries of the journal
    (within ``--since/--until``): 0.0 when journalctl gives none."""
    fields = "--output-fields=_SYSTEMD_UNIT,UNIT,COREDUMP_UNIT,OBJECT_SYSTEMD_UNIT"
    args = ("-o", "export", "-a", "-n", str(UNIT_SAMPLE), fields, *window_args)
    sample = _journalctl(path, *args, text=False).stdout
    recs = journald.parse_export(sample, source=str(path)) if sample else None
    if recs is None or recs.height == 0:
        return 0.0
    return float(recs.select(of_units(units).mean()).item())


def unit_cmdlines(path: Path, units: list[str]) -> list[dict]:
    """The SGLang launch command lines of a journal's ``units``, each with the first process that ran
    it: ``[{"unit", "pid", "boot_id", "host", "ts" (µs), "cmdline"}]``. Entries read from a journal
    leave ``_CMDLINE`` out (``JOURNAL_ONLY_FOR_UNITS``), so the ``config`` table gets them here:
    ``journalctl -F _CMDLINE`` (journald's field index, no entry read), then per launch command the
    first entry that carries it (``journalctl _CMDLINE=…``, stopped after one entry)."""
    found = _journalctl(path, "-F", "_CMDLINE").stdout.splitlines()
    out = []
    for cmd in (c for c in found if LAUNCH.search(c)):
        proc = subprocess.Popen(
            [
                journalctl_path(),
                *_journal_args(path),
                f"_CMDLINE={cmd}",
                "-o",
                "export",
                "--output-fields=_PID,_SYSTEMD_UNIT,_BOOT_ID,_HOSTNAME",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
        entry: dict[str, str] = {}
        try:
            for line in proc.stdout or ():
                if not line.strip():
                    break
                k, _, v = line.rstrip("\n").partition("=")
                entry[k] = v
        finally:
            proc.kill()
            proc.wait()
        if entry.get("_SYSTEMD_UNIT") in units:
            out.append(
                {
                    "unit": entry["_SYSTEMD_UNIT"],
                    "pid": int(entry["_PID"]) if entry.get("_PID", "").isdigit() else None,
                    "boot_id": entry.get("_BOOT_ID"),
                    "host": entry.get("_HOSTNAME"),
                    "ts": int(entry["__REALTIME_TIMESTAMP"])
                    if entry.get("__REALTIME_TIMESTAMP", "").isdigit()
                    else None,
                    "cmdline": cmd,
                }
            )
    return out


def read_journal(path: Path, opts: ReadOptions, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of a journal directory or ``.journal`` file through ``journalctl -o export``.

    Runs ``journalctl --directory|--file PATH -o export -a --output-fields=… [-u U…] [--since]
    [--until]``, without the ``-u`` matches when the chosen units hold most entries (``of_units``
    then chooses the same entries here, see ``_unit_share``); reads its pipe on a thread; journalctl's complaints on stderr (a truncated or
    corrupt file it skips) go to ``report.errors``. Raises ``InputError`` when journalctl is
    missing or refuses the input and gave no entry.
    """
    units, roles, skipped_units = select_units(path, opts, report)
    if roles:
        report.notes.append("roles: " + ", ".join(f"{u}={r}" for u, r in sorted(roles.items())))
    report.unit_roles = roles  # type: ignore[attr-defined]
    report.unit_cmdlines = unit_cmdlines(path, [u for u in units or roles if roles.get(u) != "router"])  # type: ignore[attr-defined]
    window_args = journalctl_window(opts.since, opts.until)
    # journalctl reads a fifth slower with --unit matches than straight through: when nearly every
    # entry is of the chosen units anyway, read straight through and choose the entries here. Units
    # given by the user may be globs or slices: those stay journalctl's.
    match = bool(opts.units) or (bool(units) and _unit_share(path, units, window_args) < READ_THROUGH_SHARE)
    args = [journalctl_path(), *_journal_args(path), "-o", "export", "-a"]
    # _CMDLINE, _COMM and SYSLOG_IDENTIFIER only serve choosing units (select_units asks for them
    # once per unit): leaving them out of every entry spares journalctl and the parser a tenth
    args.append("--output-fields=" + ",".join(f for f in journald.FIELDS if f not in JOURNAL_ONLY_FOR_UNITS))
    if match:
        for u in units:
            args += ["--unit", u]
    args += window_args
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        got, skipped = 0, {}
        keep = of_units(units) | pl.col("entry_error").is_not_null()
        try:
            blocks = ahead(iter(lambda: proc.stdout.read(CHUNK_BYTES), b""), name="logcorr-journalctl")
            for df in _export_chunks(blocks, report.source, report):
                got += df.height
                if units and not match:
                    _count_skipped(df, keep, skipped)
                    yield df.filter(keep)
                else:
                    yield df
        finally:
            if proc.poll() is None:
                proc.kill()
            rc = proc.wait()
            stderr = ""
            if not err.closed:  # closed when the interpreter tears down an abandoned reader
                err.seek(0)
                stderr = err.read().decode("utf-8", errors="replace").strip()
    if rc != 0 and got == 0:  # named as the user gave it (not the unpacked copy of an .xz), once
        raise InputError(f"{report.source}: journalctl refused it: {stderr or f'exit status {rc}'}")
    if units and not match:  # read straight through: the entries skipped are known and counted
        if skipped:
            report.notes.append(_skipped_note(skipped))
    elif skipped_units:
        report.notes.append(
            "units skipped: " + ", ".join(skipped_units) + " (use --unit or --all-units to read them)"
        )
    for line in stderr.splitlines():
        report.errors.append(f"journalctl: {line}")
    if got == 0:
        report.errors.append(
            f"{report.source}: journalctl found no entries (units or --since/--until chosen?)"
        )


def spool(path: Path, into: Path) -> Path:
    """Copy a stream that can be read only once (a named pipe, ``<(…)`` process substitution) into
    the folder ``into``, so it can be sniffed and then read. Returns the copy's path."""
    target = into / f"stream-{abs(hash(str(path)))}"
    with open(path, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, CHUNK_BYTES)
    return target


# Unpacking stops past this many times the compressed size (and past UNPACK_FLOOR bytes): logs and
# journals compress 5-50 fold; a file far beyond that is a decompression bomb, not a log.
UNPACK_RATIO = 200
UNPACK_FLOOR = 64 << 20
_PIECE = 1 << 20


def _inflate(d, data: bytes, fmt: str) -> Iterator[bytes]:
    """What ``data`` unpacks to, in pieces of at most 1 MiB (a bomb never sits whole in memory)."""
    if fmt == "gz":
        while data:
            yield d.decompress(data, _PIECE)
            data = d.unconsumed_tail
        return
    yield d.decompress(data, max_length=_PIECE)
    while not d.eof and not d.needs_input:
        yield d.decompress(b"", max_length=_PIECE)


def unpack(path: Path, into: Path, fmt: str) -> tuple[Path, str | None]:
    """Decompress an ``xz`` or ``gz`` file (a compressed journal, a rotated ``router.log.1.gz``;
    concatenated streams too) into the folder ``into``, streaming, 1 MiB at a time. Returns the new
    file's path, and an error text when the data ends early or is damaged part way (what came before
    is kept, as for a cut log).

    Raises ``InputError`` when not a byte of it can be unpacked, or when it unpacks to more than
    ``UNPACK_RATIO`` times its size (and ``UNPACK_FLOOR``): a decompression bomb is not read at all."""
    suffix, new = {"xz": (".xz", lzma.LZMADecompressor), "gz": (".gz", lambda: zlib.decompressobj(31))}[fmt]
    target = into / (
        path.name.removesuffix(suffix) if path.name.endswith(suffix) else path.name + ".unpacked"
    )
    limit = max(UNPACK_FLOOR, UNPACK_RATIO * path.stat().st_size)
    d, fed, error, written, bomb = new(), False, None, 0, False
    with open(path, "rb") as src, open(target, "wb") as dst:
        for read in iter(lambda: src.read(1 << 20), b""):
            data = read
            while data and error is None and not bomb:
                try:
                    for piece in _inflate(d, data, fmt):
                        dst.write(piece)
                        written += len(piece)
                        if written > limit:
                            bomb = True
                            break
                except (lzma.LZMAError, zlib.error) as e:
                    error = str(e)
                    break
                fed, data = True, b""
                if (
                    d.eof and error is None
                ):  # the next stream of a concatenated file, if any (not zero padding)
                    d, fed, data = new(), False, d.unused_data.lstrip(b"\0")
            if error or bomb:
                break
    if bomb:
        target.unlink()
        raise InputError(
            f"{path}: not read: it unpacks to over {UNPACK_RATIO} times its size (more than {limit:,} bytes): "
            "a decompression bomb, not a log (unpack it yourself and name the file if it is one)"
        )
    if error is None and fed and not d.eof:
        error = "the data ends early (cut short)"
    size = target.stat().st_size
    if error and size == 0:
        raise InputError(f"{path}: not readable as {fmt}: {error}")
    return target, f"{path}: unpacked {size:,} bytes, then: {error} (the rest is lost)" if error else None


_HOST_IN_HEAD = re.compile(rb'(?m)(?:^_HOSTNAME=|"_HOSTNAME"\s*:\s*")([A-Za-z0-9][A-Za-z0-9._-]{0,252})')
HEAD_BYTES = 1 << 16


def _head(path: Path, fmt: str) -> bytes:
    """The first ``HEAD_BYTES`` of a file, unpacked when it is ``xz`` or ``gz``."""
    with open(path, "rb") as f:
        if fmt not in ("xz", "gz"):
            return f.read(HEAD_BYTES)
        d = lzma.LZMADecompressor() if fmt == "xz" else zlib.decompressobj(31)
        try:
            return d.decompress(f.read(HEAD_BYTES), HEAD_BYTES)
        except (lzma.LZMAError, zlib.error):
            return b""


def hosts_in(path: Path, fmt: str) -> set[str]:
    """The host names the data of one input says it came from (journald's ``_HOSTNAME``): of a
    journal through ``journalctl -F _HOSTNAME``; of an export or json capture (packed or not) or a
    binary journal file from its first 64 KiB; of a short capture from its lines' host field. Empty
    for logs that do not name their host (plain SGLang logs, py-spy dumps) or that cannot be read.
    Never raises."""
    try:
        if fmt == "journal-dir" or (fmt == "journal" and shutil.which("journalctl")):
            return {h for h in _journalctl(path, "-F", "_HOSTNAME").stdout.splitlines() if h}
        if not path.is_file():  # a pipe is read once, by the ingest
            return set()
        fmt = sniff(path) if fmt == "?" else fmt
        head = _head(path, fmt)
    except (OSError, InputError, subprocess.SubprocessError):
        return set()
    if fmt == "short":
        short = re.compile(journald.SHORT_LINE)
        lines = head.decode("utf-8", errors="replace").splitlines()[:200]
        return {m["host"] for ln in lines if (m := short.match(ln))}
    return {m.decode() for m in _HOST_IN_HEAD.findall(head)}


def identity(path: Path) -> dict[str, object]:
    """What an input is, whatever path names it: ``dev`` and ``ino`` of the file or folder, and for a
    file ``digest``, a SHA-256 of its size and its first and last MiB (a copy of the file elsewhere
    has the same digest; a log that grew since has another). ``--append`` refuses an input OUT holds
    by either. Raises ``OSError``."""
    st = path.stat()
    ident: dict[str, object] = {"dev": st.st_dev, "ino": st.st_ino}
    if path.is_file():
        h = hashlib.sha256(str(st.st_size).encode())
        with open(path, "rb") as f:
            h.update(f.read(1 << 20))
            if st.st_size > 2 << 20:
                f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read(1 << 20))
        ident["digest"] = h.hexdigest()
    return ident
