#!/usr/bin/env python3
"""Synthetic day of an SGLang prefill-decode deployment, as journal export, binary journal and json.

One generated stream of journal entries is written three ways:

- ``DIR/day.export``: journal export format (https://systemd.io/JOURNAL_EXPORT_FORMATS/), as
  ``journalctl -o export`` prints it: ``__CURSOR``, ``__REALTIME_TIMESTAMP``,
  ``__MONOTONIC_TIMESTAMP``, ``_BOOT_ID``, then the trusted and user fields of a systemd stdout
  stream (``_PID``, ``_COMM``, ``_CMDLINE``, ``_SYSTEMD_UNIT``, ``_TRANSPORT=stdout``, ``PRIORITY``,
  ``SYSLOG_IDENTIFIER``, ``MESSAGE`` …); a value holding a control character (ANSI colour) or
  invalid UTF-8 is written binary-safe (``NAME\\n<u64 le length><bytes>\\n``) as journalctl does;
- ``DIR/journal/<machine-id>/*.journal``: the same stream piped into
  ``/lib/systemd/systemd-journal-remote --split-mode=none --output=… -`` (Debian package
  ``systemd-journal-remote``; it may rotate into several files). The folder under ``journal/`` is
  named by a 32-hex machine id because ``journalctl --directory`` ignores other sub-folders;
- ``DIR/day.json``: ``journalctl -o json`` of that journal, a real json capture (non-UTF-8 and
  control-character values become arrays of byte ints there). One journalctl per journal file runs
  on each core and the outputs are joined in entry order, which gives the same bytes as
  ``journalctl --directory DIR/journal -o json`` (entry for entry, checked with ``--check-json``;
  journalctl's own field order within an entry changes from run to run) in half the time;
- ``DIR/meta.json``: entry count, seed, counts per kind of line, the incident's times and room,
  the time spent per step.

The deployment: one host, units ``sglang-prefill.service`` and ``sglang-decode.service`` (TP=8
each: a main process printing uvicorn access lines and tracebacks, and one scheduler process per
TP rank, ``_COMM=sglang::schedul``, ``_CMDLINE=sglang::scheduler_TPn``), ``sglang-router.service``
(sgl-router, Rust ``tracing`` lines in UTC), and systemd's own lines about the units. The day holds,
in time order and with SGLang's real line shapes (see /work/shared/cases/sglang): "Prefill batch" /
"Decode batch" lines of all 8 ranks of an engine (most of the volume), access lines including
/health, router request lines, now and then a traceback (one entry per line, same pid, as journald
splits a multi-line write) and an embedded py-spy dump (``Pyspy dump for PID N (py-spy dump
--native --pid N):`` then the dump's lines). In the middle of the day, the incident: a burst of
client aborts, "Prefill bootstrap failed"/"Decode transfer failed … Aborted by AbortReq." lines, on
prefill TP ranks 0, 1 and 3 (not 2) ``Unexpected transfer worker error for room R`` with a traceback
ending in ``assert room in self.transfer_infos``; decode batches stop on every rank at one instant
while prefill goes on and /health stays 200; py-spy dumps of every rank (prefill all in one
all_reduce; decode ranks 0-3 in a gloo broadcast under recv_requests, 4-7 in an all_reduce); a
restart of both engines (new pids) and healthy batches again. ``--no-incident`` leaves the incident
out: a healthy day (the tests check that no known bug family matches it).

By default each rank logs with its own ``_PID`` (one process per TP rank, as logcorr's design
assumes). ``--shared-pid`` gives every line of a unit the main process's pid instead, which is what
journald records when all ranks inherit the unit's stdout stream.

Speed: entries are formatted from per-process constant blocks and written in blocks of 10,000
entries; a writer thread sends each block to the export file and to journal-remote's pipe while the
main thread formats the next. Formatting costs about 12 s of CPU per million entries; the pace is
set by journal-remote (about 17-26 k entries/s on one core, ~23 fields per entry) and then by the
json capture (two journalctl processes). On a quiet 2-core machine: 400 k entries in 24 s + 18 s
for the json; 1 M in about 1.5-2 min; 5 M in about 9-10 min (38 min measured under a load average
of 10).

Usage::

    python bench/make_day.py --entries 1000000 --out /tmp/logcorr-day-1m [--seed 7]
    python bench/make_day.py --entries 20000 --out /tmp/small --no-journal   # export only
    python bench/make_day.py --entries 5000000 --out /tmp/day-rl --request-log   # + 2 % --log-requests lines
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import random
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
DAY_US = 86_400_000_000
BLOCK_ENTRIES = 10_000
TP = 8
HOST = "gpu-node-1"
MODEL = "/models/DeepSeek-V3"
# journalctl exports a value binary-safe when it holds a newline or another control character (tab
# is printable); see the export format's specification.
_BINARY_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _hex(rng: random.Random, n: int = 32) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


@dataclass
class Proc:
    """One process writing to the journal: its pid and the constant fields of each of its entries."""

    pid: int
    unit: str
    comm: str
    cmdline: str
    exe: str
    block: str = ""  # the fields between _BOOT_ID and MESSAGE, ready to write
    ident: str = ""


@dataclass
class Engine:
    """A prefill or decode engine: its unit, main process and one process per TP rank."""

    role: str
    unit: str
    port: int
    main: Proc
    ranks: list[Proc]
    forward_ct: int = 0


@dataclass
class Stats:
    """Counts per kind of generated line, and the incident's facts, for meta.json."""

    kinds: dict[str, int] = field(default_factory=dict)
    incident: dict = field(default_factory=dict)

    def add(self, kind: str, n: int = 1) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + n


