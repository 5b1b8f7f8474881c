"""The timeline's model and vocabulary: ``Swimlanes`` (what ``load`` read), ``Wedge``, ``TimelineInfo``,
``TimelineError``, the limits that decide lines or runs, the colours and marker styles, and the small
text helpers every renderer shares (``esc``, ``brief``, ``batch_name``).

Nothing here reads a table or draws: ``tables``/``duck`` fill the model, ``plot``/``page`` and
``logcorr.trace`` render it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

ROLE_ORDER = ("prefill", "decode", "router", "unknown")
RANK_TOKENS = (("dp_rank", "DP"), ("pp_rank", "PP"), ("tp_rank", "TP"), ("ep_rank", "EP"))

# Above this many batch lines (plus ok router requests) in the window, activity is drawn as runs
# instead of one mark each (unless asked for, ``detail=True``): keeps the page small (plotly.js alone
# is ~4.8 MB) and fast to open, and the lines never leave DuckDB.
MAX_ACTIVITY_MARKS = 12_000
# At most this many bins across the window when binning.
MAX_BINS = 1_500
# Above this many markers of one kind, markers of that kind are merged per lane and time bin.
MAX_MARKS_PER_KIND = 1_500
# ``detail=True`` on a window holding more lines than this is refused (``load(max_detail=…)``).
MAX_DETAIL_LINES = 100_000
# Runs (progress, not lines): a lane's activity breaks into a new run where the gap to its previous line
# exceeds RUN_GAP_FACTOR times the lane's median interval, and at least RUN_MIN_GAP_S seconds.
RUN_GAP_FACTOR = 10
RUN_MIN_GAP_S = 1.0
# DuckDB's memory for the aggregations (it spills to a temporary folder beyond it).
DUCKDB_MEMORY = "400MB"
NICE_BINS_S = (0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)


# Activity is drawn in light tints so that the markers on top of it stand out.
ROLE_COLOR = {"prefill": "#6baed6", "decode": "#74c476", "router": "#aaaaaa", "unknown": "#c7a98f"}
ROLE_LIGHT = {"prefill": "#e3eef8", "decode": "#e5f5e0", "router": "#f0f0f0", "unknown": "#f3ebe3"}
# Marker kinds: legend name, plotly symbol, colour, size, vertical offset inside the lane (-0.5..0.5,
# negative is higher on the page).
MARK_STYLE = {
    "abort": ("abort", "x-thin-open", "#ff7f0e", 9, -0.27),
    "transfer_error": ("KV transfer error", "triangle-down", "#d62728", 10, -0.27),
    "assertion": ("assert room in self.transfer_infos", "star", "#b10026", 17, -0.27),
    "watchdog": ("watchdog", "hourglass", "#9467bd", 12, -0.27),
    "traceback": ("exception / traceback", "square-x-open", "#000000", 10, -0.27),
    # /health answers come from the HTTP server, not the schedulers: a colour no role uses, so the
    # ticks of a "(no rank)" lane are not read as batches going on through a wedge
    "health": ("/health 200 (an answer, not progress)", "line-ns-open", "#17becf", 7, 0.27),
    "health_failed": ("/health failed", "circle-x", "#d62728", 10, 0.27),
    "markup_leak": ("answer with tool-call markup", "diamond-tall-open", "#e377c2", 11, -0.27),
    "lifecycle": ("stop / start (systemd, HTTP server: lifecycle table)", "bowtie", "#8c564b", 12, 0.27),
    "ready": ("server ready (fired up and ready to roll)", "star-diamond", "#bcbd22", 14, 0.27),
    "request": ("router request ok", "line-ns-open", "#7f7f7f", 8, 0.0),
    "request_error": ("router request failed", "x-thin-open", "#d62728", 8, 0.0),
}
CAPTURE_DY = 0.22  # captures sit a little below the lane's batch ticks
# Fingerprint groups of py-spy captures: colours distinct from the marker colours above.
GROUP_COLORS = ("#6a3d9a", "#e7298a", "#1b9e77", "#a6761d", "#e6ab02", "#525252", "#08519c", "#66a61e")


class TimelineError(Exception):
    """The timeline cannot be drawn: OUT is not a logcorr folder, or an option is invalid."""


@dataclass
class Wedge:
    """A span in which no rank of ``role`` advanced a batch while the data goes on."""

    role: str
    stopped: datetime  # the last batch of the role before the gap (every rank had stopped by then)
    resumed: datetime | None  # the restart / next batch, or None: not within the data
    ranks: int  # how many ranks of the role stopped
    other_went_on: bool | None  # did the other engine role log batches inside the span
    resumed_by: str = "next batch"  # what ends the span: "restart", "next batch" or "end of data"
    health_ok: bool | None = None  # did /health answer 200 inside the span
    verdict: str = ""  # the wedge query's verdict in words
    batches_again: datetime | None = None  # the role's first batch after the span (after a restart: later)


@dataclass
class Swimlanes:
    """What ``load`` read: lanes and what happened on them, all times ``datetime[us, UTC]``.

    Every frame carries ``lane`` (an index into ``lanes``) and ``ts``; markers and captures keep
    ``event_id``/``source``/``source_pos`` so any mark can be traced back to its line.

    Activity comes two ways. ``runs`` and ``load`` always (a few rows per rank: aggregated in
    DuckDB). With ``detail`` also every batch line in ``batches`` and every router request in
    ``requests``; without, ``batches`` is empty and ``requests`` holds the failed requests only.
    Marks, captures, the last batches and the wedge are exact either way.
    """

    out: Path
    lanes: pl.DataFrame  # lane, key, host, role, dp_rank, pp_rank, tp_rank, ep_rank, label
    batches: pl.DataFrame  # lane, ts, batch_type, … every typed batch field
    last_batches: pl.DataFrame  # lane, ts, pid, batch_type: the last batch of each rank's process
    marks: pl.DataFrame  # lane, ts, kind, rid, bootstrap_room, level, body, event_id, source, source_pos
    captures: pl.DataFrame  # lane, ts, capture_id, label, group, fingerprint, wait_class, backend, …
    requests: pl.DataFrame  # lane, ts, method, path, status, latency_ms, request_id, rid, error, body
    wedges: list[Wedge] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)  # the report's summary lines (Markdown)
    first: datetime | None = None
    last: datetime | None = None
    sources: list[tuple[str, str, int]] = field(default_factory=list)  # (source, format, records)
    clock_notes: list[str] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)  # human-readable --since/--until/--room/--role
    notes: list[str] = field(default_factory=list)  # what could not be drawn, and why
    # progress without the lines: see ``load_runs`` (lane, kind, ts, end, until, lines, load fields)
    runs: pl.DataFrame = field(default_factory=pl.DataFrame)
    # batch load per lane and bucket of ``bucket_s`` seconds: see ``load_load``
    load: pl.DataFrame = field(default_factory=pl.DataFrame)
    bucket_s: float | None = None
    # request gauges of /metrics scrapes per scrape, role and label: see ``counters.scraped_load``
    scrapes: pl.DataFrame = field(default_factory=pl.DataFrame)
    detail: bool = True  # ``batches`` and ``requests`` hold every line of the window (else: runs)
    totals: dict[str, int] = field(default_factory=dict)  # lines in the window: batches, requests
    since: datetime | None = None  # --since as given (the axis starts there), else None
    until: datetime | None = None  # --until as given (the axis ends there), else None
    # the incident the page opens on: the first wedge's span with the chain before it (abort burst,
    # assertion), from the report's findings; None when there is no wedge
    focus: tuple[datetime, datetime, str] | None = None  # the first view: start, end, its name
    # the hosts of the report's findings, most severe first (``fold.rank_hosts``): on a page of many
    # hosts the first of them keep a lane per rank and the others are folded (``fold.fold_hosts``)
    host_rank: list[str] = field(default_factory=list)


@dataclass
class TimelineInfo:
    """What ``timeline`` wrote: the file, its size, the lanes, and whether activity was drawn as runs
    (``binned``; ``counts["runs"]`` of them) rather than a tick per line."""

    html: Path
    bytes: int
    lanes: list[str]
    binned: bool
    bin_seconds: float | None
    counts: dict[str, int]
    wedges: list[Wedge]
    verdict: list[str]
    first: datetime | None
    last: datetime | None


# -------------------------------------------------------------------------------------- rendering


def batch_name(batch_type: pl.Expr) -> pl.Expr:
    """``Prefill batch`` / ``Decode batch`` from the batches table's ``batch_type``."""
    t = batch_type.fill_null("batch")
    return (
        pl.when(t.str.to_lowercase().str.ends_with("batch"))
        .then(t)
        .otherwise(pl.format("{} batch", t.str.to_titlecase()))
    )


