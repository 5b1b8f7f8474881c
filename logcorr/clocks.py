"""The clocks of one input: which records' times have a known zone, and records that carry two
stamps (two clocks) with the offset between them.

A record's ``ts`` has a known zone when its source gives one (journald's receive time, a container
envelope with ``Z`` or an offset, ``--captured-at``) or its header's format is UTC (sgl-router, a
JSON ``timestamp``); it is *zoneless* when it is only a time printed without a zone (SGLang and
Python print local time), taken as printed. Two stamps in one record: the printed time against the
source's clock, or a second stamp right after the header (``[ts] [/bin/sh@<0,0>]: [inner ts] …``, a
launcher's prefix before SGLang's own). Their offset, a whole number of quarter hours to the second,
is one clock printed in two zones; any other offset beyond ``SAME_CLOCK_S`` is two clocks that
disagree. Which one is UTC the lines do not say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from logcorr.parsers import prefix

# A second stamp right after the header, past at most two tokens (a launcher's ``[/bin/sh@<0,0>]:``).
INNER_STAMP = r"^(?:\S+\s+){0,2}?\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)"
SAME_CLOCK_S = 2.0  # stamps cut to the second, a logging delay: closer than this is one clock
ZONE_STEP_S = 900  # time zones are whole quarter hours from UTC


# A --since/--until given as a bare time of day (``21:34``, ``21:34:47.5``): every command dates it on
# the data's first day (UTC), and says so (``on_first_day``)
TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d\d)(?::(\d\d)(?:\.(\d{1,6}))?)?")


def on_first_day(text: str, first: datetime, last: datetime) -> tuple[str, str]:
    """A bare time of day ``text`` (``TIME_OF_DAY``) dated on the first day (UTC) of data spanning
    ``first``..``last`` (aware datetimes): ``("2025-10-29 21:34", what to say about it)``."""
    dated = f"{first:%Y-%m-%d} {text.strip()}"
    days = (last.date() - first.date()).days + 1
    more = (
        f"; the data spans {days} days ({first:%Y-%m-%d} .. {last:%Y-%m-%d}): give the date for another"
        if days > 1
        else ""
    )
    return dated, f"{text.strip()!r} read as {dated} UTC, on the data's first day{more}"


def zoneless(ev: pl.DataFrame) -> pl.Expr:
    """Records whose ``ts`` is only a time printed without a zone: ``ts`` equals ``log_ts`` read as
    UTC, not the router's (its format prints UTC) nor a JSON line's whose ``timestamp`` ends in ``Z``
    or an offset, or ``ts`` is an envelope's time printed without a zone (``ts_zoneless``, a
    launcher's prefix)."""
    # a JSON line's time is zoned when it prints its zone (sgl-router's RFC 3339 ``…Z``); SGLang's
    # log_json lines (scheduler status) print datetime.now().isoformat(): local, no zone
    json_zoned = (pl.col("header") == "json") & pl.col("body").str.json_path_match(
        "$.timestamp"
    ).str.contains(r"(?:Z|[+-]\d\d:?\d\d)$").fill_null(True)
    printed = (
        pl.col("log_ts").is_not_null()
        & (pl.col("ts") == pl.col("log_ts").dt.replace_time_zone("UTC"))
        & ~(pl.col("header").is_in(list(prefix.UTC_HEADERS)) | json_zoned).fill_null(False)
    )
    if "ts_zoneless" not in ev.columns:
        return printed
    return printed | (pl.col("ts").is_not_null() & pl.col("ts_zoneless").fill_null(False))


def two_stamp_offsets(ev: pl.DataFrame) -> pl.Series:
    """Per record of ``ev`` (``ts``, ``log_ts``, ``header``, ``body``): seconds by which its printed
    time is ahead of the other stamp it carries (the source's clock, else a second stamp after the
    header), where the two differ by more than ``SAME_CLOCK_S``; null elsewhere (Float64)."""
    printed = pl.col("log_ts").dt.replace_time_zone("UTC")
    vs_source = (printed - pl.col("ts")).dt.total_microseconds() / 1e6
    offsets = ev.select(pl.when(vs_source.abs() > SAME_CLOCK_S).then(vs_source).alias("offset_s"))["offset_s"]
    # a second stamp is searched only where the printed time is the only clock (a day's journal: none)
    alone = ev.select(
        (pl.col("log_ts").is_not_null() & (printed == pl.col("ts"))).fill_null(False)
    ).to_series()
    if not alone.any():
        return offsets
    at = alone.arg_true()
    inner = ev["body"].gather(at).str.extract(INNER_STAMP, 1).str.replace("T", " ")
    inner_ts = inner.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
    vs_inner = (ev["log_ts"].gather(at).dt.truncate("1s") - inner_ts).dt.total_microseconds() / 1e6
    far = pl.select(pl.when(vs_inner.abs() > SAME_CLOCK_S).then(vs_inner)).to_series().cast(pl.Float64)
    return offsets.cast(pl.Float64).scatter(at, far)