class Host:
    """The host's processes: hands out pids (rising by steps drawn from the day's rng) and builds each
    process's constant journal fields (``Proc.block``)."""

    def __init__(
        self, rng: random.Random, machine_id: str, boot_id: str, shared_pid: bool, name: str = HOST
    ) -> None:
        self.rng = rng
        self.name = name  # journald's _HOSTNAME of every entry
        self.machine_id = machine_id
        self.boot_id = boot_id
        self.shared_pid = shared_pid
        self.next_pid = 2000 + rng.randrange(1000)
        self.invocations: dict[str, int] = {}

    def pid(self) -> int:
        """A new pid, above every pid handed out before."""
        self.next_pid += 1 + self.rng.randrange(40)
        return self.next_pid

    def proc(
        self, pid: int, unit: str, comm: str, cmdline: str, exe: str = "/usr/bin/python3.12", ident: str = ""
    ) -> Proc:
        """A process of ``unit`` with its fields between ``_BOOT_ID`` and ``MESSAGE`` formatted once."""
        p = Proc(pid, unit, comm, cmdline, exe, ident=ident or comm)
        stream = hashlib.md5(f"{unit}{pid}".encode()).hexdigest()
        invocation = hashlib.md5(f"inv{unit}{self.invocations.get(unit, 0)}".encode()).hexdigest()
        transport = "journal" if unit == "init.scope" else "stdout"
        p.block = (
            f"_BOOT_ID={self.boot_id}\n"
            "PRIORITY=6\n"
            "SYSLOG_FACILITY=3\n"
            "_UID=0\n"
            "_GID=0\n"
            "_CAP_EFFECTIVE=1ffffffffff\n"
            f"_MACHINE_ID={self.machine_id}\n"
            f"_HOSTNAME={self.name}\n"
            f"_TRANSPORT={transport}\n"
            + (f"_STREAM_ID={stream}\n" if transport == "stdout" else "")
            + f"SYSLOG_IDENTIFIER={p.ident}\n"
            f"_PID={pid}\n"
            f"_COMM={comm}\n"
            f"_EXE={exe}\n"
            f"_CMDLINE={cmdline}\n"
            f"_SYSTEMD_CGROUP=/system.slice/{unit}\n"
            f"_SYSTEMD_UNIT={unit}\n"
            "_SYSTEMD_SLICE=system.slice\n"
            + (f"_SYSTEMD_INVOCATION_ID={invocation}\n" if transport == "stdout" else "")
        )
        return p

    def engine(self, role: str, port: int) -> Engine:
        """A (re)started engine of ``role``: a new invocation id, a main process and one per TP rank
        (all the main process when ``shared_pid``)."""
        unit = f"sglang-{role}.service"
        self.invocations[unit] = self.invocations.get(unit, 0) + 1  # a (re)start: new invocation id
        main = self.proc(
            self.pid(),
            unit,
            "python3",
            f"/usr/bin/python3 -m sglang.launch_server --model-path {MODEL} --tp {TP} "
            f"--disaggregation-mode {role} --disaggregation-transfer-backend nixl --host 0.0.0.0 --port {port}",
        )
        ranks = []
        for r in range(TP):
            pid = main.pid if self.shared_pid else self.pid()
            title = f"sglang::scheduler_TP{r}"
            if self.shared_pid:
                ranks.append(main)
            else:
                ranks.append(self.proc(pid, unit, title[:15], title, ident="python3"))
        return Engine(role, unit, port, main, ranks)


