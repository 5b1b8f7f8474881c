"""The load an engine's batch lines report, per role (HTML panel) or per engine (trace counters), and
the request gauges a /metrics scrape holds (points on the HTML panel).

``Swimlanes.load`` holds per lane and time bucket (aggregated in DuckDB: a day of millions of lines
is at most ``MAX_BINS`` buckets) the maximum of each request counter, the maximum token usage and the
mean throughputs. ``engine_load`` sums them as the ``wedge`` query does: the TP (and EP) ranks of one
DP group log the same batch, so a DP group counts once (its maximum), and DP groups add up.
"""

from __future__ import annotations

import polars as pl

from logcorr.render.timeline.model import ROLE_ORDER, RUN_GAP_FACTOR, Swimlanes, esc

# request counters of a batch line: (column, label); drawn where they are not all 0
REQUEST_COUNTERS = (
    ("running_req", "#running-req"),
    ("queue_req", "#queue-req"),
    ("prealloc_req", "#prealloc-req"),
    ("inflight_req", "#inflight-req"),
    ("transfer_req", "#transfer-req"),
)
RATES = (("gen_throughput", "gen throughput"), ("input_throughput", "input throughput"))
# a scrape's point per label: the legend tells them apart as the dashes tell the lines apart
SCRAPE_SYMBOL = {"#running-req": "circle-open", "#queue-req": "square-open", "#prealloc-req": "diamond-open",
                 "#inflight-req": "triangle-up-open", "#transfer-req": "star-open"}  # fmt: skip
DASH = {"running_req": "solid", "queue_req": "dot", "prealloc_req": "dash", "inflight_req": "dashdot"}
# a line breaks at a gap of at least this many seconds (the wedge query's min_gap_s): an engine that
# slows down (prefill during a decode wedge) keeps its line
BREAK_MIN_S = 60.0
# darker than the activity's tints: a line must read on white
LINE_COLOR = {"prefill": "#2171b5", "decode": "#238b45", "router": "#636363", "unknown": "#8c6d31"}


# SGLang's /metrics gauges that count requests (observability/metrics_collector.py), drawn from a
# scrape as points on the requests panel under the batch lines' label they match; the bootstrap queue
# was the "prealloc" queue before ≈2025-10
SCRAPED_GAUGES = {
    "sglang:num_running_reqs": "#running-req",
    "sglang:num_queue_reqs": "#queue-req",
    "sglang:num_prefill_bootstrap_queue_reqs": "#prealloc-req",
    "sglang:num_prefill_prealloc_queue_reqs": "#prealloc-req",
    "sglang:num_prefill_inflight_queue_reqs": "#inflight-req",
    "sglang:num_decode_prealloc_queue_reqs": "#prealloc-req",
    "sglang:num_decode_transfer_queue_reqs": "#transfer-req",
}


def scraped_load(samples: pl.DataFrame) -> pl.DataFrame:
    """``samples`` (rows of ``metrics`` whose ``name`` is a ``SCRAPED_GAUGES`` key: ``ts``, ``host``,
    ``role``, ``dp_rank``, ``name``, ``value``, ``source``) summed per scrape as
    ``engine_load`` sums batch lines: per ``ts``, ``host``, ``role`` and label the maximum over a DP
    group's ranks, added over DP groups; with ``ranks`` (samples) and ``source``."""
    if samples.is_empty():
        return pl.DataFrame(
            schema={
                "ts": samples.schema.get("ts", pl.Datetime("us", "UTC")),
                "host": pl.String,
                "role": pl.String,
                "label": pl.String,
                "value": pl.Float64,
                "ranks": pl.UInt32,
                "source": pl.String,
            }  # fmt: skip
        )
    df = samples.with_columns(
        pl.col("name").replace_strict(SCRAPED_GAUGES, return_dtype=pl.String).alias("label"),
        pl.col("role").fill_null("unknown"),
        pl.col("host").fill_null(""),
    )
    key = ["ts", "host", "role", "label"]
    per_group = df.group_by([*key, pl.col("dp_rank").fill_null(-1)]).agg(
        pl.col("value").max(), pl.len().alias("ranks"), pl.col("source").first()
    )
    return (
        per_group.group_by(key)
        .agg(pl.col("value").sum(), pl.col("ranks").sum(), pl.col("source").first())
        .sort(key)
    )


def engine_load(load: pl.DataFrame, lanes: pl.DataFrame, by: tuple[str, ...] = ("role",)) -> pl.DataFrame:
    """``load`` (``Swimlanes.load``) summed per ``by`` (columns of ``lanes``: role, or a trace's
    process) and bucket of ``Swimlanes.bucket_s`` seconds:
    ``ts`` (the bucket's start, UTC), ``lines`` (batch lines of all ranks), each request counter and
    throughput summed over DP groups (a group's maximum over its ranks), ``token_usage`` the maximum
    of all ranks (a fraction of the KV pool, 0-1), ``groups`` (DP groups that logged in the bucket).
    Empty when the window holds no batch line."""
    cols = [c for c, _ in (*REQUEST_COUNTERS, *RATES)]
    if load.is_empty():
        return pl.DataFrame(
            schema={**{k: lanes.schema[k] for k in by}, "ts": load.schema.get("ts", pl.Datetime)}
        )
    keyed = load.join(
        lanes.select("lane", "host", "dp_rank", "pp_rank", *[k for k in by if k != "host"]), on="lane"
    )
    group = [
        *by,
        "ts",
        pl.col("host").fill_null("").alias("_host"),
        pl.col("dp_rank").fill_null(-1),
        pl.col("pp_rank").fill_null(-1),
    ]
    per_group = keyed.group_by(group).agg(
        pl.col("lines").sum(),
        *[pl.col(c).max() for c in cols],
        pl.col("token_usage").max(),
    )
    return (
        per_group.group_by([*by, "ts"])
        .agg(
            pl.col("lines").sum(),
            *[pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c) for c in cols],
            pl.col("token_usage").max(),
            pl.len().alias("groups"),
        )
        .sort([*by, "ts"])
    )


