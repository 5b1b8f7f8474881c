#!/usr/bin/env python3
"""Where the CPU of ``logcorr ingest`` goes, stage by stage (issue 33).

Runs one ingest in this process with its stages made serial (``threads.ahead`` replaced by a plain
iterator, so no two stages overlap) and each stage's calls timed with ``time.process_time()``: the CPU
of every thread of the process, polars' and DuckDB's pools included, so a polars call that fans out
over both cores is counted whole. Timings are exclusive: a stage called inside another (``classify``
inside a table builder) is counted once, in its own row. journalctl's CPU (a child process) comes
from ``getrusage(RUSAGE_CHILDREN)``.

Prints one table: stage, CPU s, share of logcorr's own CPU, CPU µs per input entry; then logcorr's
total beside journalctl's and the ratio the issue's target is about (whole tree CPU / journalctl
CPU); then the CPU per ingest thread and the model of the pipelined ingest's wall time on 1 to 64
cores (``core_model``; with ``--floor``, its ratio to journalctl alone). Wall time here is that of the
serial run, longer than a normal (pipelined) ingest.

Usage::

    python bench/bench_stages.py --reuse /tmp/logcorr-day-1000000            # DIR/journal
    python bench/bench_stages.py --reuse DIR --input DIR/day.json
    python bench/bench_stages.py --reuse DIR --floor 6.45   # journalctl alone took 6.45 s
    python bench/bench_stages.py --reuse DIR --patterns     # also: regexes per thread per chunk

``--patterns`` also counts the distinct regular expressions each ingest thread hands polars per chunk
(every ``str`` method that takes a pattern, wrapped): polars keeps the last 32 compiled per calling
thread, so a thread that cycles more compiles them all again on every chunk (issue 49). The wrapping
costs a little CPU of its own: compare the stages' figures of runs without it.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from logcorr import ingest as ingest_module  # noqa: E402
from logcorr.analysis import database  # noqa: E402
from logcorr.inputs import rejoin, threads  # noqa: E402
from logcorr.parsers import sglang  # noqa: E402
from logcorr.pipeline import enrich, finish, read, stacks  # noqa: E402
from logcorr.pipeline.enrich import Enricher  # noqa: E402
from logcorr.store import config, processes  # noqa: E402
from logcorr.store import output as output_module  # noqa: E402


class Stages:
    """Exclusive CPU seconds per stage name: a stage entered inside another is taken off its parent."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[list] = []  # [name, start, time of children]

    def enter(self, name: str) -> None:
        self._stack.append([name, time.process_time(), 0.0])

    def leave(self) -> None:
        name, start, children = self._stack.pop()
        spent = time.process_time() - start
        self.cpu[name] += spent - children
        self.calls[name] += 1
        if self._stack:
            self._stack[-1][2] += spent

    def call(self, name: str, fn):
        def timed(*args, **kw):
            self.enter(name)
            try:
                return fn(*args, **kw)
            finally:
                self.leave()

        return timed

    def each(self, name: str, gen_fn):
        """``gen_fn``'s generator with the work of each ``next()`` counted to ``name``."""

        def timed(*args, **kw):
            it = iter(gen_fn(*args, **kw))
            while True:
                self.enter(name)
                try:
                    item = next(it)
                except StopIteration:
                    return
                finally:
                    self.leave()
                yield item

        return timed


def swap(fn, timed) -> None:
    """Put ``timed`` in place of the function ``fn`` under every name a logcorr module holds it by (its
    own module's and each ``from … import`` of it), so the stage calling it finds the timed one."""
    for name, module in list(sys.modules.items()):
        if name == "logcorr" or name.startswith("logcorr."):
            for attr, value in list(vars(module).items()):
                if value is fn:
                    setattr(module, attr, timed)