class Day:
    """The state of one generated day: options, clock (``t``, µs UTC), rng, processes and engines,
    open requests; formats each entry as export bytes (``emit``, ``take``). The line makers below
    write its entries and ``generate`` runs the day in time order."""

    def __init__(
        self,
        entries: int,
        seed: int,
        start: datetime,
        shared_pid: bool,
        tz_hours: float,
        routine_dumps: int | None = None,
        request_log: float = 0.0,
        incident: bool = True,
        incident_kind: str = "wedge",
        host: str = HOST,
    ) -> None:
        self.n = entries
        self.with_incident = incident
        self.incident_kind = incident_kind  # "wedge" (the sample's story) or "crash_loop"
        self.routine_dumps = routine_dumps
        self.request_share = request_log  # share of entries that are --log-requests lines (0: none)
        # one draw of the loop writes one request line, or ~6.9 entries on average (8 per batch tick):
        # the odds that make request lines ``request_share`` of the entries
        self.request_odds = request_log * 6.9 / (1 - request_log + request_log * 6.9)
        self.open_requests: list[tuple[int, str, str, int]] = []  # (arrival µs, rid, obj repr, prompt tokens)
        self.decode_running = 0  # #running-req of decode's last batch line
        self.rng = random.Random(seed)
        self.start_us = int(start.timestamp() * 1_000_000)
        self.tz_us = int(tz_hours * 3_600_000_000)  # engines print local time, the router UTC
        self.shared_pid = shared_pid
        self.stats = Stats()
        rng = self.rng
        self.machine_id = hashlib.md5(f"machine-{seed}".encode()).hexdigest()
        self.boot_id = hashlib.md5(f"boot-{seed}".encode()).hexdigest()
        self.seqnum_id = _hex(rng)
        self.boot_us = self.start_us - 3 * DAY_US - rng.randrange(DAY_US)
        self.us_per_entry = DAY_US / max(entries, 1)
        self.written = 0
        self.t = self.start_us
        self.host = Host(rng, self.machine_id, self.boot_id, shared_pid, host)
        self.systemd = self.host.proc(
            1, "init.scope", "systemd", "/sbin/init", "/usr/lib/systemd/systemd", "systemd"
        )
        self.prefill = self.host.engine("prefill", 30000)
        self.decode = self.host.engine("decode", 30001)
        self.router = self.host.proc(
            self.host.pid(),
            "sglang-router.service",
            "python3",
            "/usr/bin/python3 -m sglang_router.launch_router --pd-disaggregation "
            "--prefill http://10.0.0.11:30000 --decode http://10.0.0.11:30001 --host 0.0.0.0 --port 8000",
        )
        self.decode_up = True
        self.dumps_at: int | None = None  # set by wedge_incident
        self.restart_at: int | None = None
        self.parts: list[str] = []
        self.blocks: list[bytes] = []
        self.seq = 1

    # -- writing entries -------------------------------------------------------------------------

    def emit(self, proc: Proc, message: str | bytes, t: int | None = None, unit_field: str = "") -> None:
        """Append one journal entry of ``proc`` at time ``t`` (µs) to the current block."""
        if self.written >= self.n:
            return
        rt = self.t if t is None else t
        mono = rt - self.boot_us
        seq = self.seq
        self.seq += 1
        cursor = (
            f"s={self.seqnum_id};i={seq:x};b={self.boot_id};m={mono:x};t={rt:x};"
            f"x={(seq * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF:x}"
        )
        block = proc.block + f"UNIT={unit_field}\n" if unit_field else proc.block
        head = f"__CURSOR={cursor}\n__REALTIME_TIMESTAMP={rt}\n__MONOTONIC_TIMESTAMP={mono}\n{block}"
        if isinstance(message, str) and not _needs_binary(message):
            self.parts.append(f"{head}MESSAGE={message}\n\n")
        else:
            raw = message.encode() if isinstance(message, str) else message
            self._flush_text()
            self.blocks.append(head.encode() + b"MESSAGE\n" + struct.pack("<Q", len(raw)) + raw + b"\n\n")
        self.written += 1
        if len(self.parts) >= BLOCK_ENTRIES:
            self._flush_text()

    def _flush_text(self) -> None:
        if self.parts:
            self.blocks.append("".join(self.parts).encode())
            self.parts.clear()

    def take(self) -> bytes:
        """The bytes formatted since the last call."""
        self._flush_text()
        data = b"".join(self.blocks)
        self.blocks.clear()
        return data

    # -- stamps and ids --------------------------------------------------------------------------

    def stamp(self, t: int, ms: bool = False) -> str:
        """SGLang's ``%Y-%m-%d %H:%M:%S`` in the engine's local time (from µs since the epoch)."""
        local = datetime.fromtimestamp((t + self.tz_us) / 1e6, UTC)
        s = local.strftime("%Y-%m-%d %H:%M:%S")
        return f"{s}.{local.microsecond // 1000:03d}" if ms else s

    def router_stamp(self, t: int) -> str:
        """The router's UTC ``%Y-%m-%d %H:%M:%S`` (from µs since the epoch)."""
        return datetime.fromtimestamp(t / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S")

    def rid(self) -> str:
        """A new request id: 32 hex digits."""
        return f"{self.rng.getrandbits(128):032x}"

    def room(self) -> int:
        """A new bootstrap room: a 63-bit int."""
        return self.rng.getrandbits(63)


# -- line shapes: each writes its entries at the day's time and counts them in day.stats -------

_WORDS = (
    "the of and to in a is that for it as was with be by on not this are or from at which have an they you "
    "were there been one all we their has would when if so no more out up into do any your what could other "
    "weather flight hotel invoice order refund city date price ticket booking"
).split()
_MARKUP = (  # DeepSeek tool-call markup returned as text (research notes F19), as sample_logs/ has it
    "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{{"city": "{city}"}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" '
    'string="true">{city}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
)


def batch_tick(day: Day, eng: Engine) -> None:
    """One batch line on every rank of ``eng``, printed within a few ms of each other."""
    rng = day.rng
    eng.forward_ct += 1
    t0 = day.t
    ts = day.stamp(t0)
    if eng.role == "prefill":
        seqs = rng.randint(1, 16)
        body = (
            f"Prefill batch, #new-seq: {seqs}, #new-token: {seqs * rng.randint(200, 4000)}, "
            f"#cached-token: {rng.randint(0, 20000)}, token usage: {rng.random() * 0.5:.2f}, "
            f"#running-req: 0, #queue-req: {rng.randint(0, 30)}, #prealloc-req: 0, "
            f"#inflight-req: {rng.randint(0, 40)}, cuda graph: False, "
            f"input throughput (token/s): {rng.uniform(1000, 60000):.2f}"
        )
    else:
        running = rng.randint(1, 256)
        day.decode_running = running
        body = (
            f"Decode batch, #running-req: {running}, #token: {running * rng.randint(500, 3000)}, "
            f"token usage: {rng.random():.2f}, pre-allocated usage: {rng.random() * 0.1:.2f}, "
            f"#prealloc-req: {rng.randint(0, 8)}, #transfer-req: {rng.randint(0, 8)}, "
            f"#retracted-req: 0, cuda graph: True, gen throughput (token/s): {rng.uniform(500, 9000):.2f}, "
            f"#queue-req: {rng.randint(0, 10)}"
        )
    for r, proc in enumerate(eng.ranks):
        day.emit(proc, f"[{ts} TP{r}] {body}", t0 + r * 150 + rng.randrange(100))
    day.stats.add(f"{eng.role}_batch", TP)


def access_line(day: Day, eng: Engine, path: str | None = None, status: int = 200) -> None:
    """A uvicorn access line of ``eng``'s main process (a random path when none is given)."""
    rng = day.rng
    if path is None:
        path = rng.choice(
            ("/generate", "/generate", "/generate", "/health", "/health", "/v1/chat/completions")
        )
    method = "GET" if path in ("/health", "/get_server_info", "/metrics") else "POST"
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}.get(status, "OK")
    day.emit(
        eng.main,
        f"[{day.stamp(day.t)}] INFO:     10.0.0.11:{rng.randint(30000, 60999)} - "
        f'"{method} {path} HTTP/1.1" {status} {reason}',
    )
    day.stats.add("health" if path == "/health" else "access")


def router_line(day: Day, status: int = 200) -> None:
    """A router ``tracing`` line (UTC) of a /generate request: started, or finished with ``status``."""
    rng = day.rng
    rq = "gnt-" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24)
    )
    span = f'http_request{{method=POST uri=/generate version=HTTP/1.1 request_id="{rq}"}}'
    ts = day.router_stamp(day.t)
    level = " INFO" if status < 500 else "ERROR"
    if rng.random() < 0.5:
        msg = f"{ts} {level} {span}: sglang_router_rs::middleware: src/middleware.rs:412: started processing request"
    else:
        lat = rng.uniform(0.05, 30)
        msg = (
            f"{ts} {level} {span}: sglang_router_rs::middleware: src/middleware.rs:447: "
            f"finished processing request status={status} latency={lat:.6f}s"
        )
    day.emit(day.router, msg)
    day.stats.add("router")


def misc_line(day: Day, eng: Engine) -> None:
    """One of: a rank's cache flush or KV usage warning, or the main process's ``Receive: obj=`` line."""
    rng = day.rng
    r = rng.randrange(TP)
    choices = (
        f"[{day.stamp(day.t)} TP{r}] Cache flushed successfully!",
        f"[{day.stamp(day.t)} TP{r}] KV cache usage is high: token usage: {rng.uniform(0.9, 0.99):.2f}",
        f"[{day.stamp(day.t)}] Receive: obj=GenerateReqInput(rid='{day.rid()}', text=None, "
        f"input_ids=[{', '.join(str(rng.randrange(128000)) for _ in range(rng.randint(20, 400)))}], "
        f"sampling_params={{'max_new_tokens': {rng.randint(16, 4096)}, 'temperature': 0.6}}, "
        f"bootstrap_host='10.0.0.11', bootstrap_port=8998, bootstrap_room={day.room()})",
    )
    msg = rng.choice(choices)
    proc = eng.main if msg.startswith(f"[{day.stamp(day.t)}] ") else eng.ranks[r]
    day.emit(proc, msg)
    day.stats.add("other")


