"""Reading OUT's Parquet tables with polars into the frames of ``Swimlanes``: marks (aborts, transfer
errors, watchdog, /health, tracebacks, tool-call markup), router requests, py-spy captures and their
innermost frames, batch lines of a narrow window, the request gauges of /metrics scrapes, and the
lanes every row is placed on.

All times are ``datetime[us, UTC]``; every frame keeps ``event_id``/``source``/``source_pos``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from logcorr.analysis import saved
from logcorr.clocks import TIME_OF_DAY
from logcorr.parsers.prefix import split_prefix
from logcorr.render.timeline.counters import SCRAPED_GAUGES, scraped_load
from logcorr.render.timeline.model import RANK_TOKENS, ROLE_ORDER, TimelineError
from logcorr.store.schema import EVENTS, RANKS, TABLES

# --------------------------------------------------------------------------------------------- reading


def scan(out: Path, table: str, columns: Iterable[str] | dict[str, pl.DataType]) -> pl.LazyFrame:
    """All parts of one table (any folder depth, e.g. hive-style ``host=…/``) as one lazy frame with
    exactly ``columns`` (absent ones null), so older or partial OUTs still draw. ``columns`` are names of
    the table's contract columns (typed by ``logcorr.store.schema``), or ``{name: type}`` for a column
    read as another type. Raises ``KeyError`` for a name the contract does not have."""
    schema = columns if isinstance(columns, dict) else contract(table, *columns)
    files = sorted((out / table).glob("**/*.parquet"))
    frames = []
    for f in files:
        lf = pl.scan_parquet(f, hive_partitioning=False, glob=False)
        have = lf.collect_schema()
        # a column of the right type is selected as it is (no cast): filters on it then reach the
        # Parquet reader, which skips what they exclude instead of reading every row of the table
        frames.append(
            lf.select(
                [
                    pl.col(c)
                    if have.get(c) == t
                    else (pl.col(c) if c in have else pl.lit(None)).cast(t, strict=False).alias(c)
                    for c, t in schema.items()
                ]
            )
        )
    if not frames:
        return pl.LazyFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed")


def contract(table: str, *names: str) -> dict[str, pl.DataType]:
    """``{name: polars type}`` of ``names`` as the table contract (``logcorr.store.schema``) types them."""
    types = TABLES[table].schema
    return {n: types[n] for n in names}


def parquet_columns(out: Path, table: str) -> dict[str, pl.DataType]:
    """Union of the columns of a table's parts (name → type of the first part that has it)."""
    cols: dict[str, pl.DataType] = {}
    for f in sorted((out / table).glob("**/*.parquet")):
        for c, t in pl.scan_parquet(f, hive_partitioning=False, glob=False).collect_schema().items():
            cols.setdefault(c, t)
    return cols


def parse_time(text: str | datetime | None, *, day: datetime | None = None) -> datetime | None:
    """``--since``/``--until`` as an aware UTC datetime.

    Accepts ISO 8601 (``2025-10-29 21:34``, ``2025-10-29T21:34:47.5Z``, ``…+02:00``; no zone means
    UTC) or a bare time of day (``21:34:47``) on the date of ``day`` (the data's first day).

    Raises:
        TimelineError: the text is neither.
    """
    if text is None or isinstance(text, datetime):
        return text if text is None or text.tzinfo else text.replace(tzinfo=UTC)
    t = text.strip()
    try:
        value = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        m = TIME_OF_DAY.fullmatch(t)
        not_a_time = TimelineError(
            f"{text!r}: not a time; use ISO 8601 like '2025-10-29 21:34:40' (UTC unless a zone is "
            "given) or a time of day like '21:34:40' (on the data's first day)"
        )
        if m and day is None:
            raise TimelineError(
                f"{text!r}: a time of day needs a date, and no record in OUT carries one; give the date too"
            ) from None
        if not m:
            raise not_a_time from None
        h, mi, s, frac = m.groups()
        try:
            value = day.replace(
                hour=int(h), minute=int(mi), second=int(s or 0), microsecond=int((frac or "0").ljust(6, "0"))
            )
        except ValueError:  # 25:99
            raise not_a_time from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


