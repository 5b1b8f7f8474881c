"""``export_chrome_trace()``: the timeline's lanes as a Chrome JSON trace (Trace Event Format), which
Perfetto (ui.perfetto.dev, offline too) and chrome://tracing open.

Layout, from the same ``Swimlanes`` the HTML timeline draws (``timeline.load``):

- one process (``pid``) per engine: (host, role), named ``prefill (gpu-node-1)`` by a ``process_name``
  metadata event and ordered prefill, decode, router by ``process_sort_index``;
- one thread (``tid``) per lane of that engine: ``TP0`` … and ``(no rank)``, named by ``thread_name``;
  plus a ``wedge`` thread per wedged engine holding the span from the wedge query;
- activity as complete events (``ph: "X"``) on their rank's thread, two ways:

  - by default, runs (``Swimlanes.runs``, aggregated in DuckDB): one slice per run of batch lines at
    the rank's usual pace (router: of ok requests), from its first line to its last plus the usual
    interval, with the lines, the exact first and last line and the load maxima in ``args``; a day of
    millions of lines is a few hundred slices, so the file opens at once at any day size;
  - with ``detail`` (or a window of at most ``MAX_LINES`` lines; ``detail`` on more than
    ``MAX_DETAIL_LINES`` is refused), one slice per batch line, from the line's time until the rank's
    next batch line, at most the rank's median interval between batch lines;

  either way a stall shows as a gap, the events of one thread never overlap, and each slice's
  ``args.lasts`` says how long it is drawn (a batch line is an instant of progress, not a span);
- load as counter tracks (``ph: "C"``) per engine, one point per time bucket (``Swimlanes.load``,
  binned in DuckDB): ``batch lines/s`` (all ranks; 0 where no line came), and summed over DP groups
  (a DP group's ranks log the same batch: its maximum counts once) ``#running-req``, ``#queue-req``,
  ``#prealloc-req``, ``#inflight-req``, ``#transfer-req``, the throughputs, and ``max token usage``;
- flow events (``ph`` s/t/f, ``cat: "room"``, ``id``: the bootstrap room as a string) linking the
  instants of one bootstrap room in time order across prefill, decode and router threads (the room
  named on the row, or paired with its rid in the ``rooms`` table);
- aborts, transfer errors (the ``transfer_infos`` assertion named apart), watchdog, /health,
  tracebacks, router errors and py-spy captures as thread-scoped instant events (``ph: "i"``) with
  their fields in ``args`` (rid, room, message, source and position);
- timestamps in microseconds since the Unix epoch (UTC), integers.

The file is written with every event on its own line, so it streams to disk and diffs well.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from logcorr.render.timeline.counters import RATES, REQUEST_COUNTERS, engine_load
from logcorr.render.timeline.loading import load
from logcorr.render.timeline.model import MARK_STYLE, ROLE_ORDER, RUN_LOAD, Swimlanes, batch_name, run_name
from logcorr.render.timeline.tables import LANE, REQUEST_FIELDS, scan
from logcorr.store.output import write_atomic

# Without ``detail``, a window of at most this many batch lines and router requests is written one
# slice per line (about 650 bytes each in the file), a larger one as runs.
MAX_LINES = 100_000
# ``detail=True`` is refused above this many lines (a file of ~650 MB, near where Perfetto's UI
# gives up on JSON, google/perfetto#99).
MAX_DETAIL_LINES = 1_000_000


def _us(col: str = "ts") -> pl.Expr:
    return pl.col(col).dt.epoch("us")


def _tracks(sw: Swimlanes) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per lane its pid, tid, process and thread names; per process its pid, name, role, host."""
    lanes = sw.lanes.with_columns(
        pl.format("{} ({})", pl.col("role"), pl.col("host").fill_null("no host")).alias("process"),
    )
    order = {r: i for i, r in enumerate(ROLE_ORDER)}
    procs = (
        lanes.select("process", "role", "host")
        .unique("process", maintain_order=True)
        .with_row_index("pid", offset=1)
        .with_columns(
            pl.col("pid").cast(pl.Int64), pl.col("role").replace_strict(order, default=9).alias("sort")
        )
    )
    lanes = lanes.join(procs.select("process", "pid"), on="process")
    # Thread names: the lane label without the role and host it already carries as its process.
    thread = pl.col("label").str.replace(r"^.* · ", "").str.replace(r"^\S+ ?", "")
    lanes = lanes.with_columns(
        (pl.col("lane") + 1).cast(pl.Int64).alias("tid"),
        pl.when(thread == "").then(pl.col("role")).otherwise(thread).alias("thread"),
    )
    return lanes.select("lane", "pid", "tid", "process", "thread", "role"), procs


