"""Readers: bytes on disk → record chunks (polars DataFrames of ``parsers.journald.RECORD_COLUMNS``).

One reader per input kind. Each streams its input in bounded chunks and never holds a whole file:
- a journal directory or ``.journal`` file through ``journalctl … -o export``: ``logcorr.journal``
  (a subprocess whose pipe is read on a thread), parsed by the export reader here;
- captures users attach: ``journalctl -o export``, ``-o json``, ``-o short-iso[-precise]``,
  ``-o short-unix``;
- plain SGLang logs (stdout to a file, ``docker compose logs`` with ``name  | `` prefixes), py-spy
  dumps and router logs: one record per line (re-joined later);
- container runtimes' logs (Docker json-file, CRI, kubectl, stern, log platform exports): ``containers``.
Formats are detected from content (``sniff``), not from file names. Which files a folder holds, their
decompression and identity, and entries already read: ``logcorr.inputs``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from logcorr.inputs.envelopes import RFC3339, rfc3339_us
from logcorr.inputs.source import (
    CHUNK_BYTES,
    CHUNK_LINES,
    LINE_PIECE,
    MAX_LINE_BYTES,
    MAX_RECORD_BYTES,
    ContentDigest,
    SourceReport,
)
from logcorr.parsers import journald
from logcorr.parsers.prefix import (
    BODY_START,
    HEADER_START,
    LEVEL_WORD,
    ROUTER_START,
    SGLANG_START,
    WORKER_NAME,
    is_record_start,
    strip_groups,
)
from logcorr.store.schema import UTC_US, conform


def char_boundary(data: bytes, at: int) -> int:
    """The largest cut ``<= at`` (``at`` > 0) that does not split a UTF-8 character: at most 3 bytes
    before ``at``, else ``at`` itself (bytes that are no UTF-8); ``len(data)`` when ``at`` is past it."""
    if at >= len(data):
        return len(data)
    for cut in range(at, max(at - 4, 0), -1):
        if data[cut] & 0xC0 != 0x80:
            return cut
    return at


def _pieces(data: bytes, at: int, end: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the pieces of ``data[at:end]``: ``MAX_RECORD_BYTES`` each but the last, cut at
    UTF-8 character starts (``char_boundary``)."""
    while end - at > MAX_RECORD_BYTES:
        cut = char_boundary(data, at + MAX_RECORD_BYTES)
        yield at, cut
        at = cut
    if at < end:
        yield at, end


def text_blocks(path: Path, digest: ContentDigest | None = None) -> Iterator[tuple[bytearray, int, int, int]]:
    """Yield ``(data, first_line_number, is_piece, lines)``: the bytes of a text file (a ``bytearray``,
    the reader's own buffer: every ``bytes`` method reads it, a Python ``bytes`` is made only where
    needed) in blocks of whole lines (``CHUNK_BYTES`` read at a time; the file's last line may lack its
    newline), a UTF-8 byte order mark at the start dropped, carriage returns at line ends removed and a
    carriage return no newline follows read as a line end (tqdm-style progress, old Mac files). ``lines`` is the number
    of lines ``journald.split_lines(data)`` gives. A line longer than ``MAX_LINE_BYTES`` is yielded in
    pieces of ``MAX_RECORD_BYTES`` (``is_piece`` 1 for its first, 2 for the others; each a line of its
    own, newline added), each numbered as the line, never whole in memory. ``digest``: every byte read
    goes to it too, and it is ``done`` when the file was read to its end."""
    line_no, long_line = 1, False  # long_line: reading the pieces of a line over MAX_LINE_BYTES
    take = digest.update if digest is not None else (lambda data: None)
    with open(path, "rb") as f:
        rest = f.read(3)
        take(rest)
        rest = rest.removeprefix(b"\xef\xbb\xbf")
        while True:
            # read into a buffer that holds the last block's partial line already, and cut lines off its end
            # in place: no copy of the block (16 MB) is made to join or to cut it
            data = bytearray(len(rest) + CHUNK_BYTES)
            data[: len(rest)] = rest
            with memoryview(data) as view:
                got = f.readinto(view[len(rest) :])
                take(view[len(rest) : len(rest) + got])
            del data[len(rest) + got :]
            block = got > 0
            if not block and digest is not None:
                digest.done = True
            if b"\r" in data:
                held = data.endswith(b"\r") and bool(block)  # its newline may open the next block
                data = data[:-1] if held else data
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
            if long_line and (b"\n" in data or not block):  # the long line's last pieces
                end = data.find(b"\n") if b"\n" in data else len(data)
                for a, b in _pieces(data, 0, end):
                    yield data[a:b] + b"\n", line_no, 2, 1
                data, line_no, long_line = data[end + 1 :], line_no + 1, False
            if not block:
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0 and len(data) <= MAX_LINE_BYTES:  # one very long line: keep reading
                    rest = data
                    continue
                if cut == 0:  # longer than any log line: kept in pieces, each numbered as the line
                    cuts = list(_pieces(data, 0, len(data)))  # the last, shorter one waits for more
                    for a, b in cuts[:-1]:
                        yield data[a:b] + b"\n", line_no, 2 if long_line else 1, 1
                        long_line = True
                    rest = data[cuts[-1][0] :]
                    continue
            rest = bytes(data[cut:])
            del data[cut:]
            piece = data
            if piece:
                lines = int(np.count_nonzero(np.frombuffer(piece, np.uint8) == 0x0A)) + (piece[-1] != 0x0A)
                yield piece, line_no, 0, lines
                line_no += lines
            if not block:
                return


def lines_chunks(path: Path) -> Iterator[tuple[pl.Series, int, int]]:
    """Yield ``(lines, first_line_number, is_piece)`` chunks of a text file: ``block_lines`` of each
    of its ``text_blocks``."""
    for data, line_no, piece, _ in text_blocks(path):
        yield from block_lines(data, line_no, piece)


def block_lines(data: bytes, line_no: int, piece: int) -> Iterator[tuple[pl.Series, int, int]]:
    """``(lines, first_line_number, is_piece)`` of one of ``text_blocks``: its lines decoded as UTF-8
    with replacement, NUL bytes removed, at most ``CHUNK_LINES`` a chunk (a file of tiny lines makes
    many chunks of one block)."""
    lines = journald.split_lines(data)
    if piece:
        yield lines, line_no, piece
        return
    if b"\x00" in data:
        lines = lines.str.replace_all("\x00", "", literal=True)
    for start in range(0, len(lines), CHUNK_LINES):
        yield lines.slice(start, CHUNK_LINES), line_no + start, 0