_KEY = [f"_k_{c}" for c in ("host", "role", *RANKS)]


def _lane_key(df: pl.DataFrame) -> pl.DataFrame:
    """Add the lane key columns: host, role and ranks with nulls filled (so they join)."""
    return df.with_columns(
        pl.col("role").fill_null("unknown"),
        pl.col("host").fill_null("").alias("_k_host"),
        pl.col("role").fill_null("unknown").alias("_k_role"),
        *[pl.col(c).fill_null(-1).alias(f"_k_{c}") for c in RANKS],
    )


def _in_window(lf: pl.LazyFrame, since: datetime | None, until: datetime | None) -> pl.LazyFrame:
    if since is not None:
        lf = lf.filter(pl.col("ts") >= since)
    if until is not None:
        lf = lf.filter(pl.col("ts") <= until)
    return lf


_EV = EVENTS.schema
LANE = {c: _EV[c] for c in ("host", "role", *RANKS)}
PROVENANCE = {c: _EV[c] for c in ("event_id", "source", "source_pos")}
_EVENT_JOIN = {c: _EV[c] for c in ("event_id", "host", "level", "message", "source", "source_pos")}


def _with_event_fields(out: Path, lf: pl.LazyFrame) -> pl.LazyFrame:
    """Fill host, level, message and provenance of typed rows from their ``events`` row."""
    have = lf.collect_schema()
    lf = lf.with_columns([pl.lit(None, t).alias(c) for c, t in _EVENT_JOIN.items() if c not in have])
    lf = lf.collect().lazy()  # the typed rows are few (marks, requests): their ids filter the scan
    ids = lf.select("event_id").drop_nulls().unique().collect()["event_id"]
    lo, hi = (ids.min(), ids.max()) if ids.len() else (0, -1)
    # bounds first (row groups of other ids are skipped by their statistics), then the ids
    ev = scan(out, "events", _EVENT_JOIN).filter(pl.col("event_id").is_between(lo, hi))
    ev = ev.filter(pl.col("event_id").is_in(ids.implode())).collect().lazy()
    filled = [c for c in _EVENT_JOIN if c != "event_id"]
    lf = lf.join(ev, on="event_id", how="left", suffix="_ev")
    return lf.with_columns(pl.coalesce(c, f"{c}_ev") for c in filled).drop(f"{c}_ev" for c in filled)


def load_batches(out, since, until, empty: bool = False) -> pl.DataFrame:
    """Every batch line in the window with its typed fields (``empty``: none, the columns only)."""
    cols = parquet_columns(out, "batches")
    skip = {"extra"}
    schema = contract("batches", "ts", *LANE, *PROVENANCE, "batch_type")
    for c, t in cols.items():
        if c not in schema and c not in skip and t.is_numeric() | (t == pl.Boolean) | (t == pl.String):
            schema[c] = t
    lf = _in_window(scan(out, "batches", schema), since, until)
    if empty:
        return lf.head(0).collect()
    return lf.filter(pl.col("ts").is_not_null()).collect()


def load_scrapes(out: Path, since, until, role: str | None) -> pl.DataFrame:
    """The request gauges of the /metrics scrapes in the window (``counters.SCRAPED_GAUGES``), summed
    per scrape, role and label (``counters.scraped_load``); only ``role``'s when given."""
    cols = contract("metrics", "ts", "host", "role", "dp_rank", "name", "value", "source")
    lf = scan(out, "metrics", cols).filter(
        pl.col("name").is_in(list(SCRAPED_GAUGES)) & pl.col("ts").is_not_null()
    )
    if role is not None:
        lf = lf.filter(pl.col("role") == role)
    return scraped_load(_in_window(lf, since, until).collect())