def coloured_line(day: Day, eng: Engine) -> None:
    """A line with ANSI colour codes (written binary-safe, as journalctl exports it)."""
    day.emit(
        eng.main,
        f"[{day.stamp(day.t)}] \x1b[33mWARNING\x1b[0m: \x1b[1mtoken usage\x1b[0m above "
        f"{day.rng.randint(80, 95)}%",
    )
    day.stats.add("ansi")


def invalid_utf8_line(day: Day, eng: Engine) -> None:
    """A line with bytes that are not UTF-8 (a detokenizer cutting a multi-byte character)."""
    r = day.rng.randrange(TP)
    day.emit(
        eng.ranks[r],
        f"[{day.stamp(day.t)} TP{r}] Finish: output text='\u4f60\u597d".encode() + b"\xe4\xbd'",
    )
    day.stats.add("invalid_utf8")


def asgi_traceback(day: Day, eng: Engine) -> None:
    """An ASGI exception with its traceback, one entry per line of the main process."""
    t = day.t
    lines = [
        f"[{day.stamp(t)}] ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py", '
        "line 409, in run_asgi",
        "    result = await app(  # type: ignore[func-returns-value]",
        '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 512, in generate_request',
        "    ret = await _global_state.tokenizer_manager.generate_request(obj, request).__anext__()",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tokenizer_manager.py", line 1180, '
        "in _wait_one_response",
        '    raise ValueError(f"Request {obj.rid} is aborted")',
        f"ValueError: Request {day.rid()} is aborted",
    ]
    for i, line in enumerate(lines):
        day.emit(eng.main, line, t + i * 20)
    day.stats.add("traceback")
    day.stats.add("traceback_lines", len(lines))


def main_thread_frames(role: str, where: str) -> list[str]:
    """The MainThread frames of a ``role`` scheduler waiting ``where``: in an NCCL ``all_reduce``, a
    gloo ``broadcast`` under recv_requests, or (anything else) idle in the event loop."""
    loop = f"event_loop_overlap_disagg_{role}"
    native_wait = [
        "    0x7f3a9c316d71 (libc.so.6)",
        "    0x7f3a9c322fb8 (libc.so.6)",
    ]
    if where == "all_reduce":
        frames = [
            *native_wait,
            "    cudaStreamSynchronize (libcudart.so.12)",
            "    c10d::ProcessGroupNCCL::WorkNCCL::synchronize (libtorch_cuda.so)",
            "    all_reduce (torch/distributed/distributed_c10d.py:2806)",
            "    wrapper (torch/distributed/c10d_logger.py:81)",
            "    _all_reduce_in_place (sglang/srt/distributed/parallel_state.py:526)",
            "    all_reduce (sglang/srt/distributed/parallel_state.py:513)",
            "    tensor_model_parallel_all_reduce (sglang/srt/distributed/communication_op.py:13)",
            "    forward (sglang/srt/layers/linear.py:1297)",
            "    forward_batch_generation (sglang/srt/managers/tp_worker.py:231)",
            "    run_batch (sglang/srt/managers/scheduler.py:1820)",
        ]
    elif where == "broadcast":
        frames = [
            *native_wait,
            "    gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)",
            "    gloo::broadcast (libtorch_cpu.so)",
            "    broadcast (torch/distributed/distributed_c10d.py:2714)",
            "    wrapper (torch/distributed/c10d_logger.py:81)",
            "    broadcast_pyobj (sglang/srt/utils/common.py:1189)",
            "    recv_requests (sglang/srt/managers/scheduler.py:1120)",
        ]
    else:  # idle in the event loop
        frames = [
            *native_wait,
            "    recv_pyobj (zmq/sugar/socket.py:1051)",
            "    recv_requests (sglang/srt/managers/scheduler.py:1098)",
        ]
    frames += [
        f"    {loop} (sglang/srt/disaggregation/{role}.py:{'353' if role == 'prefill' else '812'})",
        "    decorate_context (torch/utils/_contextlib.py:120)",
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:2618)",
        "    run (multiprocessing/process.py:108)",
        "    _bootstrap (multiprocessing/process.py:314)",
        "    _main (multiprocessing/spawn.py:135)",
        "    spawn_main (multiprocessing/spawn.py:122)",
        "    <module> (<string>:1)",
    ]
    return frames


def pyspy_dump(day: Day, eng: Engine, rank: int, where: str, t: int) -> int:
    """An embedded py-spy dump of one rank printed by the engine's main process; returns the
    time after its last line."""
    proc = eng.ranks[rank]
    pid = proc.pid if not day.shared_pid else 5000 + rank
    frames = main_thread_frames(eng.role, where)
    lines = [
        f"[{day.stamp(t)}] Pyspy dump for PID {pid} (py-spy dump --native --pid {pid}):",
        f"Process {pid}: sglang::scheduler_TP{rank}",
        "Python v3.12.3 (/usr/bin/python3.12)",
        "",
        f'Thread {pid} ({"active" if where == "all_reduce" else "idle"}): "MainThread"',
        *frames,
        f'Thread {pid + 61} (idle): "Thread-3 (transfer_worker)"',
        "    0x7f3a9c316d71 (libc.so.6)",
        "    wait (threading.py:359)",
        "    get (queue.py:171)",
        f"    transfer_worker (sglang/srt/disaggregation/nixl/conn.py:{'701' if eng.role == 'prefill' else '655'})",
        "    run (threading.py:1012)",
        "    _bootstrap_inner (threading.py:1075)",
        "    _bootstrap (threading.py:1032)",
        "",
    ]
    for i, line in enumerate(lines):
        day.emit(eng.main, line, t + i * 10)
    day.stats.add("pyspy_dump")
    day.stats.add("pyspy_lines", len(lines))
    return t + len(lines) * 10