@dataclass
class Clocks:
    """What the records of one input showed of their clocks, summed over its chunks (``add``)."""

    zoned: int = 0
    zoneless: int = 0
    zoned_span: list[datetime] = field(default_factory=list)  # [first, last] or []
    zoneless_span: list[datetime] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)  # whole seconds → records showing it
    zone_steps: dict[int, int] = field(default_factory=dict)  # neighbours' zone step (s) → pairs showing it

    def add(self, ev: pl.DataFrame) -> None:
        """Count one chunk of enriched events (with ``header`` and ``body``), in the input's order."""
        loose = ev.select(zoneless(ev).fill_null(False)).to_series()
        for seconds, n in neighbour_zone_steps(ev["ts"], loose).value_counts().iter_rows():
            self.zone_steps[int(seconds)] = self.zone_steps.get(int(seconds), 0) + n
        timed = ev["ts"].is_not_null()
        for mask, attr in ((loose, "zoneless"), (timed & ~loose, "zoned")):
            ts = ev["ts"].filter(mask)
            setattr(self, attr, getattr(self, attr) + ts.len())
            span = getattr(self, f"{attr}_span")
            ends = [t for t in (*span, ts.min(), ts.max()) if t is not None]
            setattr(self, f"{attr}_span", [min(ends), max(ends)] if ends else [])
        for seconds, n in two_stamp_offsets(ev).drop_nulls().round(0).value_counts().iter_rows():
            self.offsets[int(seconds)] = self.offsets.get(int(seconds), 0) + n

    def offset(self) -> tuple[float | None, int]:
        """The median offset (seconds) over the records that carry two stamps, and how many do."""
        n = sum(self.offsets.values())
        if not n:
            return None, 0
        seen = 0
        for seconds in sorted(self.offsets):
            seen += self.offsets[seconds]
            if seen * 2 >= n:
                return float(seconds), n
        return None, n  # not reached

    def row(self) -> dict:
        """The ``sources`` columns these counts fill."""
        offset, n = self.offset()
        first_last = {}
        for attr in ("zoned", "zoneless"):
            span = getattr(self, f"{attr}_span") or [None, None]
            first_last |= {f"{attr}_first_ts": span[0], f"{attr}_last_ts": span[1]}
        step = max(self.zone_steps, key=lambda s: (self.zone_steps[s], -abs(s)), default=None)
        return {
            "zoned": self.zoned,
            "zoneless": self.zoneless,
            **first_last,
            "clock_offset_s": offset,
            "clock_offset_records": n,
            "zone_offset_s": None if step is None else float(step),
            "zone_offset_pairs": sum(self.zone_steps.values()),
        }


def neighbour_zone_steps(ts: pl.Series, loose: pl.Series) -> pl.Series:
    """Per pair of neighbouring timed records of one input (``ts`` in the input's order, ``loose``
    True where the time is printed without a zone), one of each clock, whose times differ by a time
    zone's step (a non-zero whole number of quarter hours) to within ``SAME_CLOCK_S``: that step in
    seconds, the zoneless clock ahead of UTC (-25200: UTC-7). Lines printed one after the other are
    printed within a moment of each other, so such a pair is one clock printed in two zones (batch5/13:
    Dynamo's ``…Z`` line and SGLang's local one of the same registration step). Int64, one per pair."""
    frame = pl.DataFrame({"ts": ts, "loose": loose}).filter(pl.col("ts").is_not_null())
    diff = (
        pl.when(pl.col("loose"))
        .then(pl.col("ts") - pl.col("ts").shift(1))
        .otherwise(pl.col("ts").shift(1) - pl.col("ts"))
    ).dt.total_microseconds() / 1e6
    step = (diff / ZONE_STEP_S).round(0) * ZONE_STEP_S
    pairs = frame.select(
        pl.when(
            (pl.col("loose") != pl.col("loose").shift(1))
            & (step != 0)
            & ((diff - step).abs() <= SAME_CLOCK_S)
        )
        .then(step)
        .cast(pl.Int64)
        .alias("step")
    )
    return pairs["step"].drop_nulls()


def is_zone_step(seconds: float) -> bool:
    """An offset that is a time zone's: a non-zero whole number of quarter hours, to the second."""
    steps = round(seconds / ZONE_STEP_S)
    return steps != 0 and abs(seconds - steps * ZONE_STEP_S) <= 1.0


def hours(seconds: float) -> str:
    """``8 h``, ``5 h 30 min``, ``7 h 59 min 16 s``, ``45 s``: an offset's size in words."""
    s = round(abs(seconds))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    parts = [f"{h} h" if h else "", f"{m} min" if m else "", f"{sec} s" if sec else ""]
    return " ".join(p for p in parts if p) or "0 s"


def offset_words(offset: float) -> str:
    """Two stamps ``offset`` seconds apart in one record, in words: how far, which way, and whether
    that is one clock in two zones or two clocks that disagree."""
    way = "ahead of" if offset > 0 else "behind"
    # a zone's step said as the step: a header printed to the second against a stamp with milliseconds
    # is up to a second off it (batch22/04: 12:44:55 against the platform's 20:44:55.560 is 8 h, not 8 h 1 s)
    size = hours(round(offset / ZONE_STEP_S) * ZONE_STEP_S) if is_zone_step(offset) else hours(offset)
    what = (
        "exactly a time zone's step: one clock printed in two zones, and which of them is UTC the lines do not say"
        if is_zone_step(offset)
        else "not a time zone's step: two clocks that disagree"
    )
    return (
        f"the header's time is {size} {way} the record's other stamp (the source's clock, or a"
        f" second stamp after the header), {what}"
    )


def clock_note(offset: float, records: int) -> str:
    """One sentence on two stamps ``offset`` seconds apart in ``records`` records of one input."""
    return f"{records:,} record(s) carry two stamps: {offset_words(offset)}"