def instrument(st: Stages) -> None:
    """Serial stages, each timed (see the module's docstring). Wraps the public stage functions of
    ``logcorr/pipeline/`` and ``logcorr/ingest.py`` (docs/design.md, "The flow of an ingest")."""
    threads.ahead = lambda items, depth=2, name="": iter(items)
    swap(read.read_chunks, st.each("read + parse (journal export / text)", read.read_chunks))
    rejoin.Rejoiner.feed = st.call("re-join multi-line records", rejoin.Rejoiner.feed)
    rejoin.Rejoiner.finish = st.call("re-join multi-line records", rejoin.Rejoiner.finish)
    enrich.split_prefix = st.call("split prefix (header, time, ranks)", enrich.split_prefix)
    sglang.classify = st.call("classify (kind, rid, room)", sglang.classify)
    enrich.record_roles = st.call("roles", enrich.record_roles)
    Enricher.__call__ = st.call("enrich (ids, ts, the rest)", Enricher.__call__)
    swap(stacks.dump_stacks, st.call("py-spy stacks", stacks.dump_stacks))
    for name, build in list(ingest_module.TABLE_BUILDERS.items()):
        ingest_module.TABLE_BUILDERS[name] = st.call(f"table {name}", build)
    output_module.Output.write = st.call("write Parquet parts", output_module.Output.write)
    swap(finish.finish, st.call("finish (sources, manifest, the rest)", finish.finish))
    database.write = st.call("finish: OUT/logcorr.duckdb (views over the tables)", database.write)
    output_module.Output.finish = st.call("finish: a table's parts listed", output_module.Output.finish)
    processes.from_events = st.call("finish: processes summary", processes.from_events)
    processes.batch_seconds = st.call("finish: batch_seconds summary", processes.batch_seconds)
    sglang.merge_rooms = st.call("rooms merged", sglang.merge_rooms)
    config.rows = st.call("finish: config rows", config.rows)
    config.observations = st.call("config observations", config.observations)
    swap(stacks.learn_processes, st.call("processes learned", stacks.learn_processes))


