"""Speed of the SGLang line parsers: ``classify`` + ``batches`` over synthetic journal lines.

Run ``python bench/bench_parsers.py [N]`` (default N = 1,000,000). The lines are half batch lines
(prefill and decode, three SGLang shapes, ranks TP0-7, random values) and half HTTP access lines
(uvicorn, some ``/health``), built with polars (no Python object per line). The ``ev`` frame is
made the way ingest makes it (``split_prefix`` over the messages); that step is timed separately.
Prints lines/s for ``classify``, ``batches`` and both together; the figure quoted in the parsers'
notes is the last one.
"""

from __future__ import annotations

import os
import sys
import time

import polars as pl

from logcorr.parsers import router, sglang
from logcorr.parsers.prefix import split_prefix


def synthetic(n: int, seed: int = 7) -> pl.DataFrame:
    """``n`` messages (str) in a DataFrame column ``message``."""
    rnd = pl.DataFrame({"i": pl.int_range(n, eager=True)}).with_columns(
        (pl.col("i").hash(seed) % 1_000_000).alias("r")
    )
    r = pl.col("r")
    ts = pl.format(
        "[2025-10-29 21:{}:{} TP{}] ",
        (r % 60).cast(pl.String).str.zfill(2),
        ((r // 60) % 60).cast(pl.String).str.zfill(2),
        r % 8,
    )
    decode = pl.format(
        "Decode batch, #running-req: {}, #token: {}, token usage: 0.{}, pre-allocated usage: 0.{}, "
        "#prealloc-req: {}, #transfer-req: {}, #retracted-req: 0, cuda graph: True, "
        "gen throughput (token/s): {}.{}, #queue-req: {}",
        r % 256,
        r,
        (r % 90 + 10),
        (r % 80 + 10),
        r % 7,
        r % 5,
        r % 9000,
        r % 90 + 10,
        r % 13,
    )
    prefill = pl.format(
        "Prefill batch, #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: 0.{}, "
        "#running-req: {}, #queue-req: {}, #prealloc-req: {}, #inflight-req: {}, "
        "input throughput (token/s): {}.{}, ",
        r % 16 + 1,
        r % 8192,
        r % 4096,
        r % 90 + 10,
        r % 64,
        r % 11,
        r % 30,
        r % 4,
        r % 50000,
        r % 90 + 10,
    )
    old = pl.format(
        "Decode batch. #running-req: {}, #token: {}, token usage: 0.{}, gen throughput (token/s): {}.{}, #queue-req: {}",
        r % 256,
        r,
        r % 90 + 10,
        r % 9000,
        r % 90 + 10,
        r % 13,
    )
    access = pl.format(
        '[2025-10-29 21:{}:{}] INFO:     10.0.{}.{}:{} - "{}" {} OK',
        (r % 60).cast(pl.String).str.zfill(2),
        ((r // 60) % 60).cast(pl.String).str.zfill(2),
        r % 255,
        r % 253,
        r % 60000 + 1024,
        pl.when(r % 10 == 0)
        .then(pl.lit("GET /health HTTP/1.1"))
        .otherwise(pl.lit("POST /generate HTTP/1.1")),
        pl.when(r % 97 == 0).then(pl.lit(500)).otherwise(pl.lit(200)),
    )
    kind = pl.col("i") % 6
    message = (
        pl.when(kind == 0)
        .then(ts + decode)
        .when(kind == 1)
        .then(ts + prefill)
        .when(kind == 2)
        .then(ts + old)
        .otherwise(access)
    )
    return rnd.select(message.alias("message"))


def make_ev(messages: pl.DataFrame) -> pl.DataFrame:
    head = split_prefix(messages["message"])
    return pl.concat([messages, head], how="horizontal").with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("event_id"),
        pl.col("log_ts").dt.replace_time_zone("UTC").alias("ts"),
        pl.lit("gpu-node-1").alias("host"),
        pl.lit("unknown").alias("role"),
        pl.lit(None, pl.Int32).alias("pid"),
        pl.lit("bench").alias("source"),
        pl.int_range(pl.len()).cast(pl.String).alias("source_pos"),
    )


def timed(label: str, n: int, fn):
    """Wall time and CPU time (all threads) of ``fn()``; on a busy machine the CPU time is the
    steadier figure (2 cores: an idle machine's wall time is at most the CPU time)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{label:<34} {dt:7.2f} s wall {n / dt:>11,.0f} lines/s | {cpu:7.2f} s CPU {n / cpu:>11,.0f} lines/CPU-s"
    )
    return out, (dt, cpu)


def main(n: int = 1_000_000) -> None:
    print(
        f"{n:,} synthetic lines (1/2 batch lines in 3 shapes, 1/2 uvicorn access lines), polars {pl.__version__}"
    )
    messages, _ = timed("build lines", n, lambda: synthetic(n))
    ev, _ = timed("split_prefix (ingest, not counted)", n, lambda: make_ev(messages))
    kinds, t_classify = timed("classify", n, lambda: sglang.classify(ev))
    ev = ev.with_columns(kinds["kind"])
    b, t_batches = timed("batches", n, lambda: sglang.batches(ev))
    r, _ = timed("requests (router.py)", n, lambda: router.requests(ev))
    wall, cpu = t_classify[0] + t_batches[0], t_classify[1] + t_batches[1]
    print(
        f"{'classify + batches':<34} {wall:7.2f} s wall {n / wall:>11,.0f} lines/s | {cpu:7.2f} s CPU {n / cpu:>11,.0f} lines/CPU-s"
    )
    print(f"load average while running: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"rows: batches {b.height:,}, requests {r.height:,}; kinds {dict(kinds['kind'].value_counts().iter_rows())}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
