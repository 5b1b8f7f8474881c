"""Stage 2 of reading an input: re-joined records → ``events`` rows (``Enricher``).

Each chunk's records get their header split (``parsers.prefix.split_prefix``), a time, an event id, a
kind and the fields ``parsers.sglang.classify`` reads, and a role (``roles``). ``records_from_text`` runs
the same reading and enrichment on a text in memory, without writing anything.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl

from logcorr.clocks import zoneless
from logcorr.inputs import containers, sniff
from logcorr.inputs.rejoin import Rejoiner
from logcorr.inputs.source import ReadOptions, SourceReport
from logcorr.inputs.text import has_compose_prefix, paste_width, text_records
from logcorr.parsers import journald, otel, prometheus, router, sglang, systemd
from logcorr.parsers.prefix import date_yearless, split_prefix
from logcorr.roles import RoleFlow, record_roles
from logcorr.store.schema import EVENTS

# records whose unit says what they are, whatever their text: a scrape's samples, a trace's spans
UNIT_KINDS = {prometheus.UNIT: "metric", **{otel.UNIT + r: "span" for r in ("", "/prefill", "/decode")}}


class Enricher:
    """Turns re-joined records into ``events`` rows (plus the in-memory ``body`` column)."""

    def __init__(self, roles: dict[str, str], first_id: int = 0) -> None:
        self.roles = roles
        self.next_id = first_id
        self.years: dict[str, int] = {}  # per input: the last year printed in one of its lines
        self.flow = RoleFlow()  # the roles shown per process and per input, across chunks

    def _fix_years(self, head: pl.DataFrame, source: str) -> pl.DataFrame:
        """Date the rows whose header prints no year (glog, PyTorch, vLLM) that ``split_prefix``
        could not date within the chunk, with the last year this input printed; else they stay
        null. Never a year that was not printed."""
        year = self.years.get(source)
        if year is not None and head["yearless"].null_count() < head.height:
            head = head.with_columns(
                pl.coalesce(pl.col("log_ts"), date_yearless(pl.col("yearless"), pl.lit(year))).alias("log_ts")
            )
        head = head.with_columns(
            pl.when(pl.col("log_ts").is_null()).then(pl.col("printed_time")).alias("printed_time")
        )
        known = head.filter(pl.col("yearless").is_null())["log_ts"].drop_nulls()
        if known.len():
            self.years[source] = int(known.dt.year()[-1])
        return head.drop("yearless")

    def __call__(
        self, recs: pl.DataFrame, unit_roles: dict[str, str], forced_kind: str | None
    ) -> pl.DataFrame:
        source = recs["source"][0] if recs.height else ""
        head = _in_range(self._fix_years(split_prefix(recs["message"]), source))
        df = pl.concat([recs, head.rename({"pid": "header_pid", "host": "header_host"})], how="horizontal")
        df = df.with_columns(
            pl.int_range(self.next_id, self.next_id + df.height, dtype=pl.Int64).alias("event_id"),
            pl.coalesce("ts", pl.col("log_ts").dt.replace_time_zone("UTC")).alias("ts"),
            # an envelope's time printed without a year (journalctl -o short) where the line's own header
            # prints none
            pl.coalesce("printed_time", "envelope_time").alias("printed_time"),
            pl.coalesce("pid", "header_pid").alias("pid"),
            pl.coalesce("host", "header_host").alias("host"),  # a host the line names (NCCL, UCX)
            pl.lit("unknown").alias("role"),  # classify's view; the role is worked out below
        ).drop("header_pid", "header_host", "tid")
        self.next_id += df.height
        parsed = sglang.classify(df)
        kind = pl.lit(forced_kind) if forced_kind else parsed["kind"]
        if "unit" in df.columns and (by_unit := df["unit"].is_in(list(UNIT_KINDS))).any():
            kind = pl.when(by_unit).then(df["unit"].replace(UNIT_KINDS)).otherwise(kind)
        # systemd's message about a unit names it: a text capture's record has only the syslog ident
        lifecycle = parsed["kind"] == "lifecycle"
        if lifecycle.any():
            named = df["body"].str.extract(systemd.NAMED_UNIT, 1)
            # "Starting …..." naming no unit, on a record no unit or process names: a program's own line
            plain = lifecycle & named.is_null() & df["unit"].is_null() & df["pid"].is_null()
            plain = (plain & df["body"].str.contains(systemd.PLAIN_WORDING)).fill_null(False)
            if plain.any():
                kind = pl.when(plain).then(pl.lit("other")).otherwise(kind)
            df = df.with_columns(
                pl.when(lifecycle & named.is_not_null()).then(named).otherwise(pl.col("unit")).alias("unit")
            )
        df = df.with_columns(
            record_roles(df, parsed["content_role"], {**unit_roles, **self.roles}).alias("role"),
            pl.coalesce(pl.col("level"), parsed["level"]).alias("level"),
            kind.alias("kind"),
            parsed["rid"].alias("rid"),
            parsed["request_id"].alias("request_id"),
            parsed["bootstrap_room"].alias("bootstrap_room"),
            parsed[
                router.PARSED
            ],  # a router line's request fields, for the requests table (not an events column)
            pl.coalesce(pl.col("entry_error"), pl.col("time_error"), parsed["room_error"]).alias(
                "entry_error"
            ),
        ).drop("time_error")
        df = df.with_columns(  # whether its ts has a known zone (clocks.zoneless): events.zoned
            pl.when(pl.col("ts").is_not_null()).then(~zoneless(df).fill_null(False)).alias("zoned")
        )
        return self.flow(df)  # the role of a record's process, pod or input (logcorr/roles.py)


def _in_range(head: pl.DataFrame) -> pl.DataFrame:
    """``head`` (``split_prefix``'s columns) with a printed time outside 1970-9999 dropped (the record is
    kept without a time, as a journal's out-of-range receive time is) and said in ``time_error``."""
    year = pl.col("log_ts").dt.year()
    bad = pl.col("log_ts").is_not_null() & ((year < 1970) | (year > 9999))
    says = pl.format(
        "printed time {} is not from 1970 to 9999: kept without a time",
        pl.col("log_ts").dt.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return head.with_columns(
        pl.when(bad).then(says).alias("time_error"), pl.when(~bad).then(pl.col("log_ts")).alias("log_ts")
    )


def records_from_text(text: str, source: str = "text") -> pl.DataFrame:
    """The records ``logcorr ingest`` makes of one plain text (a log file, a paste), in memory: the same
    reader (``inputs.text.text_records``), re-joiner and enrichment as an ingest of a file holding ``text``,
    without writing tables. Returns the ``events`` columns (``event_id`` from 0, ``ts`` the printed
    time read as UTC, ``role`` from content) plus ``header`` and ``body`` (``parsers.prefix.split_prefix``),
    one row per logical record; a bare py-spy dump (``inputs.sniff.sniff_bytes``) is one ``pyspy`` record,
    as at ingest (its stacks are parsed at ingest). Never raises on any text."""
    data = text.encode("utf-8", errors="replace")
    fmt = sniff.sniff_bytes(data[:65536])
    forced = "pyspy" if fmt in ("pyspy", "pyspy-json") else None
    if fmt in containers.FORMATS and fmt != "log-export":
        # a container runtime's or kubectl's lines (their stamp on every line): its reader, as at ingest
        # (batch19/12: CloudWatch's offset stamp before TGI's line is kubectl --timestamps' shape)
        recs = _container_records(data, fmt, source)
    else:
        fmt = fmt if fmt in ("json", "short") else "text"
        lines = journald.split_lines(data)
        width = paste_width(lines) if fmt == "text" else None
        recs = text_records(
            lines, fmt, source, 1, compose=has_compose_prefix(lines), width=width
        )  # `text`: the str
    rejoin = Rejoiner(join_all=forced is not None)
    joined = pl.concat([rejoin.feed(recs), rejoin.finish()])
    columns = {**EVENTS.schema, "header": pl.String, "body": pl.String}
    if joined.height == 0:
        return pl.DataFrame(schema=columns)
    return Enricher({})(joined, {}, forced).select(list(columns))


def _container_records(data: bytes, fmt: str, source: str) -> pl.DataFrame:
    """The reader records of ``data`` in the container format ``fmt`` (``containers.FORMATS``), read
    from a temporary file by ``containers.read`` as an ingest reads it, named ``source``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text"
        path.write_bytes(data)
        chunks = list(containers.read(path, fmt, ReadOptions(), SourceReport(source=source, format=fmt)))
    if not chunks:
        return pl.DataFrame(schema=journald.RECORD_COLUMNS)
    return pl.concat(chunks, how="vertical_relaxed")