def _metadata(lanes: pl.DataFrame, procs: pl.DataFrame) -> list[dict]:
    events = []
    for pid, process, sort in procs.select("pid", "process", "sort").iter_rows():
        events.append(dict(name="process_name", ph="M", pid=pid, tid=0, args=dict(name=process)))
        events.append(dict(name="process_sort_index", ph="M", pid=pid, tid=0, args=dict(sort_index=sort)))
    for lane, pid, tid, thread in lanes.select("lane", "pid", "tid", "thread").iter_rows():
        events.append(dict(name="thread_name", ph="M", pid=pid, tid=tid, args=dict(name=thread)))
        events.append(dict(name="thread_sort_index", ph="M", pid=pid, tid=tid, args=dict(sort_index=lane)))
    return events


# A batch line marks progress at an instant; its slice is drawn until the next one (capped): args say so.
BATCH_LASTS = "until the rank's next batch line, capped at median_interval_ms"
RUN_LASTS = "from the run's first batch line to its last plus the rank's median interval (usual_interval_s)"
_NOT_ARGS = {"lane", "ts", *LANE, "batch_type", "pid"}


def _complete(name: pl.Expr, cat: str, dur: pl.Expr, *args: pl.Expr) -> pl.Expr:
    """Each row as the JSON text of a complete event (``ph: X``) on its pid and tid, from ``ts``."""
    return pl.struct(
        name.alias("name"),
        pl.lit(cat).alias("cat"),
        pl.lit("X").alias("ph"),
        _us().alias("ts"),
        dur.alias("dur"),
        pl.col("pid"),
        pl.col("tid"),
        pl.struct(*args).alias("args"),
    ).struct.json_encode()


def _batch_events(sw: Swimlanes, lanes: pl.DataFrame, rows: int = 50_000):
    """JSON texts of the batches, one per batch (complete events, non-overlapping per thread), as
    Series of at most ``rows`` texts: encoded a slice at a time while the file is written."""
    b = sw.batches.sort("lane", "ts")
    if b.is_empty():
        return
    gap = (_us().shift(-1).over("lane") - _us()).alias("gap")
    b = b.with_columns(gap).with_columns(pl.col("gap").median().over("lane").fill_null(1000).alias("typical"))
    dur = pl.min_horizontal(pl.col("gap").fill_null(pl.col("typical")), pl.col("typical")).clip(lower_bound=0)
    fields = [
        c for c in b.columns if c not in _NOT_ARGS | {"gap", "typical"} and b[c].null_count() < b.height
    ]
    b = b.drop("pid").join(lanes.select("lane", "pid", "tid"), on="lane")
    event = _complete(
        batch_name(pl.col("batch_type")),
        "batch",
        dur.cast(pl.Int64),
        *[pl.col(c) for c in fields],
        pl.lit(BATCH_LASTS).alias("lasts"),
        (pl.col("typical") / 1000).round(3).alias("median_interval_ms"),
    )
    for part in b.iter_slices(rows):
        yield part.select(event).to_series()


