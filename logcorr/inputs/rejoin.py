"""Multi-line re-joining: journald splits a process's stdout at newlines, so one traceback or one
embedded py-spy dump arrives as many entries of one pid. Join them back into logical records.

Rule: within one process stream (``stream`` column: boot id / pid / unit, or the file), a line opens
a record when it carries a known header or is a known record kind without one
(``parsers.prefix.is_record_start``), unless its header repeats the line before it exactly and its
body is continuation-shaped (a logger that stamps every line of a message, ``_same_stamp``); a line of another shape continues the record before it, except
before the stream's first record start (a `# ` comment is none) and after a blank line, where only continuation-shaped lines
(``parsers.prefix.CONTINUATION``: indented, traceback parts, py-spy thread headers) continue, and a
Python frame line there continues only a frame list (``_frames_after_blank``). So
lines of a stream that never printed a header (sshd, the kernel) stay one record each, and a note or
a fragment after a blank line never takes the rank, pid and time of the record before it. A
``Traceback (most recent call last):`` line after a record opened by prose (no header, no known
start), a note or a progress bar opens a record of its own, unless the line before it is Python's own lead-in to it
(``_traceback_heads``); a line of the anonymous stream of a text (no process prefix) right after
another stream's line opens one too (``_after_another_stream``). A pasted
note (``parsers.prefix.NOTE``: a comment, a prompt, ^C) is one line: the next line of every stream
after it opens a record (a prompt starts another command's output). A blank
line never opens a record; the blank lines that end a record count in its ``n_lines`` but not in
its text. A native multi-line
MESSAGE is one line here and stays one record. ``join_all=True`` makes each stream one record (a
py-spy dump file). ``whole=True`` is for a reader whose every record is a stream of its own that no
later line continues (a crash dump's requests, a scrape's samples, a trace's spans): each chunk's
records leave at once, none held back (holding them all, each the open record of its stream, grew
with the input).

Streaming: records still open at the end of a chunk (the last record of a stream, which the next
chunk may continue) are held back, together with every record after the earliest of them, so
records leave in input order. A record also closes when its stream has been silent for
``SETTLE_US`` while other streams went on, which bounds what is held back. A record still open past
``MAX_RECORD_LINES`` lines or ``MAX_RECORD_BYTES`` bytes is no log record (a runaway loop, a bomb): what
is held is let go, and that record leaves in pieces, each marked ``RECORD_PIECE`` (``pieces`` counts
them), so memory stays bounded whatever the input. A dump file (``join_all``) is never cut.
"""

from __future__ import annotations

import polars as pl

from logcorr.inputs.source import LINE_PIECE, MAX_RECORD_BYTES, MAX_RECORD_LINES, RECORD_PIECE
from logcorr.parsers.journald import RECORD_COLUMNS
from logcorr.parsers.prefix import (
    COMMENT,
    CONTINUATION,
    EMPTY_EXCEPTION_LINE,
    EXCEPTION_LINE_START,
    FAULTHANDLER_THREAD,
    HEADER_START,
    NOTE,
    OWN_LINES_CONTINUATION,
    OWN_LINES_START,
    PROGRESS_BAR,
    RUST_TARGET,
    SGLANG_START,
    TRACEBACK_HEAD,
    TRACEBACK_LEADS,
    is_record_start,
)

SETTLE_US = 5_000_000
# faulthandler's frame line (`  File "x.py", line 7 in f`, no comma before "in") or thread header
FAULTHANDLER_FRAME_OR_THREAD = rf'^\s+File "[^"\n]*", line [0-9]+ in |{FAULTHANDLER_THREAD}'


