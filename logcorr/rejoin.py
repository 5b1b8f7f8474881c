"""Multi-line re-joining: journald splits a process's stdout at newlines, so one traceback or one
embedded py-spy dump arrives as many entries of one pid. Join them back into logical records.

Rule: within one process stream (``stream`` column: boot id / pid / unit, or the file), a line that
does not open a record (``parsers.prefix.is_record_start``: no ``[YYYY-MM-DD HH:MM:SS…]`` or other
known header) continues the record before it, when that record opened with a header. Lines of a
stream that never printed a header (sshd, the kernel) stay one record each. A native multi-line
MESSAGE is one line here and stays one record. ``join_all=True`` makes each stream one record (a
py-spy dump file).

Streaming: records still open at the end of a chunk (the last record of a stream, which the next
chunk may continue) are held back, together with every record after the earliest of them, so
records leave in input order. A record also closes when its stream has been silent for
``SETTLE_US`` while other streams went on, which bounds what is held back.
"""

from __future__ import annotations

import polars as pl

from logcorr.parsers.journald import RECORD_COLUMNS
from logcorr.parsers.prefix import is_record_start

SETTLE_US = 5_000_000


class Rejoiner:
    """Feed record chunks in input order; get logical records back.

    ``feed(df)`` takes a DataFrame with ``RECORD_COLUMNS`` and returns the records completed so far;
    ``finish()`` returns the rest. Output columns: ``RECORD_COLUMNS`` + ``n_lines`` (Int32), where
    ``message`` is the record's lines joined by newlines, ``ts``/``source_pos``/``pid``… are those
    of its first line and ``entry_error`` joins the lines' errors.
    """

    def __init__(self, *, join_all: bool = False) -> None:
        self.join_all = join_all
        self._pending = pl.DataFrame(schema=RECORD_COLUMNS)

    def feed(self, df: pl.DataFrame) -> pl.DataFrame:
        return self._run(pl.concat([self._pending, df.select(list(RECORD_COLUMNS))]), final=False)

    def finish(self) -> pl.DataFrame:
        return self._run(self._pending, final=True)

    def _run(self, df: pl.DataFrame, *, final: bool) -> pl.DataFrame:
        df = df.with_row_index("seq").with_columns(pl.col("stream").fill_null("").alias("stream"))
        header = is_record_start(pl.col("message")).fill_null(True)
        if self.join_all:
            header = pl.col("seq") == pl.col("seq").min().over("stream")
        # Before the first header line of a stream, every line is a record of its own.
        starts = header | (header.cum_sum().over("stream") == 0)
        df = df.with_columns(starts.cum_sum().over("stream").alias("rec"))
        if final:
            closed = df
            self._pending = pl.DataFrame(schema=RECORD_COLUMNS)
        else:
            newest = df["ts"].max()
            last = df.group_by("stream").agg(
                pl.col("rec").max().alias("last_rec"), pl.col("ts").max().alias("last_ts")
            )
            df = df.join(last, on="stream", how="left")
            open_rec = pl.col("rec") == pl.col("last_rec")
            if newest is not None:
                quiet = (pl.lit(newest) - pl.col("last_ts")).dt.total_microseconds() >= SETTLE_US
                open_rec = open_rec & ~quiet.fill_null(False)
            df = df.with_columns(open_rec.alias("open"))
            first_open = df.filter(pl.col("open"))["seq"].min()
            if first_open is None:
                closed = df
                self._pending = pl.DataFrame(schema=RECORD_COLUMNS)
            else:
                held = pl.col("seq").min().over("stream", "rec") >= first_open
                self._pending = df.filter(held).select(list(RECORD_COLUMNS))
                closed = df.filter(~held)
        return (
            closed.group_by("stream", "rec", maintain_order=True)
            .agg(
                pl.col("seq").first(),
                *[pl.col(c).first() for c in RECORD_COLUMNS if c not in ("stream", "message", "entry_error")],
                pl.col("message").fill_null("").str.join("\n"),
                pl.col("entry_error").drop_nulls().str.join("; ").alias("entry_error"),
                pl.len().cast(pl.Int32).alias("n_lines"),
            )
            .sort("seq")
            .with_columns(
                pl.when(pl.col("entry_error") != "").then(pl.col("entry_error")).alias("entry_error")
            )
            .select(*RECORD_COLUMNS, "n_lines")
        )