def read_text(
    path: Path, fmt: str, report: SourceReport, digest: ContentDigest | None = None
) -> Iterator[pl.DataFrame]:
    """Records of a text file: ``json`` / ``short`` captures, or one record per line for ``text``,
    ``pyspy`` and ``pyspy-json`` (``ts`` null there; the line's own time is read later).

    A ``docker compose logs`` prefix (``name  | ``) is stripped and its name kept in ``stream``.
    """
    compose, pieces, replaced, width, unwrapped = None, 0, 0, None, 0
    for lines, first, piece in _text_chunks(path, fmt, report, digest):
        if isinstance(lines, pl.DataFrame):  # a json block read whole: its records
            yield lines
            continue
        if compose is None and fmt not in ("json", "short"):
            compose = has_compose_prefix(lines)
            width = paste_width(lines) if fmt == "text" else None
        report.bytes += int(lines.str.len_bytes().sum() or 0) + len(lines)
        replaced += int(lines.str.contains("\ufffd", literal=True).sum() or 0)
        records = text_records(lines, fmt, report.source, first, compose=bool(compose), width=width)
        unwrapped += int((records["entry_lines"].fill_null(1) - 1).sum() or 0) if width else 0
        if piece:  # the line is counted once, at its first piece
            pieces += 1
            records = records.with_columns(pl.lit(LINE_PIECE).alias("entry_error"))
            if piece == 2:
                records = records.with_columns(pl.lit(0, records.schema["entry_lines"]).alias("entry_lines"))
        yield records
    report.pieces += pieces
    if pieces:
        report.notes.append(
            f"{pieces} piece(s) of {MAX_RECORD_BYTES >> 20} MiB cut from lines over {MAX_LINE_BYTES >> 20} MiB"
        )
    if unwrapped:
        report.notes.append(
            f"{unwrapped:,} line(s) a terminal wrapped at {width} characters joined to the line before them"
            " (no newline between: a field split by the wrap reads whole); each record keeps its first line's number"
        )
    if replaced:
        report.notes.append(
            f"{replaced:,} line(s) hold U+FFFD: bytes that are not UTF-8 are kept as that character"
            " (the file is not all UTF-8 text: Latin-1, binary, a cut character)"
        )


def _text_chunks(
    path: Path, fmt: str, report: SourceReport, digest: ContentDigest | None = None
) -> Iterator[tuple[pl.Series | pl.DataFrame, int, int]]:
    """``lines_chunks`` of ``path``; for a ``json`` capture, each block of plain lines (no U+FFFD to
    count, no piece of an over-long line) as its records, read whole (``journald.parse_json_block``),
    its bytes counted in ``report`` as ``read_text`` counts those of lines."""
    for data, first, piece, lines in text_blocks(path, digest):
        if fmt == "json" and not piece and lines <= CHUNK_LINES:
            plain = data.isascii() or b"\xef\xbf\xbd" not in data
            records = (
                journald.parse_json_block(data, source=report.source, first_line=first) if plain else None
            )
            if records is not None:
                report.bytes += len(data) + (data[-1] != 0x0A)  # each line's bytes and a newline
                yield records, first, 0
                continue
        yield from block_lines(data, first, piece)


# Text around a log line that is not the log's: markdown residue of a paste (a leading backtick or
# `**`, maybe a space after it, their closing pair), a log platform's `<epoch-ms>\t<ISO>\t` export
# envelope, a container runtime's or launcher's prefix (``LINE_ENVELOPE``), a `docker compose logs`
# service prefix, a Ray/vLLM worker prefix `(Worker_DP1_TP0 pid=N)` (kept in the message: its ranks
# and pid are read with the header, ``parsers.prefix``).
MARKDOWN_OPEN = r"^(?:`{1,3}|\*\*|[\"']) ?(?P<c>\S)"  # also a quote the reporter opened a log with
MARKDOWN_CLOSE = r"(?:\*\*|`{1,3})\s*$"
TSV_ENVELOPE = r"^(?P<ms>\d{12,13})\t(?P<iso>\d{4}-\d\d-\d\dT[^\t]*)\t(?P<rest>.*)$"
COMPOSE_PREFIX = r"^(?P<svc>[\w.-]+)\s*\| ?(?P<rest>.*)$"
COMPOSE_START = r"^[\w.-]+\s*\| "  # the same prefix, when a line carries one
# `docker compose logs -t` puts Docker's RFC3339Nano stamp after that prefix (batch14/12): nanoseconds (7 to 9
# fraction digits, UTC); an application's own ISO time there prints ms or µs and stays the line's
COMPOSE_TIMESTAMP = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7,9}Z) "
WORKER_PREFIX = rf"^(?:\((?:{WORKER_NAME} )?pid=\d+(?:, ip=[^)]*)?\) )*\((?:(?P<worker>{WORKER_NAME}) )?pid=(?P<pid>\d+)(?:, ip=[^)]*)?\) "
# A prefix a line of a paste may carry, taken off line by line (a whole file of them is read by
# ``containers``): the CRI format (``<RFC3339> stdout|stderr F|P ``, kubelet/containerd), ``kubectl logs
# --prefix --timestamps`` (``[pod/NAME/CONTAINER] <RFC3339> ``), ``kubectl logs --timestamps`` alone
# (``<RFC3339> `` before a known header; not before a router's own ``<ISO>  LEVEL``), a launcher's
# ``[YYYY-MM-DD HH:MM:SS] [/bin/sh@<a,b>]: `` (its time has no zone: read as UTC, as a printed time).
# The envelope's time becomes ``ts``; the line's own time stays its ``log_ts``: one event.
CRI_ENVELOPE = rf"(?P<cri>{RFC3339}) (?P<fd>stdout|stderr) [PF](?::\S*)? "
KUBECTL_ENVELOPE = rf"\[pod/(?P<pod>[^/\]\s]+)/(?P<container>[^\]\s]+)\] (?P<kp>{RFC3339}) "
TIMESTAMPS_ENVELOPE = rf"(?P<kt>{RFC3339}) "
# the same stamp in brackets, as a log viewer prints it before each entry (sglang#3932, batch24/01:
# ``[2025-02-27T16:30:43.48675097Z] [rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] …``)
BRACKETED_TIMESTAMPS_ENVELOPE = rf"\[(?P<kb>{RFC3339})\] "
LAUNCHER_ENVELOPE = (
    r"\[(?P<launch>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\] \[(?P<proc>[^\]\s]*@<\d+,\d+>)\]: ?"
)
# A log platform's row as its search page shows and copies it (OpenSearch Dashboards / Kibana Discover): the
# document's time in the browser's zone, never printed (``May 16, 2026 @ 20:44:54.728``), a column gap, the
# message (sglang#22511, batch22/04: a PD decode leader's access and batch lines under it). Zoneless: as printed.
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
DISCOVER_ENVELOPE = rf"(?P<disc>{_MONTH} \d{{1,2}}, \d{{4}} @ \d\d:\d\d:\d\d(?:\.\d+)?)(?:\t|\s{{2,}})"
DOCKER_ENVELOPE = r'^\{"log":\s*"'  # a Docker json-file line: its log, stream and time read as JSON
# Google Cloud Logging's lines as its console copies them: the entry's severity (the platform's, by the stream
# a container wrote to: every stderr line is ERROR), its RFC 3339 time in nanoseconds, the text
# (`ERROR 2025-04-07T19:13:52.317869663Z KeyError: …`, sglang#5095, batch23/01). The severity is kept as the
# line's stream, never as its level: the line's own header says that.
GCP_ENVELOPE = (
    rf"(?P<gsev>DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) (?P<gt>{RFC3339}) "
)
# FastChat's logger (``build_logger``: ``%(asctime)s | %(levelname)s | %(name)s | %(message)s``, no zone) with the
# stdout and stderr of its worker redirected into it, line by line (StreamToLogger: every stderr line at ERROR, a
# tqdm bar too); transformerlab's plugins reuse it (FastChat#3498, #3372, transformerlab-api#381: batch25/01-03).
# The logger named stdout or stderr is the stream the line came from, its level the wrapper's: the envelope is
# taken off (its time the line's, as printed; the stream kept), so that the program's own line behind it is read
# (a traceback's frames join their record). A line of another logger through the same format keeps its header
# (``parsers.prefix``'s family "fastchat": its level is that logger's).
FASTCHAT_ENVELOPE = r"(?P<fct>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \| (?P<fcs>stdout|stderr) \| ?"
# Two lines of FastChat's logger glued by a paste: a run of spaces, then the next line's envelope (FastChat#3372,
# batch25/02: `…, line 88, in _run_code      2024-06-02 00:26:10 | ERROR | stderr |   File "…", line 290, in
# <module>`): split there, both parts numbered as the line.
GLUED_ENVELOPE = rf"^(?P<epre>.*?\S)[ \t]{{2,}}(?P<erec>{FASTCHAT_ENVELOPE}.*)$"
LINE_ENVELOPE = rf"^(?:{CRI_ENVELOPE}|{KUBECTL_ENVELOPE}|{LAUNCHER_ENVELOPE}|{DISCOVER_ENVELOPE}|{GCP_ENVELOPE}|{FASTCHAT_ENVELOPE}|{TIMESTAMPS_ENVELOPE}|{BRACKETED_TIMESTAMPS_ENVELOPE})(?P<rest>.*)$"
ENVELOPE_START = strip_groups(LINE_ENVELOPE.removesuffix("(?P<rest>.*)$")) + "|" + DOCKER_ENVELOPE
# An SGLang header glued onto the text before it (two records on one physical line: a dump's last
# line and the next record, no newline between): the line is split there, both parts numbered as it.
# Also after an inline-code backtick and a space (a paste's "label: ` [ts] …"), and after the `]` that
# closes a tqdm bar's rate ("… 0/23 [00:00<?, ?it/s][2025-03-10 16:21:21 TP1] …": the bar's carriage
# return lost in the copy).
# ... or a Ray/vLLM worker's prefix with a logger's header after it, glued to prose in any script
# ("部分LOG如下：(EngineCore_DP0 pid=9246) DEBUG 01-06 12:06:06 [scheduler.py:348] …")
_BAR_END = r"\d+/\d+ \[[^\]\n]*(?:it/s|s/it)\]"  # tqdm's "n/total [elapsed<remaining, rate]"
# ... or after a faulthandler frame line cut before its function's name (`  File "<internal>", line 7 in `: the
# dying process's stack and the main process's record written at once, batch15/07)
_FRAME_CUT = r", line \d+ in "
_GLUED_WORKER = rf"\({WORKER_NAME} pid=\d+(?:, ip=[^)]*)?\) (?:{LEVEL_WORD}|\[rank\d)"
# ... or a whole glog record (`E0916 02:31:07.705332  6633 tcp_transport.cpp:116] …`) or CPython's `Fatal Python
# error:` written into another thread's line (crash output of several threads at once, batch5/15)
_GLUED_NATIVE = r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [\w.-]+\.\w+:\d+\] |Fatal Python error: "
# ... or vLLM's whole logger header (level, MM-DD time, [file:line]) quoted after the reporter's words on
# the same line after a colon ("During benchmark, prefillers complain: ERROR 11-19 10:12:21 [nixl_connector.py:1068]
# …"): the record is read from its header on, the words before it stay prose (a worker's "(Name pid=N) "
# before the header is its prefix, not words)
_GLUED_LOGGER = rf"(?:{LEVEL_WORD}) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]\s]+:\d+\] "
# ... or the name of the file the log was copied from, glued before its first header with a space: an editor's
# `@`-mention of the attachment ("@c:\Users\…\deepseek-…_2026-08-23_20-05-04.txt [2026-08-23 09:05:37 TP0 EP0]
# Decode batch, …", sglang#36081, batch18/07); the name stays prose (its date is no record's time)
_LOG_FILE_NAME = r"\S\.(?:log|txt|out|err)"
GLUED_RECORD = (
    rf"^(?P<pre>.*?(?:[\w.)]|` |{_BAR_END}|{_FRAME_CUT}))(?P<rec>{SGLANG_START.removeprefix('^')}.*)$"
    rf"|^(?P<wpre>.*?[^\s(])(?P<wrec>{_GLUED_WORKER}.*)$"
    rf"|^(?P<npre>.*?\S)(?P<nrec>(?:{_GLUED_NATIVE}).*)$"
    rf"|^(?P<lpre>.*?\S[:：])\s*(?P<lrec>{_GLUED_LOGGER}.*)$"
    rf"|^(?P<fpre>.*?{_LOG_FILE_NAME})\s+(?P<frec>{SGLANG_START.removeprefix('^')}.*)$"
)
GLUED_START = (
    rf"(?:[\w.)]|` |{_BAR_END}|{_FRAME_CUT})\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d|[^\s(]{_GLUED_WORKER}|\S(?:{_GLUED_NATIVE})"
    rf"|\S[:：]\s*{_GLUED_LOGGER}|{_LOG_FILE_NAME}\s+\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d"
)