def _marks_of(out: Path, table: str, common: dict, kind: pl.Expr, cols: tuple[str, ...]) -> pl.LazyFrame:
    """``table``'s rows as marks: the ``common`` columns, ``kind`` and ``detail`` (the non-null
    ``cols``, read as text, joined with ": ")."""
    lf = scan(out, table, {**common, **dict.fromkeys(cols, pl.String)})
    detail = pl.concat_str(cols, separator=": ", ignore_nulls=True)
    return lf.select(*common, kind.alias("kind"), detail.alias("detail"))


def load_marks(out, since, until) -> pl.DataFrame:
    """Aborts, transfer errors (assertion apart), watchdog, health and traceback events as one frame."""
    common = contract("aborts", "ts", *LANE, *PROVENANCE, "rid", "bootstrap_room")
    aborts = _marks_of(out, "aborts", common, pl.lit("abort"), ("abort_kind", "reason"))
    assertion = pl.col("error_kind") == "assert_transfer_infos"
    kind = pl.when(assertion).then(pl.lit("assertion")).otherwise(pl.lit("transfer_error"))
    terr = _marks_of(out, "transfer_errors", common, kind, ("error_kind", "kv_poll_state", "reason"))
    # A KV transfer failed because its request was aborted ("Aborted by AbortReq.") is in both tables:
    # draw it once, as the abort (its hover names the transfer); the assertion is always drawn.
    terr = pl.concat(
        [
            terr.filter(pl.col("kind") == "assertion"),
            terr.filter(pl.col("kind") != "assertion").join(
                aborts.select("event_id"), on="event_id", how="anti"
            ),
        ]
    )
    typed = pl.concat(
        [aborts, terr, _leak_marks(out, common), _ready_marks(out, common)], how="diagonal_relaxed"
    )
    typed = _with_event_fields(out, _in_window(typed, since, until))
    ev = scan(
        out,
        "events",
        {**common, **contract("events", "kind", "level", "message")},
    ).filter(pl.col("kind").is_in(["watchdog", "health", "traceback"]))
    ev = _in_window(ev, since, until).with_columns(pl.lit(None, pl.String).alias("detail"))
    life = _in_window(_lifecycle_marks(out, common), since, until)
    marks = pl.concat([typed, ev, life], how="diagonal_relaxed").filter(pl.col("ts").is_not_null()).collect()
    # health: the access line's status (requests table) says ok or failed; a non-access health line
    # ("Health check failed …") is failed unless it is INFO and says nothing of failing.
    status = (
        scan(out, "requests", ("event_id", "status"))
        .join(marks.lazy().select("event_id").drop_nulls(), on="event_id", how="semi")
        .unique("event_id")
        .collect()
    )
    marks = marks.join(status, on="event_id", how="left")
    failed = (
        pl.when(pl.col("status").is_not_null())
        .then(pl.col("status") >= 400)
        .otherwise(
            pl.col("message").str.contains(r"(?i)fail|error|timeout|unhealthy")
            | pl.col("level").is_in(["ERROR", "WARNING", "CRITICAL", "FATAL"])
        )
    )
    marks = marks.with_columns(
        pl.when((pl.col("kind") == "health") & failed.fill_null(False))
        .then(pl.lit("health_failed"))
        .otherwise(pl.col("kind"))
        .alias("kind")
    )
    # the body: the message without its header (time and rank are shown beside it)
    return marks.with_columns(split_prefix(marks["message"].fill_null(""))["body"]).sort("ts")


# systemd's messages about a unit drawn as marks: the restart's steps; "consumed" and "deactivated"
# say nothing the others do not. The HTTP server's own stop and start are the restart's steps in
# container logs, where systemd says nothing.
LIFECYCLE_MARKED = (
    "starting",
    "started",
    "stopping",
    "stopped",
    "exited",
    "failed",
    "start_failed",
    "restart_scheduled",
    "server_stopping",
    "server_started",
)