# What a run (``Swimlanes.runs``) shows of the load its lines report: column, label (the maximum; the
# mean of a throughput). The page's hover and the trace's args name the same ones.
RUN_LOAD = (
    ("running_req", "max #running-req"),
    ("queue_req", "max #queue-req"),
    ("token_usage", "max token usage"),
    ("gen_throughput", "mean gen throughput (token/s)"),
    ("input_throughput", "mean input throughput (token/s)"),
)


def run_name() -> pl.Expr:
    """What a run of ``Swimlanes.runs`` is a run of: ``router requests``, ``Prefill batches`` …"""
    return (
        pl.when(pl.col("kind") == "request")
        .then(pl.lit("router requests"))
        .otherwise(batch_name(pl.col("batch_type")).str.replace(r"batch$", "batches"))
    )


def span_text(a: datetime, b: datetime) -> str:
    """The time from ``a`` to ``b``, rounded to the second, as ``1h02m03s``, ``4m05s`` or ``6s``."""
    s = int(round((b - a).total_seconds()))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def esc(text: object) -> str:
    """HTML-escape any value for plotly text (plotly shows ``&lt;`` as ``<``) or the page."""
    return html.escape("" if text is None else str(text), quote=True)


def esc_expr(expr: pl.Expr) -> pl.Expr:
    """``esc`` for a polars string expression (one pass, so an escape is never escaped again)."""
    return expr.str.replace_many(["&", "<", ">", '"', "'"], ["&amp;", "&lt;", "&gt;", "&quot;", "&#x27;"])


