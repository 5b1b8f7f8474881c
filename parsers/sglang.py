"""SGLang engine lines → typed rows: what each record means (``classify``) and the tables built from
it (``batches``, ``aborts``, ``transfer_errors``, ``rooms``, plus ``watchdogs`` and ``tracebacks``).

Line formats are data (lnav style): each family below is a table of named patterns, each with the
SGLang version (or date) that introduced the line and a sample record that
``tests/test_sglang_parsers.py`` parses. Versions marked ``≈`` are dated from bug reports rather
than from a release note.

How a record is recognised, vectorised over the whole column (PERF_NOTES.md):

1. One Aho-Corasick pass (``str.extract_many``) finds the *anchors* (literal strings, one per
   pattern, none a substring of another) in each record body, left to right.
2. Each (record, anchor) pair is confirmed by its pattern's regex, run only on the records that hold
   that anchor; the leftmost confirmed anchor wins (ties go to the earlier pattern in the tables).
   So ``Decode transfer failed … Aborted by AbortReq.`` is a ``transfer_error`` (also listed by
   ``aborts``), and a ``Receive: obj=…`` line quoting a traceback is a ``request_received``.
3. Router lines (Rust ``tracing`` header or JSON with a ``"target"``) and HTTP access lines are
   recognised by ``logcorr.parsers.router``.
4. What nothing recognises is ``other``; nothing raises on any text.

Batch lines (``Prefill batch`` / ``Decode batch``) are split into ``key: value`` pairs without a
per-line Python loop: lines are grouped by their sequence of keys (their *shape*: one SGLang
version and mode prints one shape), one anchored regex is built per shape from its first line and
applied to every line left, and only lines of a rare shape (beyond ``MAX_BATCH_SHAPES``) go through
a Python tokenizer. Known keys become typed columns (``BATCH_FIELDS``), every other key lands in
``extra`` (JSON text), so no field is ever lost.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

import polars as pl

from logcorr.parsers import router, systemd
from logcorr.schema import (
    ABORTS,
    BATCH_FIELD_COLUMNS,
    BATCHES,
    EVENTS,
    RANK_COLUMNS,
    REQUEST_LOG,
    ROOMS,
    TRACEBACKS,
    TRANSFER_ERRORS,
    WATCHDOGS,
    conform,
)

# Columns every table copies from ``ev`` (DESIGN.md: provenance on every row).
BASE = {name: EVENTS.schema[name] for name in ("event_id", "ts", "host", "role", "pid", *RANK_COLUMNS)}


@dataclass(frozen=True)
class LinePattern:
    """One named line format.

    ``anchor`` is a literal every matching record contains; ``regex`` (Rust regex syntax, named
    groups) confirms the match, searched anywhere in the record unless it starts with ``^``.
    ``subkind`` is the ``error_kind``/``abort_kind``/watchdog kind; ``role`` the engine role the line
    implies (issue item 8), or None.
    """

    name: str
    kind: str
    anchor: str
    regex: str
    since: str
    sample: str
    role: str | None = None
    subkind: str | None = None


P = LinePattern

TRANSFER_ERROR_PATTERNS = [
    P(
        "prefill_transfer_failed",
        "transfer_error",
        "Prefill transfer failed for request",
        r"Prefill transfer failed for request rank=(?P<rank>\d+)",
        "≈v0.4.6 (2025-04)",
        "[2026-02-26 12:53:08 TP4] Prefill transfer failed for request rank=4 req.rid='af2f3f99db344fab9f0598c637f163fe'"
        " req.bootstrap_room=6989861766352545488 with exception KVTransferError(bootstrap_room=6989861766352545488):"
        " Decode instance could be dead, remote mooncake session 10.0.0.9:16324 is not alive",
        "prefill",
        "prefill_transfer_failed",
    ),
    P(
        "prefill_bootstrap_failed",
        "transfer_error",
        "Prefill bootstrap failed for request",
        r"Prefill bootstrap failed for request rank=(?P<rank>\d+)",
        "≈v0.4.10 (2025-08)",
        "[2025-08-31 07:26:45 TP0 EP0] Prefill bootstrap failed for request rank=0"
        " req.rid='60d582b2010846a8b337cf88963116e7' req.bootstrap_room=7561186998443553199 with exception"
        " KVTransferError(bootstrap_room=7561186998443553199): Aborted by AbortReq.",
        "prefill",
        "prefill_bootstrap_failed",
    ),
    P(
        "decode_transfer_failed",
        "transfer_error",
        "Decode transfer failed for request",
        r"Decode transfer failed for request rank=(?P<rank>\d+)",
        "≈v0.4.6 (2025-04)",
        "[2025-11-05 16:39:09 TP0] Decode transfer failed for request rank=0"
        " decode_req.req.rid='78fde411d57a4d7791b63963eac74968' decode_req.req.bootstrap_room=4793981895866140836"
        " with exception KVTransferError(bootstrap_room=4793981895866140836): Aborted by AbortReq.",
        "decode",
        "decode_transfer_failed",
    ),
    P(
        "decode_handshake_failed",
        "transfer_error",
        "Decode handshake failed for request",
        r"Decode handshake failed for request rank=(?P<rank>\d+)",
        "≈v0.4.6 (2025-04)",
        "[2026-03-01 10:00:00 TP0] Decode handshake failed for request rank=0 decode_req.req.rid='a1'"
        " decode_req.req.bootstrap_room=2335259855 with exception NIXL KVReceiver Exception",
        "decode",
        "decode_handshake_failed",
    ),
    P(
        "transfer_worker_error",
        "transfer_error",
        "Unexpected transfer worker error for room",
        r"Unexpected transfer worker error for room (?P<room>\d+)",
        "≈v0.5.3 (2025-10, NIXL)",
        "[2026-07-21 08:06:26 TP1 EP1] Unexpected transfer worker error for room 5839938415251080346\n"
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 568, in transfer_worker\n'
        "    kv_xfer_handle = self.send_kvcache(\n"
        "nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND",
        "prefill",
        "transfer_worker_error",
    ),
    P(
        "nixl_transport_error",
        "transfer_error",
        "NIXL transport error for room",
        r"NIXL transport error for room (?P<room>\d+): (?P<reason>[^\n]*)",
        "≈v0.5.5 (2025-11)",
        "[2026-07-21 08:04:41 TP1 EP1] NIXL transport error for room 6555093254675405189: NIXL_ERR_REMOTE_DISCONNECT",
        "prefill",
        "nixl_transport_error",
    ),
    P(
        "transfer_failed_for_room",
        "transfer_error",
        "Transfer failed for room",
        r"^Transfer failed for room (?P<room>\d+): (?P<reason>[^\n]*)",
        "≈2026 (NIXL staging; renamed transport error)",
        "[2026-09-01 10:00:00 TP2] Transfer failed for room 123: NIXL_ERR_REMOTE_DISCONNECT",
        "prefill",
        "nixl_transport_error",
    ),
    P(
        "kv_poll_timeout",
        "transfer_error",
        "timed out after",
        r"Request (?P<room>\d+) timed out after (?P<timeout>[\d.]+)s in KVPoll\.(?P<state>\w+)",
        "≈v0.4.8 (2025-06)",
        "[2025-09-01 10:00:00 TP0] Request 8053843183886796622 timed out after 120.0s in KVPoll.Bootstrapping",
        None,
        "timeout",
    ),
    P(
        "bootstrap_timeout_warning",
        "transfer_error",
        "Some requests timeout when bootstrapping",
        r"Some requests timeout when bootstrapping",
        "≈v0.4.10 (2025-08)",
        "[2025-09-01 10:00:00 TP0] Some requests timeout when bootstrapping, which means prefill instances fail to"
        " receive the KV indices from the decode instance of this request. If a greater mean TTFT is acceptable,"
        " you can 'export SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to relax the timeout condition.",
        "prefill",
        "timeout",
    ),
    P(
        "send_kv_chunk_failed",
        "transfer_error",
        "Failed to send kv chunk of",
        r"Failed to send kv chunk of (?P<room>\d+) to (?P<peer>[^\s,]+)",
        "≈v0.4.6 (2025-04, Mooncake)",
        "[2025-06-01 10:00:00 TP0] Failed to send kv chunk of 123 to 10.0.0.5:17001",
        "prefill",
        "send_kv_chunk_failed",
    ),
    P(
        "lost_connection",
        "transfer_error",
        "Lost connection with prefill instance",
        r"Lost connection with prefill instance \(bootstrap_addr: (?P<peer>[^)]*)\)",
        "≈v0.4.9 (2025-07)",
        "[2025-09-01 10:00:00 TP0] Lost connection with prefill instance (bootstrap_addr: 10.0.0.7:8998),"
        " 3 requests affected",
        "decode",
        "lost_connection",
    ),
    P(
        "room_failed_prefill_down",
        "transfer_error",
        "be failed due to prefill down",
        r"Let room (?P<room>\d+) be failed due to prefill down",
        "≈v0.4.9 (2025-07)",
        "[2025-09-01 10:00:00 TP0] Let room 7561186998443553199 be failed due to prefill down",
        "decode",
        "lost_connection",
    ),
    P(
        "transfer_done_signal_missing",
        "transfer_error",
        "fail to receive KV Cache transfer done signal",
        r"fail to receive KV Cache transfer done signal",
        "≈v0.4.10 (2025-08)",
        "[2025-09-01 10:00:00 TP3] Some requests fail to receive KV Cache transfer done signal after bootstrapping."
        " If a greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600'"
        " (10 minutes) to relax the timeout condition.",
        "decode",
        "transfer_done_signal_missing",
    ),
]

ABORT_PATTERNS = [
    P(
        "client_disconnected",
        "abort",
        "Request is disconnected from the client side",
        r"Request is disconnected from the client side(?: \(type (?P<dtype>\d+)\))?\. Abort request",
        "≈v0.4.3 (2025-02)",
        "[http_server] Error: Request is disconnected from the client side (type 3)."
        " Abort request obj.rid='61165a643f00435ca1112901a78071f7'",
        None,
        "client_disconnected",
    ),
    P(
        "http_client_disconnected",
        "abort",
        "[http_server] Client disconnected",
        r"\[http_server\] Client disconnected",
        "≈v0.5.6 (2025-12)",
        "[2026-01-10 10:00:00] [http_server] Client disconnected: Request is disconnected from the client side"
        " (type 1). Abort request obj.rid='0d1c'",
        None,
        "client_disconnected",
    ),
    P(
        "abort_request_not_found",
        "abort",
        "Abort request for rid=",
        r"Abort request for rid=\S+ not found",
        "≈v0.5.4 (2025-10)",
        "[2026-09-09 21:16:01] Abort request for rid=5e5de8901d2349fd8d9107f21df3ab92 not found in rid_to_state;"
        " likely already finished/removed",
        None,
        "abort_request_not_found",
    ),
    P(
        "scheduler_abort",
        "abort",
        " request. ",
        r"^Abort (?P<where>[a-z][a-z ]*?) request\. ",
        "≈v0.3 (2024); disagg queues ≈v0.4.7 (2025-06)",
        "[2025-09-01 10:00:00 TP0] Abort bootstrap queue request. req.rid='b9c8'",
        None,
        None,
    ),  # abort_kind is "abort_" + where + "_request", e.g. abort_queued_request
]

WATCHDOG_PATTERNS = [
    P(
        "watchdog_timeout",
        "watchdog",
        "atchdog timeout (",
        r"(?P<component>Scheduler )?[Ww]atchdog timeout \((?:self\.)?watchdog_timeout=(?P<timeout>[\d.]+)"
        r"(?:, (?:self\.)?soft=(?P<soft>\w+))?\)",
        "v0.3 (2024); soft flag ≈2026",
        "[2025-08-02 19:24:30 TP3] Watchdog timeout (self.watchdog_timeout=300)",
        None,
        "watchdog_timeout",
    ),
    P(
        "scheduler_debug_info",
        "watchdog",
        "Scheduler debug info",
        r"Scheduler debug info",
        "≈2026",
        "[2026-05-01 10:00:00 TP0] Scheduler debug info: self.cur_batch=None",
        None,
        "debug_info",
    ),
    P(
        "watchdog_batch_info",
        "watchdog",
        "cur_batch.batch_size()=",
        r"cur_batch\.batch_size\(\)=(?P<bs>\d+)",
        "≈v0.4.4 (2025-03)",
        "[2025-07-11 17:40:14 DP0 TP2] self.cur_batch.batch_size()=1, self.cur_batch.reqs=[Req(rid=8159_6b91,"
        " input_ids=[0, 671])], self.token_to_kv_pool_allocator.available_size()=656177, ",
        None,
        "debug_info",
    ),
    P(
        "pyspy_failed",
        "watchdog",
        "Pyspy failed to dump PID",
        r"Pyspy failed to dump PID (?P<pid>\d+)\.?(?: Error: (?P<reason>[^\n]*))?",
        "≈v0.4.9 (2025-07)",
        "[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171. Error: /bin/dash: 1: py-spy: not found",
        None,
        "pyspy_failed",
    ),
    P(
        "pyspy_failed_cmd",
        "watchdog",
        "Pyspy failed (",
        r"Pyspy failed \([^\n]*?--pid (?P<pid>\d+)\)\.?(?: Error: (?P<reason>[^\n]*))?",
        "≈2026 (pyspy_dump_schedulers: --native, then again without)",
        "[2026-09-22 01:05:16] Pyspy failed (py-spy dump --native --pid 82). Error: Error: Failed to copy Py_Version symbol",
        None,
        "pyspy_failed",
    ),
    P(
        "pyspy_all_failed",
        "watchdog",
        "All pyspy dump attempts failed for PID",
        r"All pyspy dump attempts failed for PID (?P<pid>\d+)",
        "≈2026",
        "[TP0] All pyspy dump attempts failed for PID 20955.",
        None,
        "pyspy_failed",
    ),
    P(
        "sigquit",
        "watchdog",
        "Received sigquit from a child process",
        r"Received sigquit from a child process",
        "v0.3 (2024)",
        "[2025-08-02 19:24:36] Received sigquit from a child process. It usually means the child failed.",
        None,
        "sigquit",
    ),
    P(
        "sigquit_received",
        "watchdog",
        "SIGQUIT received",
        r"SIGQUIT received\.",
        "≈2026",
        "[2026-09-22 01:05:21] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
        None,
        "sigquit",
    ),
    P(
        "subprocess_crashed",
        "watchdog",
        "crashed with exit code",
        r"Subprocess (?P<name>\w+)(?: \(pid=(?P<pid>\d+)\))? crashed with exit code (?P<code>-?\d+)",
        "≈v0.5.10 (2026-03, #18582 liveness monitor)",
        "[2026-04-01 10:00:00] Subprocess scheduler_0 (pid=4242) crashed with exit code -3. Triggering SIGQUIT for cleanup...",
        None,
        "subprocess_crashed",
    ),
    P(
        "collective_work_state",
        "watchdog",
        "last enqueued",
        r"last enqueued (?:NCCL |HCCL )?work: (?P<enq>-?\d+), last completed (?:NCCL |HCCL )?work: (?P<done>-?\d+)",
        "PyTorch 2.x ProcessGroupNCCL (also HCCL)",
        "[rank1]:[E1112 09:49:50.032579059 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an"
        " error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.",
        None,
        "collective_work_state",
    ),
    P(
        "nccl_watchdog",
        "watchdog",
        "Watchdog caught collective operation timeout",
        r"Watchdog caught collective operation timeout: Work(?:NCCL|HCCL)\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
        r"(?:, NumelIn=(?P<numel_in>\d+), NumelOut=(?P<numel_out>\d+))?, Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
        r"(?: ran for (?P<ran_ms>\d+) milliseconds)?",
        "PyTorch 2.x ProcessGroupNCCL; WorkHCCL of torch_npu",
        "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] [PG ID 2 PG GUID 3 Rank 3] Process group"
        " watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=432927, OpType=_REDUCE_SCATTER_BASE, NumelIn=88080384, NumelOut=5505024,"
        " Timeout(ms)=600000) ran for 600045 milliseconds before timing out.",
        None,
        "nccl_watchdog",
    ),
]

TRACEBACK_PATTERNS = [
    P(
        "component_exception",
        "traceback",
        "hit an exception",
        r"(?P<component>\w+) hit an exception",
        "v0.2 (2024)",
        "[2026-05-27 23:38:59.096 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py", line 1773, in process_decode_queue\n'
        "    req_conns, _ = self.disagg_decode_prealloc_queue.pop_preallocated()",
        None,
        "component_exception",
    ),
    P(
        "traceback",
        "traceback",
        "Traceback (most recent call last)",
        r"Traceback \(most recent call last\)",
        "Python",
        "[2025-09-01 10:00:00 TP0] Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 10, in f\n    g()\nValueError: bad',
        None,
        "traceback",
    ),
]

PYSPY_PATTERNS = [
    P(
        "pyspy_dump",
        "pyspy",
        "Pyspy dump for PID",
        r"Pyspy dump for PID (?P<pid>\d+)",
        "≈v0.5.4 (2025-10)",
        "[2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:\nProcess 309: sglang::scheduler_TP6\n"
        'Python v3.12.12 (/usr/bin/python3.12)\n\nThread 309 (active): "MainThread"\n'
        "    _apply (penaltylib/min_new_tokens.py:78)",
        None,
        "pyspy_dump",
    ),
    P(
        "pyspy_process",
        "pyspy",
        "Process ",
        r"^Process \d+: ",
        "py-spy 0.3",
        "Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0\nPython v3.12.11 (/usr/bin/python3.12)\n\n"
        'Thread 3438121 (idle): "MainThread"\n    send (torch/distributed/distributed_c10d.py:2487)',
        None,
        "pyspy_dump",
    ),
    P(
        "pyspy_thread",
        "pyspy",
        "Thread ",
        r"^Thread (?:0x[0-9a-fA-F]+|\d+) \((?:active|idle|gil)",
        "py-spy 0.3",
        'Thread 12816 (idle): "Thread-10 (watchdog_thread)"\n    select (selectors.py:415)',
        None,
        "pyspy_fragment",
    ),
]

REQUEST_LOG_PATTERNS = [
    P(
        "receive",
        "request_received",
        "Receive: obj=",
        r"Receive: obj=",
        "v0.3 (2024, --log-requests)",
        "[2025-09-01 10:00:00] Receive: obj=GenerateReqInput(text='Hi', sampling_params={'max_new_tokens': 8},"
        " rid='5b02aee35dae49aba98a333ce89964e6', return_logprob=False, bootstrap_host='10.0.0.7',"
        " bootstrap_port=8998, bootstrap_room=1788380104266545413)",
        None,
        None,
    ),
    P(
        "finish",
        "request_finished",
        "Finish: obj=",
        r"Finish: obj=",
        "v0.3 (2024, --log-requests)",
        "[2025-09-01 10:00:02] Finish: obj=GenerateReqInput(text='Hi', rid='5b02aee35dae49aba98a333ce89964e6',"
        " bootstrap_room=1788380104266545413), out={'text': '!', 'meta_info': {'id':"
        " '5b02aee35dae49aba98a333ce89964e6', 'finish_reason': {'type': 'length', 'length': 8},"
        " 'prompt_tokens': 2, 'completion_tokens': 8, 'e2e_latency': 0.21}}",
        None,
        None,
    ),
    P(
        "receive_openai",
        "request_received",
        "Receive OpenAI: obj=",
        r"Receive OpenAI: obj=",
        "≈2025-12 (serving_base.log_openai_received_request, --log-requests-level 2 and up)",
        "[2026-01-10 10:00:00] Receive OpenAI: obj={'model': 'default', 'messages': [{'role': 'user', 'content':"
        " 'Hi'}], 'rid': 'c0ffee'}",
        None,
        None,
    ),
    P(
        "json_received",
        "request_received",
        '"event": "request.received"',
        r'"event": "request\.received"',
        "≈v0.5.5 (2025-11, --log-requests-format json)",
        '{"timestamp": "2025-12-01T10:00:00.123456", "event": "request.received", "rid": "c0ffee",'
        ' "obj": {"text": "Hi", "rid": "c0ffee", "bootstrap_room": 42}}',
        None,
        None,
    ),
    P(
        "json_received_compact",
        "request_received",
        '"event":"request.received"',
        r'"event":"request\.received"',
        "JSON without spaces (a log shipper re-encoding)",
        '{"timestamp":"2025-12-01T10:00:00","event":"request.received","rid":"c0ffee","obj":{"bootstrap_room":42}}',
        None,
        None,
    ),
    P(
        "json_received_openai",
        "request_received",
        '"event": "request.received.openai"',
        r'"event": "request\.received\.openai"',
        "≈2025-12 (--log-requests-format json, level 2 and up)",
        '{"timestamp": "2026-01-10T10:00:00.1", "event": "request.received.openai", "rid": "c0ffee",'
        ' "obj": {"model": "default", "rid": "c0ffee"}}',
        None,
        None,
    ),
    P(
        "json_received_openai_compact",
        "request_received",
        '"event":"request.received.openai"',
        r'"event":"request\.received\.openai"',
        "JSON without spaces (a log shipper re-encoding)",
        '{"timestamp":"2026-01-10T10:00:00","event":"request.received.openai","rid":"c0ffee","obj":{}}',
        None,
        None,
    ),
    P(
        "json_finished",
        "request_finished",
        '"event": "request.finished"',
        r'"event": "request\.finished"',
        "≈v0.5.5 (2025-11, --log-requests-format json)",
        '{"timestamp": "2025-12-01T10:00:01.5", "event": "request.finished", "rid": "c0ffee",'
        ' "obj": {"rid": "c0ffee", "bootstrap_room": 42}, "out": {"meta_info": {"id": "c0ffee"}}}',
        None,
        None,
    ),
    P(
        "json_finished_compact",
        "request_finished",
        '"event":"request.finished"',
        r'"event":"request\.finished"',
        "JSON without spaces (a log shipper re-encoding)",
        '{"timestamp":"2025-12-01T10:00:01","event":"request.finished","rid":"c0ffee","obj":{"bootstrap_room":42}}',
        None,
        None,
    ),
]


# Tool-call markup that, found in the text an engine returned, means the tool-call parser let it through
# as plain content (research notes F19: sglang#17593, #35736, #40236). The separator is DeepSeek's
# fullwidth ``｜`` (U+FF5C); clients and re-encoders also show it as ASCII ``|``, doubled, or ``‖``.
@dataclass(frozen=True)
class Markup:
    """One markup family: ``markup_leak`` value, a regex whose match is the token as printed, where it
    comes from, and a sample text that must match."""

    name: str
    regex: str
    since: str
    sample: str


_BAR = r"(?:｜｜|｜|\|\||\||‖)"
MARKUP_FAMILIES = [
    Markup(
        "deepseek_tool_calls",
        rf"<{_BAR}\s*tool[▁_ ](?:calls?[▁_ ](?:begin|end)|sep|outputs?[▁_ ](?:begin|end)){_BAR}>",
        "DeepSeek-V3/V3.1 chat template (function_call/deepseekv3_detector.py, deepseekv31_detector.py)",
        'Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}',
    ),
    Markup(
        "deepseek_dsml",
        rf"</?{_BAR}\s*DSML\s*{_BAR}[A-Za-z_]*",
        "DeepSeek-V3.2 <｜DSML｜function_calls> and V4 <｜DSML｜tool_calls> (deepseekv32/v4 detectors)",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">',
    ),
]
_MARKUP_RX = [(m.name, re.compile(m.regex)) for m in MARKUP_FAMILIES]


def find_markup(text: str | None) -> tuple[str | None, str | None]:
    """``(family, token as printed)`` of the leftmost tool-call markup token in ``text``
    (``MARKUP_FAMILIES``), or ``(None, None)``: no markup, or no text at all."""
    if not text:
        return None, None
    best = None
    for name, rx in _MARKUP_RX:
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), name, m.group(0))
    return (best[1], best[2]) if best else (None, None)


HEALTH_PATTERNS = [
    P(
        "health_check_failed",
        "health",
        "Health check failed",
        r"Health check failed",
        "≈v0.4.3 (2025-02)",
        "[2025-09-01 10:00:00] Health check failed. Server couldn't get a response from detokenizer for last 20"
        " seconds. tic start time: 10:00:00. last_heartbeat time: 09:59:40",
        None,
        "health_check_failed",
    ),
]

BATCH_PATTERNS = [
    P(
        "prefill_batch",
        "batch",
        "Prefill batch",
        r"^Prefill batch(?:\(mixed #running-req: \d+\))?(?: \[\d+\])?[.,]",
        "v0.1 (2024-01); ', ' ≈v0.5 (2025)",
        "[2025-05-15 11:59:21 TP0] Prefill batch. #new-seq: 1, #new-token: 4, #cached-token: 0, token usage: 0.00,"
        " #running-req: 0, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 0 ",
        "prefill",
        "prefill",
    ),
    P(
        "decode_batch",
        "batch",
        "Decode batch",
        r"^Decode batch(?: \[\d+\])?[.,]",
        "v0.1 (2024-01); ', ' ≈v0.5 (2025)",
        "[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66,"
        " accept len: 3.05, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2",
        "decode",
        "decode",
    ),
]

# Order = priority when two anchors start at the same place (never, by the no-substring rule) and
# the order in which this module documents them.
ENGINE_PATTERNS = (
    BATCH_PATTERNS
    + TRANSFER_ERROR_PATTERNS
    + ABORT_PATTERNS
    + WATCHDOG_PATTERNS
    + TRACEBACK_PATTERNS
    + PYSPY_PATTERNS
    + REQUEST_LOG_PATTERNS
    + HEALTH_PATTERNS
)
# Access and mini_lb lines are found by the same anchor pass; router.kinds then says request/health.
ROUTER_ANCHOR_PATTERNS = [
    LinePattern(f.name, "request", f.anchor, f.regex, f.since, f.sample, f.role, None)
    for f in router.ACCESS_FORMATS
]
# systemd's messages about a unit (parsers/systemd.py) are found by the same anchor pass.
LIFECYCLE_PATTERNS = [
    LinePattern(
        f"systemd_{m.event}", "lifecycle", m.anchor, m.regex, "systemd 245-256", m.sample, None, m.event
    )
    for m in systemd.UNIT_MESSAGES
]
ALL_PATTERNS = ENGINE_PATTERNS + ROUTER_ANCHOR_PATTERNS + LIFECYCLE_PATTERNS
ANCHORS = list(dict.fromkeys(p.anchor for p in ALL_PATTERNS))
_PATTERN_TABLE = pl.DataFrame(
    {
        "anchor": [p.anchor for p in ALL_PATTERNS],
        "pattern": [p.name for p in ALL_PATTERNS],
        "prio": list(range(len(ALL_PATTERNS))),
    },
    schema={"anchor": pl.String, "pattern": pl.String, "prio": pl.Int32},
)
PATTERNS_BY_NAME = {p.name: p for p in ALL_PATTERNS}

# The exception line of a traceback: the first unindented line after its last frame (lines may follow
# it: a second log line glued on, a chained exception); null when the excerpt is cut before it.
EXCEPTION_AFTER_FRAMES = (
    r"(?s).*\n\s*File \"[^\n]*\n(?:[ \t]+[^\n]*\n)*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure"
    r"|Fault|Timeout|Abort|error)?(?::[^\n]*)?)(?:\n|$)"
)

# A record that starts like the middle of a py-spy dump (an excerpt pasted from the middle).
PYSPY_FRAME_START = r"^ {2,}\S[^\n]* \([^()\n]*:\d+\)\s*(?:\n|$)"

# ---------------------------------------------------------------------------------------------
# Fields found anywhere in a record: request id and bootstrap room (first occurrence wins).
RID_REGEX = (
    r"\brid=(?:'(?P<q1>[^'\n]*)'|\"(?P<q2>[^\"\n]*)\"|(?P<bare>[\w.:-]+))"
    r"|[\"']rid[\"']: ?[\"'](?P<key>[^\"'\n]*)[\"']"
    r"|[\"']meta_info[\"']: ?\{[\"']id[\"']: ?[\"'](?P<meta>[^\"'\n]*)[\"']"
)
_Q1 = r"'(?:[^'\\\n]|\\.)*'"
_Q2 = r'"(?:[^"\\\n]|\\.)*"'
_MASK_QUOTED = (
    rf"(?P<keep>\brid=(?:{_Q1}|{_Q2})|[\"']rid[\"']: ?(?:{_Q1}|{_Q2})"
    rf"|[\"']meta_info[\"']: ?\{{[\"']id[\"']: ?(?:{_Q1}|{_Q2}))|{_Q1}|{_Q2}"
)
ROOM_REGEX = (
    r"bootstrap_room[\"']?[=:] ?(?P<a>\d+)|for room (?P<b>\d+)|Request (?P<c>\d+) timed out"
    r"|kv chunk of (?P<d>\d+)|Let room (?P<e>\d+)"
)
# Printed levels a header did not carry: Python's default format, JSON logs.
PRINTED_LEVEL = (
    r"^(?P<a>DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|^\{[^\n]*?\"level\": ?\"(?P<b>[A-Za-z]+)\""
)
_PRINTED_LEVEL_HINT = r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|^\{"

# Reasons of KV failures, named (transfer_errors.cause); first match wins.
CAUSES = [
    ("aborted", r"Aborted by AbortReq", "KVTransferError(bootstrap_room=1): Aborted by AbortReq."),
    (
        "timeout",
        r"timed out after [\d.]+s in KVPoll",
        "Request 1 timed out after 300.0s in KVPoll.WaitingForInput",
    ),
    ("send_kv_chunk_failed", r"Failed to send kv chunk", "Failed to send kv chunk of 1 to 10.0.0.5:17001"),
    (
        "lost_connection",
        r"Lost connection with prefill instance|due to prefill down",
        "Lost connection with prefill instance (bootstrap_addr: 10.0.0.7:8998)",
    ),
    (
        "prefill_dead",
        r"Failed to get kvcache from prefill instance",
        "Failed to get kvcache from prefill instance, it might be dead",
    ),
    (
        "decode_dead",
        r"Decode instance could be dead",
        "Decode instance could be dead, remote mooncake session",
    ),
    ("assert_transfer_infos", r"assert [^\n]*transfer_infos", "    assert room in self.transfer_infos"),
    (
        "other_rank",
        r"unknown reason from another rank",
        "KVTransferError(bootstrap_room=1): Failed due to an unknown reason from another rank",
    ),  # propagated from the rank that failed first: not the root cause
    ("nixl_error", r"NIXL_ERR_\w+|NIXL \w+ Exception", "NIXL_ERR_REMOTE_DISCONNECT"),
]

# KV transfer backends named by a failure's text (transfer_errors.backend); first match wins.
BACKENDS = [
    ("nixl", r"(?i)\bnixl\b|nixl/conn\.py|NIXL_ERR_", "nixl/conn.py, line 1153, in transfer_worker"),
    ("mooncake", r"(?i)mooncake", "remote mooncake session 10.0.0.9:16324 is not alive"),
    ("mori", r"(?i)\bmori\b|mori/conn\.py", "disaggregation/mori/conn.py"),
    ("ascend", r"(?i)ascend/conn\.py|\bascend\b", "disaggregation/ascend/conn.py"),
]
# Batch-line keys only a prefill-decode (PD) engine prints: a batch line without any of them comes
# from a server that is not half of a PD pair (role ``engine``).
PD_BATCH_KEYS = r"#(?:prealloc|inflight|bootstrap|unbootstrapped|transferring|transfer)-req:"
# The event loop a traceback runs in names the engine's role.
TRACEBACK_ROLES = [
    ("prefill", r"event_loop_\w*disagg_prefill|disaggregation/prefill\.py"),
    ("decode", r"event_loop_\w*disagg_decode|disaggregation/decode\.py"),
]

# ---------------------------------------------------------------------------------------------
# Batch fields: key as printed → (column, type). Type "int", "float", "pct" (a float printed with
# "%", kept in percent), or "bool". Any "<device> graph: True|False" key becomes graph + graph_kind.


@dataclass(frozen=True)
class BatchField:
    key: str
    column: str
    since: str

    @property
    def type(self) -> str:
        """How the value is read: ``pct`` (printed with ``%``), ``int`` or ``float``, from the contract."""
        if self.column.endswith("_pct"):
            return "pct"
        return "int" if BATCH_FIELD_COLUMNS[self.column].dtype == pl.Int64 else "float"


F = BatchField
BATCH_FIELDS = [
    F("#new-seq", "new_seq", "v0.1 (2024)"),
    F("#new-token", "new_token", "v0.1 (2024)"),
    F("#cached-token", "cached_token", "v0.1 (2024)"),
    F("cache hit rate", "cache_hit_rate_pct", "v0.1 (2024), gone ≈v0.4"),
    F("token usage", "token_usage", "v0.2 (2024)"),
    F("full token usage", "full_token_usage", "≈v0.4.9 (2025-07, SWA hybrid)"),
    F("swa token usage", "swa_token_usage", "≈v0.4.9 (2025-07, SWA hybrid)"),
    F("mamba usage", "mamba_usage", "≈v0.5.2 (2025-09, Mamba hybrid)"),
    F("#token", "token", "v0.2 (2024)"),
    F("#full token", "full_token", "≈v0.4.9 (2025-07)"),
    F("#swa token", "swa_token", "≈v0.4.9 (2025-07)"),
    F("mamba num", "mamba_num", "≈v0.5.2 (2025-09)"),
    F("#running-req", "running_req", "v0.1 (2024)"),
    F("#queue-req", "queue_req", "v0.1 (2024)"),
    F("#pending-token", "pending_token", "≈2026"),
    F("#prealloc-req", "prealloc_req", "≈v0.4.7 (2025-06)"),
    F("#inflight-req", "inflight_req", "≈v0.4.7 (2025-06)"),
    F("#bootstrap-req", "bootstrap_req", "≈2026"),
    F("#unbootstrapped-req", "unbootstrapped_req", "≈v0.4.6 (2025-04)"),
    F("#transferring-req", "transferring_req", "≈v0.4.6 (2025-04)"),
    F("#transfer-req", "transfer_req", "≈v0.4.7 (2025-06)"),
    F("#retracted-req", "retracted_req", "≈v0.4.9 (2025-07)"),
    F("#optimistic-req", "optimistic_req", "≈2026"),
    F("pre-allocated usage", "pre_allocated_usage", "≈v0.4.7 (2025-06)"),
    F("accept len", "accept_len", "≈v0.4.1 (2025-01, speculative)"),
    F("accept rate", "accept_rate", "≈v0.5.3 (2025-10)"),
    F("gen throughput (token/s)", "gen_throughput", "v0.2 (2024)"),
    F("input throughput (token/s)", "input_throughput", "≈v0.4.6 (2025-04)"),
    F("fwd occupancy", "fwd_occupancy_pct", "≈2026 (SGLANG_ENABLE_METRICS_DEVICE_TIMER)"),
]
BATCH_FIELD_BY_KEY = {f.key: f for f in BATCH_FIELDS}
GRAPH_KEY = re.compile(r"^(\w+) graph$")
CLASSIFY = {
    "kind": pl.String,
    "rid": pl.String,
    "bootstrap_room": pl.Int64,
    "content_role": pl.String,
    "level": pl.String,
}
MAX_BATCH_SHAPES = 32


# =============================================================================================
# Public functions
# =============================================================================================


def classify(ev: pl.DataFrame) -> pl.DataFrame:
    """What each record is.

    Args:
        ev: one row per logical record with at least ``body`` (text after the header) and
            ``message`` (whole record); ``level``, ``header`` (from ``split_prefix``) are used when
            present. Any other column is ignored.

    Returns:
        Exactly ``ev.height`` rows in ``ev`` order with ``kind`` (one of ``schema.KINDS``, ``other``
        when nothing matched), ``rid`` (str or null: the first request id the record names:
        ``req.rid='…'``, ``rid=…``, ``"rid": "…"``, ``'meta_info': {'id': '…'``),
        ``bootstrap_room`` (Int64 or null), ``content_role`` (``prefill``/``decode``/``router`` or
        null: the role the text itself implies, issue item 8) and ``level`` (``ev.level``, else a
        level printed in the text: Python's ``LEVEL:name:`` format or a JSON ``"level"``; else
        null, never guessed from words).

    Never raises on any text. Formats: the pattern tables of this module and of
    ``logcorr.parsers.router``.
    """
    base = _base(ev)
    if base.height == 0:
        return pl.DataFrame(schema=CLASSIFY)
    hit = _recognise(base)
    kind = hit["kind"]
    rid_room = _rid_room(base, kind)
    level = base["level"]
    printed = (level.is_null() & base["body"].str.contains(_PRINTED_LEVEL_HINT)).fill_null(False)
    if printed.any():
        found = base.filter(printed).select(_printed_level(pl.col("body"))).to_series()
        level = level.scatter(printed.arg_true(), found)
    out = pl.DataFrame(
        {
            "kind": kind,
            "rid": rid_room["rid"],
            "bootstrap_room": rid_room["bootstrap_room"],
            "content_role": hit["content_role"],
            "level": level,
        }
    )
    out = out.with_columns(base["body"].alias("_body")).with_columns(
        _content_role(pl.col("_body")).alias("content_role")
    )
    return out.select([pl.col(c).cast(t) for c, t in CLASSIFY.items()])


def _content_role(text: pl.Expr) -> pl.Expr:
    """The role a record's own text implies, over ``content_role`` of its pattern: a batch line
    without a PD key is an ``engine`` that is not half of a PD pair; a traceback names its role by
    its event loop."""
    by_frames = pl.coalesce(
        [pl.when(text.str.contains(rx)).then(pl.lit(role)) for role, rx in TRACEBACK_ROLES]
    )
    return (
        pl.when((pl.col("kind") == "batch") & ~text.str.contains(PD_BATCH_KEYS).fill_null(False))
        .then(pl.lit("engine"))
        .when(pl.col("kind") == "traceback")
        .then(pl.coalesce(by_frames, pl.col("content_role")))
        .otherwise(pl.col("content_role"))
    )


def batches(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per ``Prefill batch`` / ``Decode batch`` record.

    Args:
        ev: the ``ev`` frame (see ``classify``); when it has a ``kind`` column only rows with
            ``kind == "batch"`` are read.

    Returns:
        ``BATCHES`` columns: provenance (``event_id, ts, host, role, pid, dp/pp/tp/ep_rank``),
        ``batch_type`` (``prefill``/``decode``), ``forward_iter`` (Int64, the ``[N]`` printed with
        ``SGLANG_LOG_FORWARD_ITERS``), one typed column per ``BATCH_FIELDS`` entry (counts Int64,
        ratios Float64 in 0-1, ``*_pct`` in percent, throughputs in token/s), ``graph`` (Boolean:
        ``cuda graph``/``cpu graph``/``npu graph``/``musa graph``… as printed) with ``graph_kind``
        (``cuda``, ``npu``, …), ``extra`` (JSON object text of every other ``key: value`` and of any
        known key whose value did not parse; null when none), ``level``, ``source``, ``source_pos``.
        ``role`` is ``ev.role`` unless unknown, else the batch type.

    Versions: ``Prefill batch.``/``Decode batch.`` (2024-mid 2025) and ``Prefill batch,`` (later),
    optional `` [N]``, optional trailing ``, `` or space, any order of keys.
    """
    if "kind" in ev.columns:
        base = _base(ev.filter(pl.col("kind") == "batch"))
    else:
        base = _base(ev)
        base = base.filter(pl.col("body").str.contains(r"^(?:Prefill|Decode) batch"))
    if base.height == 0:
        return pl.DataFrame(schema=BATCHES.schema)
    first = _first_line(base["body"])
    parsed = _parse_batch_lines(first)
    df = pl.concat([base, parsed], how="horizontal").filter(pl.col("batch_type").is_not_null())
    df = df.with_columns(_resolve_role(pl.col("batch_type")).alias("role"))
    return _conform(df, BATCHES)


def transfer_errors(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per KV-transfer failure record (``TRANSFER_ERROR_PATTERNS``).

    Returns:
        ``TRANSFER_ERRORS`` columns: provenance, ``bootstrap_room`` (Int64), ``rid``, ``error_kind``
        (``prefill_transfer_failed``, ``prefill_bootstrap_failed``, ``decode_transfer_failed``,
        ``decode_handshake_failed``, ``assert_transfer_infos`` (an ``Unexpected transfer worker
        error`` whose traceback asserts ``room in self.transfer_infos``), ``transfer_worker_error``
        (any other traceback), ``nixl_transport_error``, ``timeout``, ``send_kv_chunk_failed``,
        ``lost_connection``, ``transfer_done_signal_missing``), ``cause`` (the reason named by
        ``CAUSES``: ``aborted``, ``timeout``, ``send_kv_chunk_failed``, ``lost_connection``,
        ``prefill_dead``, ``decode_dead``, ``assert_transfer_infos``, ``nixl_error`` or null),
        ``kv_poll_state`` (``Bootstrapping``/``WaitingForInput``/… when a timeout names it),
        ``timeout_s`` (seconds), ``exception`` (``KVTransferError``, ``AssertionError``, …),
        ``reason`` (the text after ``with exception …:``, or the exception line of a traceback),
        ``peer`` (address named by the line), ``traceback`` (the joined ``Traceback …`` text),
        ``level``, ``source``, ``source_pos``. ``tp_rank``/``pp_rank`` fall back to the ``rank=N``
        and ``self.pp_rank=N`` the line prints when the header had none.
    """
    base = _select_kind(ev, "transfer_error")
    if base.height == 0:
        return pl.DataFrame(schema=TRANSFER_ERRORS.schema)
    hit = _recognise(base, TRANSFER_ERROR_PATTERNS)
    df = pl.concat([base, hit.select("pattern", "content_role")], how="horizontal").filter(
        pl.col("pattern").is_not_null()
    )
    if df.height == 0:
        return pl.DataFrame(schema=TRANSFER_ERRORS.schema)
    rid_room = _rid_room(df, pl.Series(["transfer_error"] * df.height))
    df = pl.concat([df, rid_room], how="horizontal")
    body = pl.col("body")
    first = body.str.extract(r"^([^\n]*)", 1)
    tb = body.str.extract(r"(?s)(Traceback \(most recent call last\):.*)$", 1).str.strip_chars_end()
    exc_line = tb.str.extract(EXCEPTION_AFTER_FRAMES, 1)
    with_exc = first.str.extract_groups(
        r"with exception:? (?:(?P<exc>[A-Za-z_][\w.]*)\((?:[^()]*)\): ?)?(?P<reason>.*)$"
    )
    pattern_reason = first.str.extract(r"(?:for room \d+|Transfer failed for room \d+): (.*)$", 1)
    subkind = pl.col("pattern").replace_strict(
        {p.name: p.subkind for p in TRANSFER_ERROR_PATTERNS}, default=None, return_dtype=pl.String
    )
    is_assert = tb.str.contains(r"assert [^\n]*transfer_infos") | (
        exc_line.str.contains(r"^AssertionError\b") & tb.str.contains("transfer_infos", literal=True)
    )
    error_kind = (
        pl.when((pl.col("pattern") == "transfer_worker_error") & is_assert.fill_null(False))
        .then(pl.lit("assert_transfer_infos"))
        .otherwise(subkind)
    )
    cause = pl.coalesce(*[pl.when(body.str.contains(rx)).then(pl.lit(name)) for name, rx, _ in CAUSES])
    rank = body.str.extract(r"\brank=(\d+)", 1).cast(pl.Int16, strict=False)
    pp = body.str.extract(r"\bpp_rank=(\d+)", 1).cast(pl.Int16, strict=False)
    state = body.str.extract(r"KVPoll\.(\w+)", 1)
    content_role = pl.coalesce(
        pl.col("content_role"),
        pl.when(state == "WaitingForInput")
        .then(pl.lit("decode"))
        .when(state == "Bootstrapping")
        .then(pl.lit("prefill")),
    )
    peer = pl.coalesce(
        first.str.extract(r"kv chunk of \d+ to ([^\s,]+)", 1),
        first.str.extract(r"bootstrap_addr: ([^)]*)\)", 1),
        first.str.extract(r"remote mooncake session (\S+) is not alive", 1),
    )
    exc_type = exc_line.str.extract(r"^([\w.]+)(?::|$)", 1)
    backend = pl.coalesce([pl.when(body.str.contains(rx)).then(pl.lit(name)) for name, rx, _ in BACKENDS])
    df = df.with_columns(
        error_kind.alias("error_kind"),
        backend.alias("backend"),
        cause.alias("cause"),
        state.alias("kv_poll_state"),
        body.str.extract(r"timed out after ([\d.]+)s", 1).cast(pl.Float64, strict=False).alias("timeout_s"),
        pl.coalesce(with_exc.struct.field("exc"), exc_type.str.extract(r"([^.]+)$", 1)).alias("exception"),
        pl.coalesce(
            pl.when(with_exc.struct.field("reason").str.len_chars() > 0).then(
                with_exc.struct.field("reason")
            ),
            pattern_reason,
            exc_line,
        ).alias("reason"),
        peer.alias("peer"),
        tb.alias("traceback"),
        pl.coalesce(pl.col("tp_rank"), rank).alias("tp_rank"),
        pl.coalesce(pl.col("pp_rank"), pp).alias("pp_rank"),
        _resolve_role(content_role).alias("role"),
    )
    return _conform(df, TRANSFER_ERRORS)


def aborts(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per abort: client disconnects, ``Abort request for rid=… not found``, the scheduler's
    ``Abort <queue> request.`` DEBUG lines, and every KV failure whose reason is
    ``Aborted by AbortReq.``.

    Returns:
        ``ABORTS`` columns: provenance, ``rid``, ``bootstrap_room`` (Int64, when the line names
        one), ``abort_kind`` (``client_disconnected``, ``abort_request_not_found``,
        ``abort_<queue>_request`` e.g. ``abort_queued_request``, ``abort_running_request``,
        ``abort_bootstrap_queue_request``, ``abort_prealloc_queue_request``, … as printed, or
        ``transfer_aborted``), ``error_kind`` (for ``transfer_aborted``: which failure, as in
        ``transfer_errors``), ``reason`` (the line's own words), ``level``, ``source``, ``source_pos``.
    """
    base = _select_kind(ev, "abort")
    parts = []
    if base.height:
        hit = _recognise(base, ABORT_PATTERNS)
        df = pl.concat([base, hit.select("pattern", "content_role")], how="horizontal").filter(
            pl.col("pattern").is_not_null()
        )
        if df.height:
            rid_room = _rid_room(df, pl.Series(["abort"] * df.height))
            first = pl.col("body").str.extract(r"^([^\n]*)", 1)
            where = first.str.extract(r"^Abort ([a-z][a-z ]*?) request\. ", 1)
            subkind = pl.col("pattern").replace_strict(
                {p.name: p.subkind for p in ABORT_PATTERNS}, default=None, return_dtype=pl.String
            )
            kind = pl.coalesce(
                subkind, pl.lit("abort_") + where.str.replace_all(" ", "_") + pl.lit("_request")
            )
            reason = pl.coalesce(
                first.str.extract(r"(Request is disconnected from the client side(?: \(type \d+\))?)", 1),
                first.str.extract(r"(not found[^\n]*)$", 1),
                first,
            )
            parts.append(
                pl.concat([df, rid_room], how="horizontal").with_columns(
                    kind.alias("abort_kind"),
                    pl.lit(None, pl.String).alias("error_kind"),
                    reason.alias("reason"),
                    _resolve_role(pl.col("content_role")).alias("role"),
                )
            )
    te = transfer_errors(ev)
    te = te.filter(pl.col("cause") == "aborted")
    if te.height:
        parts.append(
            te.with_columns(
                pl.lit("transfer_aborted").alias("abort_kind"),
                pl.lit("Aborted by AbortReq.").alias("reason"),
            )
        )
    if not parts:
        return pl.DataFrame(schema=ABORTS.schema)
    out = pl.concat([_conform(p, ABORTS) for p in parts])
    return out.sort("event_id", maintain_order=True)


def merge_rooms(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """``rooms`` rows of several chunks merged into one row per (rid, bootstrap_room, role, host):
    first and last time over all, ``n_events`` summed, ``event_id``/``source``/``source_pos`` of the
    first record (smallest event_id)."""
    frames = [p for p in parts if p.height]
    if not frames:
        return pl.DataFrame(schema=ROOMS.schema)
    return (
        pl.concat(frames)
        .sort("event_id")
        .group_by(["rid", "bootstrap_room", "role", "host"], maintain_order=True)
        .agg(
            pl.col("first_ts").min(),
            pl.col("last_ts").max(),
            pl.col("n_events").sum(),
            pl.col("event_id").first(),
            pl.col("source").first(),
            pl.col("source_pos").first(),
        )
        .select(list(ROOMS.schema))
    )


def rooms_of_aborts(parts: list[pl.DataFrame], rooms: pl.DataFrame) -> pl.DataFrame:
    """``aborts`` rows of several chunks, each whose line names no room given the one room its rid
    is paired with in ``rooms`` (the same ingest), if exactly one; an abort of the HTTP server
    (``Abort request obj.rid='…'``) then joins its room's story."""
    frames = [p for p in parts if p.height]
    if not frames:
        return pl.DataFrame(schema=ABORTS.schema)
    aborts = pl.concat(frames)
    paired = (
        rooms.group_by("rid").agg(pl.col("bootstrap_room").unique())
        .filter(pl.col("bootstrap_room").list.len() == 1)
        .select("rid", pl.col("bootstrap_room").list.first().alias("_room"))
    )  # fmt: skip
    return (
        aborts.join(paired, on="rid", how="left", maintain_order="left")
        .with_columns(pl.coalesce("bootstrap_room", "_room").alias("bootstrap_room"))
        .select(list(ABORTS.schema))
    )


def rooms(ev: pl.DataFrame) -> pl.DataFrame:
    """Every (rid, bootstrap_room, role, host) pairing any record shows, one row each.

    Sources: the transfer-failure lines, ``--log-requests`` lines (``Receive: obj=…(rid='…', …,
    bootstrap_room=N)``, ``Finish: obj=…, out={'meta_info': {'id': '…'}}``, and their JSON form),
    and any other record naming both a rid and a room. Prefill and decode usually log different
    rids for one request; the room links them.

    Returns:
        ``ROOMS`` columns: ``rid``, ``bootstrap_room`` (Int64), ``role`` (``ev.role`` unless
        unknown, else the role the line implies), ``host``, ``first_ts``/``last_ts`` (UTC),
        ``n_events`` (Int64), and ``event_id``, ``source``, ``source_pos`` of the first record.
    """
    if {"rid", "bootstrap_room"} <= set(ev.columns):
        named = ev.filter(pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_not_null())
        df = (
            _base(named)
            .with_columns(
                named["rid"].cast(pl.String).alias("rid"),
                named["bootstrap_room"].cast(pl.Int64, strict=False).alias("bootstrap_room"),
            )
            .filter(pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_not_null())
        )
        unknown = (df["role"].is_null() | (df["role"] == "unknown")).any()
        if unknown and "content_role" not in df.columns:  # the text may say the role
            df = df.with_columns(_resolve_role(classify(df)["content_role"]).alias("role"))
    else:
        base = _base(ev)
        if base.height == 0:
            return pl.DataFrame(schema=ROOMS.schema)
        c = classify(base)
        df = base.with_columns(
            c["rid"].alias("rid"),
            c["bootstrap_room"].alias("bootstrap_room"),
            _resolve_role(c["content_role"]).alias("role"),
        ).filter(pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_not_null())
    if df.height == 0:
        return pl.DataFrame(schema=ROOMS.schema)
    out = (
        df.sort("event_id", maintain_order=True)
        .group_by(["rid", "bootstrap_room", "role", "host"], maintain_order=True)
        .agg(
            pl.col("ts").min().alias("first_ts"),
            pl.col("ts").max().alias("last_ts"),
            pl.len().cast(pl.Int64).alias("n_events"),
            pl.col("event_id").first(),
            pl.col("source").first(),
            pl.col("source_pos").first(),
        )
    )
    return _conform(out, ROOMS)


# --log-requests lines, read by key over SGLang's Python repr (``_dataclass_to_string_truncated``:
# dataclasses as ``Name(f=v, …)``, dicts as ``{'k': v, …}``, strings as ``repr`` and, at level 2, a
# string over 2048 characters as ``'head' ... 'tail'``). A quoted string is one token, so a key is only
# found outside strings, and nested braces/brackets/parentheses (two levels) are skipped whole, so a
# key is only found at the level asked for.
_STR = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_FLAT = rf"""[^'"{{}}()\[\]]|{_STR}"""
_NEST1 = rf"""[{{(\[](?:{_FLAT})*[}})\]]"""
_NEST2 = rf"""[{{(\[](?:{_FLAT}|{_NEST1})*[}})\]]"""
_TOKEN = rf"""(?:{_FLAT}|{_NEST2})"""
_TEXT_VALUE = rf"""(?:{_STR})(?: \.\.\. (?:{_STR}))?"""
_OUT_PART = rf"""(?s)Finish: obj=(?:[^'"]|{_STR})*?, out=(\{{.*)$"""
_CUT_PARTS = re.compile(rf"""^({_STR}) \.\.\. ({_STR})$""", re.S)
REQUEST_TEXT_CHARS = 400  # request_log.output_text keeps this many characters
_JSON_CUT = 2048  # SGLang's level-2 limit: a longer string is logged as head (1024) + "..." + tail (1024)


def _key(key: str, value: str) -> str:
    """A regex over a dict's text (from its ``{``) whose group 1 is the value of ``'key'`` at its top level."""
    return rf"""(?s)^\{{(?:(?:{_TOKEN})*?, )??'{re.escape(key)}': ({value})"""


def _py_str(token: str | None) -> str | None:
    """A Python repr string token (or two joined by SGLang's `` ... `` cut) as the text it stands for."""
    if token is None:
        return None
    m = _CUT_PARTS.match(token)
    try:
        if m:
            return ast.literal_eval(m.group(1)) + " ... " + ast.literal_eval(m.group(2))
        return ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return token


def request_log(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per ``--log-requests`` line (``REQUEST_LOG_PATTERNS``): what the engine received and
    what it returned.

    Formats (research notes, section 5): the text form ``Receive: obj=GenerateReqInput(…)``,
    ``Receive OpenAI: obj=…`` and ``Finish: obj=…[, headers={…}], out={'text': …, 'meta_info': {'id':
    rid, 'finish_reason': {'type', 'message', 'status_code'}, 'prompt_tokens', 'completion_tokens',
    'cached_tokens', 'e2e_latency', …}}`` (SGLang v0.3 onwards, tokenizer_manager.py, since 2025-12-24
    utils/request_logger.py), and the JSON form of ``--log-requests-format json`` (``{"event":
    "request.received" | "request.received.openai" | "request.finished", "rid", "obj", "out"}``, since
    2025-12-24). Fields are read by key, never by position: a prompt quoting ``'text': `` or
    ``, out={`` inside a string cannot move them. Level 0 and 1 log no text (``output_text`` null);
    level 2 cuts a string over 2048 characters to ``'head' ... 'tail'`` (JSON: ``head...tail``), kept
    as ``head ... tail`` with ``output_cut`` true; markup is looked for in head and tail apart, so the
    cut never makes one.

    Args:
        ev: the ``ev`` frame (see ``classify``); with a ``kind`` column only ``request_received`` and
            ``request_finished`` rows are read; ``rid``/``bootstrap_room`` columns, when present,
            are used as they are.

    Returns:
        ``REQUEST_LOG`` columns: provenance, ``event`` (``received``, ``received_openai``,
        ``finished``), ``rid``, ``bootstrap_room``, ``finish_type``, ``finish_message``,
        ``status_code`` (Int32), ``prompt_tokens``/``completion_tokens``/``cached_tokens`` (Int64),
        ``e2e_latency_s`` (seconds), ``output_text`` (cut to ``REQUEST_TEXT_CHARS``),
        ``output_chars`` (characters as logged), ``output_cut``, ``markup_leak`` (a
        ``MARKUP_FAMILIES`` name or null), ``markup`` (the token as printed), ``format`` (``text`` or
        ``json``), ``level``, ``source``, ``source_pos``.
    """
    if "kind" in ev.columns:
        sub = ev.filter(pl.col("kind").is_in(["request_received", "request_finished"]))
        base = _base(sub)
        kinds = sub["kind"]
        if {"rid", "bootstrap_room"} <= set(sub.columns):
            base = base.with_columns(
                sub["rid"].cast(pl.String).alias("rid"),
                sub["bootstrap_room"].cast(pl.Int64).alias("bootstrap_room"),
            )
    else:
        base = _base(ev)
        kinds = _recognise(base)["kind"] if base.height else pl.Series("kind", [], pl.String)
        keep = kinds.is_in(["request_received", "request_finished"]).fill_null(False)
        base, kinds = base.filter(keep), kinds.filter(keep)
    if base.height == 0:
        return pl.DataFrame(schema=REQUEST_LOG.schema)
    if "rid" not in base.columns:
        base = pl.concat([base, _rid_room(base, kinds)], how="horizontal")
    body = pl.col("body")
    is_json = body.str.starts_with("{")

    def js(path: str) -> pl.Expr:
        return body.str.json_path_match(path)

    json_event = js("$.event")
    event = (
        pl.when(is_json)
        .then(json_event.replace_strict(_JSON_EVENTS, default=None, return_dtype=pl.String))
        .when(body.str.contains("Receive OpenAI: obj=", literal=True))
        .then(pl.lit("received_openai"))
        .when(pl.lit(kinds) == "request_received")
        .then(pl.lit("received"))
        .otherwise(pl.lit("finished"))
    )
    out = body.str.extract(_OUT_PART, 1)
    meta = out.str.extract(_key("meta_info", _NEST2), 1)
    reason = meta.str.extract(_key("finish_reason", rf"{_NEST1}|None"), 1)

    def num(key: str, rx: str = r"-?\d+") -> pl.Expr:
        return meta.str.extract(_key(key, rx), 1)

    flt = r"-?[0-9.]+(?:[eE][-+]?\d+)?"
    df = base.with_columns(
        event.alias("event"),
        pl.when(is_json).then(pl.lit("json")).otherwise(pl.lit("text")).alias("format"),
        pl.when(is_json)
        .then(js("$.out.meta_info.finish_reason.type"))
        .otherwise(reason.str.extract(_key("type", _STR), 1).str.strip_chars("'\""))
        .alias("finish_type"),
        pl.when(is_json)
        .then(js("$.out.meta_info.finish_reason.message"))
        .otherwise(reason.str.extract(_key("message", _STR), 1))
        .alias("_message"),
        pl.when(is_json)
        .then(js("$.out.meta_info.finish_reason.status_code"))
        .otherwise(reason.str.extract(_key("status_code", r"\d+"), 1))
        .cast(pl.Int32, strict=False)
        .alias("status_code"),
        *[
            pl.when(is_json)
            .then(js(f"$.out.meta_info.{k}"))
            .otherwise(num(k))
            .cast(pl.Int64, strict=False)
            .alias(k)
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens")
        ],
        pl.when(is_json)
        .then(js("$.out.meta_info.e2e_latency"))
        .otherwise(num("e2e_latency", flt))
        .cast(pl.Float64, strict=False)
        .alias("e2e_latency_s"),
        pl.when(is_json)
        .then(js("$.out.text"))
        .otherwise(out.str.extract(_key("text", _TEXT_VALUE), 1))
        .alias("_text"),
        pl.coalesce(
            pl.when(is_json).then(js("$.rid")),
            pl.col("rid"),
            pl.when(~is_json).then(meta.str.extract(_key("id", _STR), 1).str.strip_chars("'\"")),
        ).alias("rid"),
    )
    df = df.with_columns(
        pl.when(pl.col("event") != "finished").then(None).otherwise(pl.col("_text")).alias("_text")
    )
    texts, messages, formats = df["_text"].to_list(), df["_message"].to_list(), df["format"].to_list()
    rows = [_returned_text(t, f) for t, f in zip(texts, formats, strict=True)]
    msgs = [_py_str(m) if f == "text" else m for m, f in zip(messages, formats, strict=True)]
    df = df.with_columns(
        pl.Series("finish_message", msgs, pl.String),
        *[
            pl.Series(name, [r[i] for r in rows], dtype)
            for i, (name, dtype) in enumerate(_TEXT_COLUMNS.items())
        ],
    )
    return _conform(df, REQUEST_LOG)


_JSON_EVENTS = {
    "request.received": "received",
    "request.received.openai": "received_openai",
    "request.finished": "finished",
}
_TEXT_COLUMNS = {
    "output_text": pl.String,
    "output_chars": pl.Int64,
    "output_cut": pl.Boolean,
    "markup_leak": pl.String,
    "markup": pl.String,
}


def _returned_text(raw: str | None, fmt: str) -> tuple:
    """``_TEXT_COLUMNS`` of one returned text as the line holds it (a repr token or a JSON string)."""
    if raw is None:
        return None, None, None, None, None
    if fmt == "text":
        m = _CUT_PARTS.match(raw)
        parts = [_py_str(m.group(1)), _py_str(m.group(2))] if m else [_py_str(raw)]
    else:
        half = _JSON_CUT // 2
        cut = len(raw) == _JSON_CUT + 3 and raw[half : half + 3] == "..."
        parts = [raw[:half], raw[half + 3 :]] if cut else [raw]
    found = [find_markup(p) for p in parts]
    family, token = next(((f, t) for f, t in found if f), (None, None))
    text = " ... ".join(p or "" for p in parts)
    chars = sum(len(p or "") for p in parts)
    return text[:REQUEST_TEXT_CHARS], chars, len(parts) == 2, family, token


_PYSPY_FAILED = ("pyspy_failed", "pyspy_failed_cmd")


def watchdogs(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per watchdog-family record (``WATCHDOG_PATTERNS``), with its fields parsed.

    Returns:
        ``WATCHDOGS`` columns: provenance, ``watchdog_kind`` (``watchdog_timeout``, ``debug_info``,
        ``pyspy_failed``, ``sigquit``, ``nccl_watchdog``), ``timeout_s`` (seconds; the NCCL
        ``Timeout(ms)`` converted), ``soft`` (Boolean), ``target_pid`` (the PID py-spy failed on),
        ``nccl_seq``, ``nccl_op``, ``numel_in``, ``numel_out``, ``ran_for_ms`` (the NCCL
        ``WorkNCCL(…)`` fields), ``rid`` (first rid of the batch a watchdog printed), ``reason``
        (the error text of a failed py-spy), ``level``, ``source``, ``source_pos``.
    """
    base = _select_kind(ev, "watchdog")
    if base.height == 0:
        return pl.DataFrame(schema=WATCHDOGS.schema)
    hit = _recognise(base, WATCHDOG_PATTERNS)
    df = pl.concat([base, hit.select("pattern")], how="horizontal").filter(pl.col("pattern").is_not_null())
    if df.height == 0:
        return pl.DataFrame(schema=WATCHDOGS.schema)
    rid_room = _rid_room(df, pl.Series(["watchdog"] * df.height))
    body = pl.col("body")
    wd = body.str.extract_groups(PATTERNS_BY_NAME["watchdog_timeout"].regex)
    nccl = body.str.extract_groups(PATTERNS_BY_NAME["nccl_watchdog"].regex)
    pyspy_failed = pl.struct(
        [
            pl.coalesce(
                [body.str.extract_groups(PATTERNS_BY_NAME[n].regex).struct.field(f) for n in _PYSPY_FAILED]
            ).alias(f)
            for f in ("pid", "reason")
        ]
    )
    work = body.str.extract_groups(PATTERNS_BY_NAME["collective_work_state"].regex)
    crashed = body.str.extract_groups(PATTERNS_BY_NAME["subprocess_crashed"].regex)
    subkind = pl.col("pattern").replace_strict(
        {p.name: p.subkind for p in WATCHDOG_PATTERNS}, default=None, return_dtype=pl.String
    )
    df = pl.concat([df, rid_room.select("rid")], how="horizontal").with_columns(
        subkind.alias("watchdog_kind"),
        pl.coalesce(
            wd.struct.field("timeout").cast(pl.Float64, strict=False),
            nccl.struct.field("timeout_ms").cast(pl.Float64, strict=False) / 1000.0,
        ).alias("timeout_s"),
        wd.struct.field("soft")
        .replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)
        .alias("soft"),
        pl.coalesce(pyspy_failed.struct.field("pid"), crashed.struct.field("pid"))
        .cast(pl.Int32, strict=False)
        .alias("target_pid"),
        work.struct.field("enq").cast(pl.Int64, strict=False).alias("last_enqueued"),
        work.struct.field("done").cast(pl.Int64, strict=False).alias("last_completed"),
        crashed.struct.field("code").cast(pl.Int32, strict=False).alias("exit_code"),
        nccl.struct.field("seq").cast(pl.Int64, strict=False).alias("nccl_seq"),
        nccl.struct.field("op").alias("nccl_op"),
        nccl.struct.field("numel_in").cast(pl.Int64, strict=False).alias("numel_in"),
        nccl.struct.field("numel_out").cast(pl.Int64, strict=False).alias("numel_out"),
        nccl.struct.field("ran_ms").cast(pl.Int64, strict=False).alias("ran_for_ms"),
        pyspy_failed.struct.field("reason").alias("reason"),
        _resolve_role(pl.lit(None, pl.String)).alias("role"),
    )
    return _conform(df, WATCHDOGS)


def tracebacks(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per record holding a Python traceback (any kind), with its innermost frame.

    Returns:
        ``TRACEBACKS`` columns: provenance, ``component`` (``Scheduler`` in ``Scheduler hit an
        exception``, else null), ``exception`` (type of the last exception line, null when the
        excerpt is cut before it), ``exc_message``, ``function``/``file``/``line`` of the innermost
        ``File "…", line N, in f`` frame (``file`` is the path as printed), ``n_frames`` (Int32),
        ``traceback`` (text from ``Traceback`` to the end), ``level``, ``source``, ``source_pos``.
    """
    texts = [c for c in ("body", "message") if c in ev.columns]
    if texts:  # filter before _base copies every column
        ev = ev.filter(pl.coalesce(texts).str.contains("Traceback (most recent call last)", literal=True))
    base = _base(ev)
    base = base.filter(pl.col("body").str.contains("Traceback (most recent call last)", literal=True))
    if base.height == 0:
        return pl.DataFrame(schema=TRACEBACKS.schema)
    body = pl.col("body")
    tb = body.str.extract(r"(?s)(Traceback \(most recent call last\):.*)$", 1).str.strip_chars_end()
    frames = tb.str.extract_all(r'File "[^"\n]*", line \d+, in [^\n]+')
    last = frames.list.last().str.extract_groups(
        r'File "(?P<file>[^"\n]*)", line (?P<line>\d+), in (?P<func>[^\n]+)'
    )
    exc_line = tb.str.extract(EXCEPTION_AFTER_FRAMES, 1)
    exc = exc_line.str.extract_groups(
        r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Error\w*)?)(?::\s?(?P<msg>.*))?$"
    )
    df = base.with_columns(
        body.str.extract(r"(\w+) hit an exception", 1).alias("component"),
        exc.struct.field("type").alias("exception"),
        exc.struct.field("msg").alias("exc_message"),
        last.struct.field("func").str.strip_chars().alias("function"),
        last.struct.field("file").alias("file"),
        last.struct.field("line").cast(pl.Int32, strict=False).alias("line"),
        frames.list.len().cast(pl.Int32).alias("n_frames"),
        tb.alias("traceback"),
    )
    # An exception line only counts when it follows the frames (not a frame's source line).
    df = df.with_columns(
        pl.when(pl.col("exception").is_not_null() & ~exc_line.str.starts_with(" "))
        .then(pl.col("exception"))
        .alias("exception")
    )
    return _conform(df, TRACEBACKS)


# =============================================================================================
# Recognition
# =============================================================================================


def _recognise(base: pl.DataFrame, patterns: list[LinePattern] | None = None) -> pl.DataFrame:
    """Per row of ``base``: ``pattern`` (name or null), ``kind`` (``other`` when none),
    ``content_role``. With ``patterns`` only those are tried (used to re-find a known kind)."""
    n = base.height
    idx = pl.int_range(n, dtype=pl.UInt32, eager=True).alias("_i")
    frame = pl.DataFrame([idx, base["body"].fill_null("")])
    names = {p.name for p in patterns} if patterns is not None else None
    anchors = list(dict.fromkeys(p.anchor for p in (patterns or ALL_PATTERNS)))
    table = _PATTERN_TABLE if names is None else _PATTERN_TABLE.filter(pl.col("pattern").is_in(list(names)))

    router_rows = pl.Series("r", [False] * n) if names is not None else router.is_router_line(base)
    # Fast path for the bulk of a journal: a body that starts with a batch head or is a whole
    # uvicorn access line has its leftmost anchor at the start, so it needs no anchor search.
    fast = []
    todo = ~router_rows
    for pattern in (BATCH_PATTERNS if names is None else []) + (
        [PATTERNS_BY_NAME["uvicorn_access"]] if names is None else []
    ):
        if pattern.kind == "batch":
            hit = (
                todo
                & frame["body"].str.starts_with(pattern.anchor)
                & frame["body"].str.contains(pattern.regex)
            )
        else:
            hit = todo & frame["body"].str.contains(pattern.regex)
        hit = hit.fill_null(False)
        if hit.any():
            fast.append(frame.filter(hit).select("_i", pl.lit(pattern.name).alias("pattern")))
            todo = todo & ~hit
    pairs = (
        frame.filter(todo)
        .select("_i", pl.col("body").str.extract_many(anchors).alias("anchor"))
        .explode("anchor")
        .drop_nulls("anchor")
        .with_row_index("_p")
        .join(table, on="anchor", how="inner")
    )
    confirmed = []
    for name, sub in pairs.partition_by("pattern", as_dict=True).items():
        pattern = PATTERNS_BY_NAME[name[0]]
        bodies = frame["body"].gather(sub["_i"])
        ok = bodies.str.contains(pattern.regex).fill_null(False)
        confirmed.append(sub.filter(ok))
    best = (
        [
            pl.concat(confirmed)
            .sort(["_i", "_p", "prio"])
            .unique("_i", keep="first", maintain_order=True)
            .select("_i", "pattern")
        ]
        if confirmed
        else []
    )
    best = (
        pl.concat(fast + best)
        if fast or best
        else pl.DataFrame(schema={"_i": pl.UInt32, "pattern": pl.String})
    )
    out = pl.DataFrame([idx]).join(best, on="_i", how="left", maintain_order="left")
    kind_of = {p.name: p.kind for p in ALL_PATTERNS}
    role_of = {p.name: p.role for p in ALL_PATTERNS}
    out = out.with_columns(
        pl.col("pattern").replace_strict(kind_of, default=None, return_dtype=pl.String).alias("kind"),
        pl.col("pattern").replace_strict(role_of, default=None, return_dtype=pl.String).alias("content_role"),
    )
    if names is None:
        out = _finish_kinds(out, base, router_rows, frame)
    return out


def _finish_kinds(
    out: pl.DataFrame, base: pl.DataFrame, router_rows: pl.Series, frame: pl.DataFrame
) -> pl.DataFrame:
    """Router rows and access lines get request/health/other from the router module; a record that
    starts like the middle of a py-spy dump is ``pyspy``; the rest is ``other``."""
    kind = out["kind"]
    role = out["content_role"]
    # Access lines and mini_lb lines confirmed by an anchor: request or health by path.
    access = (kind == "request").fill_null(False)
    todo = access | router_rows
    if todo.any():
        sub = base.filter(todo)
        rk = router.kinds(sub)
        positions = todo.arg_true()
        kind = kind.scatter(positions, rk["kind"])
        role = role.scatter(positions, rk["content_role"])
    none = kind.is_null()
    if none.any():
        starts_like_dump = frame["body"].str.contains(PYSPY_FRAME_START).fill_null(False)
        kind = pl.select(
            pl.when(none & starts_like_dump).then(pl.lit("pyspy")).otherwise(kind).alias("kind")
        ).to_series()
    kind = kind.fill_null("other")
    return out.with_columns(kind.alias("kind"), role.alias("content_role"))


def _select_kind(ev: pl.DataFrame, kind: str) -> pl.DataFrame:
    """Rows of ``ev`` of one kind: by its ``kind`` column when it has one, else by ``classify``."""
    if "kind" in ev.columns:
        return _base(ev.filter(pl.col("kind") == kind))
    base = _base(ev)
    if base.height == 0:
        return base
    return base.filter(_recognise(base)["kind"] == kind)


def _rid_room(df: pl.DataFrame, kind: pl.Series) -> pl.DataFrame:
    """``rid`` and ``bootstrap_room`` named anywhere in each record (batches, access lines and
    py-spy dumps are skipped: they name none). Quoted strings are blanked out first (but for the
    value of a ``rid``/``id`` field), so a prompt text quoting ``rid=`` cannot fool it; JSON lines
    are read by key (``rid``, ``obj.rid``, ``out.meta_info.id``, ``obj.bootstrap_room``)."""
    n = df.height
    rid = pl.Series("rid", [None] * n, dtype=pl.String)
    room = pl.Series("bootstrap_room", [None] * n, dtype=pl.Int64)
    look = ~kind.is_in(["batch", "request", "health", "pyspy"]).fill_null(False)
    if not look.any():
        return pl.DataFrame([rid, room])
    pos = look.arg_true()
    body = df["body"].fill_null("").filter(look)
    is_json = body.str.starts_with("{")
    cand = (
        body.str.contains_any(["rid", "'id'", '"id"', "room", "timed out", "kv chunk"]) | is_json
    ).fill_null(False)
    if not cand.any():
        return pl.DataFrame([rid, room])
    sub = pl.DataFrame({"b": body.filter(cand), "j": is_json.filter(cand)})
    masked = pl.col("b").str.replace_all(_MASK_QUOTED, "${keep}")

    def js(*paths: str) -> pl.Expr:
        return pl.coalesce([pl.col("b").str.json_path_match(p) for p in paths])

    g = masked.str.extract_groups(RID_REGEX)
    r = masked.str.extract_groups(ROOM_REGEX)
    text_rid = pl.coalesce(*[g.struct.field(f) for f in ("q1", "q2", "bare", "key", "meta")])
    text_room = pl.coalesce(*[r.struct.field(f) for f in "abcde"])
    out = sub.select(
        pl.when(pl.col("j"))
        .then(js("$.rid", "$.obj.rid", "$.out.meta_info.id", "$.meta_info.id"))
        .otherwise(text_rid)
        .alias("rid"),
        pl.when(pl.col("j"))
        .then(js("$.obj.bootstrap_room", "$.bootstrap_room"))
        .otherwise(text_room)
        .cast(pl.Int64, strict=False)
        .alias("room"),
    )
    where = pos.filter(cand)
    return pl.DataFrame([rid.scatter(where, out["rid"]), room.scatter(where, out["room"])])


def _printed_level(body: pl.Expr) -> pl.Expr:
    g = body.str.extract_groups(PRINTED_LEVEL)
    return pl.coalesce(
        g.struct.field("a"), g.struct.field("b").str.to_uppercase().replace({"WARN": "WARNING"})
    )


# =============================================================================================
# Batches
# =============================================================================================

_HEAD = re.compile(r"^(Prefill|Decode) batch(?:\(mixed #running-req: (\d+)\))?(?: \[(\d+)\])?[.,] ?")
_HEAD_RX = r"^(?P<_bt>Prefill|Decode) batch(?:\(mixed #running-req: (?P<_mixed>[0-9]+)\))?(?: \[(?P<_iter>[0-9]+)\])?[.,] ?"
# A value: printable ASCII but ",". Lines with other characters in a value take the slow path.
_VALUE = r"[\x20-\x2b\x2d-\x7e]*"
_LIST_VALUE = r"\[[\x20-\x5c\x5e-\x7e]*\]"


def _first_line(s: pl.Series) -> pl.Series:
    s = s.fill_null("")
    if s.str.contains("\n", literal=True).any():
        s = s.str.replace(r"(?s)\n.*$", "")
    return s


def _split_items(rest: str) -> list[tuple[str, str | None]]:
    """``key: value`` items of a batch line after its head, split on ``, `` outside brackets."""
    items, depth, cur = [], 0, []
    i = 0
    while i < len(rest):
        ch = rest[i]
        if ch in "[({":
            depth += 1
        elif ch in "])}" and depth:
            depth -= 1
        if depth == 0 and rest.startswith(", ", i):
            items.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    items.append("".join(cur))
    out = []
    for j, raw in enumerate(items):
        item = raw.strip() if j == len(items) - 1 else raw
        if item in ("", ","):
            continue
        if j == len(items) - 1 and item.endswith(","):
            item = item[:-1].rstrip()
        key, sep, value = item.partition(": ")
        if not sep and item.endswith(":"):
            key, value, sep = item[:-1], "", ":"
        out.append((key, value if sep else None))
    return out


def _parse_batch_py(line: str) -> dict:
    """Slow path for one line of a rare shape: the same result as the vectorised path."""
    m = _HEAD.match(line)
    if not m:
        return {}
    row: dict = {"_bt": m.group(1), "_mixed": m.group(2), "_iter": m.group(3)}
    seen: dict[str, int] = {}
    for key, value in _split_items(line[m.end() :]):
        seen[key] = seen.get(key, 0) + 1
        name = key if seen[key] == 1 else f"{key}#{seen[key]}"
        row["k:" + name] = value
    return row


def _shape_regex(line: str) -> tuple[str, str, list[str], dict[str, str]] | None:
    """Regexes for every line of the same key sequence as ``line``: one that matches the whole
    line (for a fast yes/no) and one without the end anchor (to capture, twice as fast), the keys
    in order, and the head columns every such line shares (a head without ``(mixed …)`` or ``[N]``
    is matched as the literal text it is: a fifth faster than capturing it); None when the line
    cannot be described this way (a value holding ``, `` outside brackets, an item without ``: ``)."""
    m = _HEAD.match(line)
    if not m:
        return None
    head, fixed = _HEAD_RX, {}
    if m.group(2) is None and m.group(3) is None:
        head, fixed = "^" + _escape(m.group(0)), {"_bt": m.group(1)}
    items = _split_items(line[m.end() :])
    if not items or any(v is None for _, v in items):
        return None
    parts, keys, seen = [], [], {}
    for i, (key, value) in enumerate(items):
        if "\n" in key or ", " in key:
            return None
        if value.startswith("[") and value.endswith("]"):
            vpat = _LIST_VALUE
        elif ", " in value or "\n" in value:
            return None
        else:
            vpat = _VALUE
        parts.append(f"{_escape(key)}: (?P<v{i}>{vpat})")
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    capture = head + ", ".join(parts)
    return capture + r"(?:, ?|,)?$", capture, keys, fixed


def _escape(text: str) -> str:
    """A literal for the Rust regex engine: letters, digits, space and ``_`` as they are, anything
    else as ``\\x{…}`` (Python's ``re.escape`` emits escapes Rust may refuse)."""
    return "".join(c if c.isalnum() or c in " _" else f"\\x{{{ord(c):x}}}" for c in text)


def _parse_batch_lines(lines: pl.Series) -> pl.DataFrame:
    """Vectorised batch-line parse; one output row per input line, in order (``batch_type`` null
    when the line is not a batch line)."""
    n = lines.len()
    idx = pl.int_range(n, dtype=pl.UInt32, eager=True).alias("_i")
    todo = pl.DataFrame([idx, lines.alias("line")])
    groups = []
    for _ in range(MAX_BATCH_SHAPES):
        if todo.height == 0:
            break
        shape = _shape_regex(todo["line"][0])
        if shape is None:
            break
        whole, capture, keys, fixed = shape
        try:
            ok = todo["line"].str.contains(whole).fill_null(False)
            if not ok[0]:
                break
            hit = todo.filter(ok)
            g = hit["line"].str.extract_groups(capture)
        except pl.exceptions.PolarsError:  # a key the regex engine cannot take: slow path
            break
        matched = (
            pl.DataFrame([hit["_i"], g])
            .unnest(g.name)
            .with_columns(pl.lit(v).alias(c) for c, v in fixed.items())
        )
        renames = {f"v{i}": "k:" + k for i, k in enumerate(keys)}
        groups.append(matched.rename(renames))
        todo = todo.filter(~ok)
    if todo.height:
        rows = [_parse_batch_py(line or "") for line in todo["line"].to_list()]
        slow = pl.DataFrame(rows, infer_schema_length=None) if any(rows) else pl.DataFrame()
        slow = slow.with_columns(todo["_i"]) if slow.width else pl.DataFrame([todo["_i"]])
        slow = slow.with_columns(pl.all().exclude("_i").cast(pl.String))
        groups.append(slow)
    if not groups:
        groups = [pl.DataFrame([idx])]
    # Typed per group (numbers move faster than their text); every line is in exactly one group, so
    # sorting on the row number restores the input order.
    typed = [
        _type_batch_fields(
            g.with_columns(
                pl.lit(None, pl.String).alias(c) for c in ("_bt", "_mixed", "_iter") if c not in g.columns
            )
        )
        for g in groups
    ]
    out = pl.concat(typed, how="diagonal_relaxed")
    return out.sort("_i").drop("_i") if len(typed) > 1 else out.drop("_i")


def _type_batch_fields(raw: pl.DataFrame) -> pl.DataFrame:
    """Raw ``k:<key>`` string columns → typed columns + ``extra`` (JSON text of unknown keys and of
    known keys whose value does not parse)."""
    key_cols = [c for c in raw.columns if c.startswith("k:")]
    raw = raw.with_columns([pl.col(c).str.strip_chars() for c in key_cols])
    typed_exprs, graph_vals, graph_kinds = [], [], []
    checks: dict[str, pl.Expr] = {}  # key column → "a value is there but did not parse"
    for col in key_cols:
        key = col[2:]
        field = BATCH_FIELD_BY_KEY.get(key)
        gm = GRAPH_KEY.match(key)
        present = pl.col(col).is_not_null() & (pl.col(col) != "")
        if field is not None:
            typed_exprs.append(_typed(pl.col(col), field.type).alias(field.column))
            checks[col] = present & pl.col(field.column).is_null()
        elif gm:
            typed_exprs.append(_typed(pl.col(col), "bool").alias("g:" + col))
            graph_vals.append(pl.col("g:" + col))
            graph_kinds.append(pl.when(pl.col(col).is_not_null()).then(pl.lit(gm.group(1))))
            checks[col] = present & pl.col("g:" + col).is_null()
        else:
            checks[col] = pl.col(col).is_not_null()
    df = raw.with_columns(typed_exprs)
    # Only columns with something for extra build JSON (the common line has nothing for it).
    flagged = df.select([e.any().alias(c) for c, e in checks.items()]).row(0, named=True) if checks else {}
    entries = [pl.when(checks[c]).then(_json_entry(c[2:], pl.col(c))) for c, f in flagged.items() if f]
    if df["_mixed"].is_not_null().any():
        entries.append(_json_entry("mixed #running-req", pl.col("_mixed")))
    out = [
        pl.col("_i"),
        pl.col("_bt").str.to_lowercase().alias("batch_type"),
        pl.col("_iter").cast(pl.Int64, strict=False).alias("forward_iter"),
        *[pl.col(f.column) for f in BATCH_FIELDS if f.column in df.columns],
    ]
    if graph_vals:
        out.append(pl.coalesce(graph_vals).alias("graph"))
        out.append(pl.coalesce(graph_kinds).alias("graph_kind"))
    if entries:
        joined = pl.concat_list(entries).list.drop_nulls()
        out.append(
            pl.when(joined.list.len() > 0)
            .then(pl.lit("{") + joined.list.join(", ") + pl.lit("}"))
            .alias("extra")
        )
    return df.select(out)


def _typed(v: pl.Expr, kind: str) -> pl.Expr:
    if kind == "int":
        return v.cast(pl.Int64, strict=False)
    if kind == "float":
        return v.cast(pl.Float64, strict=False)
    if kind == "pct":
        return v.str.strip_suffix("%").str.strip_chars().cast(pl.Float64, strict=False)
    return v.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)


def _json_entry(key: str, value: pl.Expr) -> pl.Expr:
    esc = (
        value.str.replace_all("\\", "\\\\", literal=True)
        .str.replace_all('"', '\\"', literal=True)
        .str.replace_all("\t", "\\t", literal=True)
        .str.replace_all("\r", "\\r", literal=True)
    )
    return pl.lit(json.dumps(key) + ': "') + esc + pl.lit('"')


# =============================================================================================
# Frame helpers
# =============================================================================================

_EV_DEFAULTS = {
    **BASE,
    "boot_id": pl.String,
    "level": pl.String,
    "body": pl.String,
    "message": pl.String,
    "header": pl.String,
    "kind": pl.String,
    "source": pl.String,
    "source_pos": pl.String,
}


def _base(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` with every column the parsers read (missing ones null), body/message never null."""
    cols = []
    for name, dtype in _EV_DEFAULTS.items():
        if name in ev.columns:
            cols.append(pl.col(name).cast(dtype, strict=False))
        elif name == "kind":
            continue
        else:
            cols.append(pl.lit(None, dtype).alias(name))
    df = ev.select(cols)
    return df.with_columns(
        pl.coalesce(pl.col("body"), pl.col("message"), pl.lit("")).alias("body"),
        pl.coalesce(pl.col("message"), pl.col("body"), pl.lit("")).alias("message"),
    )


def _resolve_role(content_role: pl.Expr) -> pl.Expr:
    """The source's own role wins; an unknown one takes the role the text implies."""
    own = pl.col("role")
    unknown = own.is_null() | (own == "unknown")
    return pl.when(unknown).then(pl.coalesce(content_role, pl.lit("unknown"))).otherwise(own)


def _conform(df: pl.DataFrame, table) -> pl.DataFrame:
    return conform(df, table, strict=False)