class Patterns:
    """Distinct regexes per (chunk, ingest thread): polars' ``str`` methods wrapped to note each pattern
    (not ``literal=True`` ones) under the stage ``Stages`` is in; a chunk is one call of the enricher."""

    METHODS = (
        "contains",
        "extract",
        "extract_groups",
        "extract_all",
        "replace",
        "replace_all",
        "count_matches",
        "find",
    )

    def __init__(self, st: Stages) -> None:
        import polars as pl

        self.chunk = 0
        self.seen: dict[int, dict[str, set]] = defaultdict(lambda: defaultdict(set))
        for cls in (pl.expr.string.ExprStringNameSpace, pl.series.string.StringNameSpace):
            for name in self.METHODS:
                setattr(cls, name, self._noted(getattr(cls, name), st))
        enrich_chunk = Enricher.__call__

        def counted(*a, **kw):
            self.chunk += 1
            return enrich_chunk(*a, **kw)

        Enricher.__call__ = counted

    def _noted(self, fn, st: Stages):
        def noted(ns, *a, **kw):
            pattern = a[0] if a else kw.get("pattern")
            if isinstance(pattern, str) and not kw.get("literal") and st._stack:
                self.seen[self.chunk][thread_of(st._stack[-1][0])].add(pattern)
            return fn(ns, *a, **kw)

        return noted

    def summary(self) -> dict[str, tuple[int, int]]:
        """Per thread: (median, max) distinct patterns per chunk, over the chunks that used any."""
        per: dict[str, list[int]] = defaultdict(list)
        for threads_of_chunk in self.seen.values():
            for thread, patterns in threads_of_chunk.items():
                per[thread].append(len(patterns))
        return {t: (sorted(v)[len(v) // 2], max(v)) for t, v in sorted(per.items())}


# Which of the ingest's threads runs each stage (``ingest.read_input``): reading, parsing and
# re-joining; classifying; building the tables; writing them (the main thread); then the tail,
# after the last chunk, which no stage overlaps.
THREADS = {
    "read + parse (journal export / text)": "read",
    "re-join multi-line records": "read",
    "split prefix (header, time, ranks)": "classify",
    "classify (kind, rid, room)": "classify",
    "roles": "classify",
    "enrich (ids, ts, the rest)": "classify",
    "write Parquet parts": "write",
}


def thread_of(stage: str) -> str:
    """The ingest thread that runs ``stage`` (``THREADS``; a table, py-spy stacks, config observations,
    processes learned and per-chunk room merges: the tables thread; a ``finish`` step: the tail;
    CPU no stage timed: counted in the tail, so the model errs slow)."""
    if stage in THREADS:
        return THREADS[stage]
    if stage.startswith("finish") or stage.startswith("("):
        return "tail"
    return "tables"


def core_model(by_thread: dict[str, float], journalctl: float, floor: float | None) -> list[tuple]:
    """Projected wall seconds of the pipelined ingest on C cores, from the CPU seconds of each of its
    threads measured serially (``by_thread``) and journalctl's: the pipeline takes at least its
    slowest thread and at least its total CPU spread over C cores; the tail's CPU is spread over C
    (DuckDB's copy is multi-threaded; the rest is small). Assumes the stages never wait on the
    GIL (their time is mostly in polars, pyarrow and DuckDB, which release it): a lower bound.
    Rows: (cores, pipeline s, tail s, total s, ratio to ``floor`` (journalctl alone, wall) or None)."""
    stages = [by_thread.get(t, 0.0) for t in ("read", "classify", "tables", "write")]
    rows = []
    for cores in (1, 2, 4, 8, 16, 64):
        pipeline = max(journalctl, *stages, (sum(stages) + journalctl) / cores)
        tail = by_thread.get("tail", 0.0) / cores
        total = pipeline + tail
        rows.append((cores, pipeline, tail, total, total / floor if floor else None))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reuse", type=Path, required=True, help="a folder bench/make_day.py wrote")
    ap.add_argument("--input", type=Path, help="what to ingest (default: REUSE/journal)")
    ap.add_argument(
        "--floor",
        type=float,
        help="journalctl -o export > /dev/null alone, wall s (bench_ingest's floor): prints ratios",
    )
    ap.add_argument("--patterns", action="store_true", help="count the regexes each thread uses per chunk")
    args = ap.parse_args()
    src = args.input or args.reuse / "journal"
    entries = (
        json.loads((args.reuse / "meta.json").read_text()).get("entries")
        if (args.reuse / "meta.json").exists()
        else None
    )
    st = Stages()
    instrument(st)
    patterns = Patterns(st) if args.patterns else None
    out = Path(tempfile.mkdtemp(prefix="logcorr-stages-")) / "out"
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = ingest_module.ingest([src], out)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = child.ru_utime + child.ru_stime
    shutil.rmtree(out.parent, ignore_errors=True)
    n = entries or result.lines
    accounted = sum(st.cpu.values())
    rows = sorted(st.cpu.items(), key=lambda kv: -kv[1])
    rows.append(("(not in a stage above)", cpu - accounted))
    print(f"{src}: {n:,} entries, {result.rows.get('events', 0):,} events; serial run {wall:.1f} s wall")
    print(f"{'stage':<48} {'CPU s':>7} {'share':>6} {'µs/entry':>9} {'calls':>6}")
    for name, s in rows:
        print(f"{name:<48} {s:7.2f} {s / cpu:6.1%} {s / n * 1e6:9.2f} {st.calls.get(name, ''):>6}")
    print(f"{'logcorr (this process)':<48} {cpu:7.2f} {1:6.0%} {cpu / n * 1e6:9.2f}")
    print(f"{'journalctl (child)':<48} {child_cpu:7.2f} {'':>6} {child_cpu / n * 1e6:9.2f}")
    if child_cpu:
        print(
            f"whole tree CPU / journalctl CPU: {(cpu + child_cpu) / child_cpu:.2f}× (target for wall: 1.25×)"
        )
    by_thread: dict[str, float] = defaultdict(float)
    for name, s in rows:
        by_thread[thread_of(name)] += s
    print("\nCPU s per ingest thread: " + ", ".join(f"{t} {s:.2f}" for t, s in by_thread.items()))
    print(
        f"journalctl {child_cpu:.2f}"
        + (f", journalctl alone (--floor) {args.floor:.2f} s wall" if args.floor else "")
    )
    if patterns:
        print(
            "distinct regexes per chunk (median, max; polars keeps 32 compiled per thread): "
            + ", ".join(f"{t} {m} ({x})" for t, (m, x) in patterns.summary().items())
        )
    print("model of the pipelined ingest on C cores (a lower bound; see core_model):")
    print(f"{'cores':>5} {'pipeline s':>10} {'tail s':>7} {'total s':>8} {'ratio':>6}")
    for cores, pipeline, tail, total, ratio in core_model(by_thread, child_cpu, args.floor):
        print(f"{cores:>5} {pipeline:10.1f} {tail:7.1f} {total:8.1f} {f'{ratio:.2f}×' if ratio else '':>6}")


if __name__ == "__main__":
    main()