def _run_events(sw: Swimlanes, lanes: pl.DataFrame):
    """One JSON text per run: a complete event from its first line to ``until`` (see ``Swimlanes.runs``),
    as one Series (runs are few)."""
    r = sw.runs
    if r.is_empty():
        return
    r = r.drop("pid").join(lanes.select("lane", "pid", "tid"), on="lane").sort("lane", "ts")
    # max_running_req … mean_gen_throughput: the first word of the page's label
    fields = [(c, f"{label.split()[0]}_{c}") for c, label in RUN_LOAD if r[c].null_count() < r.height]
    iso = "%Y-%m-%dT%H:%M:%S%.6fZ"
    event = _complete(
        run_name(),
        "run",
        (_us("until") - _us()).clip(lower_bound=0),
        pl.col("lines"),
        pl.col("ts").dt.strftime(iso).alias("first_line"),
        pl.col("end").dt.strftime(iso).alias("last_line"),
        pl.col("typical_s").alias("usual_interval_s"),
        pl.lit(RUN_LASTS).alias("lasts"),
        *[pl.col(c).alias(arg) for c, arg in fields],
        pl.col("first_event_id"),
        pl.col("last_event_id"),
        pl.col("source"),
    )
    yield r.select(event).to_series()


def _counter_events(sw: Swimlanes, lanes: pl.DataFrame) -> list[dict]:
    """The counter tracks of the module docstring, per engine (trace process). ``batch lines/s`` is 0
    at the first bucket without a line, so a stall reads as one; a request counter holds its last value
    through a stall (the requests are still there; no line says otherwise)."""
    if sw.load.is_empty() or not sw.bucket_s:
        return []
    bucket_us = int(sw.bucket_s * 1e6)
    tracks = sw.lanes.join(lanes.select("lane", "pid"), on="lane")
    per = engine_load(sw.load, tracks, by=("pid",))
    per = per.with_columns((pl.col("lines") / sw.bucket_s).alias("lines"), _us().alias("us")).sort(
        "pid", "us"
    )
    # a zero after each stretch of buckets: where the next bucket holds no line
    after = per.filter(
        (pl.col("us").shift(-1).over("pid") != pl.col("us") + bucket_us).fill_null(True)
    ).select("pid", (pl.col("us") + bucket_us).alias("us"), pl.lit(0.0).alias("lines"))
    events = []
    for name, c in _COUNTERS:
        if per[c].null_count() == per.height:
            continue
        rows = per.select("pid", "us", c).drop_nulls(c)
        if c == "lines":
            rows = pl.concat([rows, after], how="vertical_relaxed").sort("pid", "us")
        events += [
            dict(name=name, cat="load", ph="C", ts=us, pid=pid, tid=0, args=dict(value=round(float(v), 4)))
            for pid, us, v in rows.iter_rows()
        ]
    return events


_COUNTERS = (
    ("batch lines/s", "lines"),
    *[(f"{label} (Σ DP groups)", c) for c, label in REQUEST_COUNTERS],
    ("max token usage", "token_usage"),
    *[(f"{label} (token/s, Σ DP groups)", c) for c, label in RATES],
)


def _mark_events(sw: Swimlanes, lanes: pl.DataFrame) -> list[dict]:
    """The marks, failed router requests and py-spy captures as thread-scoped instant events."""
    where = {lane: (pid, tid) for lane, pid, tid in lanes.select("lane", "pid", "tid").iter_rows()}
    column = {"message": "body", "stack_group": "group", "thread": "thread_name"}  # where they differ

    def instant(name: str, cat: str, r: dict, keys: tuple[str, ...]) -> dict:
        args = {k: v for k in keys if (v := r.get(column.get(k, k))) is not None}
        # A room is a 63-bit integer: as a JSON number a JavaScript viewer would round it.
        args = {k: (str(v) if k == "bootstrap_room" else v) for k, v in args.items()}
        pid, tid = where[r["lane"]]
        return dict(name=name, cat=cat, ph="i", s="t", ts=_epoch_us(r["ts"]), pid=pid, tid=tid, args=args)

    marks = ("rid", "bootstrap_room", "detail", "message", "event_id", "source", "source_pos")
    events = [instant(MARK_STYLE[r["kind"]][0], r["kind"], r, marks) for r in sw.marks.iter_rows(named=True)]
    failed = (*REQUEST_FIELDS, "event_id", "source", "source_pos", "message")
    for r in sw.requests.filter(pl.col("error")).iter_rows(named=True):
        events.append(instant("router request failed", "request_error", r, failed))
    pyspy = ("wait_class", "backend", "event_loop", "stack_group", "fingerprint", "thread", "frames")
    for r in sw.captures.iter_rows(named=True):
        keys = (*pyspy, "capture_id", "source", "source_pos")
        events.append(instant(f"py-spy: {r['label']}", "pyspy", r, keys))
    return events