def _lifecycle_marks(out: Path, common: dict) -> pl.LazyFrame:
    """systemd's stop / start messages about a unit (``lifecycle`` table) as marks of kind
    ``lifecycle``, on the (no rank) lane of the unit's role; ``detail`` the event (stopping …)."""
    schema = {**common, **contract("lifecycle", "event", "message", "unit")}
    rows = scan(out, "lifecycle", schema).filter(pl.col("event").is_in(LIFECYCLE_MARKED))
    return rows.select(
        *[c for c in common if c not in ("rid", "bootstrap_room")],
        pl.lit("lifecycle").alias("kind"),
        pl.concat_str("event", "unit", separator=": ", ignore_nulls=True).alias("detail"),
        pl.col("message"),
    )


def _ready_marks(out: Path, common: dict) -> pl.LazyFrame:
    """SGLang's "The server is fired up and ready to roll!" of each process (``processes.ready_ts``,
    summed at ingest), as marks of kind ``ready``; its line's text and position come from ``events``."""
    rows = scan(out, "processes", ("ready_ts", *LANE, "ready_event_id", "source")).filter(
        pl.col("ready_ts").is_not_null()
    )
    return rows.select(
        pl.col("ready_ts").alias("ts"),
        *LANE,
        pl.col("ready_event_id").alias("event_id"),
        pl.col("source"),
        pl.lit(None, pl.String).alias("source_pos"),
        pl.lit("ready").alias("kind"),
        pl.lit("server ready").alias("detail"),
    ).unique("event_id")


# the fields of a router request line (``requests`` table) the page's hover and the trace's args show
REQUEST_FIELDS = (
    "method",
    "path",
    "status",
    "latency_ms",
    "request_id",
    "rid",
    "bootstrap_room",
    "prefill_url",
    "decode_url",
)


def load_requests(out, since, until, errors_only: bool = False) -> pl.DataFrame:
    """Router requests (role router); the engines' own access lines are drawn only as /health.
    ``errors_only``: only the failed ones (the others are drawn as runs)."""
    columns = ("ts", "host", "role", *PROVENANCE, *REQUEST_FIELDS, "level")
    lf = _in_window(scan(out, "requests", columns), since, until).filter(pl.col("role") == "router")
    if errors_only:  # a superset here (a line without status or level may fail by its event's level)
        lf = lf.filter(
            (pl.col("status") >= 400)
            | (
                pl.col("status").is_null()
                & (pl.col("level").is_null() | pl.col("level").is_in(["ERROR", "WARNING", "WARN"]))
            )
        )
    lf = _with_event_fields(out, lf).with_columns([pl.lit(None, pl.Int16).alias(c) for c in RANKS])
    df = lf.filter(pl.col("ts").is_not_null()).collect()
    error = (pl.col("status") >= 400).fill_null(
        pl.col("level").is_in(["ERROR", "WARNING", "WARN"]).fill_null(False)
    )
    df = df.with_columns(error.alias("error"))
    if errors_only:
        df = df.filter(pl.col("error"))
    return df.with_columns(split_prefix(df["message"].fill_null(""))["body"]).sort("ts", "event_id")


