"""vLLM's periodic engine statistics lines (the ``engine_stats`` table), split into typed fields.

vLLM logs them every 10 s from its stat logger: v1 (``vllm/v1/metrics/loggers.py``, 2025 on)
``Engine 000: Avg prompt throughput: 430.1 tokens/s, Avg generation throughput: 45.4 tokens/s, Running:
3 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 10.8%`` (early v1 without the
``Engine NNN:`` head; later ones add ``External prefix cache hit rate`` and ``MM cache hit rate``); v0
(``vllm/engine/metrics.py``) ``Avg prompt throughput: …, Running: N reqs, Swapped: N reqs, Pending: N
reqs, GPU KV cache usage: …%, CPU KV cache usage: …%.``. These are not SGLang's batch lines: the
``batches`` table, which the wedge and stop rules read, never holds them.
"""

from __future__ import annotations

import json
import re

import polars as pl

from logcorr.parsers.batch_lines import first_line
from logcorr.parsers.fields import base_columns
from logcorr.parsers.rules import LinePattern
from logcorr.store.schema import ENGINE_STATS, conform

ENGINE_STATS_PATTERNS = [
    LinePattern(
        "vllm_engine_stats",
        "engine_stats",
        "Avg prompt throughput: ",
        r"^(?:Engine \d+: )?Avg prompt throughput: [\d.]+ tokens/s",
        "vLLM v0 (2024, metrics.py); 'Engine NNN: ' v1 (2025, v1/metrics/loggers.py)",
        "(APIServer pid=1) INFO 06-11 12:33:59 [loggers.py:259] Engine 000: Avg prompt throughput: 430.1"
        " tokens/s, Avg generation throughput: 45.4 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache"
        " usage: 40.0%, Prefix cache hit rate: 10.8%, External prefix cache hit rate: 6.3%",
        yields={
            "engine_index": 0,
            "prompt_throughput": 430.1,
            "generation_throughput": 45.4,
            "running_reqs": 3,
            "waiting_reqs": 0,
            "gpu_kv_cache_usage_pct": 40.0,
            "prefix_cache_hit_rate_pct": 10.8,
            "extra": '{"External prefix cache hit rate": 6.3}',
        },
    ),
]

# Printed key → column (the unit each prints: tokens/s, reqs, %).
KEYS = {
    "Avg prompt throughput": "prompt_throughput",
    "Avg generation throughput": "generation_throughput",
    "Running": "running_reqs",
    "Waiting": "waiting_reqs",
    "Pending": "waiting_reqs",
    "Swapped": "swapped_reqs",
    "GPU KV cache usage": "gpu_kv_cache_usage_pct",
    "CPU KV cache usage": "cpu_kv_cache_usage_pct",
    "Prefix cache hit rate": "prefix_cache_hit_rate_pct",
}
_HEAD = re.compile(r"^(?:Engine (\d+): )?")
_ITEM = re.compile(r"([A-Za-z][\w ./-]*?): ([-\d.]+|nan|inf)\s*(?:tokens/s|reqs|%)?")


def parse_stats_line(line: str) -> dict:
    """One stats line (its header off) → ``{column: value}``: ``engine_index`` (int or None), the
    ``KEYS`` columns (float; counts as int) and ``extra`` (JSON text of every other ``key: value``, or
    None). Keys not printed are absent. Never raises."""
    m = _HEAD.match(line)
    out: dict = {"engine_index": int(m.group(1)) if m and m.group(1) else None}
    extra: dict = {}
    for item in line[m.end() if m else 0 :].rstrip(". ").split(", "):
        im = _ITEM.fullmatch(item.strip())
        if not im:
            continue
        key, raw = im.group(1), im.group(2)
        try:
            value = float(raw)
        except ValueError:
            continue
        column = KEYS.get(key)
        if column is None:
            extra[key] = value
        elif column.endswith("_reqs"):
            out[column] = int(value)
        else:
            out[column] = value
    out["extra"] = json.dumps(extra) if extra else None
    return out


def engine_stats(ev: pl.DataFrame) -> pl.DataFrame:
    """One ``engine_stats`` row per record of kind ``engine_stats`` in ``ev`` (enriched events with
    ``body``): provenance (``event_id, ts, host, role, pid``, ranks, ``level``, ``source``,
    ``source_pos``), ``engine_index`` (the ``Engine NNN`` printed; null before it was), throughputs in
    tokens/s, request counts, usages and hit rates in percent, ``extra``. Never raises on any text."""
    if ev.height == 0 or "kind" not in ev.columns:
        return pl.DataFrame(schema=ENGINE_STATS.schema)
    base = base_columns(ev.filter(pl.col("kind") == "engine_stats"))
    if base.height == 0:
        return pl.DataFrame(schema=ENGINE_STATS.schema)
    parsed = [parse_stats_line(t) for t in first_line(base["body"]).to_list()]
    columns = ["engine_index", *dict.fromkeys(KEYS.values()), "extra"]
    fields = pl.DataFrame(
        {c: [p.get(c) for p in parsed] for c in columns},
        schema={c: ENGINE_STATS.schema[c] for c in columns},
    )
    return conform(pl.concat([base, fields], how="horizontal"), ENGINE_STATS, strict=False)