# at most this many rooms are linked by flows (a day can abort thousands; each is a few steps)
MAX_FLOW_ROOMS = 5_000


def _flow_events(sw: Swimlanes, lanes: pl.DataFrame) -> list[dict]:
    """The flow events of the module docstring over the instants ``_room_rows`` finds. A room whose
    instants all sit on one thread is not linked; at most ``MAX_FLOW_ROOMS`` rooms, those with the most
    threads first. Each step has the ts, pid and tid of its instant (``bp: e``: bound to it)."""
    rows = _room_rows(sw)
    if rows.is_empty():
        return []
    rows = rows.join(lanes.select("lane", "pid", "tid"), on="lane").with_columns(_us().alias("us"))
    threads = rows.group_by("room").agg(pl.struct("pid", "tid").n_unique().alias("n"), pl.col("us").min())
    keep = threads.filter(pl.col("n") > 1).sort(["n", "us"], descending=[True, False]).head(MAX_FLOW_ROOMS)
    rows = rows.join(keep.select("room"), on="room").sort("room", "us", "pid", "tid")
    events = []
    for (room,), steps in rows.group_by("room", maintain_order=True):
        last = steps.height - 1
        for i, (us, pid, tid) in enumerate(steps.select("us", "pid", "tid").iter_rows()):
            ph = "s" if i == 0 else ("f" if i == last else "t")
            events.append(
                dict(name="bootstrap room", cat="room", ph=ph, id=str(room), ts=us, pid=pid, tid=tid, bp="e")
            )
    return events


def _room_rows(sw: Swimlanes) -> pl.DataFrame:
    """lane, ts, room of every instant that names a bootstrap room: by its own ``bootstrap_room``, or
    by a rid the ``rooms`` table pairs with one room."""
    pairs = (
        scan(sw.out, "rooms", ("rid", "bootstrap_room"))
        .drop_nulls()
        .unique()
        .collect()
        .filter(pl.col("rid").is_in(sw.marks["rid"].drop_nulls().implode()))
        .group_by("rid")
        .agg(pl.col("bootstrap_room").first().alias("paired"), pl.len().alias("n"))
        .filter(pl.col("n") == 1)  # a rid paired with several rooms names none of them
        .drop("n")
    )
    marks = sw.marks.select("lane", "ts", "rid", "bootstrap_room").join(pairs, on="rid", how="left")
    marks = marks.select("lane", "ts", pl.coalesce("bootstrap_room", "paired").alias("room"))
    reqs = sw.requests.filter(pl.col("error")).select("lane", "ts", pl.col("bootstrap_room").alias("room"))
    return pl.concat([marks, reqs], how="vertical_relaxed").drop_nulls("room")


