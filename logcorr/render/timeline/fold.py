"""Folding by host: a fleet's page keeps a lane per rank for the hosts whose findings lead and draws
every other host as one lane (issue 49 item 4: at 64 hosts a lane per rank was over 1,150 lanes and a
page headless Chromium could not draw).

``fold_hosts(sw)`` is a ``Swimlanes`` → ``Swimlanes`` step that ``figure`` takes before drawing; the
Chrome trace (``logcorr export``) keeps every lane. A page of at most ``FOLD_ABOVE_HOSTS`` hosts is
returned as it is. Above it, the lanes run host by host: first the hosts of ``Swimlanes.host_rank``
(the hosts of the report's findings, most severe first: ``rank_hosts``), at most ``EXPAND_HOSTS`` of
them, each with its lanes (role, then rank) as before; then the lanes that name no host; then every
other host as one lane (``gpu-node-12 · 18 lanes folded``), in name order. On a folded lane each role's
runs are merged (``merge_runs``: the union of its ranks' runs, so a role that stopped is a gap) and
drawn as a thin bar of their own height in the lane (prefill above, decode in the middle, the router
below); its marks, py-spy captures and last batches stay at their instants, each hover naming the
lane it came from (``from_lane``).
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from logcorr.analysis.findings import MAIN_ORDER
from logcorr.render.timeline.model import ROLE_ORDER, RUN_LOAD, Swimlanes

# More hosts than this on one page: every host but the leading ones is folded into one lane.
FOLD_ABOVE_HOSTS = 8
# At most this many hosts keep a lane per rank on a folded page (the ones whose findings lead).
EXPAND_HOSTS = 4
# Where each role's merged runs sit inside a folded lane (offset from its centre; negative is higher),
# and how high their bars are (lane units; a rank's own run bar is 0.42).
FOLDED_ROLE_DY = {"prefill": -0.24, "decode": 0.0, "router": 0.24, "unknown": 0.24}
FOLDED_BAR = 0.2


def rank_hosts(found: pl.DataFrame) -> list[str]:
    """The hosts of the findings rows ``found`` (``findings.findings``: ``kind``, ``host``, ``ts``),
    most severe first: by the place of the host's most severe kind in ``findings.MAIN_ORDER`` (the
    order in which the report picks the finding that leads), then the earliest ``ts`` (UTC) of that
    kind, then the name. Rows without a host are passed over; empty when no row names one."""
    if found is None or found.is_empty() or "host" not in found.columns:
        return []
    order = {k: i for i, k in enumerate(MAIN_ORDER)}
    best = (
        found.filter(pl.col("host").is_not_null())
        .with_columns(
            pl.col("kind").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_k")
        )
        .sort("_k", "ts", nulls_last=True)
        .group_by("host", maintain_order=True)
        .agg(pl.col("_k").first(), pl.col("ts").first())
        .sort("_k", "ts", "host", nulls_last=True)
    )
    return best["host"].to_list()


def fold_hosts(sw: Swimlanes, expand: int = EXPAND_HOSTS, above: int = FOLD_ABOVE_HOSTS) -> Swimlanes:
    """``sw`` with the lanes of all but the leading hosts folded, one lane per host (see the module
    docstring); ``sw`` itself when it holds at most ``above`` hosts. The lanes frame gains ``folded``
    (the lanes a folded lane holds; null for a lane drawn as before); the frames keep their columns,
    ``lane`` renumbered, plus ``from_lane`` (the label of the lane a row was read on, null where the
    lane is drawn as it is); ``runs`` of a folded lane are merged per role (``merge_runs``) and carry
    ``y`` and ``bar`` (where and how high to draw them)."""
    lanes = sw.lanes
    hosts = lanes["host"].drop_nulls().unique().sort().to_list()
    if len(hosts) <= above:
        return sw
    shown = [h for h in sw.host_rank if h in hosts][:expand]
    folded = [h for h in hosts if h not in shown]
    place = {h: i for i, h in enumerate(shown)}
    kept = (
        lanes.filter(~pl.col("host").is_in(folded).fill_null(False))
        .with_columns(
            pl.col("host").replace_strict(place, default=len(shown), return_dtype=pl.Int64).alias("_place")
        )
        .sort("_place", "lane")
        .drop("_place")
    )
    counts = lanes.filter(pl.col("host").is_in(folded)).group_by("host").len()
    n_of = dict(counts.iter_rows())
    new_lanes = pl.concat(
        [
            kept.with_columns(pl.lit(None, pl.Int64).alias("folded")),
            pl.DataFrame({"host": folded}, schema={"host": lanes.schema["host"]}).with_columns(
                pl.col("host").replace_strict(n_of, return_dtype=pl.Int64).alias("folded"),
                pl.format("{} · {} lanes folded", pl.col("host"), pl.col("host").replace_strict(n_of)).alias(
                    "label"
                ),
            ),
        ],
        how="diagonal_relaxed",
    ).with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("new"))
    kept_map = new_lanes.filter(pl.col("folded").is_null()).select(
        pl.col("lane").cast(pl.Int32), pl.col("new"), pl.lit(None, pl.String).alias("from_lane")
    )
    folded_map = lanes.filter(pl.col("host").is_in(folded)).select(
        pl.col("lane").cast(pl.Int32),
        pl.col("host")
        .replace_strict(
            dict(new_lanes.filter(pl.col("folded").is_not_null()).select("host", "new").iter_rows()),
            return_dtype=pl.Int32,
        )
        .alias("new"),
        pl.col("label").alias("from_lane"),
    )
    mapping = pl.concat([kept_map, folded_map])

    def moved(df: pl.DataFrame) -> pl.DataFrame:
        if "lane" not in df.columns:
            return df
        return (
            df.with_columns(pl.col("lane").cast(pl.Int32))
            .join(mapping, on="lane", how="left", maintain_order="left")
            .with_columns(pl.col("new").alias("lane"))
            .drop("new")
        )

    runs = moved(sw.runs)
    if runs.height:
        is_folded = pl.col("from_lane").is_not_null()
        runs = pl.concat(
            [
                runs.filter(~is_folded).with_columns(
                    pl.col("lane").cast(pl.Float64).alias("y"), pl.lit(0.42).alias("bar")
                ),
                merge_runs(runs.filter(is_folded)),
            ],
            how="diagonal_relaxed",
        ).sort("lane", "ts")
    return replace(
        sw,
        lanes=new_lanes.drop("lane").rename({"new": "lane"}).select("lane", pl.exclude("lane")),
        batches=moved(sw.batches),
        last_batches=moved(sw.last_batches),
        marks=moved(sw.marks),
        captures=moved(sw.captures),
        requests=moved(sw.requests),
        runs=runs,
    )


def merge_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs of a folded lane merged per role (and kind: batches, router requests): runs that overlap
    in time (from ``ts`` to ``until``) become one, the union of its ranks' activity, so a gap in it is a
    time when no rank of the role logged. Each merged run: ``ts`` (first line), ``end`` (last line),
    ``until`` (the latest drawn end), ``lines`` (summed), the maximum of each load field (a throughput:
    null, as a mean of means would mislead), ``pid`` null, ``from_lane`` naming the host, the role and
    the lanes merged, ``y``/``bar`` its place in the lane (``FOLDED_ROLE_DY``, ``FOLDED_BAR``)."""
    if runs.is_empty():
        return runs
    key = ["lane", "role", "kind"]
    maxed = [c for c, label in RUN_LOAD if label.startswith("max") and c in runs.columns]
    meaned = [c for c, label in RUN_LOAD if not label.startswith("max") and c in runs.columns]
    earlier_until = pl.col("until").cum_max().shift(1).over(key, order_by=["ts", "until"])
    merged = (
        runs.sort(*key, "ts", "until")
        .with_columns((pl.col("ts") > earlier_until).fill_null(True).alias("_new"))
        .with_columns(pl.col("_new").cum_sum().over(key).alias("_run"))
        .group_by(*key, "_run", maintain_order=True)
        .agg(
            pl.col("ts").min(),
            pl.col("end").max(),
            pl.col("until").max(),
            pl.col("lines").sum(),
            pl.col("host").first(),
            pl.col("batch_type").mode().first(),
            pl.col("typical_s").max(),
            pl.col("from_lane").n_unique().alias("_lanes"),
            pl.col("source").first(),
            *[pl.col(c).max() for c in maxed],
        )
        .drop("_run")
    )
    dy = pl.col("role").replace_strict(
        FOLDED_ROLE_DY, default=FOLDED_ROLE_DY["unknown"], return_dtype=pl.Float64
    )
    role_order = pl.col("role").replace_strict(
        {r: i for i, r in enumerate(ROLE_ORDER)}, default=len(ROLE_ORDER)
    )
    return (
        merged.with_columns(
            pl.format("{} · {} ({} lanes merged)", pl.col("host"), pl.col("role"), pl.col("_lanes")).alias(
                "from_lane"
            ),
            (pl.col("lane").cast(pl.Float64) + dy).alias("y"),
            pl.lit(FOLDED_BAR).alias("bar"),
            pl.lit(None, pl.Int64).alias("pid"),
            *[pl.lit(None, pl.Float64).alias(c) for c in meaned],
            role_order.alias("_o"),
        )
        .sort("lane", "_o", "ts")
        .drop("_lanes", "_o")
    )