class Rejoiner:
    """Feed record chunks in input order; get logical records back.

    ``feed(df)`` takes a DataFrame with ``RECORD_COLUMNS`` and returns the records completed so far;
    ``finish()`` returns the rest. Output columns: ``RECORD_COLUMNS`` + ``n_lines`` (Int32), where
    ``message`` is the record's lines joined by newlines, ``ts``/``source_pos``/``pid``… are those
    of its first line and ``entry_error`` joins the lines' errors.
    """

    def __init__(self, *, join_all: bool = False, whole: bool = False) -> None:
        self.join_all = join_all
        self.whole = whole  # every record is whole, one stream each (a dump's, a span's): none held
        self._pending = pl.DataFrame(schema=RECORD_COLUMNS)
        self._cut: pl.Series = pl.Series("key", [], pl.UInt64)  # streams whose open record was cut
        # streams that opened a record in an earlier chunk: their held lines are no stream's start
        self._started: pl.Series = pl.Series("key", [], pl.UInt64)
        self.pieces = 0  # pieces of records let go in pieces

    def feed(self, df: pl.DataFrame) -> pl.DataFrame:
        return self._run(pl.concat([self._pending, df.select(list(RECORD_COLUMNS))]), final=False)

    def finish(self) -> pl.DataFrame:
        return self._run(self._pending, final=True)

    def _run(self, df: pl.DataFrame, *, final: bool) -> pl.DataFrame:
        # The stream's hash stands in for the stream in every grouping (no string hashing per row).
        df = df.with_row_index("seq").with_columns(pl.col("stream").fill_null("").hash().alias("key"))
        if self.join_all:
            starts = pl.col("seq") == pl.col("seq").min().over("key")
        else:
            starts, firm = _starts(df, self._started)
            df = df.with_columns(starts.alias("_start"), firm.alias("_firm"))
            starts = pl.col("_start")
        # a record is named by its first line's row (``rec_at``): the line that opened it, or its stream's first
        # line in this run for the lines before the stream's first start; rows of one record share it
        opened = pl.when(starts).then(pl.col("seq")).forward_fill().over("key")
        df = df.with_columns(
            pl.coalesce(opened, pl.col("seq").min().over("key")).alias("rec_at"),
            opened.is_null().alias("_before_start"),
        ).drop("_start", strict=False)
        if self._cut.len():  # the lines before a cut stream's first start continue its cut record
            df = _mark_piece(df, pl.col("_before_start") & pl.col("key").is_in(self._cut.implode()))
            self._cut = self._cut.clear()
        df = df.drop("_before_start")
        first_open = None
        if not final and not self.whole:
            newest = df["ts"].max()
            open_rec = pl.col("rec_at") == pl.col("rec_at").max().over("key")
            if newest is not None:
                quiet = (pl.lit(newest) - pl.col("ts").max().over("key")).dt.total_microseconds() >= SETTLE_US
                open_rec = open_rec & ~quiet.fill_null(False)
            first_open = df.filter(open_rec)["seq"].min()
        firm_rows = df.filter(pl.col("_firm")).select("seq", "key") if "_firm" in df.columns else None
        df = df.drop("_firm", strict=False)
        # a stream a header opened (a `# ` comment is none) counts as started for the lines read after this run, not for
        # the lines held back to be read again with them (batch14/12: held lines before the stream's first
        # header stay lines before it)
        self._note_started(firm_rows, first_open)
        if first_open is None:
            self._pending = pl.DataFrame(schema=RECORD_COLUMNS)
            return self._counted(_records(df))
        held = pl.col("rec_at") >= first_open
        size = (
            df.filter(held)
            .group_by("key", "rec_at")
            .agg(pl.len().alias("lines"), pl.col("message").str.len_bytes().sum().alias("bytes"))
        )
        too_long = (pl.col("lines") >= MAX_RECORD_LINES) | (pl.col("bytes") >= MAX_RECORD_BYTES)
        huge = size.filter(too_long & (pl.col("lines") > 1))  # one line is cut by the reader
        if huge.height and not self.join_all:  # let go of everything held; the huge ones in pieces
            self._cut = huge["key"].unique()
            self._note_started(firm_rows, None)  # nothing is held: every start was read
            cut = pl.col("rec_at").is_in(huge["rec_at"].implode())
            self._pending = pl.DataFrame(schema=RECORD_COLUMNS)
            return self._counted(_records(_mark_piece(df, cut)))
        self._pending = df.filter(held).select(list(RECORD_COLUMNS))
        return self._counted(_records(df.filter(~held)))

    def _note_started(self, firm_rows: pl.DataFrame | None, first_open: int | None) -> None:
        """Add to ``_started`` the streams of ``firm_rows`` (``seq``, ``key`` of the lines a header
        opened) that are not held back (``seq`` before ``first_open``; all when it is None)."""
        if firm_rows is None:
            return
        sent = firm_rows if first_open is None else firm_rows.filter(pl.col("seq") < first_open)
        opened = sent["key"].unique()
        if opened.len():
            self._started = pl.concat([self._started, opened]).unique()

    def _counted(self, records: pl.DataFrame) -> pl.DataFrame:
        """``records``, their pieces of cut records counted in ``pieces``."""
        self.pieces += int(records["entry_error"].str.starts_with(RECORD_PIECE).sum() or 0)
        return records