def _wedge_events(sw: Swimlanes, lanes: pl.DataFrame, procs: pl.DataFrame) -> list[dict]:
    """A ``wedge`` thread per wedged engine, with the span from the wedge query as one complete event."""
    events = []
    tid = int(lanes["tid"].max() or 0) + 1
    for w in sw.wedges:
        end = w.resumed or sw.last
        if end is None:
            continue
        for pid, host in procs.filter(pl.col("role") == w.role).select("pid", "host").iter_rows():
            events.append(dict(name="thread_name", ph="M", pid=pid, tid=tid, args=dict(name="wedge")))
            events.append(dict(name="thread_sort_index", ph="M", pid=pid, tid=tid, args=dict(sort_index=-1)))
            events.append(
                dict(
                    name=f"{w.role} wedged",
                    cat="wedge",
                    ph="X",
                    ts=_epoch_us(w.stopped),
                    dur=max(_epoch_us(end) - _epoch_us(w.stopped), 0),
                    pid=pid,
                    tid=tid,
                    args=dict(
                        verdict=w.verdict,
                        ranks_stopped=w.ranks,
                        ends_with=w.resumed_by,
                        other_role_went_on=w.other_went_on,
                        health_kept_200=w.health_ok,
                        host=host,
                    ),
                )
            )
            tid += 1
    return events


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch_us(t: datetime) -> int:
    return (t - _EPOCH) // timedelta(microseconds=1)


def _write(sw: Swimlanes, out: Path, path: Path, events: list[dict], batches) -> int:
    """Write the trace file (atomically: a fresh O_EXCL name beside ``path``, no planted link followed):
    ``events`` one per line, then the slices ``batches`` yields as Series of JSON texts. Returns how
    many slices were written."""
    written = 0
    other = {
        "generator": "logcorr export --format chrome-trace",
        "source": str(Path(out)),
        "time": "microseconds since the Unix epoch, UTC",
        "verdict": sw.verdict,
        "notes": sw.notes,
    }
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(f) -> None:
        nonlocal written
        f.write('{"displayTimeUnit": "ms", "otherData": ' + json.dumps(other) + ',\n"traceEvents": [\n')
        for i, e in enumerate(events):  # streamed: a day's instants and counters are many
            f.write((",\n" if i else "") + json.dumps(e, default=str))
        for chunk in batches:
            if chunk.len():
                f.write(("" if written == 0 and not events else ",\n") + chunk.str.join(",\n").item())
                written += chunk.len()
        f.write("\n]}\n")

    write_atomic(path, write)
    return written


def export_chrome_trace(
    out: Path,
    path: Path,
    *,
    since: str | None = None,
    until: str | None = None,
    room: int | None = None,
    role: str | None = None,
    detail: bool | None = None,
) -> dict:
    """Write OUT's lanes as a Chrome JSON trace (Trace Event Format) for Perfetto or chrome://tracing.

    Args:
        out: a folder written by ``logcorr ingest``.
        path: the ``.json`` file to write (its folder is created).
        since, until, room, role: narrow what is exported, as for ``timeline`` (see ``timeline.load``).
        detail: one slice per batch line (``True``) or per run (``False``); default: per line when
            the window holds at most ``MAX_LINES`` batch lines and router requests, else per run.

    Returns:
        Counts of what was written: ``{"processes", "threads", "batches", "runs", "counters",
        "instants", "flows", "bytes", "detail"}`` (``flows``: flow steps linking a room's instants;
        ``batches``: per-line slices, 0 without detail; ``detail``: whether they were written).

    Raises:
        TimelineError: OUT is not a logcorr folder, or an option is invalid.
    """
    sw = load(
        out,
        since=since,
        until=until,
        room=room,
        role=role,
        detail=detail,
        max_lines=MAX_LINES,
        max_detail=MAX_DETAIL_LINES,
    )
    lanes, procs = _tracks(sw)
    head = _metadata(lanes, procs)
    wedge = _wedge_events(sw, lanes, procs)
    instants = _mark_events(sw, lanes)
    counters = _counter_events(sw, lanes)
    batches = _batch_events(sw, lanes) if sw.detail else _run_events(sw, lanes)
    flows = _flow_events(sw, lanes)
    written = _write(sw, out, Path(path), head + wedge + instants + counters + flows, batches)
    return dict(
        processes=procs.height,
        threads=lanes.height,
        batches=written if sw.detail else 0,
        runs=0 if sw.detail else written,
        counters=len(counters),
        instants=len(instants),
        flows=len(flows),
        bytes=Path(path).stat().st_size,
        detail=sw.detail,
    )