# A Python exception's own line (`RuntimeError: Decode out of memory. …`), as a reporter quotes it in inline code
EXCEPTION_LINE = r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S"


def _strip_markdown(line: pl.Expr) -> pl.Expr:
    """A paste's markdown residue off a line that is a log line underneath: a leading backtick or
    ``**`` and the closing ``**`` or unpaired backtick at its end, only when what they wrap starts
    with a known header, a known record body, an envelope, a compose prefix or a Python exception's
    ``Type: message`` line (any other line is kept exactly as it is)."""
    opened = line.str.contains(MARKDOWN_OPEN)
    body = line.str.replace(MARKDOWN_OPEN, "${c}")
    unpaired = (body.str.count_matches("`") % 2 == 1) | (opened & body.str.contains(r"\*\*\s*$"))
    unwrapped = pl.when(unpaired).then(body.str.replace(MARKDOWN_CLOSE, "")).otherwise(body)
    # an inline code span that closes inside the line, prose after it: the reporter's sentence quoting an
    # exception ("`AssertionError: dec_lock_ref …` in SWARadixCache under …", sglang#24153, batch20/03),
    # not the exception line of a traceback
    quoted_in_prose = line.str.contains(r"^`") & unpaired & ~body.str.contains(r"`\s*$")
    looks_like_log = pl.any_horizontal(
        unwrapped.str.contains(HEADER_START),
        unwrapped.str.contains(BODY_START),
        unwrapped.str.contains(COMPOSE_START),
        unwrapped.str.contains(ENVELOPE_START),
        unwrapped.str.contains(EXCEPTION_LINE) & ~quoted_in_prose,
    )
    return pl.when((opened | unpaired) & looks_like_log).then(unwrapped).otherwise(line)


# A paste indented as a whole (a markdown list item, a quoted block): every line but fences and blank
# ones opens with the same spaces. Fewer lines than this are no paste worth judging.
DEDENT_MIN_LINES = 3