def request_line(day: Day) -> None:
    """One ``--log-requests --log-requests-level 2`` line of the decode engine's HTTP server (text
    format, SGLang late 2025, the shape of sample_logs/): a ``Receive: obj=GenerateReqInput(…)`` of
    a new request, or the ``Finish: obj=…, out={'text': …, 'output_ids': […], 'meta_info': {…}}``
    of the oldest open one, about as many of each. While decode is wedged only ``Receive`` lines
    come (those requests never finish: the restart drops them). An answer given while decode's
    last batch line ran 17 or more requests carries DeepSeek tool-call markup as text 5 % of the
    time; with fewer running, never."""
    rng = day.rng
    eng = day.decode
    ts = day.stamp(day.t)
    pending = day.open_requests
    if not day.decode_up or not pending or (len(pending) < 256 and rng.random() < 0.5):
        rid, room = day.rid(), day.room()
        prompt = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(30, 90)))
        tokens = len(prompt) // 4
        obj = (
            f"GenerateReqInput(text={prompt!r}, input_ids=None, sampling_params={{'temperature': 0.6, "
            f"'max_new_tokens': {rng.choice((512, 1024, 2048))}}}, rid='{rid}', stream=False, "
            f"bootstrap_host='10.0.0.11', bootstrap_port=8998, bootstrap_room={room})"
        )
        pending.append((day.t, rid, obj, tokens))
        day.emit(eng.main, f"[{ts}] Receive: obj={obj}")
        day.stats.add("request_receive")
        return
    arrived, rid, obj, tokens = pending.pop(0)
    leak = day.decode_running >= 17 and rng.random() < 0.05
    if leak:
        text = rng.choice(_MARKUP).format(city=rng.choice(("Paris", "Osaka", "Lima")))
        day.stats.add("request_markup")
    else:
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(15, 60)))
    ids = ", ".join(str(rng.randrange(128000)) for _ in range(rng.randint(10, 40)))
    out = (
        f"{{'text': {text!r}, 'output_ids': [{ids}], 'meta_info': {{'id': '{rid}', "
        f"'finish_reason': {{'type': 'stop', 'matched': 1}}, 'prompt_tokens': {tokens}, "
        f"'completion_tokens': {len(text) // 4}, 'cached_tokens': 0, "
        f"'e2e_latency': {(day.t - arrived) / 1e6:.6f}}}}}"
    )
    day.emit(eng.main, f"[{ts}] Finish: obj={obj}, out={out}")
    day.stats.add("request_finish")


def systemd_line(day: Day, unit: str, text: str, t: int) -> None:
    """systemd's own line about ``unit`` (``UNIT=`` field) at ``t`` (µs)."""
    day.emit(day.systemd, text, t, unit_field=unit)
    day.stats.add("systemd")


def batch_at(day: Day, eng: Engine, t: int) -> None:
    """``batch_tick`` at ``t`` (µs), leaving the day's clock where it was."""
    saved, day.t = day.t, t
    batch_tick(day, eng)
    day.t = saved


def prefill_ticks(day: Day, t0: int, t1: int, every: int = 5_000_000) -> None:
    """Prefill's batch lines from ``t0`` to ``t1`` (µs), one tick per ``every``: it goes on while
    decode restarts."""
    for t in range(t0, t1, every):
        batch_at(day, day.prefill, t)


# -- the incident: its parts, each run by generate() when its time has come ---------------------


def abort_burst(day: Day, t: int) -> list[tuple[str, int]]:
    """Clients cancel 120 requests from ``t`` (µs) on, one every 15 ms: decode's abort line for each,
    and for every third the transfer-failed lines of all ranks of both engines. Returns the aborted
    (rid, room) pairs in order."""
    rooms = []
    for i in range(120):
        tt = t + i * 15_000
        rid, room = day.rid(), day.room()
        rooms.append((rid, room))
        day.emit(
            day.decode.main,
            f"[{day.stamp(tt)}] [http_server] Error: Request is disconnected from the client side "
            f"(type 3). Abort request obj.rid='{rid}'",
            tt,
        )
        day.stats.add("abort")
        if i % 3 == 0:
            for r in range(TP):
                day.emit(
                    day.decode.ranks[r],
                    f"[{day.stamp(tt)} TP{r}] Decode transfer failed for request rank={r} "
                    f"decode_req.req.rid='{rid}' decode_req.req.bootstrap_room={room} with exception "
                    f"KVTransferError(bootstrap_room={room}): Aborted by AbortReq.",
                    tt + 2000 + r * 100,
                )
            for r in range(TP):
                day.emit(
                    day.prefill.ranks[r],
                    f"[{day.stamp(tt)} TP{r}] Prefill bootstrap failed for request rank={r} "
                    f"req.rid='{rid}' req.bootstrap_room={room} with exception "
                    f"KVTransferError(bootstrap_room={room}): Aborted by AbortReq.",
                    tt + 3000 + r * 100,
                )
            day.stats.add("transfer_failed", 2 * TP)
    return rooms


def transfer_worker_errors(day: Day, t: int, room: int) -> None:
    """``Unexpected transfer worker error for room ROOM`` and its traceback ending in ``assert room in
    self.transfer_infos`` on prefill ranks 0, 1 and 3, 0.7 ms apart from ``t`` (µs)."""
    for k, r in enumerate((0, 1, 3)):
        tt = t + k * 700
        lines = [
            f"[{day.stamp(tt)} TP{r}] Unexpected transfer worker error for room {room}",
            "Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 706, '
            "in transfer_worker",
            "    self.send_kvcache(",
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 588, '
            "in send_kvcache",
            "    req = self.transfer_infos[room]  # noqa",
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 561, '
            "in add_transfer_request",
            "    assert room in self.transfer_infos",
            "AssertionError",
        ]
        for i, line in enumerate(lines):
            day.emit(day.prefill.ranks[r], line, tt + i * 5)
        day.stats.add("transfer_worker_error")


def wedge_incident(day: Day) -> None:
    """Abort burst, transfer_infos assertion on prefill ranks 0, 1, 3, decode's last batch; sets the
    times of the dumps and the restart (``day.dumps_at``, ``day.restart_at``). Advances ``day.t`` past
    the burst; the wedge then lasts while ordinary lines go on."""
    t = day.t
    inc = day.stats.incident
    inc["abort_burst_start"] = _iso(t)
    rooms = abort_burst(day, t)
    t += 120 * 15_000
    bad_rid, bad_room = rooms[117]  # the last aborted room with transfer-failed lines
    inc["room"] = bad_room
    inc["rid"] = bad_rid
    inc["assert_ranks"] = [0, 1, 3]
    inc["assert_time"] = _iso(t + 50_000)
    transfer_worker_errors(day, t + 50_000, bad_room)
    stop = t + 900_000
    inc["decode_last_batch"] = _iso(stop)
    batch_at(day, day.decode, stop)
    day.decode_up = False
    day.t = stop + 10_000
    day.dumps_at = stop + 10 * 60_000_000
    day.restart_at = stop + 25 * 60_000_000
    inc["dumps_at"] = _iso(day.dumps_at)
    inc["restart_at"] = _iso(day.restart_at)