def _with_breaks(df: pl.DataFrame, bucket_s: float) -> pl.DataFrame:
    """A row of nulls after each stretch of buckets, so a line breaks where the role logged no batch
    for longer than its usual pace allows (``RUN_GAP_FACTOR`` × its median gap between buckets, at
    least 10 buckets and ``BREAK_MIN_S``): a wedge is a gap in the line, never a made-up 0."""
    if df.height < 2:
        return df
    gap = pl.col("ts").diff().shift(-1).dt.total_microseconds() / 1e6
    typical = df.select(gap.median()).item() or bucket_s
    limit = max(RUN_GAP_FACTOR * typical, 10 * bucket_s, BREAK_MIN_S)
    ends = df.filter((gap > limit).fill_null(False)).select(
        (pl.col("ts") + pl.duration(microseconds=int(bucket_s * 1e6))).alias("ts")
    )
    return pl.concat([df, ends], how="diagonal_relaxed").sort("ts")


def counter_traces(sw: Swimlanes, ms) -> list[dict]:
    """The counters panel's plotly traces: per role a line per request counter that is not 0
    throughout (axis ``y2``) and per throughput (axis ``y3``); steps (``hv``: a value holds until the
    next bucket), broken where the role logged no batch. ``ms``: datetimes → epoch milliseconds."""
    per_role = engine_load(sw.load, sw.lanes)
    traces = []
    for role in ROLE_ORDER:
        df = per_role.filter(pl.col("role") == role)
        if df.is_empty():
            continue
        df = _with_breaks(df, sw.bucket_s or 1.0)
        hover = _hover(df, role, sw.bucket_s or 1.0)
        for col, label in REQUEST_COUNTERS + RATES:
            if not (df[col].fill_null(0) > 0).any():
                continue
            rate = col in dict(RATES)
            # one hover per bucket and role carries every counter: the role's first line holds it
            # (each line with its own copy made a whole day's page 11 MB instead of 6)
            shown, hover = hover, None
            traces.append(
                dict(
                    type="scatter",
                    mode="lines",
                    name=f"{role} {label}" + (" (token/s)" if rate else ""),
                    legendgroup="load",
                    x=ms(df["ts"]),
                    y=df[col].cast(pl.Float64).to_numpy(),
                    xaxis="x",
                    yaxis="y3" if rate else "y2",
                    line=dict(shape="hv", width=1.6, color=LINE_COLOR[role], dash=DASH.get(col, "longdash")),
                    connectgaps=False,
                    **(dict(hovertext=shown, hoverinfo="text") if shown else dict(hoverinfo="skip")),
                )
            )
    return traces + _scrape_traces(sw, ms)


def _scrape_traces(sw: Swimlanes, ms) -> list[dict]:
    """A point per scrape, role and gauge of ``Swimlanes.scrapes`` on the requests panel (``y2``):
    what the engine's /metrics said at that instant, beside what its batch lines said."""
    if sw.scrapes.is_empty():
        return []
    traces = []
    for (role, label), df in sorted(sw.scrapes.partition_by(["role", "label"], as_dict=True).items()):
        hover = [
            f"<b>{esc(role)}</b> · {label} {r['value']:,.4g} · /metrics scraped {r['ts']:%H:%M:%S} UTC"
            f"{' on ' + esc(r['host']) if r['host'] else ''}<br>{r['ranks']} sample(s), {esc(r['source'] or '')}"
            for r in df.iter_rows(named=True)
        ]
        traces.append(
            dict(
                type="scatter",
                mode="markers",
                name=f"{role} {label} (scrape)",
                legendgroup="load",
                x=ms(df["ts"]),
                y=df["value"].to_numpy(),
                xaxis="x",
                yaxis="y2",
                marker=dict(
                    symbol=SCRAPE_SYMBOL.get(label, "circle-open"),
                    size=9,
                    color=LINE_COLOR.get(role, LINE_COLOR["unknown"]),
                ),
                hovertext=hover,
                hoverinfo="text",
            )
        )
    return traces


def _hover(df: pl.DataFrame, role: str, bucket_s: float) -> list[str]:
    """One hover text per bucket: every counter of the role in it."""
    fields = (*REQUEST_COUNTERS, ("token_usage", "token usage"), *RATES)
    out = []
    for r in df.iter_rows(named=True):
        if r.get("lines") is None:
            out.append("")
            continue
        vals = " · ".join(f"{label} {r[c]:,.4g}" for c, label in fields if r[c] is not None)
        out.append(
            f"<b>{esc(role)}</b> · {r['ts']:%H:%M:%S} UTC + {bucket_s:g} s · {r['lines']:,} batch lines, "
            f"{r['groups']} DP group(s)<br>{vals}"
        )  # how they are summed is said once, in the page's notes
    return out


__all__ = ["RATES", "REQUEST_COUNTERS", "SCRAPED_GAUGES", "counter_traces", "engine_load", "scraped_load"]