def load_captures(out, since, until) -> tuple[pl.DataFrame, int]:
    """One row per py-spy capture of a rank: the main thread's class (or the first waiting thread's);
    and how many captures have no time (a bare dump file) and so cannot be placed."""
    columns = (
        "capture_id",
        "capture_ts",
        *LANE,
        "pid",
        "thread_id",
        "thread_name",
        "thread_state",
        "is_main",
    )
    columns += ("wait_class", "backend", "event_loop", "fingerprint", "source", "source_pos")
    lf = scan(out, "captures", columns).rename({"capture_ts": "ts"})
    undated = lf.filter(pl.col("ts").is_null()).select(pl.col("capture_id").n_unique()).collect().item()
    df = _in_window(lf, since, until).filter(pl.col("ts").is_not_null()).collect()
    if df.is_empty():
        return df.with_columns(pl.lit(None, pl.String).alias(c) for c in ("label", "frames")), undated
    main = pl.col("is_main").fill_null(pl.col("thread_name") == "MainThread").fill_null(False)
    waiting = pl.col("wait_class").is_not_null() & ~pl.col("wait_class").is_in(["running", "idle"])
    df = (
        df.with_columns((main.cast(pl.Int8) * 2 + waiting.cast(pl.Int8)).alias("_pref"))
        .sort(["capture_id", "_pref"], descending=[False, True], nulls_last=True)
        .unique("capture_id", keep="first", maintain_order=True)
        .drop("_pref")
        .sort("ts")
    )
    label = pl.concat_str(
        [pl.col("wait_class").fill_null("unclassified"), pl.format(" ({})", pl.col("backend"))],
        ignore_nulls=True,
    )
    df = df.with_columns(label.alias("label"))
    return df.join(_innermost_frames(out, df), on=["capture_id", "thread_id"], how="left"), undated


def _innermost_frames(out: Path, captures: pl.DataFrame, n: int = 8) -> pl.DataFrame:
    """The ``n`` innermost frames of each chosen capture thread, as one text per thread."""
    schema = contract("stacks", "capture_id", "thread_id", "depth", "function", "file", "line")
    keys = captures.select("capture_id", "thread_id").lazy()
    parts = [pl.col("file").str.extract(r"([^/]*/?[^/]+)$", 1), pl.col("line").cast(pl.String)]
    loc = pl.concat_str(parts, separator=":", ignore_nulls=True)  # dir/file.py:123
    frame = pl.concat_str([pl.col("function").fill_null("?"), pl.format(" ({})", loc)], ignore_nulls=True)
    return (
        scan(out, "stacks", schema)
        .filter(pl.col("depth") < n)
        .join(keys, on=["capture_id", "thread_id"], how="semi")
        .sort("depth")
        .group_by("capture_id", "thread_id")
        .agg(frame.str.join("\n").alias("frames"))
        .collect()
    )


def load_sources(out: Path) -> list[tuple[str, str, int]]:
    """``(source, format, records)`` of every row of OUT's ``sources`` table (``?`` and 0 where null)."""
    df = scan(out, "sources", {"source": pl.String, "format": pl.String, "records": pl.Int64}).collect()
    return [(s or "?", f or "?", int(r or 0)) for s, f, r in df.iter_rows()]


def _label_lanes(lanes: pl.DataFrame) -> pl.DataFrame:
    """``decode TP2`` (DP/PP/EP where present), ``decode (no rank)`` for an engine's lines without a
    rank prefix; the host in front when there are several; the file for lines without a host."""
    ranks = pl.concat_str(
        [pl.format(f"{tok}{{}}", pl.col(c)) for c, tok in RANK_TOKENS],
        separator=" ",
        ignore_nulls=True,
    )
    any_rank = pl.any_horizontal([pl.col(c).is_not_null() for c, _ in RANK_TOKENS])
    label = (
        pl.when(any_rank)
        .then(pl.format("{} {}", pl.col("role"), ranks))
        .when(pl.col("role").is_in(["router", "unknown"]))
        .then(pl.col("role"))
        .otherwise(pl.format("{} (no rank)", pl.col("role")))
    )
    if lanes["host"].drop_nulls().n_unique() > 1:
        label = (
            pl.when(pl.col("host").is_not_null())
            .then(pl.format("{} · {}", pl.col("host"), label))
            .otherwise(label)
        )
    files = pl.col("files").list.eval(pl.element().str.extract(r"([^/\\]+)$", 1)).list.join(", ")
    label = pl.when(pl.col("host").is_null()).then(pl.format("{} [{}]", label, files)).otherwise(label)
    return lanes.with_columns(label.alias("label")).drop("files")


