"""What an input is, from its first bytes: a binary journal, a compressed file, a journalctl capture, a
container runtime's log, a py-spy dump or plain text. Formats are detected from content, never from
file names."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from logcorr.inputs import dumps, exports, packed, traces
from logcorr.inputs.envelopes import (
    CRI_LINE,
    DOCKER_LINE,
    DUMP_SECTION,
    KUBECTL_LINE,
    LINE_KEYS,
    PLATFORM_LINE_KEYS,
    STERN_LINE,
)
from logcorr.parsers import journald, prometheus
from logcorr.parsers.prefix import HEADER_START, NOTE, ROUTER_START

JOURNAL_MAGIC = b"LPKSHHRH"  # a binary journal file's first bytes
HEAD_BYTES = 1 << 16


def sniff(path: Path) -> str:
    """Detect the format of one file from its first 64 KiB.

    Returns one of ``journal`` (binary journal file), a compression (``packed.COMPRESSED``: ``gz``,
    ``xz``, ``bz2``, ``zst``), an archive (``packed.ARCHIVES``: ``tar``, ``zip``; ``packed.REFUSED``:
    ``7z``, ``lz4``), ``export``,
    ``json``, ``short`` (journalctl short-iso/short-iso-precise/short-unix), a container format
    (``containers.FORMATS``: ``docker-json``, ``cri``, ``kubectl``, ``stern``, ``log-export``,
    ``cluster-dump``),
    a log platform's whole-document export (``exports.DOCUMENTS``: ``otlp-logs``, ``loki-range``,
    ``es-response``), ``sglang-dump`` (SGLang's crash or request dump) or ``pickle`` (any other:
    never read), ``prometheus`` (a scrape's text exposition), ``otlp-traces`` (OpenTelemetry spans), ``pyspy-json``, ``pyspy``, ``text`` (plain SGLang or router log), or ``empty``.
    Raises ``OSError`` when the file cannot be opened.
    """
    with open(path, "rb") as f:
        return sniff_bytes(f.read(65536))


PASTE_MARKUP = r"\s*(?:#|```|`[^`]*`\s*$)"

# An RFC3339 stamp with ``Z`` or more than microseconds is a container runtime's (``docker logs -t``,
# ``kubectl --timestamps``: RFC3339Nano), never journalctl's: short-iso(-precise) prints an offset
# (``+0000``, ``+00:00``) and at most µs (sglang#13016, batch24/06: ``2025-11-10T09:50:25.136395428Z
# frame #15: sglang::scheduler_TP0() …`` read as host ``frame``, ident ``#15``).
_CONTAINER_STAMP = re.compile(r"(?:Z|\.\d{7,}(?:Z|[+-]\d\d:?\d\d))$")


def _journalctl_short(m: re.Match | None) -> bool:
    """A ``journald.SHORT_LINE`` match whose time journalctl can have printed."""
    return m is not None and not _CONTAINER_STAMP.search(m["time"])


def sniff_bytes(head: bytes) -> str:
    """``sniff`` of the first bytes of an input (64 KiB is what ``sniff`` reads); never raises."""
    head = head.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark says nothing of the format
    if not head.strip():
        return "empty"
    if head.startswith(JOURNAL_MAGIC):
        return "journal"
    if fmt := packed.kind(head):
        return fmt
    if dumps.is_pickle(head):  # SGLang's crash and request dumps; any other pickle is refused
        return dumps.sniff_pickle(head)
    text = head.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines()[:200] if ln.strip()]
    if re.match(r"(?s)\s*(?:\S[^\n]*\n){0,5}?\s*\[\s*\{\s*\"(?:pid|thread_id|frames)\"", text):
        return "pyspy-json"
    if re.search(r"(?m)^__CURSOR=|^__REALTIME_TIMESTAMP=\d+$", text):
        return "export"
    if lines and sum(ln.startswith('{"log":') for ln in lines) >= max(1, len(lines) // 2):
        return sniff_lines(lines) or "text"  # Docker json-file: its log may hold "__
    if lines and sum(
        ln.lstrip().startswith('{"') and '"__' in ln and '"MESSAGE"' in ln for ln in lines
    ) >= max(1, len(lines) // 2):
        return "json"  # journalctl -o json (Vector keeps the fields but names the line "message")
    if traces.sniff_traces(text):
        return traces.FORMAT
    if document := exports.sniff_document(text):
        return document
    if prometheus.is_exposition(lines):
        return "prometheus"
    short = re.compile(journald.SHORT_LINE)
    # a paste's markup is no line of the capture: a `#` note, a fence, a backtick-quoted command (batch14/08)
    said = [ln for ln in lines if not re.match(PASTE_MARKUP, ln)]
    if said and sum(_journalctl_short(short.match(ln)) for ln in said) >= max(1, len(said) // 2):
        return "short"
    if container := sniff_lines(lines):
        return container
    if re.search(
        r"(?m)^(?:Process \d+: |Thread (?:(?:0x[0-9A-Fa-f]+|\d+) )?\((?:idle|active))", text
    ) and not re.search(r"(?m)^\[\d{4}-\d\d-\d\d", text):
        return "pyspy"
    return "text"


def sniff_lines(lines: list[str]) -> str | None:
    """The container format of an input from its first non-blank lines (up to 200), or None.

    ``cluster-dump`` (the first line opens a ``kubectl cluster-info dump`` container section),
    ``docker-json`` (half the lines are ``{"log":…`` objects with a ``"time"``), ``log-export`` (JSON
    objects with a ``line``/``log`` key, or a ``message``/``msg`` that is itself a log line: an
    application's own JSON logging, whose ``message`` is bare, stays text), ``cri``, ``kubectl``
    (``--timestamps``, with or without ``--prefix``), ``stern`` (``pod container`` names before a
    known log header or a time). Never raises."""
    if not lines:
        return None
    if re.match(DUMP_SECTION, lines[0]):
        return "cluster-dump"
    s = pl.Series("l", lines, pl.String)
    half = max(1, len(lines) // 2)
    # a line-prefix envelope (CRI, kubectl --timestamps, stern) is written on every line its writer
    # printed: it must hold on nearly every line but a paste's notes (a comment, a prompt, a fence; one line
    # in ten, one at least, may be the reporter's prose), never on a share that a few stamped lines of
    # another format reach (batch5/08: two Rust `…Z  INFO` lines of 4)
    notes = s.str.contains(NOTE).fill_null(False)
    said = len(lines) - int(notes.sum())
    nearly = max(1, said - max(1, said // 10)) if said > 2 else max(1, said)

    def share(pattern: str) -> int:
        return int(s.str.contains(pattern).sum())

    def every(pattern: str, but: str | None = None) -> bool:
        hit = s.str.contains(pattern).fill_null(False) & ~notes
        if but is not None:
            hit = hit & ~s.str.contains(but).fill_null(False)
        return int(hit.sum()) >= nearly

    if int((s.str.contains(DOCKER_LINE) & s.str.contains(r'"time":\s*"')).sum()) >= half:
        return "docker-json"
    if share(r"^\s*\{") >= half:
        line, log, message, msg, *platform = (
            pl.col("l").str.json_path_match(f"$.{k}") for k in (*LINE_KEYS, *PLATFORM_LINE_KEYS)
        )
        string = {k: pl.col("l").str.contains(rf'"{k}"\s*:\s*"') for k in LINE_KEYS}
        wrapped = pl.any_horizontal(
            line.is_not_null() & string["line"],
            log.is_not_null() & string["log"],
            message.str.contains(HEADER_START),
            msg.str.contains(HEADER_START),
            *(p.is_not_null() for p in platform),
            message.is_not_null() & pl.col("l").str.contains(r'"(?:source_type|_SYSTEMD_UNIT|kubernetes)"'),
        )
        if s.to_frame().select(wrapped.fill_null(False).sum()).item() >= half:
            return "log-export"
        return None
    if every(CRI_LINE):
        return "cri"
    # a stamp followed by a level token is a program's own header (Rust tracing: sgl-router, Dynamo's
    # "2025-04-24T07:42:04.064Z  INFO …"), not kubectl's --timestamps envelope
    if every(KUBECTL_LINE, but=ROUTER_START):
        return "kubectl"
    stern = s.str.extract_groups(STERN_LINE)
    rest = stern.struct.field("text")
    if (
        int((stern.struct.field("pod").is_not_null() & ~notes).sum()) >= nearly
        and (
            int(rest.str.contains(HEADER_START).sum()) or int(stern.struct.field("time").is_not_null().sum())
        )
        and stern.struct.field("pod").n_unique() <= 64
    ):
        return "stern"
    return None


def head(path: Path, fmt: str) -> bytes:
    """The first ``HEAD_BYTES`` of a file, unpacked when it is compressed (``packed.COMPRESSED``);
    ``b""`` when that cannot be unpacked (damaged, or zstd without its module)."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    try:
        return packed.decompressor(fmt).decompress(head, HEAD_BYTES) if fmt in packed.COMPRESSED else head
    except (packed.Damaged, packed.MissingModule):
        return b""