def _mark_piece(df: pl.DataFrame, rows: pl.Expr) -> pl.DataFrame:
    """``df`` with the first line of each record (``rec_at``) ``rows`` selects marked ``RECORD_PIECE``
    (in ``entry_error``, before an error the line had)."""
    first = rows & (pl.col("seq") == pl.col("rec_at"))
    first = first & ~pl.col("entry_error").str.starts_with(RECORD_PIECE).fill_null(False)
    mark = pl.concat_str(pl.lit(RECORD_PIECE), pl.lit("; ") + pl.col("entry_error"), ignore_nulls=True)
    return df.with_columns(pl.when(first).then(mark).otherwise(pl.col("entry_error")).alias("entry_error"))


def _starts(df: pl.DataFrame, started: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Per line of ``df`` (``seq``, ``key``, ``message``, ``entry_error``): does it open a record
    (the rule of the module docstring)? A piece of an over-long line always does. ``started``: the
    streams (``key``) whose header opened a record in an earlier chunk (their lines here are past it).
    Returns the starts and, of them, those a header made (``firm``; a `# ` comment is no header)."""
    said = ~pl.col("message").str.contains(r"^\s*$")  # text other than blanks (null: no text)
    # per line, by row number (``seq``, the row index) in its stream: the line before it, and the last line
    # before it with text; one window over the streams for every rule below
    df = df.with_columns(
        said.alias("_said"),
        pl.col("seq").shift(1).over("key").alias("_prev"),
        pl.when(said).then(pl.col("seq")).forward_fill().shift(1).over("key").alias("_said_before"),
    )
    starts, firm = _line_starts(df, started)
    return _traceback_heads(df, _repeats_opening(df, _after_another_stream(df, starts))), firm


# The three tokens a line opens with, its digits masked, the second and third words: the shape of a line.
LINE_SHAPE = r"^(\S+ [A-Za-z][\w'-]* [A-Za-z][\w'-]*)"


def _repeats_opening(df: pl.DataFrame, starts: pl.Series) -> pl.Series:
    """``starts`` with each line that would continue a record made a start when it opens as that record's
    first line does (``LINE_SHAPE``, digits masked: ``[#193] failed to fetch …`` and ``[#194] failed to
    fetch …``): a writer that prints no header printed its next message, one journal entry each
    (batch14/09: bootkube's retries after a fence), not a line of the one before. A continuation-shaped
    line (indented, a traceback's part) or a frame line is never one; a record opened in an earlier chunk
    is not looked at, nor a line with a header (its family's rules judged it)."""
    loose = _said_where(df, ~starts)
    if not loose.any():
        return starts
    # per loose line, by row number, the line that opened its record (a start, or its stream's first line in
    # the chunk): only those lines' text is read (a chunk holds thousands of starts, a few loose lines)
    rows = (
        df.select("key", "_prev", starts.alias("s"), loose.alias("loose"))
        .with_row_index("row")
        .select(
            "loose",
            "row",
            pl.when(pl.col("s") | pl.col("_prev").is_null())  # a start, or its stream's first line
            .then(pl.col("row"))
            .forward_fill()
            .over("key")
            .alias("open_at"),
        )
        .filter(pl.col("loose"))
    )
    message = df["message"]
    lines, opening = message.gather(rows["row"]), message.gather(rows["open_at"])

    def shape(text: pl.Series) -> pl.Series:
        return text.str.replace_all(r"\d+", "0").str.extract(LINE_SHAPE, 1)

    # a line with a header of its own that continues was so judged by the header's rules (a logger that
    # stamps every line of a traceback: batch12/06)
    shaped = (
        lines.str.contains(CONTINUATION)
        | lines.str.contains(BARE_FRAME_PART)
        | lines.str.contains(HEADER_START)
    )
    same = ((shape(lines) == shape(opening).fill_null("")) & ~shaped).fill_null(False)
    return starts.clone().scatter(rows["row"], same)


def _said_where(df: pl.DataFrame, rows: pl.Series) -> pl.Series:
    """``rows`` (Boolean, no null) that hold text other than blanks (``df``'s ``_said``)."""
    return rows & df["_said"].fill_null(False)


def _after_another_stream(df: pl.DataFrame, starts: pl.Series) -> pl.Series:
    """``starts`` with each line of an anonymous stream (its ``stream`` is its ``source`` alone: a text
    line that no worker prefix, envelope or journal field gave to a process) that would continue the
    record before it made a start when the line right above it in the input (blank lines skipped) is
    another stream's: a header-less line continues only the record of the line immediately above it,
    never one across a line that a process prefix gave to another stream (batch7/11: UCX's untimed
    message after a ``(VllmWorkerProcess pid=8441)`` line is not the fragment's two lines above)."""
    loose = _said_where(df, (~starts & (df["stream"] == df["source"])).fill_null(False))
    if not loose.any():
        return starts
    above = df.select(pl.when(pl.col("_said")).then(pl.col("key")).forward_fill().shift(1)).to_series()
    return starts | (loose & (above != df["key"]).fill_null(False))


def _traceback_heads(df: pl.DataFrame, starts: pl.Series) -> pl.Series:
    """``starts`` with each ``Traceback (most recent call last):`` line or faulthandler thread header
    (``FAULTHANDLER_THREAD``; its dump's next thread headers stay in the record it opened) that would
    continue a record opened without a header or a known record start (``is_record_start``: prose, a fragment, a line
    after a note) made a start of its own, unless the line before it (blank lines skipped) is one of
    Python's lead-ins to a traceback (``parsers.prefix.TRACEBACK_LEADS``): a program's print before a
    traceback is no part of it."""
    message = df["message"]
    rest = (~starts).arg_true()  # a start is no head to judge: only the other lines are searched
    text = message.gather(rest)
    thread_at = text.str.contains(FAULTHANDLER_THREAD).fill_null(False)
    head_at = text.str.contains(TRACEBACK_HEAD).fill_null(False) | thread_at
    if not head_at.any():
        return starts
    thread = pl.repeat(False, df.height, eager=True).scatter(rest, thread_at)
    head = pl.repeat(False, df.height, eager=True).scatter(rest, head_at)
    # Per head line, by row number: the start of the record open at it and the last line said before it
    # in its stream; only those lines' text is read again (a chunk holds a few heads, thousands of starts).
    rows = (
        df.select("key", "seq", "_said_before", starts.alias("s"), head.alias("h"))
        .select(
            pl.col("h"),
            pl.when(pl.col("s")).then(pl.col("seq")).forward_fill().over("key").alias("open_at"),
            pl.col("_said_before").alias("before_at"),
        )
        .filter(pl.col("h"))
    )
    opening = message.gather(rows["open_at"])  # null where the stream opened no record before the head
    # a record opened with a header or a known start; a note and a progress bar are records of one line
    # (a bar before a traceback is its program's last print, never a part of it: batch10/16)
    firm = pl.select(
        # a dump's later threads stay in the record its first thread header opened
        (is_record_start(pl.lit(opening)) | pl.lit(opening).str.contains(FAULTHANDLER_THREAD)).fill_null(
            False
        )
        & ~pl.lit(opening).str.contains(NOTE).fill_null(False)
        & ~pl.lit(opening).str.contains(PROGRESS_BAR).fill_null(False)
    ).to_series()
    before = message.gather(rows["before_at"])
    # a thread header after a frame of the dump's thread before it (or that thread's header) is the same dump's
    in_dump = thread.filter(head) & before.str.contains(FAULTHANDLER_FRAME_OR_THREAD).fill_null(False)
    lead = before.str.contains(TRACEBACK_LEADS).fill_null(False) | in_dump
    own = ~firm & ~lead  # a head after prose, a note or a bar, not after Python's own lead-in
    return starts.clone().scatter(head.arg_true(), own)


def _line_starts(df: pl.DataFrame, started: pl.Series) -> tuple[pl.Series, pl.Series]:
    """``_starts`` before ``_traceback_heads``."""
    message = df["message"]
    # SGLang's own header, which most lines of an engine's journal carry, opens a record: the full
    # rule (every header family, known bodies, continuation shapes) runs on the others only
    header = message.str.contains(SGLANG_START).fill_null(False)
    piece = df["entry_error"].str.starts_with(LINE_PIECE).fill_null(False)
    slow = (~header).arg_true()
    if slow.len() == 0:
        return header | piece, header
    lines = message.gather(slow)
    h = pl.select(is_record_start(pl.lit(lines)).fill_null(True)).to_series()
    # the line before matters only to a "Process N:" line (a py-spy dump the watchdog announced), a
    # "what():" line (std::terminate's, after its "terminate called" line), an escape that may hide either,
    # and an exception's own line (it opens a record after another: ``prefix.EXCEPTION_LINE_START``)
    maybe = lines.str.contains_any(["Process ", "what():", "\x1b"]).fill_null(False)
    exception = lines.str.contains(EXCEPTION_LINE_START).fill_null(False)
    empty = lines.str.contains(EMPTY_EXCEPTION_LINE).fill_null(False)  # the line after it: its message
    if (h & maybe).any() or (~h & exception).any() or empty.any():
        previous = _previous_lines(df, slow)
        h = pl.select(is_record_start(pl.lit(lines), pl.lit(previous)).fill_null(True)).to_series()
    h = h & ~_same_stamp(df, slow, lines, h)
    header = header.scatter(slow, h)
    # (a line SGLang's header opens is neither a note nor a comment: only the other lines are searched)
    note = pl.repeat(False, df.height, eager=True).scatter(
        slow, (h & lines.str.contains(NOTE)).fill_null(False)
    )
    # a comment line (`# …`) opens a record of one line but is no header: the stream it is in has not
    # started for the lines after it (batch18/13: the same prose lines one record each with and without
    # the case file's `# note:` lines above them); a fence or a prompt still starts it
    comment = pl.repeat(False, df.height, eager=True).scatter(
        slow, (h & lines.str.starts_with(COMMENT.removeprefix("^"))).fill_null(False)
    )
    firm = header & ~comment
    other = (~header).arg_true()  # most chunks: none (every line opens a record)
    if other.len() == 0:
        return header | piece, firm
    blank = ~header & ~df["_said"].fill_null(True)
    own = pl.repeat(False, df.height, eager=True).scatter(slow, h & lines.str.contains(OWN_LINES_START))
    marks = (
        df.select(
            "key",
            "_prev",
            header.alias("h"),
            blank.alias("b"),
            note.alias("n"),
            own.alias("o"),
            comment.alias("c"),
        )
        .with_columns(
            pl.col("b").gather(pl.col("_prev")).fill_null(False).alias("after_blank"),
            # the record open is a stamp-every-line logger's (glog, c10, NCCL)
            pl.when(pl.col("h"))
            .then(pl.col("o"))
            .forward_fill()
            .over("key")
            .fill_null(False)
            .alias("after_own"),
            # a note (a prompt, ^C) ends the open record of every stream: a line after one, in any stream
            (pl.col("n").cum_sum() - pl.col("n").cast(pl.UInt32)).alias("_notes_before"),
            (
                ((pl.col("h") & ~pl.col("c")).cum_sum().over("key") == 0)
                & ~pl.col("key").is_in(pl.lit(started).implode())
            ).alias("before_first"),
        )
        .with_columns(
            (pl.col("_notes_before") != pl.col("_notes_before").gather(pl.col("_prev")))
            .fill_null(False)
            .alias("after_note")
        )
    )
    # a note is one line: the line after it opens a record, whatever its shape (a dump fragment)
    after_note = ~marks["b"] & marks["after_note"] & ~header
    loose = ~marks["b"] & (marks["before_first"] | marks["after_blank"]) & ~header & ~after_note
    # after a record of a logger that stamps every line, an unstamped line is another writer's
    # (interleaved output: "ected all trees", the tail of an NCCL line whose head went elsewhere)
    stray = ~marks["b"] & marks["after_own"] & ~header & ~after_note & ~loose
    if not (loose.any() or stray.any()):
        return header | piece | after_note, firm
    opens = pl.repeat(False, df.height, eager=True)
    if loose.any():
        idx = loose.arg_true()
        body = message.gather(idx)
        shaped = body.str.contains(CONTINUATION) | _in_bare_frame_list(df, idx, body)
        # the message's first line, after its exception line (``prefix.EMPTY_EXCEPTION_LINE``)
        if empty.any():
            shaped = shaped | _previous_lines(df, idx).str.contains(EMPTY_EXCEPTION_LINE)
        shaped = shaped & ~_exception_after_prose(df, idx, body)
        opens = opens.scatter(idx, ~shaped.fill_null(False))
        opens = opens | _frames_after_blank(df, loose & marks["after_blank"] & ~marks["before_first"])
    if (
        stray.any()
    ):  # unless continuation-shaped, or the rest of a token a terminal wrap cut ("…9945" "bb3e …")
        idx = stray.arg_true()
        body = message.gather(idx)
        cut = _previous_lines(df, idx).str.contains(r"\w$") & body.str.contains(r"^\w")
        opens = opens.scatter(idx, ~(body.str.contains(OWN_LINES_CONTINUATION) | cut).fill_null(False))
    return header | piece | opens | after_note, firm


# A reporter's sentence: unindented, four words or more, ending as a sentence or a lead-in does (no frame, no code).
PROSE_SENTENCE = r"^[^\s#`|>-][^\n]*?\S(?:\s+\S+){3,}[.:!?]\s*$"


def _exception_after_prose(df: pl.DataFrame, rows: pl.Series, lines: pl.Series) -> pl.Series:
    """Per line of ``lines`` (the loose rows ``rows`` of ``df``: before the stream's first record or after a
    blank line): is it an exception's own line (``EXCEPTION_LINE_START``) whose nearest line above (past one
    blank line) is a reporter's sentence (``PROSE_SENTENCE``), not a frame or a code line? Then it is a record
    of its own, never that sentence's continuation (a comment on sglang#35884, batch22/10: "…the scheduler crashed in
    `qwen_sparse_attn_backend.py` line 682:", a blank line, then `RuntimeError: repeats can not be negative`)."""
    exc = lines.str.contains(EXCEPTION_LINE_START).fill_null(False)
    if not exc.any():
        return exc
    before = _previous_lines(df, rows)
    above = pl.select(
        pl.when(pl.lit(before).str.strip_chars() == "")
        .then(pl.lit(_previous_lines(df, rows, back=2)))
        .otherwise(pl.lit(before))
    ).to_series()
    prose = above.str.contains(PROSE_SENTENCE) & ~above.str.contains(r'File "|^Traceback |exception')
    return (exc & prose).fill_null(False)


# A Python frame line (a traceback's or faulthandler's `  File "…", line N[,] in f`), and the lines a
# frame list continues after a blank line: a frame or its source line (indented), a thread's head.
PY_FRAME = r'^[ \t]+File "[^"\n]*", line \d+,? in '
FRAME_LIST = r"^[ \t]+\S|^(?:Current thread|Thread) (?:0x[0-9A-Fa-f]+|[0-9]+) |^Traceback \(most recent call last\):|^Stack \("


def _in_bare_frame_list(df: pl.DataFrame, rows: pl.Series, lines: pl.Series) -> pl.Series:
    """Per line of ``lines`` (the rows ``rows`` of ``df``): is it part of a frame list whose paste lost
    its indentation (``BARE_FRAME`` in column 1)? The source line right under a frame line is, and so
    is a frame line right after a frame line or after the source line under one (batch13/05: a
    traceback's middle, every line in column 1). The first frame line of such a list is not: it opens
    the fragment."""
    said = lines.str.strip_chars() != ""
    one = _previous_lines(df, rows).str.contains(BARE_FRAME).fill_null(False)
    two = _previous_lines(df, rows, back=2).str.contains(BARE_FRAME).fill_null(False)
    frame = lines.str.contains(BARE_FRAME).fill_null(False)
    blank_before = (_previous_lines(df, rows).str.strip_chars() == "").fill_null(True)
    return said & (one | (frame & two & ~blank_before))


def _frames_after_blank(df: pl.DataFrame, rows: pl.Series) -> pl.Series:
    """Of ``rows`` (lines right after a blank line in their stream), those that are a Python frame line
    (``PY_FRAME``) while the last line said before the blank is no part of a frame list
    (``FRAME_LIST``): a blank line and then a frame syntax the open record did not use start another
    piece of output (batch5/07: a faulthandler dump's tail after a c10 NCCL message)."""
    if not rows.any():
        return rows
    at = rows.arg_true()
    message = df["message"]
    before = message.gather(df["_said_before"].gather(at))
    frame = message.gather(at).str.contains(PY_FRAME) & ~before.str.contains(FRAME_LIST).fill_null(False)
    return rows.clone().scatter(at, frame.fill_null(False))


# After a header the line before it repeated exactly, these bodies continue its record: a traceback's
# parts or an indented line (``CONTINUATION``), a C++ frame of a c10 error, nothing at all.
STAMPED_CONTINUATION = rf"(?:{CONTINUATION})|^frame #\d+: |^\s*$"
# A Python frame line and a caret line, indented or not (a paste can lose the indentation).
BARE_FRAME = r'^\s*File "[^"\n]*", line \d+, in \S'
BARE_FRAME_PART = rf"{BARE_FRAME}|^\s*\^+\s*$"
# a Rust tracing target after the header is part of the stamp (dynamo-run's relay: batch12/06)
_LEAD = rf"({HEADER_START}(?:{RUST_TARGET.removeprefix('^')})?)"


def _same_stamp(df: pl.DataFrame, slow: pl.Series, lines: pl.Series, h: pl.Series) -> pl.Series:
    """Per line of ``lines`` (the rows ``slow`` of ``df``) that opens a record (``h``): does it carry
    the very header of the line before it in its stream (time, level, pid, ranks, file:line as
    printed) and a continuation-shaped body (``STAMPED_CONTINUATION``)? A logger that stamps every
    line of a multi-line message (sglang#9867's custom format) prints a traceback that way: those
    lines continue the record. False elsewhere."""
    if not h.any():
        return h
    previous = _previous_lines(df, slow)
    lead = lines.str.extract(_LEAD, 1)
    before = previous.str.extract(_LEAD, 1)
    rest = lines.str.slice(lead.str.len_chars().fill_null(0))
    said = previous.str.slice(before.str.len_chars().fill_null(0))
    # the same to the second: a logger that stamps each line of one message may advance its milliseconds
    # between them (a wrapper re-logging a child's traceback: `22:16:37,096` then `22:16:37,097`, sglang#2037,
    # batch26/14)
    same = _to_the_second(lead) == _to_the_second(before)
    # a paste that lost the indentation: a frame line or a caret line is still a traceback's, and so is
    # the source line right under a frame line (batch12/04)
    bare = rest.str.contains(BARE_FRAME_PART) | said.str.contains(BARE_FRAME)
    return (h & same & (rest.str.contains(STAMPED_CONTINUATION) | bare)).fill_null(False)


def _to_the_second(lead: pl.Series) -> pl.Series:
    """``lead`` (a header as printed) without the fraction of its seconds and its trailing blanks."""
    return lead.str.replace(r"(\d\d:\d\d:\d\d)[.,]\d+", "${1}").str.strip_chars_end()


def _previous_lines(df: pl.DataFrame, rows: pl.Series, back: int = 1) -> pl.Series:
    """The message of the line ``back`` lines before each of ``rows`` (row indexes of ``df``) in its
    stream, by ``df``'s ``_prev`` (``_starts``); null before a stream's first line. No text is copied but
    that of ``rows``."""
    at = rows
    for _ in range(back):
        at = df["_prev"].gather(at)
    return df["message"].gather(at)


def _records(lines: pl.DataFrame) -> pl.DataFrame:
    """One row per record (``rec_at``, its first line's row) of ``lines``, in order. Most records are one
    line: they pass through as they are, and only the lines of multi-line records are grouped and joined."""
    size = pl.col("entry_lines").fill_null(1)  # input lines, as wc -l counts
    # a record of more than one input line: a line continues it, or a reader joined its one entry of lines
    multi_at = lines.filter((pl.col("seq") != pl.col("rec_at")) | (size > 1))["rec_at"].unique()
    lines = lines.with_columns(size.cast(pl.Int32).alias("n_lines"))
    if multi_at.len():
        joined = (
            lines.filter(pl.col("rec_at").is_in(multi_at.implode()))
            .group_by("rec_at")
            .agg(
                # trailing blank lines stay counted in n_lines, not in the text
                pl.col("message")
                .fill_null("")
                .str.join("\n")
                .str.replace(r"(?:\n[ \t]*)+$", "")
                .alias("_message"),
                pl.col("entry_error").drop_nulls().str.join("; ").alias("_error"),
                pl.col("n_lines").sum().alias("_n"),
            )
        )
        lines = (
            lines.filter(pl.col("seq") == pl.col("rec_at"))
            .join(joined, on="rec_at", how="left", maintain_order="left")
            .with_columns(
                pl.coalesce("_message", "message").alias("message"),
                pl.when(pl.col("_n") > 1)
                .then(pl.when(pl.col("_error") != "").then(pl.col("_error")))
                .otherwise(pl.col("entry_error"))
                .alias("entry_error"),
                pl.coalesce("_n", "n_lines").cast(pl.Int32).alias("n_lines"),
            )
        )
    return lines.select(*RECORD_COLUMNS, "n_lines")