def assign_lanes(frames: dict[str, pl.DataFrame], role: str | None) -> tuple[pl.DataFrame, dict]:
    """Number the lanes (prefill, decode, router, unknown; then host and ranks) and give every row
    of ``frames`` its ``lane``."""
    keyed = {name: _lane_key(df) for name, df in frames.items()}
    if role is not None:
        keyed = {name: df.filter(pl.col("role") == role) for name, df in keyed.items()}
    per_lane = [
        df.group_by(_KEY).agg(
            *[pl.col(c).first() for c in LANE], pl.col("source").drop_nulls().unique().head(2)
        )
        for df in keyed.values()
        if df.height
    ]
    lanes = (
        pl.concat(per_lane, how="vertical_relaxed")
        if per_lane
        else pl.DataFrame(schema={**dict.fromkeys(_KEY, pl.String), **LANE, "source": pl.List(pl.String)})
    )
    order = pl.col("role").replace_strict({r: i for i, r in enumerate(ROLE_ORDER)}, default=len(ROLE_ORDER))
    lanes = (
        lanes.group_by(_KEY)
        .agg(
            *[pl.col(c).first() for c in LANE],
            pl.col("source").list.explode().drop_nulls().unique().sort().head(2).alias("files"),
        )
        .with_columns(order.alias("_order"))
        .sort(["_order", "host", *RANKS], nulls_last=False)
        .drop("_order")
        .with_row_index("lane")
        .with_columns(pl.col("lane").cast(pl.Int32))
    )
    lanes = _label_lanes(lanes)
    index = lanes.select(*_KEY, "lane")
    placed = {name: df.join(index, on=_KEY, how="inner").drop(_KEY) for name, df in keyed.items()}
    return lanes.drop(_KEY), placed


def room_filter(out: Path, marks, requests, room: int) -> tuple[pl.DataFrame, pl.DataFrame, set[str]]:
    """``marks`` and ``requests`` kept to bootstrap room ``room``: rows naming the room, or a request id
    OUT's ``rooms`` pairs with it; and those request ids."""
    rids = set(
        scan(out, "rooms", ("rid", "bootstrap_room"))
        .filter(pl.col("bootstrap_room") == room)
        .select("rid")
        .drop_nulls()
        .collect()["rid"]
        .to_list()
    )
    mine = ((pl.col("bootstrap_room") == room) | pl.col("rid").is_in(list(rids))).fill_null(False)
    return marks.filter(mine), requests.filter(mine), rids


def group_fingerprints(captures: pl.DataFrame) -> pl.DataFrame:
    """Name stack fingerprint groups A, B, … in lane order, so one colour means one identical stack."""
    if captures.is_empty():
        return captures.with_columns(pl.lit(None, pl.String).alias("group"))
    fp = pl.coalesce(pl.col("fingerprint"), pl.col("label"))
    order = (
        captures.with_columns(fp.alias("_fp")).sort("lane", "ts").select("_fp").unique(maintain_order=True)
    )
    names = {f: _group_name(i) for i, f in enumerate(order["_fp"].to_list())}
    return captures.with_columns(fp.replace_strict(names, default=None).alias("group"))


def _group_name(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def _leak_marks(out: Path, common: dict) -> pl.LazyFrame:
    """Answers whose text carries tool-call markup (``request_log.markup_leak``), with the requests
    running on their engine then (saved query ``markup_leaks``) in the hover's detail."""
    leaks = scan(out, "request_log", {**common, "markup_leak": pl.String, "markup": pl.String}).filter(
        pl.col("markup_leak").is_not_null()
    )
    if leaks.select(pl.len()).collect().item() == 0:
        return leaks.drop("markup_leak", "markup")
    running = saved.query(out, "markup_leaks").select("event_id", pl.col("running_req").cast(pl.Int64)).lazy()
    return leaks.join(running, on="event_id", how="left").select(
        *common,
        pl.lit("markup_leak").alias("kind"),
        pl.concat_str(
            [
                pl.col("markup"),
                pl.lit(" · running requests "),
                pl.col("running_req").cast(pl.String).fill_null("?"),
            ]
        ).alias("detail"),
    )