def brief(text: str | None, lines: int = 6, width: int = 160) -> str:
    """A message for a hover label: escaped, at most ``lines`` lines (first and last ones) of
    ``width`` characters, joined with ``<br>``."""
    rows = (text or "").splitlines() or [""]
    if len(rows) > lines:
        rows = rows[:2] + [f"… {len(rows) - lines + 1} more lines …"] + rows[-(lines - 3) :]
    return "<br>".join(esc(r if len(r) <= width else r[: width - 1] + "…") for r in rows)


def nice_bin_seconds(span_s: float) -> float:
    """The smallest of ``NICE_BINS_S`` that cuts ``span_s`` seconds into at most ``MAX_BINS`` bins
    (the largest when none does), in seconds."""
    return next((b for b in NICE_BINS_S if span_s / b <= MAX_BINS), NICE_BINS_S[-1])


def bin_label(bin_s: float) -> str:
    """A bin width of ``bin_s`` seconds for a legend: ``250 ms``, ``5 s``, ``15 min``, ``6 h``."""
    if bin_s < 1:
        return f"{bin_s * 1000:g} ms"
    if bin_s < 60:
        return f"{bin_s:g} s"
    if bin_s < 3600:
        return f"{bin_s / 60:g} min"
    return f"{bin_s / 3600:g} h"