def crash_loop(day: Day, crashes: int = 4) -> None:
    """Decode's TP1 scheduler raises (a RuntimeError in its event loop), the unit's main process
    exits with status 1 and systemd restarts it, ``crashes`` times, each new process crashing about a
    minute after it is ready; then the last one stays up. No wedge: prefill goes on throughout."""
    t = day.t
    inc = day.stats.incident
    inc["kind"] = "crash_loop"
    inc["crashes"] = crashes
    inc["first_crash"] = _iso(t)
    for n in range(1, crashes + 1):
        eng = day.decode
        rank = eng.ranks[1]
        lines = [
            f"[{day.stamp(t)} TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2612, in run_scheduler_process',
            "    scheduler.event_loop_overlap_disagg_decode()",
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py", line 1773, in process_decode_queue',
            "    self.resume_retracted_reqs()",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
        for i, line in enumerate(lines):
            day.emit(rank, line, t + i * 5)
        day.stats.add("traceback")
        u = eng.unit
        systemd_line(day, u, f"{u}: Main process exited, code=exited, status=1/FAILURE", t + 2_000_000)
        systemd_line(day, u, f"{u}: Failed with result 'exit-code'.", t + 2_000_100)
        systemd_line(day, u, f"{u}: Scheduled restart job, restart counter is at {n}.", t + 7_000_000)
        systemd_line(day, u, f"Stopped {u} - SGLang decode server.", t + 7_000_100)
        systemd_line(day, u, f"Started {u} - SGLang decode server.", t + 7_000_200)
        day.decode = day.host.engine("decode", 30001)
        day.open_requests.clear()
        prefill_ticks(day, t, t + 60_000_000)
        t += 60_000_000
        day.emit(day.decode.main, f"[{day.stamp(t)}] The server is fired up and ready to roll!", t)
        day.stats.add("other")
        prefill_ticks(day, t, t + 60_000_000)
        t += 60_000_000
    inc["last_restart"] = _iso(t - 60_000_000)
    day.t = t


def dumps_of_every_rank(day: Day) -> None:
    """py-spy dumps of all 16 ranks one after the other from ``day.t`` (prefill all in one all_reduce;
    decode ranks 0-3 in a gloo broadcast, 4-7 in an all_reduce); moves ``day.t`` past the last."""
    t = day.t
    for r in range(TP):
        t = pyspy_dump(day, day.prefill, r, "all_reduce", t)
    for r in range(TP):
        t = pyspy_dump(day, day.decode, r, "broadcast" if r < 4 else "all_reduce", t)
    day.t = t


def restart_engines(day: Day) -> None:
    """systemd stops and starts decode then prefill; the new engines (new pids) are ready 90 s apart,
    decode's open requests dropped. Decode is up again and ``day.t`` at the last ready line."""
    t = day.t
    for eng in (day.decode, day.prefill):
        systemd_line(day, eng.unit, f"Stopping {eng.unit} - SGLang {eng.role} server...", t)
        systemd_line(day, eng.unit, f"{eng.unit}: Deactivated successfully.", t + 2_000_000)
        systemd_line(day, eng.unit, f"Stopped {eng.unit} - SGLang {eng.role} server.", t + 2_000_100)
        systemd_line(day, eng.unit, f"Started {eng.unit} - SGLang {eng.role} server.", t + 2_500_000)
        t += 3_000_000
    for name in ("decode", "prefill"):
        fresh = day.host.engine(name, 30001 if name == "decode" else 30000)
        setattr(day, name, fresh)
        if name == "decode":
            day.open_requests.clear()  # the old process's requests end with it, unanswered
        t += 90_000_000
        day.emit(fresh.main, f"[{day.stamp(t)}] The server is fired up and ready to roll!", t)
        day.stats.add("other")
    day.decode_up = True
    day.t = t
    day.stats.incident["ready_again"] = _iso(t)


# -- the day ------------------------------------------------------------------------------------


def ordinary_line(day: Day) -> None:
    """One ordinary draw of the day: mostly batch lines (prefill's only while decode is wedged), then
    access, router, misc lines and, rarely, an ANSI-coloured line, a non-UTF-8 line or a traceback."""
    rng = day.rng
    x = rng.random()
    if x < 0.42:
        batch_tick(day, day.prefill)
    elif x < 0.84:
        if day.decode_up:
            batch_tick(day, day.decode)
        else:
            batch_tick(day, day.prefill)
    elif x < 0.90:
        access_line(day, rng.choice((day.prefill, day.decode)))
    elif x < 0.975:
        router_line(day, 200 if day.decode_up or rng.random() < 0.3 else 504)
    elif x < 0.9985:
        misc_line(day, rng.choice((day.prefill, day.decode)))
    elif x < 0.9991:
        coloured_line(day, rng.choice((day.prefill, day.decode)))
    elif x < 0.9993:
        invalid_utf8_line(day, day.prefill)
    else:
        asgi_traceback(day, rng.choice((day.prefill, day.decode)))


def generate(day: Day, sink) -> None:
    """Generate the whole day, calling ``sink(bytes)`` with each formatted block."""
    rng = day.rng
    middle = day.start_us + DAY_US // 2
    # a few ordinary embedded dumps per day (one per 400 k entries unless told)
    dump_every = day.routine_dumps if day.routine_dumps is not None else max(day.n // 400_000, 1)
    dump_times = sorted(day.start_us + rng.randrange(DAY_US) for _ in range(dump_every))
    state = "before"
    for eng in (day.prefill, day.decode):
        day.emit(eng.main, f"[{day.stamp(day.t)}] The server is fired up and ready to roll!")
    while day.written < day.n:
        before = day.written
        if day.with_incident and state == "before" and day.t >= middle and day.incident_kind == "crash_loop":
            crash_loop(day)
            state = "after"
            before = day.written  # the loop set its own times: no extra step for its entries
        elif day.with_incident and state == "before" and day.t >= middle:
            wedge_incident(day)
            state = "wedged"
        elif state == "wedged" and day.t >= day.dumps_at:
            dumps_of_every_rank(day)
            state = "dumped"
        elif state == "dumped" and day.t >= day.restart_at:
            restart_engines(day)
            state = "after"
        elif dump_times and day.t >= dump_times[0]:
            dump_times.pop(0)
            eng = rng.choice((day.prefill, day.decode) if day.decode_up else (day.prefill,))
            pyspy_dump(day, eng, rng.randrange(TP), "idle", day.t)
        elif day.request_share and rng.random() < day.request_odds:
            request_line(day)
        else:
            ordinary_line(day)
        # Time moves on in proportion to the entries written, so N entries span one day.
        step = (day.written - before) * day.us_per_entry
        day.t += max(int(rng.uniform(0.5, 1.5) * step), 1)
        if day.blocks and not day.parts:
            sink(day.take())
    sink(day.take())


def _needs_binary(text: str) -> bool:
    return _BINARY_CHARS.search(text) is not None


def _iso(t_us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=t_us)).isoformat()


class Writer:
    """Sends blocks to the export file and to journal-remote's stdin on a background thread."""

    def __init__(self, export_path: Path, remote: subprocess.Popen | None) -> None:
        self.q: queue.Queue = queue.Queue(maxsize=4)
        self.export = open(export_path, "wb")  # noqa: SIM115 - closed in close()
        self.remote = remote
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (data := self.q.get()) is not None:
            try:
                self.export.write(data)
                if self.remote is not None:
                    self.remote.stdin.write(data)
            except BaseException as e:  # reported by close()
                self.error = e
                return

    def __call__(self, data: bytes) -> None:
        if self.error:
            raise RuntimeError(f"writing failed: {self.error}")
        if data:
            self.q.put(data)

    def close(self) -> None:
        self.q.put(None)
        self.thread.join()
        self.export.close()
        if self.remote is not None:
            self.remote.stdin.close()
        if self.error:
            raise RuntimeError(f"writing failed: {self.error}")


def journal_files_in_order(folder: Path) -> list[Path]:
    """journal-remote's files in entry order: archived ``remote@<seqnum id>-<first seqnum>-<first
    time>.journal`` by first seqnum, then the active ``remote.journal``."""
    archived = sorted(folder.glob("remote@*.journal"), key=lambda p: int(p.stem.split("-")[-2], 16))
    active = [p for p in folder.glob("*.journal") if "@" not in p.name]
    return archived + active


def json_capture_of(folder: Path, target: Path, workers: int | None = None) -> None:
    """``journalctl -o json`` of the journal in ``folder`` into ``target``, one journalctl per file
    on all cores, the outputs joined in entry order.

    The files come from one journal-remote run (one seqnum id, files consecutive in seqnum), so
    journalctl merging them by seqnum (``--directory``) prints exactly the concatenation of the
    per-file outputs. Raises ``RuntimeError`` when a journalctl fails.
    """
    files = journal_files_in_order(folder)
    parts = [target.with_name(f".{target.name}.part{i}") for i in range(len(files))]
    workers = workers or os.cpu_count() or 1
    procs: list[tuple[subprocess.Popen, object]] = []
    try:
        for src, part in zip(files, parts, strict=True):
            while sum(p.poll() is None for p, _ in procs) >= workers:
                time.sleep(0.05)
            f = open(part, "wb")  # noqa: SIM115 - closed below
            procs.append(
                (
                    subprocess.Popen(
                        ["journalctl", "--file", str(src), "-o", "json", "-a"],
                        stdout=f,
                        stderr=subprocess.PIPE,
                    ),
                    f,
                )
            )
        for p, f in procs:
            err = p.stderr.read().decode(errors="replace")
            p.wait()
            f.close()
            if p.returncode != 0:
                raise RuntimeError(f"journalctl -o json failed ({p.returncode}): {err.strip()}")
        with open(target, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 16 << 20)
                part.unlink()
    finally:
        for p, f in procs:
            if p.poll() is None:
                p.kill()
            f.close()
        for part in parts:
            part.unlink(missing_ok=True)


def check_json_capture(jdir: Path, target: Path) -> None:
    """Compare ``target`` entry by entry with one ``journalctl --directory JDIR -o json`` run; raise
    ``RuntimeError`` at the first difference. Entries are compared as parsed objects: journalctl
    prints the fields of an entry in hash-table order, which changes from one run to the next."""
    proc = subprocess.Popen(
        ["journalctl", "--directory", str(jdir), "-o", "json", "-a"], stdout=subprocess.PIPE
    )
    n = 0
    try:
        with open(target, "rb") as mine:
            for n, (want, got) in enumerate(zip(proc.stdout, mine, strict=True), 1):
                if json.loads(want) != json.loads(got):
                    raise RuntimeError(
                        f"{target}: line {n} differs from journalctl --directory {jdir} -o json"
                    )
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{target}: line {n + 1} is not JSON ({e})") from e
    except ValueError as e:  # zip(strict=True): one side has more lines
        raise RuntimeError(f"{target}: not the same number of entries as journalctl ({e})") from e
    finally:
        proc.kill()
        proc.wait()


def make_day(
    entries: int,
    out: Path,
    *,
    seed: int = 7,
    start: datetime | None = None,
    journal: bool = True,
    json_capture: bool = True,
    shared_pid: bool = False,
    tz_hours: float = 0.0,
    check_json: bool = False,
    routine_dumps: int | None = None,
    request_log: float = 0.0,
    incident: bool = True,
    incident_kind: str = "wedge",
    host: str = HOST,
    log=print,
) -> dict:
    """Write the synthetic day into ``out`` and return the contents of ``out/meta.json``.

    Args:
        entries: number of journal entries (exact).
        out: output folder (created; ``day.export``, ``journal/``, ``day.json`` inside are replaced).
        seed: random seed; the same seed and size give the same export bytes.
        start: first instant of the day (UTC); default 2025-11-05 00:00:00 UTC.
        journal: also pipe the stream into systemd-journal-remote to make ``out/journal``.
        json_capture: also write ``out/day.json`` with ``journalctl -o json`` (needs ``journal``).
        shared_pid: every line of a unit gets the main pid (journald's view of an inherited stdout).
        tz_hours: offset of the engines' local time (in their line headers) from UTC.
        check_json: compare ``day.json`` with one ``journalctl --directory`` run (slow).
        routine_dumps: ordinary py-spy dumps of one idle rank at random times of the day (default:
            one per 400,000 entries, at least one); some fall after the restart, by new pids.
        request_log: share of the entries (0-1) that are ``--log-requests`` Receive/Finish lines of
            the decode engine (``request_line``); 0 (the default) writes none and leaves the day
            byte for byte as without the option, so ingest figures stay comparable.
        incident: False leaves the incident out (no abort burst, assertion, wedge, dumps of every
            rank, restart): a healthy day, on which no known bug family may match.
        incident_kind: "wedge" (default: the abort burst, assertion and wedge above) or "crash_loop"
            (decode's TP1 raises and systemd restarts the unit four times: ``crash_loop``).
        host: journald's ``_HOSTNAME`` of every entry (default ``gpu-node-1``): the origin partition
            ``logcorr ingest`` writes the day under; give each host of a fleet its own (and its own seed).
        log: called with one progress line per step.

    Raises:
        FileNotFoundError: journal-remote or journalctl is missing and ``journal`` is true.
        RuntimeError: journal-remote or journalctl failed.
    """
    start = start or datetime(2025, 11, 5, tzinfo=UTC)
    out.mkdir(parents=True, exist_ok=True)
    if journal and not Path(JOURNAL_REMOTE).exists():
        raise FileNotFoundError(
            f"{JOURNAL_REMOTE} not found: apt-get install systemd-journal-remote (or pass --no-journal)"
        )
    day = Day(
        entries, seed, start, shared_pid, tz_hours, routine_dumps, request_log, incident, incident_kind, host
    )
    timings = {}
    began = time.monotonic()
    remote = None
    jdir = out / "journal"
    if journal:
        shutil.rmtree(jdir, ignore_errors=True)
        (jdir / day.machine_id).mkdir(parents=True)
        remote = subprocess.Popen(
            [
                JOURNAL_REMOTE,
                "--split-mode=none",
                "--compress=yes",
                f"--output={jdir / day.machine_id / 'remote.journal'}",
                "-",
            ],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    writer = Writer(out / "day.export", remote)
    try:
        generate(day, writer)
    finally:
        writer.close()
    timings["generate_s"] = round(time.monotonic() - began, 2)
    log(f"generated {day.written:,} entries into {out / 'day.export'} in {timings['generate_s']} s")
    if remote is not None:
        err = remote.stderr.read().decode(errors="replace")
        remote.wait()
        if remote.returncode != 0:
            raise RuntimeError(f"systemd-journal-remote failed ({remote.returncode}): {err.strip()}")
        timings["journal_remote_done_s"] = round(time.monotonic() - began, 2)
        files = sorted(p.name for p in (jdir / day.machine_id).iterdir())
        log(f"journal-remote wrote {', '.join(files)} by {timings['journal_remote_done_s']} s")
    if journal and json_capture:
        t = time.monotonic()
        json_capture_of(jdir / day.machine_id, out / "day.json")
        timings["json_s"] = round(time.monotonic() - t, 2)
        log(f"journalctl -o json wrote {out / 'day.json'} in {timings['json_s']} s")
        if check_json:
            check_json_capture(jdir, out / "day.json")
            log("day.json is identical to journalctl --directory … -o json")
    meta = {
        "entries": day.written,
        "seed": seed,
        "start": start.isoformat(),
        "host": host,
        "machine_id": day.machine_id,
        "boot_id": day.boot_id,
        "shared_pid": shared_pid,
        "request_log": request_log,
        "with_incident": incident,
        "kinds": dict(sorted(day.stats.kinds.items())),
        "incident": day.stats.incident,
        "files": {p.name: p.stat().st_size for p in sorted(out.glob("day.*"))},
        "timings": timings,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, required=True, help="number of journal entries")
    ap.add_argument("--out", type=Path, required=True, help="output folder (keep it out of git, e.g. /tmp/…)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--host", default=HOST, help="journald's _HOSTNAME of every entry (the origin logcorr writes)"
    )
    ap.add_argument("--start", default="2025-11-05T00:00:00+00:00", help="first instant of the day (ISO)")
    ap.add_argument("--no-journal", action="store_true", help="write day.export only")
    ap.add_argument("--no-json", action="store_true", help="skip journalctl -o json")
    ap.add_argument("--shared-pid", action="store_true", help="all lines of a unit carry the main pid")
    ap.add_argument("--check-json", action="store_true", help="verify day.json against one journalctl run")
    ap.add_argument("--tz-hours", type=float, default=0.0, help="engines' local time offset from UTC")
    ap.add_argument(
        "--routine-dumps",
        type=int,
        default=None,
        help="ordinary py-spy dumps in the day (default: 1 per 400k entries)",
    )
    ap.add_argument(
        "--request-log",
        type=float,
        nargs="?",
        const=0.02,
        default=0.0,
        metavar="SHARE",
        help="add decode's --log-requests Receive/Finish lines as SHARE of the entries (0.02 when no "
        "SHARE is given; default: none, the day as before)",
    )
    ap.add_argument(
        "--no-incident",
        action="store_true",
        help="a healthy day: leave the incident out (default: in the middle)",
    )
    ap.add_argument(
        "--crash-loop",
        action="store_true",
        help="instead of the wedge, decode's scheduler crashes and systemd restarts it four times",
    )
    args = ap.parse_args(argv)
    if args.entries < 1:
        ap.error("--entries must be at least 1")
    if not 0.0 <= args.request_log < 1.0:
        ap.error("--request-log SHARE must be in [0, 1)")
    start = datetime.fromisoformat(args.start)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    meta = make_day(
        args.entries,
        args.out,
        seed=args.seed,
        start=start,
        journal=not args.no_journal,
        json_capture=not args.no_json,
        shared_pid=args.shared_pid,
        tz_hours=args.tz_hours,
        check_json=args.check_json,
        routine_dumps=args.routine_dumps,
        request_log=args.request_log,
        incident=not args.no_incident,
        incident_kind="crash_loop" if args.crash_loop else "wedge",
        host=args.host,
        log=lambda s: print(s, file=sys.stderr),
    )
    print(json.dumps({k: meta[k] for k in ("entries", "files", "timings", "incident")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