def dedent(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with the indent every non-blank line but a markdown fence or a note shares taken off
    (``textwrap.dedent``'s rule over spaces and tabs, fences aside), when at least
    ``DEDENT_MIN_LINES`` lines share it; the indent may end in one decoration a paste puts before every
    line (``  | ``: a quoting tool's or a table's bar, ``│``, ``>``), taken off with it. Else the same
    rule on each fenced block of the paste alone (from a fence to the next), where the indent hides a
    known header (a log line opens at column 0: batch10/15's block under prose that is not indented). A
    log's own lines open at column 0, so most files are returned as they are after one scan."""
    if lines.len() < DEDENT_MIN_LINES or not lines.str.contains(r"^[ \t]|^[|│>] ").any():
        return lines
    whole = _dedent_all(lines)
    if whole is not lines:
        return whole
    fence = lines.str.contains(r"^\s*```").fill_null(False)
    if not fence.any():
        return lines
    block = fence.cum_sum()
    parts = []
    for _, part in pl.DataFrame({"line": lines, "b": block}).group_by("b", maintain_order=True):
        cut = _dedent_all(part["line"])
        hidden = pl.select(is_record_start(pl.lit(cut)) & ~is_record_start(pl.lit(part["line"]))).to_series()
        parts.append(cut if cut is not part["line"] and hidden.fill_null(False).any() else part["line"])
    return pl.concat(parts).alias(lines.name)


def _dedent_all(lines: pl.Series) -> pl.Series:
    """``dedent``'s rule on all of ``lines``: ``lines`` itself (the same object) when it does not apply."""
    fence = lines.str.contains(r"^\s*```|^# ")  # a fence, a note: the paste's frame, not its lines
    counted = lines.filter(~fence.fill_null(True) & (lines.str.strip_chars() != ""))
    if counted.len() < DEDENT_MIN_LINES:
        return lines
    indent = counted.str.extract(r"^([ \t]*(?:[|│>] )?)", 1)
    common = indent.str.len_chars().min()
    if not common or indent.unique().str.slice(0, common).n_unique() != 1:
        return lines
    prefix = indent[0][:common]
    cut = pl.lit(lines).str.slice(common)
    if prefix.endswith("│ "):  # a viewer's frame (k9s): the padding and the closing bar go too (batch13/08)
        cut = cut.str.replace(r"[ \t]*│[ \t]*$", "")
    return pl.select(
        pl.when(pl.lit(lines).str.starts_with(prefix) & ~pl.lit(fence)).then(cut).otherwise(pl.lit(lines))
    ).to_series()


# A colour escape whose ESC byte a copy from a terminal lost (or turned into a space): " [36m(RayWorkerVllm
# pid=5085) [0m [E …". Read only on lines that hold the reset "[0m", which colour output always ends with.
ANSI_REMNANT = r"[ \x1b]?\[[0-9;]{0,12}m"
# A copy that dropped the ESC byte (rather than turning it into a space) leaves a remnant glued to the
# character before it ("…326Z[0m [32m INFO[0m [2mengine…"): on such a line a space before a remnant is the
# text's own (the separator between fields), kept; only the remnant goes.
ANSI_REMNANT_GLUED = r"[^\s\x1b]\[[0-9;]{0,12}m"
ANSI_REMNANT_ALONE = r"\x1b?\[[0-9;]{0,12}m"
# syslog's (rsyslog's) escape of a control character in octal: the ESC byte written "#033" ("#033[2m2024-04-18T22:43:58Z
# #033[0m #033[32m INFO#033[0m", a CloudWatch export of text-generation-inference: TGI#1763, batch19/12)
ESC_OCTAL = "#033["


def ansi_remnants_off(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with the colour escapes that lost their ESC byte taken off the lines that hold a
    reset ``[0m``, so the worker prefix and header behind them read: with the space before each
    (``ANSI_REMNANT``, the ESC turned into a space) unless a remnant on the line is glued to the
    character before it (``ANSI_REMNANT_GLUED``: the ESC dropped, every space is the text's own, kept).
    An ESC written in syslog's octal (``ESC_OCTAL``, ``#033[``) is the ESC byte. One literal scan of
    the rest."""
    maybe = lines.str.contains("[0m", literal=True).fill_null(False)
    idx = maybe.arg_true()
    if idx.len() == 0:
        return lines
    some = lines.gather(idx).str.replace_all(ESC_OCTAL, "\x1b[", literal=True)
    fixed = pl.select(
        pl.when(pl.lit(some).str.contains(ANSI_REMNANT_GLUED))
        .then(pl.lit(some).str.replace_all(ANSI_REMNANT_ALONE, ""))
        .otherwise(pl.lit(some).str.replace_all(ANSI_REMNANT, ""))
    ).to_series()
    return lines.clone().scatter(idx, fixed)


# Markdown's block-quote marker before each line of a log quoted in an issue or a chat ("> [2025-03-19 08:28:27
# TP6] Scheduler hit an exception: …", batch15/02); a lone ">" is a quoted blank line. CommonMark also takes a
# ">" glued to the text ("a single > not followed by a space"): ">[2025-07-22 20:38:44] Scheduler hit an
# exception: …" under ">pip install …" and ">NUM_GPUS=8" (sglang#8256, batch26/05); ">>" (a nested quote, a
# Python prompt) is not taken for one. ``QUOTE_MARK`` finds the lines, ``QUOTE_MARK_OFF`` is what comes off.
QUOTE_MARK = r"^>(?:$|[^>])"
QUOTE_MARK_OFF = r"^> ?"


def quote_marks_off(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with markdown's block-quote marker (``QUOTE_MARK``) taken off every line that opens
    with it, when one of them quotes a record's start (``is_record_start``: a logger's header or a known
    record): the quoted log reads as the log. Lines that quote no record (a shell's ``> `` continuation
    prompt, a quoted sentence) stay as they are."""
    marked = lines.str.contains(QUOTE_MARK).fill_null(False)
    idx = marked.arg_true()
    if idx.len() == 0:
        return lines
    inner = lines.gather(idx).str.replace(QUOTE_MARK_OFF, "")
    if not pl.select(is_record_start(pl.lit(inner)).fill_null(False).any()).item():
        return lines
    return lines.clone().scatter(idx, inner)


# A terminal UI's log pane (k9s) draws a box around the log: each line is padded to a closing "│" and
# (but for a line the reporter began copying after it) opens with "│ " (dynamo#3493: batch17/08, JSON records;
# sglang#4017: batch17/10, a scheduler's traceback).
PANE_BORDER_END = r"\s*│\s*$"
PANE_BORDER_START = r"^│ ?"


def pane_borders_off(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with a log pane's box border taken off every line that ends with it
    (``PANE_BORDER_END``, and its opening ``PANE_BORDER_START``), when one of them holds a record's start
    (``is_record_start``) once the border is off: the boxed log reads as the log. Lines without the
    closing border (a table drawn in text, a tree) stay as they are."""
    maybe = lines.str.contains("│", literal=True).fill_null(False)
    if not maybe.any():
        return lines
    idx = (maybe & lines.str.contains(PANE_BORDER_END).fill_null(False)).arg_true()
    if idx.len() == 0:
        return lines
    inner = lines.gather(idx).str.replace(PANE_BORDER_END, "").str.replace(PANE_BORDER_START, "")
    if not pl.select(is_record_start(pl.lit(inner)).fill_null(False).any()).item():
        return lines
    return lines.clone().scatter(idx, inner)


# A Python frame line copied out of a JSON string: its quotes escaped (``File \\"/sgl-workspace/…/scheduler.py\\",
# line 3805, in run_scheduler_process``, sglang pull 22592, batch20/02).
ESCAPED_FRAME = r'^[ \t]*File \\"[^"\n]*\\", line \d+, in '


def escaped_frames_off(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with the escaped quotes (``\\"``) of a frame line (``ESCAPED_FRAME``) written as
    quotes, so the frame reads as one; any other line is kept as it is (one literal scan of the rest)."""
    maybe = lines.str.contains('File \\"', literal=True).fill_null(False)
    idx = maybe.arg_true()
    if idx.len() == 0:
        return lines
    some = lines.gather(idx)
    fixed = pl.select(
        pl.when(pl.lit(some).str.contains(ESCAPED_FRAME))
        .then(pl.lit(some).str.replace_all('\\"', '"', literal=True))
        .otherwise(pl.lit(some))
    ).to_series()
    return lines.clone().scatter(idx, fixed)


def markdown_off(lines: pl.Series) -> pl.Series:
    """``lines`` (str) with ``_strip_markdown`` applied to the few that hold a backtick or ``**`` (one
    literal scan of the rest)."""
    maybe = (
        lines.str.contains("`", literal=True)
        | lines.str.contains("**", literal=True)
        | lines.str.contains(r"^[\"']")
    ).fill_null(False)
    idx = maybe.arg_true()
    if idx.len() == 0:
        return lines
    fixed = pl.select(_strip_markdown(pl.lit(lines.gather(idx)))).to_series()
    return lines.clone().scatter(idx, fixed)


def has_compose_prefix(lines: pl.Series) -> bool:
    """Do half or more of the first 200 non-blank lines carry a ``docker compose logs`` prefix
    (``name  | ``), markdown residue and export envelopes aside?"""
    sample = lines.head(200).drop_nulls()
    sample = markdown_off(sample).str.replace(TSV_ENVELOPE, "$rest")
    sample = sample.filter(sample.str.strip_chars() != "")
    hits = int(sample.str.contains(COMPOSE_START).sum())
    return hits >= 1 and hits * 2 >= len(sample)


# A viewer's or a paste's line-number gutter: ``[80746] `` before every line, counting the lines one by one
# (batch10/09: ``[80746] [rank0]:[E321 …``). At least this many lines must carry it.
LINE_NUMBER = r"^\[(?P<num>[0-9]+)\] (?P<rest>.*)$"
LINE_NUMBER_MIN_LINES = 3


def line_numbers_off(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``n`` the line's number in the input, ``line``) with a line-number gutter taken off:
    the ``[N] `` (``LINE_NUMBER``) that opens ``LINE_NUMBER_MIN_LINES`` lines or more whose N run one by one
    with the lines (N minus the line's own number the same on each): a count of the lines, no part of
    them (never a pid or a rank). A file whose lines do not all count alike is returned as it is."""
    if not frame.select(pl.col("line").str.contains(r"^\[[0-9]+\] ").any()).item():
        return frame
    m = pl.col("line").str.extract_groups(LINE_NUMBER)
    offset = m.struct.field("num").cast(pl.Int64, strict=False) - pl.col("n").cast(pl.Int64)
    offsets = frame.select(offset.drop_nulls().alias("o"))["o"]
    if offsets.len() < LINE_NUMBER_MIN_LINES or offsets.n_unique() != 1:
        return frame
    return frame.with_columns(pl.coalesce(m.struct.field("rest"), pl.col("line")).alias("line"))


# A terminal wraps a long line at its width: a paste then holds lines of exactly that many characters
# whose next line is no record start (a field cut in two: ``Timeout(ms)=`` / ``600000)``). Widths below
# this are ordinary lines.
WRAP_MIN_WIDTH = 80


def _wrapped(lines: pl.Series, width: int) -> pl.Series:
    """Per line of ``lines``: is it ``width`` characters long and followed by a line that is neither
    blank, nor a record start (``is_record_start``), nor one opening with the same first token (the
    next of a run of equal-length records: a scrape's samples, a repeated debug line)? The last
    line is not."""
    after = lines.shift(-1)
    opens = pl.select(is_record_start(pl.lit(after)) | pl.lit(after).str.contains(WORKER_PREFIX)).to_series()
    opens = opens.fill_null(True)
    # a line padded with spaces to the width ended there: a terminal pads what it did not wrap
    padded = lines.str.contains(r"\s\s$")
    blank = after.str.strip_chars().str.len_chars().fill_null(0) == 0
    lead = r"^\s*[^\s\[\](){}|,;=]+"
    same_lead = (lines.str.extract(lead, 0) == after.str.extract(lead, 0)).fill_null(False)
    return ((lines.str.len_chars() == width) & ~opens & ~blank & ~same_lead & ~padded).fill_null(False)


# How many line lengths shared by two lines or more ``paste_width`` tries, longest first.
WRAP_CANDIDATES = 8
# Lines padded with spaces to a width that show a terminal's width by themselves (``paste_width``).
PADDED_MIN_LINES = 3


def paste_width(lines: pl.Series) -> int | None:
    """The width a terminal wrapped a paste at: the length of the lines it cut (characters, at least
    ``WRAP_MIN_WIDTH``): the longest length that two lines or more have, two of them wrapped
    (``_wrapped``) and one of those breaking a word (a word character before the break, a lower-case
    one or a digit after it: not a new sentence or line such as ``Python v3``). Longer lines (the
    reporter's notes or prose, a line pasted after the wrap) do not hide it: the lengths are tried
    longest first (``WRAP_CANDIDATES``; batch13/03: 116 columns under longer ``# note:`` lines), a
    length under the longest one needing three wrapped lines, and one enough where ``PADDED_MIN_LINES``
    lines are padded with spaces to that width; else the width of rows pasted inside lines
    (``row_padding_width``). None for a file whose lines were not wrapped (most logs, and records that merely have equal lengths)."""
    n = lines.str.len_chars()
    shared = (
        n.filter(n >= WRAP_MIN_WIDTH)
        .value_counts()
        .filter(pl.col("count") >= 2)
        .get_column(n.name)
        .sort(descending=True)
    )
    mid_token = (lines.str.contains(r"\w$") & lines.shift(-1).str.contains(r"^[a-z0-9_]")).fill_null(
        False
    )  # "compl|eted"
    longest = n.max()
    padded = lines.str.contains(r"\s\s$").fill_null(False)
    for width in shared.head(WRAP_CANDIDATES).to_list():
        wrapped = _wrapped(lines, int(width))
        # under longer lines, a third wrapped line: two prose lines an author broke at 80 columns are no
        # terminal's wrap (batch9/10); where the terminal padded its other lines to that very width
        # (`kubectl logs` copied from a pane: llm-d-benchmark#724, batch19/05), one wrap is enough
        enough = 2 if width == longest else 3
        if int(((n == width) & padded).sum()) >= PADDED_MIN_LINES:
            enough = 1
        if int(wrapped.sum()) >= enough and (wrapped & mid_token).any():
            return int(width)
    return row_padding_width(lines)


# A terminal's rows pasted without their newlines (tranX#41, batch19/08: dmesg's lines wrapped at 80 columns,
# each row padded with spaces to the pane's 197, the rows of one line on one line): a run of two spaces or
# more inside a line that ends at a multiple of the row width is a row's padding, no text of the line.
ROW_PADDING = r"(?<=\S) {2,}(?=\S)"
# Padding runs that show a row width (``row_padding_width``), and the longest of them that must not be
# ordinary alignment: a table's columns (`pip list`: "sgl-kernel        0.0.3") pad to a small column.
ROW_PADDING_MIN_RUNS = 3
ROW_PADDING_SCAN = 2000  # lines with a long inner run of spaces read to find the width


def row_padding_width(lines: pl.Series) -> int | None:
    """The width of a terminal's rows pasted inside lines (``ROW_PADDING``): the end column (characters,
    at least ``WRAP_MIN_WIDTH``) at a multiple of which ``ROW_PADDING_MIN_RUNS`` inner runs of eight
    spaces or more end, one of them inside a word (a word character before it, a lower-case one or a
    digit after it: ``me`` … ``ms_allowed``). None where no such width shows (aligned columns end at
    varied or small columns)."""
    some = lines.filter(lines.str.contains(r"\S {8,}\S").fill_null(False)).head(ROW_PADDING_SCAN)
    runs = [
        (m.end(), line[m.start() - 1], line[m.end()])
        for line in some.to_list()
        for m in re.finditer(r"(?<=\S) {8,}(?=\S)", line)
    ]
    ends = sorted({e for e, _, _ in runs if e >= WRAP_MIN_WIDTH})
    for width in ends:  # the narrowest row first: its multiples are the later rows' ends
        at = [(b, a) for e, b, a in runs if e % width == 0]
        inside_word = any(re.match(r"\w", b) and re.match(r"[a-z0-9_]", a) for b, a in at)
        if len(at) >= ROW_PADDING_MIN_RUNS and inside_word:
            return width
    return None


def rows_joined(lines: pl.Series, width: int) -> pl.Series:
    """``lines`` with each inner run of spaces (``ROW_PADDING``) that ends at a multiple of ``width``
    taken off: a terminal row's padding, the rows of the line joined as the line was printed."""
    some = lines.str.contains(r"\S  +\S").fill_null(False)
    idx = some.arg_true()
    if idx.len() == 0:
        return lines

    def joined(line: str) -> str:
        return re.sub(ROW_PADDING, lambda m: "" if m.end() % width == 0 else m.group(0), line)

    fixed = [joined(line) for line in lines.gather(idx).to_list()]
    return lines.clone().scatter(idx, pl.Series(fixed, dtype=pl.String))


def unwrap(frame: pl.DataFrame, width: int) -> pl.DataFrame:
    """``frame`` (``n``, ``line``) with each terminal-wrapped line (``_wrapped``) joined to the lines
    it continues, without a newline (the wrap's padding at the end of its last line dropped): one row
    per logical line, ``n`` of its first, ``entry_lines`` the physical lines it holds; a row's padding
    inside a line (``rows_joined``) taken off."""
    frame = frame.with_columns(rows_joined(frame["line"], width).alias("line"))
    wrapped = _wrapped(frame["line"], width)
    if not wrapped.any():
        return frame
    cont = wrapped.shift(1, fill_value=False)
    piece = (
        pl.when(pl.lit(cont) & ~pl.lit(wrapped)).then(pl.col("line").str.strip_chars_end()).otherwise("line")
    )
    return (
        frame.with_columns(piece.alias("line"), (~pl.lit(cont)).cum_sum().alias("_wrap"))
        .group_by("_wrap", maintain_order=True)
        .agg(pl.col("n").first(), pl.col("line").str.join(""), pl.len().cast(pl.Int32).alias("entry_lines"))
        .drop("_wrap")
    )


def text_records(
    lines: pl.Series, fmt: str, source: str, first: int, *, compose: bool, width: int | None = None
) -> pl.DataFrame:
    """One reader record per line of ``lines`` (a String Series of one chunk, line ``first`` first),
    in ``journald.RECORD_COLUMNS``: journalctl ``json``/``short`` captures parsed as such, any other
    text one record per line, its envelope taken off (``MARKDOWN_*``; ``TSV_ENVELOPE`` whose epoch-ms
    becomes ``ts`` (UTC); ``LINE_ENVELOPE``, whose time becomes ``ts`` (UTC) and whose stream, pod or
    launcher joins ``stream``; the compose service when ``compose`` (→ ``unit``)); a Ray/vLLM
    ``WORKER_PREFIX`` stays in the message and gives ``unit`` and ``pid``; ``ts`` null otherwise (the
    line's own time is read later); ``stream`` = the source plus the service or worker and the
    envelope's stream. A line holding a ``GLUED_RECORD`` is two records, both at its position.
    ``source_pos`` is ``line N``. With ``width`` (``paste_width``), terminal-wrapped lines are joined
    first (``unwrap``)."""
    if fmt == "json":
        return journald.parse_json_lines(lines, source=source, first_line=first)
    if fmt == "short":
        return journald.parse_short_lines(lines, source=source, first_line=first)
    frame = pl.DataFrame({"line": lines}).with_columns(journald.clean_text(pl.col("line")).alias("line"))
    frame = frame.with_row_index("n", offset=first)
    if width:
        frame = unwrap(frame, width)
    frame = frame.with_columns(dedent(ansi_remnants_off(frame["line"])).alias("line"))
    frame = frame.with_columns(
        escaped_frames_off(markdown_off(quote_marks_off(pane_borders_off(frame["line"])))).alias("line")
    )
    frame = line_numbers_off(frame)
    tsv = pl.col("line").str.extract_groups(TSV_ENVELOPE)
    frame = frame.with_columns(tsv.alias("t")).with_columns(
        pl.coalesce(pl.col("t").struct.field("rest"), pl.col("line")).alias("line"),
        pl.from_epoch(pl.col("t").struct.field("ms").cast(pl.Int64, strict=False), time_unit="ms")
        .dt.replace_time_zone("UTC")
        .cast(UTC_US)
        .alias("ts"),
    )
    frame = _split_glued_once(frame, GLUED_ENVELOPE, ("e",)) if _has(frame, GLUED_ENVELOPE) else frame
    frame = _wrapped_tails_on(_line_envelopes(frame))
    # a blank line carries no envelope: it belongs to the stream of the line before it
    blank = pl.col("line").str.strip_chars() == ""
    frame = frame.with_columns(
        pl.when(blank).then(pl.col(c).forward_fill()).otherwise(pl.col(c)).alias(c)
        for c in ("envelope_stream", "envelope_unit")
    )
    if compose:
        parts = pl.col("line").str.extract_groups(COMPOSE_PREFIX)
        frame = frame.with_columns(parts.alias("p")).with_columns(
            pl.coalesce(pl.col("p").struct.field("rest"), pl.col("line")).alias("line"),
            pl.col("p").struct.field("svc").alias("svc"),
        )
        # `docker compose logs -t`: Docker's stamp after the service prefix is the line's time (kept in
        # the text, where it opens the line's record as any ISO time does), taken off the text when the
        # line after it opens with a header of its own, as a CRI envelope is (batch14/12: Kafka's
        # `[2024-01-29 16:04:29,231] INFO …`, its level then read)
        stamp = pl.col("line").str.extract(COMPOSE_TIMESTAMP, 1)
        rest = pl.col("line").str.replace(COMPOSE_TIMESTAMP, "")
        own = stamp.is_not_null() & rest.str.contains(HEADER_START).fill_null(False)
        frame = frame.with_columns(
            pl.coalesce("ts", rfc3339_us(stamp)).alias("ts"),
            pl.when(own).then(rest).otherwise(pl.col("line")).alias("line"),
        )
        frame = _envelopes_behind_service(frame)
    else:
        frame = frame.with_columns(pl.lit(None, pl.String).alias("svc"))
    frame = _split_glued(frame)  # before the worker prefix: a glued record may carry one
    frame = _split_repeated_prefix(frame)
    worker = pl.col("line").str.extract_groups(WORKER_PREFIX)
    frame = frame.with_columns(worker.alias("w")).with_columns(
        pl.coalesce(pl.col("envelope_unit"), pl.col("svc"), pl.col("w").struct.field("worker")).alias("svc"),
        pl.col("w").struct.field("pid").cast(pl.Int32, strict=False).alias("pid"),
    )
    frame = _wrapped_token_rest(frame)
    frame = frame.with_columns(
        pl.col("svc").alias("unit"),
        pl.col("line").alias("message"),
        pl.lit(source).alias("source"),
        pl.format("line {}", pl.col("n")).alias("source_pos"),
        pl.concat_str(
            [pl.lit(source), pl.col("svc"), pl.col("pid"), pl.col("envelope_stream")],
            separator="|",
            ignore_nulls=True,
        ).alias("stream"),
    )
    return conform(frame, journald.RECORD_COLUMNS)  # host, boot_id, cmdline, comm, entry_error: null


# The rest of a hyphenated token (a UUID, a host name) that a terminal wrapped onto the next line: the line
# above ends inside a word and this one opens with a hyphen glued to four or more of its characters
# (``…Expected 46126a31-6b81`` / ``-435d-a116-…_dp0,received …``, batch10/01).
WRAPPED_TOKEN_REST = r"^-[0-9A-Za-z]{4}"


def _wrapped_token_rest(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``line``, ``svc``, ``pid``) with each line that is the rest of a token a terminal wrap cut
    (``WRAPPED_TOKEN_REST`` after a line ending in a word character; no record start) given the worker
    and pid of the line above it: it is that line's text, so it joins that process's record (a line
    without a prefix is otherwise another stream's, never part of a worker's record)."""
    rest = pl.col("line").str.contains(WRAPPED_TOKEN_REST) & pl.col("pid").is_null() & pl.col("svc").is_null()
    if not frame.select(rest.any()).item():
        return frame
    cut = pl.col("line").shift(1).str.contains(r"[0-9A-Za-z]$") & ~is_record_start(pl.col("line"))
    take = (rest & cut).fill_null(False)
    return frame.with_columns(
        pl.when(take).then(pl.col(c).shift(1)).otherwise(pl.col(c)).alias(c) for c in ("svc", "pid")
    )


def _has(frame: pl.DataFrame, pattern: str) -> bool:
    """Does any ``line`` of ``frame`` match ``pattern``?"""
    return frame.select(pl.col("line").str.contains(pattern).any()).item()


# The tail of an envelope's line a terminal wrapped onto the next line: one word, no envelope of its own, between
# two lines of the same envelope stream (FastChat#3372, batch25/02: `…, line 39, in R` / `untime` / `<time> |
# ERROR | stderr |     return Runtime(…)`). A wrapped word carries no stamp: it is the rest of the line above.
WRAPPED_TAIL = r"^[A-Za-z0-9_]+$"


def _wrapped_tails_on(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``line``, ``n``, ``envelope_stream`` after ``_line_envelopes``) with each ``WRAPPED_TAIL``
    line that sits between two lines of one envelope stream, the line above ending inside a word, appended to
    that line (its text kept there, its row dropped); other lines as they are."""
    stream, line = pl.col("envelope_stream"), pl.col("line")
    tail = (
        line.str.contains(WRAPPED_TAIL)
        & stream.is_null()
        & stream.shift(1).is_not_null()
        & (stream.shift(-1) == stream.shift(1))
        & line.shift(1).str.contains(r"[A-Za-z0-9_]$")
    ).fill_null(False)
    if not frame.select(tail.any()).item():
        return frame
    frame = frame.with_columns(tail.alias("_tail"))
    joined = pl.when(pl.col("_tail").shift(-1).fill_null(False)).then(line + line.shift(-1)).otherwise(line)
    return frame.with_columns(joined.alias("line")).filter(~pl.col("_tail")).drop("_tail")


def _fastchat_time(printed: pl.Expr) -> pl.Expr:
    """FastChat's envelope time as printed (``FASTCHAT_ENVELOPE``'s ``fct``: to the second, no zone)."""
    return printed.str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)


def _envelopes_behind_service(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` after its compose service prefixes were taken off, with FastChat's envelope a line carries
    behind that prefix taken off too (``docker compose logs`` of a FastChat worker: ``svc  | <time> | ERROR |
    stderr | …``, FastChat#3498, batch25/01): its time the line's (as printed), its stream kept; other lines as
    they are (Docker's own stamp there is ``COMPOSE_TIMESTAMP``'s)."""
    if not _has(frame, f"^{FASTCHAT_ENVELOPE}"):
        return frame
    e = pl.col("line").str.extract_groups(f"^{FASTCHAT_ENVELOPE}(?P<rest>.*)$").struct
    when = _fastchat_time(e.field("fct"))
    return frame.with_columns(
        pl.coalesce(e.field("rest"), "line").alias("line"),
        pl.coalesce("ts", when.dt.replace_time_zone("UTC")).alias("ts"),
        pl.coalesce("envelope_stream", e.field("fcs")).alias("envelope_stream"),
        pl.when(pl.col("ts").is_null() & when.is_not_null())
        .then(True)
        .otherwise("ts_zoneless")
        .alias("ts_zoneless"),
    )


def _line_envelopes(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``line``, ``ts``) with each line's ``LINE_ENVELOPE`` (or Docker json-file object,
    ``DOCKER_ENVELOPE``: its ``log``) taken off: ``ts`` its time (RFC 3339 → UTC; a launcher's
    zoneless time read as UTC), ``envelope_stream`` (stdout/stderr, the launcher's process) and
    ``envelope_unit`` (kubectl's ``pod/container``), ``ts_zoneless`` (True where ``ts`` is the launcher's
    zoneless time); null where a line has none. A chunk without any
    envelope costs one scan."""
    none = pl.lit(None, pl.String)
    if not frame.select(pl.col("line").str.contains(ENVELOPE_START).any()).item():
        return frame.with_columns(
            none.alias("envelope_stream"),
            none.alias("envelope_unit"),
            pl.lit(None, pl.Boolean).alias("ts_zoneless"),
        )
    e = pl.col("e").struct
    docker = pl.when(pl.col("line").str.contains(DOCKER_ENVELOPE)).then(pl.col("line"))
    frame = frame.with_columns(
        pl.col("line").str.extract_groups(LINE_ENVELOPE).alias("e"),
        docker.str.json_path_match("$.log").str.strip_suffix("\n").alias("d_log"),
        docker.str.json_path_match("$.stream").alias("d_fd"),
        rfc3339_us(docker.str.json_path_match("$.time")).alias("d_ts"),
    )
    # kubectl --timestamps alone only before a known header, never before the router's own ISO time
    stamp = pl.coalesce(e.field("kt"), e.field("kb"))
    bare = stamp.is_not_null()
    # a stamp in nanoseconds (7 to 9 fraction digits, UTC) is a runtime's or a CI's, before any text: `docker
    # logs -t`, `kubectl logs --timestamps`, GitHub Actions (TGI#1383, batch21/01: `…318739139Z terminate called
    # …`); an application's own ISO time prints ms or µs (COMPOSE_TIMESTAMP's rule)
    runtime = stamp.str.contains(r"\.\d{7,9}Z$")
    bare_ok = runtime | e.field("rest").str.contains(HEADER_START) & ~pl.col("line").str.contains(
        ROUTER_START
    )
    taken = ~bare | bare_ok.fill_null(False)
    launched = pl.coalesce(
        e.field("launch").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False),
        e.field("disc").str.to_datetime("%b %d, %Y @ %H:%M:%S%.f", time_unit="us", strict=False),
        _fastchat_time(e.field("fct")),
    )
    when = pl.coalesce(
        [rfc3339_us(e.field(k)) for k in ("cri", "kp", "gt", "kt", "kb")]
        + [launched.dt.replace_time_zone("UTC")]
    )
    frame = frame.with_columns(
        pl.coalesce("d_log", pl.when(taken).then(e.field("rest")), "line").alias("line"),
        pl.coalesce("ts", "d_ts", pl.when(taken).then(when)).alias("ts"),
        pl.coalesce("d_fd", e.field("fd"), e.field("proc"), e.field("gsev"), e.field("fcs")).alias(
            "envelope_stream"
        ),
        pl.concat_str([e.field("pod"), e.field("container")], separator="/").alias("envelope_unit"),
        # a launcher's or a log platform's time is printed without a zone: its ts is as printed, not UTC
        # (clocks.zoneless)
        pl.when(pl.col("ts").is_null() & taken & launched.is_not_null()).then(True).alias("ts_zoneless"),
        e.field("gt").is_not_null().alias("_console"),
    ).drop("e", "d_log", "d_fd", "d_ts")
    return newest_first_off(frame).drop("_console")


def newest_first_off(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each run of consecutive lines that carry a log console's envelope (``_console``:
    ``GCP_ENVELOPE``) put back in time order where the console listed them newest first (their times never
    rise down the run and fall at least once: Google Cloud Logging's default order, a traceback then reads
    upside down, sglang#5095, batch23/01). Each line keeps its number; other lines stay where they are."""
    console = pl.col("_console").fill_null(False)
    if not frame.select(console.any()).item():
        return frame
    run = (console != console.shift(1)).fill_null(True).cum_sum()
    frame = frame.with_columns(run.alias("_run"), pl.int_range(pl.len()).alias("_row"))
    order = (
        frame.filter(console)
        .group_by("_run")
        .agg(
            (pl.col("ts").diff().drop_nulls() <= pl.duration(microseconds=0)).all().alias("_falls_only"),
            (pl.col("ts").diff().drop_nulls() < pl.duration(microseconds=0)).any().alias("_falls"),
        )
    )
    flip = order.filter(pl.col("_falls_only") & pl.col("_falls"))["_run"]
    if flip.len() == 0:
        return frame.drop("_run", "_row")
    flipped = pl.col("_run").is_in(flip.implode()) & console
    # within a flipped run, rows are taken last first: the key is the row's place counted from the run's end
    key = pl.when(flipped).then(
        pl.col("_row").max().over("_run") + pl.col("_row").min().over("_run") - pl.col("_row")
    )
    return frame.sort(key.otherwise(pl.col("_row"))).drop("_run", "_row")


# A paste that lost its line breaks glues every record of a log onto one line (batch12/04: eight
# `(VllmWorker rank=0 pid=N) ERROR …` records): each pass splits off one glued record per line, up to this many.
MAX_GLUED_PASSES = 64


# After the first split, only the line prefix a writer repeats on every record (SGLang's header, a worker's
# `(Name pid=N) LEVEL`) splits again: a second glog line or `Fatal Python error:` inside the rest is more often
# a quote in prose (a README's table cell quoting several lines) than another record.
GLUED_AGAIN = GLUED_RECORD.split("|^(?P<npre>")[0]
GLUED_AGAIN_START = GLUED_START.split(r"|\S(?:")[0]


def _split_glued(frame: pl.DataFrame) -> pl.DataFrame:
    """Each line of ``frame`` holding a ``GLUED_RECORD`` made one row per record: the text before the
    first glued header, then the record from it on, and that record split again at every later SGLang
    header or worker prefix glued to it (``GLUED_AGAIN``), all keeping the line's columns and number
    (``MAX_GLUED_PASSES`` records a line at most; the rest stays on the last row)."""
    if not frame.select(pl.col("line").str.contains(GLUED_START).any()).item():
        return frame
    frame = _split_glued_once(frame, GLUED_RECORD, ("", "w", "n", "l", "f"))
    for _ in range(MAX_GLUED_PASSES - 1):
        if not frame.select(pl.col("line").str.contains(GLUED_AGAIN_START).any()).item():
            break
        frame = _split_glued_once(frame, GLUED_AGAIN, ("", "w"))
    return frame


# A line that opens with a worker's prefix and holds the same prefix again after a space: records of one
# writer glued by a paste that turned its line breaks into spaces (batch13/12: three `(RolloutManager
# pid=1741924) …` records on one line). The writer repeats the prefix on every line it prints, so each
# repeat opens a record, whatever follows it (a logger's header or plain words).
_OWN_PREFIX = rf"^\({WORKER_NAME} pid=\d+(?:, ip=[^)]*)?\) "


def _split_repeated_prefix(frame: pl.DataFrame) -> pl.DataFrame:
    """Each line of ``frame`` that opens with a worker prefix (``(Name pid=N) ``) and repeats it after a
    space made one row per repeat (the line's columns and number kept); other lines as they are."""
    line = pl.col("line")
    repeats = line.str.contains(_OWN_PREFIX) & (line.str.count_matches(r"\(\S[^()]* pid=\d+") > 1)
    frame = frame.with_columns(repeats.fill_null(False).alias("_rep"))
    if not frame["_rep"].any():
        return frame.drop("_rep")

    def split(text: str) -> list[str]:
        prefix = re.match(_OWN_PREFIX, text)
        if prefix is None:
            return [text]
        return re.split(r"(?<=\S) (?=" + re.escape(prefix.group(0)) + ")", text)

    # each prefix is the line's own, so the split is per line, in Python: on the few lines that repeat it
    frame = frame.with_row_index("_r")
    parts = frame.filter("_rep").with_columns(line.map_elements(split, return_dtype=pl.List(pl.String)))
    both = pl.concat([frame.filter(~pl.col("_rep")), parts.explode("line")])
    return both.sort("_r", maintain_order=True).drop("_r", "_rep")


def _split_glued_once(frame: pl.DataFrame, pattern: str, keys: tuple[str, ...]) -> pl.DataFrame:
    """``_split_glued``'s one pass: each line holding a record of ``pattern`` (its groups ``{k}pre`` and
    ``{k}rec`` for k in ``keys``) made two rows (the text before the glued header, then the record from
    it on)."""
    g = pl.col("line").str.extract_groups(pattern)
    pre = pl.coalesce(*(g.struct.field(f"{k}pre") for k in keys))
    rec = pl.coalesce(*(g.struct.field(f"{k}rec") for k in keys))
    # a note ("# …") is one line whatever it quotes
    parts = pl.when(rec.is_not_null() & ~pl.col("line").str.starts_with("# ")).then(
        pl.concat_list([pre, rec])
    )
    return frame.with_columns(parts.otherwise(pl.concat_list([pl.col("line")])).alias("line")).explode("line")
