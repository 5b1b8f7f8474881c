"""``figure()``: ``Swimlanes`` as a plotly figure (a dict): activity ticks or run bars, marks,
py-spy captures, the wedge's shading and the lane bands, on a UTC date axis with numeric lanes.

Every string from the tables is HTML-escaped here (``esc``) before plotly sees it.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from logcorr.render.timeline.counters import counter_traces
from logcorr.render.timeline.fold import fold_hosts
from logcorr.render.timeline.model import (
    CAPTURE_DY,
    GROUP_COLORS,
    MARK_STYLE,
    MAX_MARKS_PER_KIND,
    ROLE_COLOR,
    ROLE_LIGHT,
    ROLE_ORDER,
    RUN_GAP_FACTOR,
    RUN_LOAD,
    RUN_MIN_GAP_S,
    Swimlanes,
    batch_name,
    bin_label,
    brief,
    esc,
    esc_expr,
    nice_bin_seconds,
    run_name,
    span_text,
)
from logcorr.render.timeline.tables import LANE, PROVENANCE


def _ms(ts: pl.Series):
    """UTC datetimes as milliseconds since the epoch (a numpy array: plotly stores it as base64),
    which plotly draws on a date axis as UTC wall time."""
    return (ts.dt.epoch("us") / 1000).to_numpy()


def _label_of(sw: Swimlanes) -> pl.DataFrame:
    return sw.lanes.select("lane", pl.col("label").alias("lane_label"))


def _markers(name: str, x, y, hover: list[str], marker: dict) -> dict:
    """A plotly scatter of markers, a hover text each."""
    return dict(
        type="scatter", mode="markers", name=name, x=x, y=y, hovertext=hover, hoverinfo="text", marker=marker
    )


def _activity_traces(sw: Swimlanes, binned: bool) -> list[dict]:
    traces = []
    if binned:
        traces += _run_traces(sw)
    else:
        multi_day = sw.first and sw.last and sw.first.date() != sw.last.date()
        fmt = "%Y-%m-%d %H:%M:%S%.3f" if multi_day else "%H:%M:%S%.3f"
        b = sw.batches.join(_label_of(sw), on="lane")
        if "from_lane" in b.columns:  # a folded lane: the rank's own lane
            b = b.with_columns(pl.coalesce("from_lane", "lane_label").alias("lane_label"))
        fields = [c for c in b.columns if c not in _BATCH_NOT_SHOWN]
        for role in ROLE_ORDER:
            mine = b.filter(pl.col("role") == role)
            if mine.is_empty():
                continue
            hover = pl.concat_str(
                [
                    esc_expr(pl.col("lane_label")),
                    pl.lit(" · "),
                    esc_expr(batch_name(pl.col("batch_type"))),
                    pl.lit(" · "),
                    pl.col("ts").dt.strftime(fmt),
                    pl.lit(" UTC<br>"),
                    _fields_text(fields),
                ]
            )
            traces.append(
                _markers(
                    f"{role} batch",
                    _ms(mine["ts"]),
                    mine["lane"].to_numpy(),
                    mine.select(hover).to_series().to_list(),
                    dict(symbol="line-ns-open", size=13, color=ROLE_COLOR[role], line=dict(width=1.2)),
                )
            )
        reqs = sw.requests.filter(~pl.col("error"))
        if reqs.height:
            traces.append(_mark_trace(reqs, "request", _request_hover(sw, reqs)))
    last = sw.last_batches.join(_label_of(sw), on="lane").sort("lane", "ts")
    if "from_lane" in last.columns:  # a folded lane: the rank's own lane
        last = last.with_columns(pl.coalesce("from_lane", "lane_label").alias("lane_label"))
    if last.height:
        hover = [
            f"<b>last batch of {esc(lbl)}</b>"
            + (f" (pid {pid})" if pid is not None else "")
            + f"<br>{t:%Y-%m-%d %H:%M:%S.%f} UTC<br>{esc(bt)}"
            for lbl, t, pid, bt in last.select(
                "lane_label", "ts", "pid", batch_name(pl.col("batch_type"))
            ).iter_rows()
        ]
        traces.append(
            _markers(
                "last batch of a rank's process",
                _ms(last["ts"]),
                last["lane"].to_numpy(),
                hover,
                dict(symbol="diamond", size=10, color="#111111", line=dict(width=1, color="white")),
            )
        )
    return traces


# the lane, the line's header and provenance: shown apart, not among the fields
_BATCH_NOT_SHOWN = {"lane", "lane_label", "from_lane", "ts", *LANE, *PROVENANCE, "batch_type", "pid", "level"}


def _fields_text(fields: list[str], per_line: int = 4) -> pl.Expr:
    """``name: value`` of the non-null batch fields, ``per_line`` to a line (escaped)."""
    rows = []
    for i in range(0, len(fields), per_line):
        parts = [
            pl.format(f"{c}: {{}}", esc_expr(pl.col(c).cast(pl.String))) for c in fields[i : i + per_line]
        ]
        row = pl.concat_str(parts, separator=" · ", ignore_nulls=True)
        rows.append(pl.when(row != "").then(row))
    if not rows:
        return pl.lit("")
    return pl.concat_str(rows, separator="<br>", ignore_nulls=True)


def _run_traces(sw: Swimlanes) -> list[dict]:
    """Runs as horizontal bars, one trace per role: a bar from a run's first line to its ``until``
    (the last line plus the lane's usual interval); between runs nothing, so a stall is a gap."""
    runs = sw.runs.join(_label_of(sw), on="lane")
    if "from_lane" in runs.columns:  # a folded lane's merged runs name the host and role they merge
        runs = runs.with_columns(pl.coalesce("from_lane", "lane_label").alias("lane_label"))
    # pl.format is null where its value is: concat_str leaves the field out
    load = [pl.format(f"{label} {{}}", pl.col(c).round(2).cast(pl.String)) for c, label in RUN_LOAD]
    hover = pl.concat_str(
        [
            pl.lit("<b>"),
            esc_expr(pl.col("lane_label")),
            pl.lit(" · a run of "),
            pl.col("lines").map_elements(lambda n: f"{n:,}", return_dtype=pl.String),
            pl.lit(" "),
            esc_expr(run_name().str.to_lowercase()),
            pl.lit("</b><br>"),
            pl.col("ts").dt.strftime("%Y-%m-%d %H:%M:%S%.3f"),
            pl.lit(" → "),
            pl.col("end").dt.strftime("%H:%M:%S%.3f"),
            pl.lit(" UTC (last line) · pid "),
            pl.col("pid").cast(pl.String).fill_null("?"),
            pl.lit("<br>usual interval "),
            pl.col("typical_s").round(3).cast(pl.String).fill_null("?"),
            pl.lit(" s; a run ends at a gap of more than "),
            pl.lit(f"{RUN_GAP_FACTOR}× that (at least {RUN_MIN_GAP_S:g} s) or a new process<br>"),
            pl.concat_str(load, separator=" · ", ignore_nulls=True).fill_null(""),
        ]
    )
    traces = []
    for role in ROLE_ORDER:
        mine = runs.filter(pl.col("role") == role).sort("lane", "ts")
        if mine.is_empty():
            continue
        start = _ms(mine["ts"])
        traces.append(
            dict(
                type="bar",
                orientation="h",
                name=f"{role} {'requests' if role == 'router' else 'batches'} (runs)",
                base=start,
                x=_ms(mine["until"]) - start,
                y=(mine["y"] if "y" in mine.columns else mine["lane"]).to_numpy(),
                width=mine["bar"].to_numpy() if "bar" in mine.columns else 0.42,
                hovertext=mine.select(hover).to_series().to_list(),
                hoverinfo="text",
                marker=dict(color=ROLE_LIGHT[role], line=dict(color=ROLE_COLOR[role], width=1)),
            )
        )
    return traces


def mark_hover(sw: Swimlanes, df: pl.DataFrame) -> list[str]:
    labels = dict(sw.lanes.select("lane", "label").iter_rows())
    out = []
    for r in df.iter_rows(named=True):
        name = MARK_STYLE[r["kind"]][0]
        lane = r.get("from_lane") or labels[r["lane"]]
        head = f"<b>{esc(name)}</b> · {esc(lane)} · {r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC"
        ids = []
        if r.get("rid"):
            ids.append(f"rid {esc(r['rid'])}")
        if r.get("bootstrap_room") is not None:
            ids.append(f"room {r['bootstrap_room']}")
        if r.get("detail"):
            ids.append(esc(r["detail"])[:200])
        src = f"{esc(Path(r['source'] or '?').name)}:{esc(r['source_pos'])}"
        out.append("<br>".join([head, *([" · ".join(ids)] if ids else []), brief(r.get("body")), src]))
    return out


def _request_hover(sw: Swimlanes, df: pl.DataFrame) -> list[str]:
    out = []
    for r in df.iter_rows(named=True):
        status = r["status"] if r["status"] is not None else "no status"
        lat = f" · {r['latency_ms']:.0f} ms" if r["latency_ms"] is not None else ""
        ids = [
            f"{k} {esc(r[k])}"
            for k in ("request_id", "rid", "bootstrap_room", "prefill_url", "decode_url")
            if r.get(k) is not None
        ]
        out.append(
            "<br>".join(
                [
                    f"<b>{esc(r['method'] or '')} {esc(r['path'] or '')} → {esc(status)}</b>{lat} · "
                    f"{r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC",
                    *([" · ".join(ids)] if ids else []),
                    brief(r["body"], lines=3),
                ]
            )
        )
    return out


def _mark_trace(df: pl.DataFrame, kind: str, hover: list[str]) -> dict:
    name, symbol, color, size, dy = MARK_STYLE[kind]
    marker = dict(symbol=symbol, size=size, color=color, line=dict(width=1.5, color=color))
    y = df["y"] if "y" in df.columns else df["lane"] + dy
    return _markers(name, _ms(df["ts"]), y.to_numpy(), hover, marker)


FAN_PX = 12  # marks of one lane and half-lane closer than this on the first view are one instant
FAN_PLOT_PX = 1000  # the plot's width the first view is drawn at, about (1280 px less the labels)


def _fanned(marks: pl.DataFrame, view: list | None) -> pl.DataFrame:
    """``marks`` with ``y``: the lane and its kind's offset, or, where several marks of a lane's half
    (above or below the batch ticks) fall within ``FAN_PX`` on the first ``view`` (epoch ms), the
    marks of that instant spread over the half in time order, so none hides another."""
    dy = pl.col("kind").replace_strict(
        {k: v[4] for k, v in MARK_STYLE.items()}, default=0.0, return_dtype=pl.Float64
    )
    marks = marks.with_columns(_dy=dy)
    if view is None or marks.height < 2:
        return marks.with_columns(y=pl.col("lane") + pl.col("_dy")).drop("_dy")
    instant_us = int((view[1] - view[0]) / FAN_PLOT_PX * FAN_PX * 1000)
    side = pl.col("_dy").sign()
    t = pl.col("ts").dt.epoch("us")
    fanned = (
        marks.with_row_index("_row")
        .sort("lane", side, "ts", "_row")
        .with_columns(_new=(t.diff().fill_null(instant_us + 1) > instant_us).over("lane", side))
        .with_columns(_group=pl.col("_new").cum_sum().over("lane", side))
        .with_columns(
            _k=pl.int_range(pl.len()).over("lane", side, "_group"), _n=pl.len().over("lane", side, "_group")
        )
        .with_columns(
            y=pl.col("lane")
            + pl.when(pl.col("_n") > 1)
            .then(side * (0.08 + 0.36 * pl.col("_k") / (pl.col("_n") - 1).clip(lower_bound=1)))
            .otherwise(pl.col("_dy"))
        )
        .sort("_row")
    )
    return fanned.drop("_row", "_new", "_group", "_k", "_n", "_dy")


def _merged(df: pl.DataFrame, bin_s: float) -> pl.DataFrame:
    """Many markers of one kind → one per lane and time bin, with the count and the first row."""
    bin_us = max(int(bin_s * 1e6), 1)
    return (
        df.with_columns((pl.col("ts").dt.epoch("us") // bin_us).alias("_bin"))
        .group_by("lane", "_bin", maintain_order=True)
        .agg(pl.all().first(), pl.len().alias("n"), pl.col("ts").last().alias("ts_last"))
        .drop("_bin")
    )


def _marker_traces(sw: Swimlanes, bin_s: float, view: list | None) -> list[dict]:
    traces = []
    marks = _fanned(sw.marks, view)
    for kind in MARK_STYLE:
        if kind.startswith("request"):
            continue
        df = marks.filter(pl.col("kind") == kind)
        if df.is_empty():
            continue
        traces.append(_thinned(sw, df, kind, bin_s, mark_hover))
    errors = sw.requests.filter(pl.col("error"))
    if errors.height:
        traces.append(_thinned(sw, errors, "request_error", bin_s, _request_hover))
    return traces


def _thinned(sw, df, kind, bin_s, hover_fn) -> dict:
    if df.height <= MAX_MARKS_PER_KIND:
        return _mark_trace(df, kind, hover_fn(sw, df))
    merged = _merged(df.drop("y", strict=False), bin_s)  # one mark per bin: no fan
    hover = [  # a bin of one mark: its own hover
        f"<b>{n:,} × {esc(MARK_STYLE[kind][0])}</b> until {t:%H:%M:%S} UTC; the first:<br>{h}" if n > 1 else h
        for n, t, h in zip(merged["n"], merged["ts_last"], hover_fn(sw, merged), strict=True)
    ]
    trace = _mark_trace(merged, kind, hover)
    trace["name"] += f" (merged per {bin_label(bin_s)})"
    return trace


def _capture_traces(sw: Swimlanes) -> tuple[list[dict], list[dict]]:
    """One trace per stack fingerprint group (one colour = one identical stack), and a label with
    the class beside the last capture of each lane."""
    caps = sw.captures
    if caps.is_empty():
        return [], []
    labels = dict(sw.lanes.select("lane", "label").iter_rows())
    traces, notes = [], []
    groups = sorted(caps["group"].unique().to_list(), key=lambda g: (len(g or ""), g or ""))
    for i, group in enumerate(groups):
        g = caps.filter(pl.col("group") == group)
        color = GROUP_COLORS[i % len(GROUP_COLORS)]
        hover = []
        for r in g.iter_rows(named=True):
            rows = [
                f"<b>py-spy: {esc(r['label'])}</b> · stack {esc(group)} · "
                + esc(r.get("from_lane") or labels[r["lane"]]),
                f"{r['ts']:%Y-%m-%d %H:%M:%S.%f} UTC · pid {esc(r['pid'])} · "
                f"thread {esc(r['thread_name'] or r['thread_id'])}"
                + (f" ({esc(r['thread_state'])})" if r["thread_state"] else ""),
            ]
            if r["event_loop"]:
                rows.append(f"event loop {esc(r['event_loop'])}")
            if r["frames"]:
                rows.append("innermost first:<br>" + brief(r["frames"], lines=8, width=110))
            rows.append(f"{esc(Path(r['source'] or '?').name)}:{esc(r['source_pos'])}")
            hover.append("<br>".join(rows))
        n_lanes = g["lane"].n_unique()
        # the roles of its lanes: two stacks waiting in one collective (prefill's and decode's event
        # loops) read alike otherwise
        roles = ",".join(sorted(g["role"].drop_nulls().unique().to_list()))
        traces.append(
            _markers(
                f"py-spy stack {esc(group)}: {esc(g['label'][0])}, {esc(roles)} ({n_lanes} lane{'s' if n_lanes > 1 else ''})",
                _ms(g["ts"]),
                (g["lane"] + CAPTURE_DY).to_numpy(),
                hover,
                dict(symbol="square", size=11, color=color, line=dict(width=1, color="#222")),
            )
        )
        for lane, label in (
            g.sort("ts").unique("lane", keep="last", maintain_order=True).select("lane", "label").iter_rows()
        ):
            # in the right margin, beside the lane: a label inside the plot hid the ticks and diamonds
            # of the lanes it crossed; the capture's time is in its square's hover
            notes.append(
                dict(
                    x=1,
                    y=lane,
                    xref="paper",
                    yref="y",
                    text=f"{esc(group)} {esc(label)}",
                    showarrow=False,
                    xanchor="left",
                    xshift=6,
                    font=dict(size=10.5, color=color),
                    bgcolor="rgba(255,255,255,0.88)",
                    bordercolor=color,
                    borderpad=1,
                    borderwidth=1,
                    captureevents=False,
                )
            )
    return traces, notes


def _wedge_shapes(sw: Swimlanes, view: list | None = None) -> tuple[list[dict], list[dict]]:
    """A shaded span over the lanes of each wedged role, labelled above the plot; a label whose
    start lies in the right half of the first ``view`` (epoch ms) ends there instead of starting."""
    shapes, notes = [], []
    for w in sw.wedges:
        blocks = _blocks(sw.lanes["role"] == w.role)
        x1 = w.resumed or sw.last
        if not blocks or x1 is None or (sw.last and w.stopped > sw.last) or (sw.first and x1 < sw.first):
            continue
        x0ms, x1ms = w.stopped.timestamp() * 1000, x1.timestamp() * 1000
        shapes += [
            _shape(
                "rect",
                "x",
                (x0ms, x1ms),
                (lo - 0.5, hi + 0.5),
                fillcolor="rgba(214,39,40,0.12)",
                line=dict(color="rgba(214,39,40,0.7)", width=1, dash="dot"),
                layer="below",
            )
            for lo, hi in blocks
        ]
        end = f"{w.resumed_by} {x1:%H:%M:%S}" if w.resumed else "end of data"
        again = ""
        if w.resumed_by == "restart" and w.batches_again is not None:  # as the report: both ends named
            again = f"; batches again {w.batches_again:%H:%M:%S} ({span_text(w.stopped, w.batches_again)} after the stop)"
        notes.append(
            dict(
                x=x0ms,
                y=1,
                xref="x",
                yref="paper",
                yshift=0,
                text=f"<b>{esc(w.role)} wedged</b> {w.stopped:%H:%M:%S} → {esc(end)} ({span_text(w.stopped, x1)}){again}",
                showarrow=False,
                xanchor="right" if view and x0ms > (view[0] + view[1]) / 2 else "left",
                yanchor="bottom",
                font=dict(size=11, color="#b10026"),
            )
        )
    return shapes, _stacked(notes, view)


LABEL_CHAR_PX = 6.5  # about the width of a character of the wedge labels (11 px sans-serif)
MAX_LABEL_ROWS = 4  # rows of wedge labels above the lanes at most (a fleet's stops are many)


def _stacked(notes: list[dict], view: list | None) -> list[dict]:
    """The wedge labels above the plot in rows of 16 px (``yshift``): each in the lowest row where it
    overlaps no label placed before it on the first ``view`` (its width estimated at ``LABEL_CHAR_PX``
    a character on a ``FAN_PLOT_PX`` wide plot), the labels of spans that begin in the view placed
    first, so labels far apart in time share a row. A label that finds no room in ``MAX_LABEL_ROWS``
    rows is left out (its span is still shaded). Without a view: a row each."""
    if not view:
        return [dict(n, yshift=16 * i) for i, n in enumerate(notes)]
    ends: list[float] = []  # per row, the right end (epoch ms) of its last label
    placed = []
    for note in sorted(notes, key=lambda n: (not view[0] <= n["x"] <= view[1], n["x"])):
        width = len(re.sub(r"<[^>]+>", "", note["text"])) * LABEL_CHAR_PX * (view[1] - view[0]) / FAN_PLOT_PX
        lo = note["x"] - width if note["xanchor"] == "right" else note["x"]
        row = next((r for r, end in enumerate(ends) if end < lo), len(ends))
        if row >= MAX_LABEL_ROWS:
            continue
        if row == len(ends):
            ends.append(0.0)
        ends[row] = lo + width
        placed.append(dict(note, yshift=16 * row))
    return placed


def _label_rows(notes: list[dict]) -> int:
    """How many 16 px rows the wedge labels ``notes`` take above the plot (``_stacked``)."""
    return 1 + max(n["yshift"] for n in notes) // 16 if notes else 0


def _shape(kind: str, xref: str, x: tuple, y: tuple, **style) -> dict:
    """A layout shape (``rect`` or ``line``) from ``x`` to ``y`` on the lanes' axis."""
    return dict(type=kind, xref=xref, yref="y", x0=x[0], x1=x[1], y0=y[0], y1=y[1], **style)


def _lane_bands(sw: Swimlanes) -> list[dict]:
    """A light band on every other lane and a line between role groups, so a reader's eye follows a lane."""
    band = dict(fillcolor="rgba(0,0,0,0.035)", line=dict(width=0), layer="below")
    shapes = [
        _shape("rect", "paper", (0, 1), (n - 0.5, n + 0.5), **band) for n in sw.lanes["lane"] if n % 2 == 0
    ]
    groups = sw.lanes.select("host", "role").rows()
    shapes += [
        _shape("line", "paper", (0, 1), (n - 0.5, n - 0.5), line=dict(color="#555", width=1.2))
        for n in range(1, len(groups))
        if groups[n] != groups[n - 1]
    ]
    return shapes


def _blocks(mask: pl.Series) -> list[tuple[int, int]]:
    """The runs of consecutive lanes where ``mask`` (one bool per lane, in lane order) holds, as
    (first lane, last lane): a role's lanes are one block on a page of one host, one per host on a
    fleet's (``fold``)."""
    blocks: list[tuple[int, int]] = []
    for lane, on in enumerate(mask.fill_null(False).to_list()):
        if on and blocks and blocks[-1][1] == lane - 1:
            blocks[-1] = (blocks[-1][0], lane)
        elif on:
            blocks.append((lane, lane))
    return blocks


# the panels under the lanes, px: counters (requests; throughput), the gap above each
PANEL_PX, PANEL_GAP_PX, LANE_PX = 78, 34, 34


def figure(sw: Swimlanes) -> tuple[dict, dict]:
    """The plotly figure (as a dict: ``{"data", "layout"}``) and facts about it: ``binned`` (activity
    drawn as runs, not lines), ``bin_seconds`` (the bucket merged marks share), ``counts`` (lanes,
    batches, runs …), ``x_range`` (the first view, epoch ms), ``framed`` (it is the incident, not the
    whole span), ``counters`` (the counters panel is drawn), ``labels`` (the lanes drawn, top to
    bottom), ``folded`` (a page of more than ``fold.FOLD_ABOVE_HOSTS`` hosts: ``hosts`` folded into a
    lane each, ``expanded`` drawn with a lane per rank, ``lanes`` before folding; else None).

    Layout: the lanes (``y``), under them the load the batch lines report (``y2`` requests, ``y3``
    throughput; see ``counters``), one UTC time axis under all, and under it an overview of the whole
    span (plotly's range slider) to widen or move the view; the first view: see ``_x_ranges``."""
    span_s = (sw.last - sw.first).total_seconds() if sw.first and sw.last else 0.0
    binned = not sw.detail
    bin_s = nice_bin_seconds(max(span_s, 1.0))
    load = counter_traces(sw, _ms)  # the counters sum every rank's lines: read before folding
    unfolded, sw = sw, fold_hosts(sw)
    captures, labels = _capture_traces(sw)
    x_range, full, framed = _x_ranges(sw, span_s)
    data = _activity_traces(sw, binned) + _marker_traces(sw, bin_s, x_range) + captures + load
    n = sw.lanes.height
    shapes, notes = _wedge_shapes(sw, x_range)
    panels = bool(load)
    lanes_px = max(130, LANE_PX * n + 20)
    plot_px = lanes_px + (2 * (PANEL_PX + PANEL_GAP_PX) if panels else 0)
    bottom = (2 * PANEL_PX + 2 * PANEL_GAP_PX) / plot_px if panels else 0.0
    top = 24 + 16 * _label_rows(notes) + (VIEW_BUTTONS_PX if framed else 0)
    layout = dict(
        template="plotly_white",
        height=plot_px + top + 150,
        margin=dict(l=10, r=170 if labels else 10, t=top, b=40),
        hovermode="closest",
        hoverlabel=dict(align="left", font=dict(family="monospace", size=11)),
        showlegend=True,
        legend=dict(
            orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom", font=dict(size=11)
        ),
        xaxis=_x_axis(x_range, full, panels),
        yaxis=dict(
            tickmode="array",
            tickvals=sw.lanes["lane"].to_list(),
            ticktext=[esc(s) for s in sw.lanes["label"].to_list()],
            range=[n - 0.5, -0.5],
            domain=[bottom, 1.0],
            showgrid=False,
            zeroline=False,
            automargin=True,
            fixedrange=True,
            tickfont=dict(family="monospace", size=12),
        ),
        shapes=_lane_bands(sw) + shapes + _restart_lines(sw),
        annotations=notes + labels,
        barmode="overlay",
    )
    if framed:
        # above the wedge labels: paper units over the plot's height
        above = 1 + (16 * _label_rows(notes) + 4) / plot_px
        layout["updatemenus"] = [_view_buttons(sw.focus[2], x_range, full, above)]
    if panels:
        layout.update(_panel_axes(plot_px))
    counts = {
        "lanes": n,
        "batches": sw.batches.height if sw.detail else sw.totals.get("batches", 0),
        "requests": sw.requests.height
        if sw.detail
        else sw.totals.get("requests", 0) + sw.requests.filter(pl.col("error")).height,
        "runs": sw.runs.height,
        "captures": sw.captures.height,
        **{k: int((sw.marks["kind"] == k).sum()) for k in MARK_STYLE if not k.startswith("request")},
    }
    bin_seconds = bin_s if binned else None
    folded = None
    if sw is not unfolded:
        is_folded = sw.lanes["folded"].is_not_null()
        folded = dict(
            hosts=sw.lanes.filter(is_folded)["host"].to_list(),
            expanded=sw.lanes.filter(~is_folded)["host"].drop_nulls().unique(maintain_order=True).to_list(),
            lanes=unfolded.lanes.height,
        )
    facts = dict(
        binned=binned, bin_seconds=bin_seconds, counts=counts, x_range=x_range, framed=framed, counters=panels,
        labels=sw.lanes["label"].to_list(), folded=folded,
    )  # fmt: skip
    return dict(data=data, layout=layout), facts


VIEW_BUTTONS_PX = 30  # the row above the lanes that holds the view buttons


def _view_buttons(name: str, view: list, full: list, y: float) -> dict:
    """Two buttons at ``y`` (paper units) above the lanes: back to the first view (``name``,
    ``view``) and the whole span (``full``), both epoch ms."""
    return dict(
        type="buttons",
        direction="right",
        showactive=True,
        active=0,
        x=0,
        xanchor="left",
        y=y,
        yanchor="bottom",
        pad=dict(t=0, b=0, l=0),
        font=dict(size=11),
        buttons=[
            dict(label=name, method="relayout", args=[{"xaxis.range": view}]),
            dict(label="the whole span", method="relayout", args=[{"xaxis.range": full}]),
        ],
    )


def _x_axis(x_range: list | None, full: list | None, panels: bool) -> dict:
    """The time axis under the lanes and panels, with the overview (range slider) of ``full``."""
    return dict(
        type="date",
        title=dict(text="time (UTC, offset +00:00)", font=dict(size=12)),
        range=x_range,
        anchor="y3" if panels else "y",
        showgrid=True,
        gridcolor="#e5e5e5",
        hoverformat="%H:%M:%S.%L",
        rangeslider=dict(
            visible=bool(full),
            range=full,
            thickness=0.07,
            bgcolor="#f7f7f7",
            borderwidth=1,
            bordercolor="#bbb",
        ),
    )


def _panel_axes(plot_px: int) -> dict:
    """The y axes of the two counter panels at the bottom of the plot (``plot_px`` high)."""
    f = 1 / plot_px
    axis = dict(
        fixedrange=True,
        rangemode="tozero",
        zeroline=True,
        showgrid=True,
        gridcolor="#eeeeee",
        automargin=True,
        tickfont=dict(size=10),
        nticks=4,
    )
    return dict(
        yaxis2=dict(
            axis,
            domain=[f * (PANEL_PX + PANEL_GAP_PX), f * (2 * PANEL_PX + PANEL_GAP_PX)],
            title=dict(text="requests<br>(Σ DP groups)", font=dict(size=11)),
        ),
        yaxis3=dict(axis, domain=[0, f * PANEL_PX], title=dict(text="token/s", font=dict(size=11))),
    )


def _x_ranges(sw: Swimlanes, span_s: float) -> tuple[list | None, list | None, bool]:
    """The first view's x range (epoch ms), the overview's (the whole span), and whether the first
    view is framed on the incident. ``--since``/``--until``: exactly the window (the other end, if
    not given, the data's with a margin); else the focus with a margin of 5 % of its width (at
    least 3 s), inside the whole span; else the whole span with a margin of 2 % (at least 1 s)."""
    if not (sw.first and sw.last):
        return None, None, False
    pad = max(span_s * 0.02, 1.0)
    full = [(sw.first.timestamp() - pad) * 1000, (sw.last.timestamp() + pad) * 1000]
    if sw.since is not None or sw.until is not None:
        view = [
            sw.since.timestamp() * 1000 if sw.since else full[0],
            sw.until.timestamp() * 1000 if sw.until else full[1],
        ]
        return view, view, False
    if sw.focus is None:
        return full, full, False
    a, b = (t.timestamp() for t in sw.focus[:2])
    margin = max((b - a) * 0.05, 3.0)
    view = [max((a - margin) * 1000, full[0]), min((b + margin) * 1000, full[1])]
    return view, full, view != full


def _restart_lines(sw: Swimlanes) -> list[dict]:
    """A dotted line across a role's lanes where systemd was asked to stop it (a restart) and where
    its server said it was ready again, in the colours of those marks."""
    shapes = []
    n_hosts = sw.lanes["host"].drop_nulls().n_unique()
    for kind in ("lifecycle", "ready"):
        rows = sw.marks.filter(pl.col("kind") == kind)
        if kind == "lifecycle":
            rows = rows.filter(pl.col("detail").str.contains(r"^(?:server_)?stopping"))
        for lane, ts in rows.select("lane", "ts").iter_rows():
            # across the lanes of the mark's role, of its host when there are several (a folded lane: itself)
            host, role = sw.lanes["host"][lane], sw.lanes["role"][lane]
            lo, hi = lane, lane
            if role is not None:
                same = (sw.lanes["role"] == role) & (sw.lanes["host"].eq_missing(host) | (n_hosts <= 1))
                lo, hi = next(b for b in _blocks(same) if b[0] <= lane <= b[1])
            x = ts.timestamp() * 1000
            shapes.append(
                _shape(
                    "line",
                    "x",
                    (x, x),
                    (lo - 0.5, hi + 0.5),
                    line=dict(color=MARK_STYLE[kind][2], width=1.5, dash="dot"),
                    layer="below",
                )
            )
    return shapes
