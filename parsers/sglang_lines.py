"""SGLang's engine lines as data (lnav style): every pattern family, the fields found anywhere in a
record (rid, room, printed level), the named causes and backends of KV failures, and the batch-line
keys. Each pattern carries the SGLang version (or date) that introduced its line and a sample that
``tests/test_sglang_parsers.py`` parses; ``parsers/sglang.py`` applies them."""

from __future__ import annotations

import json
import re

import polars as pl

from logcorr.parsers import router, systemd
from logcorr.parsers.engine_stats import ENGINE_STATS_PATTERNS
from logcorr.parsers.prefix import GLIBC_ABORT
from logcorr.parsers.pyspy import SURE_FRAME
from logcorr.parsers.roles import FRAME_ROLES
from logcorr.parsers.rules import LinePattern
from logcorr.parsers.sglang_fields import LOGGED_FRAMES, TRACEBACK_FRAGMENT
from logcorr.store.schema import ROOM_TYPE

P = LinePattern

TRANSFER_ERROR_PATTERNS = [
    P(
        "prefill_transfer_failed",
        "transfer_error",
        "Prefill transfer failed",
        # "Prefill transfer failed ... <exception>": the request elided by whoever pasted it (PR #25172)
        r"Prefill transfer failed(?: for request rank=\d+| \.\.\.| …)",
        "≈v0.4.6 (2025-04)",
        "[2026-02-26 12:53:08 TP4] Prefill transfer failed for request rank=4 req.rid='af2f3f99db344fab9f0598c637f163fe'"
        " req.bootstrap_room=6989861766352545488 with exception KVTransferError(bootstrap_room=6989861766352545488):"
        " Decode instance could be dead, remote mooncake session 10.0.0.9:16324 is not alive",
        "prefill",
        "prefill_transfer_failed",
        yields={
            "tp_rank": 4,
            "error_kind": "prefill_transfer_failed",
            "cause": "decode_dead",
            "backend": "mooncake",
            "exception": "KVTransferError",
            "peer": "10.0.0.9:16324",
        },
    ),
    P(
        "prefill_bootstrap_failed",
        "transfer_error",
        "Prefill bootstrap failed for request",
        r"Prefill bootstrap failed for request rank=(?:\d+)",
        "≈v0.4.10 (2025-08)",
        "[2025-08-31 07:26:45 TP0 EP0] Prefill bootstrap failed for request rank=0"
        " req.rid='60d582b2010846a8b337cf88963116e7' req.bootstrap_room=7561186998443553199 with exception"
        " KVTransferError(bootstrap_room=7561186998443553199): Aborted by AbortReq.",
        "prefill",
        "prefill_bootstrap_failed",
        yields={
            "tp_rank": 0,
            "cause": "aborted",
            "exception": "KVTransferError",
            "reason": "Aborted by AbortReq.",
        },
    ),
    P(
        "decode_transfer_failed",
        "transfer_error",
        "Decode transfer failed",
        # "Decode transfer failed ... <exception>": the request elided by whoever pasted it (PR #25172)
        r"Decode transfer failed(?: for request rank=\d+| \.\.\.| …)",
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
        r"Decode handshake failed for request rank=(?:\d+)",
        "≈v0.4.6 (2025-04)",
        "[2026-03-01 10:00:00 TP0] Decode handshake failed for request rank=0 decode_req.req.rid='a1'"
        " decode_req.req.bootstrap_room=2335259855 with exception NIXL KVReceiver Exception",
        "decode",
        "decode_handshake_failed",
        yields={"cause": "nixl_error", "backend": "nixl", "reason": "NIXL KVReceiver Exception"},
    ),
    P(
        "transfer_worker_error",
        "transfer_error",
        "Unexpected transfer worker error for room",
        r"Unexpected transfer worker error for room (?:-?\d+)",
        "≈v0.5.3 (2025-10, NIXL)",
        "[2026-07-21 08:06:26 TP1 EP1] Unexpected transfer worker error for room 5839938415251080346\n"
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 568, in transfer_worker\n'
        "    kv_xfer_handle = self.send_kvcache(\n"
        "nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND",
        "prefill",
        "transfer_worker_error",
        yields={
            "tp_rank": 1,
            "exception": "nixlNotFoundError",
            "reason": "nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND",
        },
    ),
    P(
        "nixl_transport_error",
        "transfer_error",
        "NIXL transport error for room",
        r"NIXL transport error for room (?:-?\d+): (?:[^\n]*)",
        "≈v0.5.5 (2025-11)",
        "[2026-07-21 08:04:41 TP1 EP1] NIXL transport error for room 6555093254675405189: NIXL_ERR_REMOTE_DISCONNECT",
        "prefill",
        "nixl_transport_error",
        yields={"error_kind": "nixl_transport_error", "reason": "NIXL_ERR_REMOTE_DISCONNECT"},
    ),
    P(
        "transfer_failed_for_room",
        "transfer_error",
        "Transfer failed for room",
        r"^Transfer failed for room (?:-?\d+): (?:[^\n]*)",
        "≈2026 (NIXL staging; renamed transport error)",
        "[2026-09-01 10:00:00 TP2] Transfer failed for room 123: NIXL_ERR_REMOTE_DISCONNECT",
        "prefill",
        "nixl_transport_error",
    ),
    P(
        "nixl_transfer_failure",
        "transfer_error",
        "NIXL transfer failure: ",
        # vLLM's NixlConnector pulls the KV cache on the decode side (NIXL READ from the prefill's blocks):
        # its failure records, each with a Context dict, are the decode worker's
        r"NIXL transfer failure: (?P<reason>(?P<cause>\w+)[^|\n]*?)\s*(?:\||$)",
        "vLLM NixlConnector (2026: failure_type and a Context dict; vllm#41863, dynamo#12952 quote it)",
        "(Worker_TP0_EP0 pid=865) ERROR 05-01 15:00:23 [nixl_connector.py:1263] NIXL transfer failure:"
        " handshake_setup_failed | Context: {'failure_type': 'handshake_setup_failed', 'request_id': None,"
        " 'engine_id': 'c92321f8', 'remote_engine_id': 'b6b76ae8-5a6c-4104-bb1d-4966a7cb9e8c'}",
        "decode",
        "nixl_transfer_failure",
        yields={
            "tp_rank": 0,
            "ep_rank": 0,
            "cause": "handshake_setup_failed",
            "backend": "nixl",
            "reason": "handshake_setup_failed; remote engine b6b76ae8-5a6c-4104-bb1d-4966a7cb9e8c",
        },
    ),
    P(
        "kv_connector_transfer_failed",
        "transfer_error",
        "Failed to transfer KV cache for request",
        # vLLM(-Ascend)'s MooncakeConnector: the request (vLLM's id) whose KV cache the worker could not move
        r"Failed to transfer KV cache for request (?P<request_id>[^\s:]+):? ?(?P<reason>[^\n]*)",
        "vLLM-Ascend MooncakeConnector (mooncake_connector.py, 2025-12; vllm-ascend#4866)",
        "(Worker_DP0_TP5 pid=2543213) ERROR 12-10 03:24:54 [mooncake_connector.py:329] Failed to transfer KV cache"
        " for request cmpl-09be0283-e039-40ce-aefa-da0f36c8cd46-0: Mooncake transfer failed, ret: -1",
        None,
        "transfer_failed",
        yields={
            "dp_rank": 0,
            "tp_rank": 5,
            "request_id": "cmpl-09be0283-e039-40ce-aefa-da0f36c8cd46-0",
            "backend": "mooncake",
            "reason": "Mooncake transfer failed, ret: -1",
        },
    ),
    P(
        "mooncake_transfer_failed",
        "transfer_error",
        "Mooncake transfer failed for request",
        r"Mooncake transfer failed for request (?P<request_id>[^\s:,]+)",
        "vLLM-Ascend MooncakeConnector (mooncake_connector.py, 2025-12; vllm-ascend#4866)",
        "(Worker_DP0_TP5 pid=2543213) ERROR 12-10 03:24:54 [mooncake_connector.py:410] Mooncake transfer failed for"
        " request cmpl-09be0283-e039-40ce-aefa-da0f36c8cd46-0",
        None,
        "transfer_failed",
        yields={"request_id": "cmpl-09be0283-e039-40ce-aefa-da0f36c8cd46-0", "backend": "mooncake"},
    ),
    P(
        "transfer_engine_connect_failed",
        "transfer_error",
        "Failed to connect to ",
        # Mooncake's transfer engine could not reach a peer's target or memory segment: the peer as printed
        r"Failed to connect to (?:target|segment): (?P<peer>[^\s,]+)",
        "Mooncake transfer engine (ascend_direct_transport.cpp, 2025-12; vllm-ascend#4866)",
        "E1210 03:24:54.778028 2548307 ascend_direct_transport.cpp:820] Failed to connect to target: 10.0.9.3:25389,"
        " status: 103900",
        None,
        "connect_failed",
        yields={"peer": "10.0.9.3:25389", "backend": "mooncake", "error_kind": "connect_failed"},
    ),
    P(
        "batch_transfer_timeout",
        "transfer_error",
        "data transfer timeout after",
        # Mooncake's transfer engine gives up on a batch of transfers (an INFO glog line naming no request;
        # the connector's per-request failure follows it: batch14/03, vllm-ascend#7846)
        r"Sync batch data transfer timeout after (?P<timeout_ns>\d+)ns",
        "Mooncake transfer engine (transfer_engine_py.cpp, 2026-03; vllm-ascend#7846)",
        "I0331 02:49:30.617945 803444 transfer_engine_py.cpp:454] Sync batch data transfer timeout after 33061142969ns",
        None,
        "batch_transfer_timeout",
        yields={
            "error_kind": "batch_transfer_timeout",
            "cause": "timeout",
            "backend": "mooncake",
            "timeout_s": 33.061142969,
        },
    ),
    P(
        "kv_poll_timeout",
        "transfer_error",
        "timed out after",
        r"Request (?:-?\d+) timed out after (?:[\d.]+)s in KVPoll\.(?:\w+)",
        "≈v0.4.8 (2025-06)",
        "[2025-09-01 10:00:00 TP0] Request 8053843183886796622 timed out after 120.0s in KVPoll.Bootstrapping",
        subkind="timeout",
        yields={"error_kind": "timeout", "kv_poll_state": "Bootstrapping", "timeout_s": 120.0},
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
        # a notice that names no request: queries/findings/transfer.sql folds it into the failures it is told beside
        "bootstrap_timeout_warning",
    ),
    P(
        "send_kv_chunk_failed",
        "transfer_error",
        "Failed to send kv chunk of",
        r"Failed to send kv chunk of (?:-?\d+) to (?:[^\s,]+)",
        "≈v0.4.6 (2025-04, Mooncake)",
        "[2025-06-01 10:00:00 TP0] Failed to send kv chunk of 123 to 10.0.0.5:17001",
        "prefill",
        "send_kv_chunk_failed",
        yields={"cause": "send_kv_chunk_failed", "peer": "10.0.0.5:17001"},
    ),
    P(
        "lost_connection",
        "transfer_error",
        "Lost connection with prefill instance",
        r"Lost connection with prefill instance \(bootstrap_addr: (?:[^)]*)\)",
        "≈v0.4.9 (2025-07)",
        "[2025-09-01 10:00:00 TP0] Lost connection with prefill instance (bootstrap_addr: 10.0.0.7:8998),"
        " 3 requests affected",
        "decode",
        "lost_connection",
        yields={"error_kind": "lost_connection", "peer": "10.0.0.7:8998"},
    ),
    P(
        "bootstrap_info_fetch_failed",
        "transfer_error",
        "prefill parallel info from bootstrap",
        # the decode side asks the prefill's bootstrap server for its parallel layout before any transfer
        r"Error fetching prefill parallel info from bootstrap",
        "≈v0.4.9 (2025-07, disaggregation/common/conn.py)",
        "[2025-10-29 11:00:44] Error fetching prefill parallel info from bootstrap: HTTPConnectionPool("
        "host='127.0.0.1', port=8998): Max retries exceeded with url: /route?engine_rank=-1&target_dp_group=-1"
        " (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish"
        " a new connection: [Errno 111] Connection refused'))",
        "decode",
        "bootstrap_info_fetch_failed",
        yields={
            "error_kind": "bootstrap_info_fetch_failed",
            "cause": "connection_refused",
            "peer": "127.0.0.1:8998",
        },
    ),
    P(
        "room_failed_prefill_down",
        "transfer_error",
        "be failed due to prefill down",
        r"Let room (?:-?\d+) be failed due to prefill down",
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
    P(
        "inflight_poll_state",
        "transfer_error",
        "in inflight queue",
        # a WARNING from #20686 (2026-03-16) to #31075 (2026-07-13), a RuntimeError's text after it
        r"[Uu]nexpected poll(?:ing)? state \S+ for (?:rid|req) \S+ in inflight queue",
        "2026-03 (#20686); RuntimeError from 2026-07 (#31075)",
        "[2026-04-01 10:00:00 TP0] Unexpected polling state 1 for rid 0a1b2c in inflight queue; treating as undone",
        "prefill",
        "inflight_poll_state",
        yields={"error_kind": "inflight_poll_state"},
    ),
    P(
        "consensus_poll_state",
        "transfer_error",
        "from consensus; treating as undone",
        r"PP rank \d+: unexpected poll state \S+ for rid \S+ from consensus; treating as undone",
        "2026-03 (#20686) to 2026-05 (#24967)",
        "[2026-04-01 10:00:00 PP1 TP0] PP rank 1: unexpected poll state 1 for rid 0a1b2c from consensus; treating as undone",
        "prefill",
        "inflight_poll_state",
        yields={"error_kind": "inflight_poll_state"},
    ),
]

ABORT_PATTERNS = [
    P(
        "client_disconnected",
        "abort",
        "Request is disconnected from the client side",
        r"Request is disconnected from the client side(?: \(type \d+\))?\. Abort request",
        "≈v0.4.3 (2025-02)",
        "[http_server] Error: Request is disconnected from the client side (type 3)."
        " Abort request obj.rid='61165a643f00435ca1112901a78071f7'",
        subkind="client_disconnected",
        yields={
            "abort_kind": "client_disconnected",
            "reason": "Request is disconnected from the client side (type 3)",
        },
    ),
    P(
        "http_client_disconnected",
        "abort",
        "[http_server] Client disconnected",
        r"\[http_server\] Client disconnected",
        "≈v0.5.6 (2025-12)",
        "[2026-01-10 10:00:00] [http_server] Client disconnected: Request is disconnected from the client side"
        " (type 1). Abort request obj.rid='0d1c'",
        subkind="client_disconnected",
    ),
    P(
        "abort_request_not_found",
        "abort",
        "Abort request ",  # shared with abort_request_rid: an anchor is no substring of another
        r"Abort request for rid=\S+ not found",
        "≈v0.5.4 (2025-10)",
        "[2026-09-09 21:16:01] Abort request for rid=5e5de8901d2349fd8d9107f21df3ab92 not found in rid_to_state;"
        " likely already finished/removed",
        subkind="abort_request_not_found",
    ),
    P(
        "abort_request_rid",
        "abort",
        "Abort request ",
        r"^Abort request (?:[0-9a-f]{32}|[0-9a-f-]{36})\s*$",
        "≈v0.4.3 (2025-02): the tokenizer manager's abort of a request by its rid (sglang#3695, batch22/06:"
        " a /health_generate probe's request, aborted after its prefill)",
        "[2025-02-19 11:45:46] Abort request a96186a3d0f8424eb67e822d7cc66c57",
        subkind="abort_request",
        yields={"abort_kind": "abort_request", "rid": "a96186a3d0f8424eb67e822d7cc66c57"},
    ),
    P(
        "aborted_request",
        "abort",
        "Aborted request ",
        # another engine's word that it aborted a request (the client went away, a cancel): its id is
        # that engine's (events.request_id), never SGLang's rid
        r"\bAborted request \S",
        "vLLM v1 AsyncLLM.abort (2025); Dynamo's SGLang/vLLM engine handlers (_handle_abort_request)",
        "2025-06-18T11:18:35.766Z  INFO engine._handle_abort_request: Aborted request 353523e8-431d-45b6-879d-fb545e3bfa3b.",
        subkind="aborted_request",
        yields={"abort_kind": "aborted_request", "rid": None},
    ),
    P(
        "scheduler_abort",
        "abort",
        " request. ",
        r"^Abort (?P<_where>[a-z][a-z ]*?) request\. ",
        "≈v0.3 (2024); disagg queues ≈v0.4.7 (2025-06)",
        "[2025-09-01 10:00:00 TP0] Abort bootstrap queue request. req.rid='b9c8'",
        yields={"abort_kind": "abort_bootstrap_queue_request"},
    ),  # abort_kind is "abort_" + where + "_request", e.g. abort_queued_request
]

WATCHDOG_PATTERNS = [
    P(
        "watchdog_timeout",
        "watchdog",
        "atchdog timeout (",
        r"(?:Scheduler )?[Ww]atchdog timeout \((?:self\.)?watchdog_timeout=(?P<timeout_s>[\d.]+)"
        r"(?:, (?:self\.)?soft=(?P<soft>\w+))?\)",
        "v0.3 (2024); soft flag ≈2026",
        "[2025-08-02 19:24:30 TP3] Watchdog timeout (self.watchdog_timeout=300)",
        subkind="watchdog_timeout",
        yields={"watchdog_kind": "watchdog_timeout", "timeout_s": 300.0},
    ),
    P(
        "scheduler_debug_info",
        "watchdog",
        "Scheduler debug info",
        r"Scheduler debug info",
        "≈2026",
        "[2026-05-01 10:00:00 TP0] Scheduler debug info: self.cur_batch=None",
        subkind="debug_info",
    ),
    P(
        "watchdog_batch_info",
        "watchdog",
        "cur_batch.batch_size()=",
        r"cur_batch\.batch_size\(\)=\d+",
        "≈v0.4.4 (2025-03)",
        "[2025-07-11 17:40:14 DP0 TP2] self.cur_batch.batch_size()=1, self.cur_batch.reqs=[Req(rid=8159_6b91,"
        " input_ids=[0, 671])], self.token_to_kv_pool_allocator.available_size()=656177, ",
        subkind="debug_info",
    ),
    P(
        "pyspy_failed",
        "watchdog",
        "Pyspy failed to dump PID",
        r"Pyspy failed to dump PID (?P<target_pid>\d+)\.?(?: Error: (?P<reason>[^\n]*))?",
        "≈v0.4.9 (2025-07)",
        "[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171. Error: /bin/dash: 1: py-spy: not found",
        subkind="pyspy_failed",
        yields={"target_pid": 171, "reason": "/bin/dash: 1: py-spy: not found"},
    ),
    P(
        "pyspy_failed_cmd",
        "watchdog",
        "Pyspy failed (",
        r"Pyspy failed \([^\n]*?--pid (?P<target_pid>\d+)\)\.?(?: Error: (?P<reason>[^\n]*))?",
        "≈2026 (pyspy_dump_schedulers: --native, then again without)",
        "[2026-09-22 01:05:16] Pyspy failed (py-spy dump --native --pid 82). Error: Error: Failed to copy Py_Version symbol",
        subkind="pyspy_failed",
        yields={"target_pid": 82, "reason": "Error: Failed to copy Py_Version symbol"},
    ),
    P(
        "pyspy_all_failed",
        "watchdog",
        "All pyspy dump attempts failed for PID",
        r"All pyspy dump attempts failed for PID \d+",
        "≈2026",
        "[TP0] All pyspy dump attempts failed for PID 20955.",
        subkind="pyspy_failed",
    ),
    P(
        "sigquit",
        "watchdog",
        "Received sigquit from a child",
        r"Received sigquit from a child proces",  # "proces." (sic) in some releases
        "v0.3 (2024)",
        "[2025-08-02 19:24:36] Received sigquit from a child process. It usually means the child failed.",
        subkind="sigquit",
    ),
    P(
        "sigquit_received",
        "watchdog",
        "SIGQUIT received",
        r"SIGQUIT received\.",
        "≈2026",
        "[2026-09-22 01:05:21] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
        subkind="sigquit",
    ),
    P(
        "subprocess_crashed",
        "watchdog",
        "crashed with exit code",
        r"Subprocess \w+(?: \(pid=(?P<target_pid>\d+)\))? crashed with exit code (?P<exit_code>-?\d+)",
        "≈v0.5.10 (2026-03, #18582 liveness monitor)",
        "[2026-04-01 10:00:00] Subprocess scheduler_0 (pid=4242) crashed with exit code -3. Triggering SIGQUIT for cleanup...",
        subkind="subprocess_crashed",
        yields={"target_pid": 4242, "exit_code": -3},
    ),
    P(
        "scheduler_dead",
        "watchdog",
        "scheduler is dead",
        # the launcher's next line is "Exit code: N" (processes[i].exitcode), which child_exits pairs with it
        r"Rank \d+ scheduler is dead",
        "multimodal_gen (2025-12, launch_server.py: a scheduler's pipe closed before it was ready)",
        "[12-16 14:27:08] Rank 0 scheduler is dead. Please check if there are relevant logs.",
        subkind="subprocess_crashed",
    ),
    P(
        "child_failed",
        "watchdog",
        "Child process unexpectedly failed with",
        r"Child process unexpectedly failed with (?:an exit code |exitcode=)(?P<exit_code>-?\d+)\.?(?: pid=(?P<target_pid>\d+))?",
        "v0.4 (2025, the engine's launcher watching its schedulers); 'exitcode=N' in SGLang 0.4.6-0.4.8",
        "[2025-05-23 04:49:21] Child process unexpectedly failed with an exit code 131. pid=247",
        subkind="subprocess_crashed",
        yields={"target_pid": 247, "exit_code": 131},
    ),
    P(
        "torchrun_failure",
        "watchdog",
        "exitcode",
        # torch.distributed.elastic: a ChildFailedError table's entry ("[1]:" … "exitcode  : -6 (pid: 32051)")
        r"\bexitcode\s*: (?P<exit_code>-?\d+) \(pid: (?P<target_pid>\d+)\)",
        "PyTorch ≥1.9 torch.distributed.elastic (torchrun)",
        "[1]:\n  time      : 2025-07-10_21:46:37\n  host      : ip-172-31-21-134.ec2.internal\n  rank      : 1"
        " (local_rank: 1)\n  exitcode  : -6 (pid: 32051)\n  error_file: <N/A>\n  traceback : Signal 6 (SIGABRT)"
        " received by PID 32051",
        subkind="subprocess_crashed",
        yields={"target_pid": 32051, "exit_code": -6},
    ),
    P(
        "deepspeed_launcher_exit",
        "watchdog",
        "exits with return code",
        # DeepSpeed's launcher (launch.py sigkill_handler) reporting a worker's command line and its return code
        # (a negative code: the signal that killed it); the worker's pid is not printed (DeepSpeed#3232, batch19/09)
        r"\] exits with return code = (?P<exit_code>-?\d+)",
        "DeepSpeed ≥0.8 deepspeed/launcher/launch.py",
        "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py',"
        " '--local_rank=0'] exits with return code = -9",
        subkind="subprocess_crashed",
        yields={"exit_code": -9},
    ),
    P(
        "torch_elastic_failed",
        "watchdog",
        ") local_rank: ",
        # torch.distributed.elastic's agent (multiprocessing/api.py) reporting a worker it watched: its exit code
        # (negative: the signal that killed it), local rank and pid (accelerate#3861, batch21/13)
        r"\bfailed \(exitcode: (?P<exit_code>-?\d+)\) local_rank: \d+ \(pid: (?P<target_pid>\d+)\)",
        "PyTorch ≥1.9 torch.distributed.elastic (torchrun, accelerate launch)",
        "E1128 21:12:50.390000 3139541 site-packages/torch/distributed/elastic/multiprocessing/api.py:874] failed"
        " (exitcode: -6) local_rank: 3 (pid: 3139623) of binary: /data1/envs/hd/bin/python3.10",
        subkind="subprocess_crashed",
        yields={"target_pid": 3139623, "exit_code": -6},
    ),
    P(
        "ray_worker_died",
        "watchdog",
        "A worker died or was killed",
        # Ray's raylet reporting a worker process it started that died (SIGSEGV, OOM killer, `ray stop --force`:
        # the line lists them as possible causes, it never says which); the pid is the worker's
        # (vllm#13535, batch21/11)
        r"A worker died or was killed while executing a task by an unexpected system error\."
        r"(?:.*?Worker PID: (?P<target_pid>\d+))?",
        "Ray ≥1.x raylet (node_manager)",
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot"
        " the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: 4006 Node ID: 1a60 Worker IP"
        " address: 10.0.21.1 Worker port: 10005 Worker PID: 270291 Worker exit type: SYSTEM_ERROR",
        subkind="subprocess_crashed",
        yields={"target_pid": 270291},
    ),
    P(
        "tgi_shard_signaled",
        "watchdog",
        "signaled to shutdown with signal",
        # text-generation-inference's launcher watching a shard: the shard killed by a signal (TGI#2593, batch19/13)
        r"Shard process was signaled to shutdown with signal (?P<exit_signal>\d+)",
        "text-generation-inference ≥0.9 launcher (shard-manager)",
        "2024-10-01T07:43:22.342900Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to"
        " shutdown with signal 6 rank=0",
        subkind="subprocess_crashed",
        yields={"exit_code": -6},
    ),
    P(
        "worker_died",
        "watchdog",
        " died, exit code",
        # vLLM's multiprocessing executor watching its workers (multiproc_worker_utils / multiproc_executor)
        r"Worker (?:\w+ )?(?:pid |proc )?(?:\w+ )?pid (?P<target_pid>\d+) died, exit code:? (?P<exit_code>-?\d+)",
        "vLLM v0.5 (2024) multiproc_worker_utils.py",
        "ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 1159 died, exit code: -6",
        subkind="subprocess_crashed",
        yields={"target_pid": 1159, "exit_code": -6},
    ),
    P(
        "collective_work_state",
        "watchdog",
        "last enqueued",
        # the failing work: "at work: N," (torch 2.4-2.7), "at work sequence id: N PG status:" (2.8),
        # "Timeout at NCCL work: N," (the same checkTimeout's follow-up line): every "at … work: N" is the seq
        r"(?:at (?:NCCL |HCCL )?work(?: sequence id)?: (?P<nccl_seq>\d+),? (?:PG status: )?)?"
        r"last enqueued (?:NCCL |HCCL )?work: (?P<last_enqueued>-?\d+), last completed (?:NCCL |HCCL )?work: "
        r"(?P<last_completed>-?\d+)",
        "PyTorch 2.x ProcessGroupNCCL (also HCCL)",
        "[rank1]:[E1112 09:49:50.032579059 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an"
        " error or timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.",
        subkind="collective_work_state",
        yields={"nccl_seq": 1, "last_enqueued": 1, "last_completed": -1},
    ),
    P(
        "nccl_watchdog",
        "watchdog",
        "Watchdog caught collective operation timeout",
        r"Watchdog caught collective operation timeout: Work(?:NCCL|HCCL)\(SeqNum=(?P<nccl_seq>\d+), OpType=(?P<nccl_op>\w+)"
        r"(?:, NumelIn=(?P<numel_in>\d+), NumelOut=(?P<numel_out>\d+))?, Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
        r"(?: ran for (?P<ran_for_ms>\d+) milliseconds)?",
        "PyTorch 2.x ProcessGroupNCCL; WorkHCCL of torch_npu",
        "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] [PG ID 2 PG GUID 3 Rank 3] Process group"
        " watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=432927, OpType=_REDUCE_SCATTER_BASE, NumelIn=88080384, NumelOut=5505024,"
        " Timeout(ms)=600000) ran for 600045 milliseconds before timing out.",
        subkind="nccl_watchdog",
        yields={
            "timeout_s": 600.0,
            "nccl_seq": 432927,
            "nccl_op": "_REDUCE_SCATTER_BASE",
            "numel_in": 88080384,
            "numel_out": 5505024,
            "ran_for_ms": 600045,
        },
    ),
    P(
        "gloo_timeout",
        "watchdog",
        "] Timed out waiting ",
        # Gloo's transport (third_party/gloo/gloo/transport/{tcp,uv}/unbound_buffer.cc: GLOO_THROW_IO_EXCEPTION
        # "Timed out waiting <timeout>ms for recv|send operation to complete"), raised into Python as a RuntimeError
        # by the gloo collective that waited (sglang#29123, batch22/01: a DP-attention all-gather over Gloo, 2 h)
        r"gloo/transport/[^\]\n]*\] Timed out waiting (?P<timeout_ms>\d+)ms for (?P<nccl_op>recv|send) operation",
        "Gloo (PyTorch's third_party/gloo, every release)",
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting"
        " 7200000ms for recv operation to complete",
        subkind="gloo_timeout",
        yields={"timeout_s": 7200.0, "nccl_op": "recv"},
    ),
    P(
        "c10d_watchdog_stuck",
        "watchdog",
        "s watchdog got stuck for",
        # the c10d heartbeat monitor: the NCCL watchdog thread itself made no progress (a hang inside NCCL
        # or CUDA), no collective named (batch13/03)
        r"ProcessGroupNCCL's watchdog got stuck for (?P<timeout_s>\d+) seconds",
        "PyTorch ≥2.3 ProcessGroupNCCL heartbeat monitor",
        "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6]"
        " ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress from watchdog loop",
        subkind="heartbeat_timeout",
        yields={"timeout_s": 480.0, "tp_rank": 6},
    ),
    P(
        "c10d_heartbeat_timeout",
        "watchdog",
        "Heartbeat monitor timed out",
        # torch 2.2-2.3's wording of the same monitor (batch13/01)
        r"Heartbeat monitor timed out!",
        "PyTorch 2.2-2.3 ProcessGroupNCCL heartbeat monitor",
        "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 0] Heartbeat monitor timed out! Process will be terminated"
        " after dumping debug info. workMetaList_.size()=1",
        subkind="heartbeat_timeout",
        yields={"tp_rank": 0},
    ),
    P(
        "nccl_watchdog_wrapped",
        "watchdog",
        "Watchdog caught collective operation timeout",
        # a terminal or a paste broke the line inside WorkNCCL(…): the kind stands, the fields are not guessed;
        # the line ends before the parenthesis closes (a reporter's sentence quoting it shortened,
        # `WorkNCCL(SeqNum=80078...) ran for 600026 milliseconds`, is no watchdog record: nccl#1409, batch19/01)
        r"Watchdog caught collective operation timeout: Work(?:NCCL|HCCL)?(?:\([^)\n]*)?[ \t]*(?:\n|$)",
        "PyTorch 2.x ProcessGroupNCCL, as pasted in sglang#3424",
        "[rank1]:[E210 02:06:33.347835395 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group"
        " watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(S\n"
        "eqNum=1522789, OpType=_ALLGATHER_BASE, NumelIn=298960, NumelOut=4783360, Timeout(ms)=600000) ran for 600003"
        " milliseconds before timing out.",
        subkind="nccl_watchdog",
        yields={"nccl_seq": None, "timeout_s": None},
    ),
    P(
        "hccl_watchdog_terminated",
        "watchdog",
        "HCCL watchdog thread terminated",
        # torch_npu's ProcessGroupHCCL, the NPU counterpart of NCCL's watchdog; no WorkHCCL fields printed
        # on the record's first line: the `what():` line of a C++ terminate repeats it
        r"^[^\n]*HCCL watchdog thread terminated with exception:?(?:[ \t]*(?P<reason>[^\n]*[^\s]))?[ \t]*(?:\n|$)",
        "torch_npu 2.x ProcessGroupHCCL (Ascend NPU)",
        "[rank1]:[E707 07:20:43.220330280 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with"
        " exception: HCCL error, cause: aicore timeout",
        subkind="nccl_watchdog",
        yields={"reason": "HCCL error, cause: aicore timeout", "nccl_seq": None},
    ),
    P(
        "nccl_watchdog_terminated",
        "watchdog",
        "watchdog thread terminated with exception",
        # PyTorch's NCCL watchdog ended on an error other than a collective's timeout (an NCCL error, a
        # CUDA error it saw on the stream); the timeout forms above are tried first
        # (a reason opening with "[Rank N] Watchdog caught …" is a timeout: left to those patterns)
        r"(?:Process group|NCCL) watchdog thread terminated with exception:?[ \t]*(?P<reason>[^\[\s:][^\n]*[^\s])",
        "PyTorch 2.x ProcessGroupNCCL (the `what():` of a c10::DistBackendError)",
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception:"
        " NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
        subkind="nccl_error",
        yields={
            "reason": "NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
            "nccl_seq": None,
            "tp_rank": 1,
        },
    ),
    P(
        "rank_divergence",
        "watchdog",
        "Found rank divergence for",
        # SGLang's rank-consensus checker (sglang#34406): every rank of the group logs its own hash
        r"Found rank divergence for (?P<reason>\d+ events?\(s\)! local hash: [0-9a-f]+[^\n]*)",
        "≈2026-08 (sglang#34406, utils/rank_consensus)",
        "[2026-08-12 10:00:00 TP1] Found rank divergence for 2 events(s)! local hash: 9f86d081884c7d659a2f,"
        " events = ['check_prefetch_progress called params=(1,)', 'get_next_batch_to_run result=None']",
        subkind="rank_divergence",
        yields={
            "reason": "2 events(s)! local hash: 9f86d081884c7d659a2f, events = ['check_prefetch_progress"
            " called params=(1,)', 'get_next_batch_to_run result=None']"
        },
    ),
    P(
        "fatal_python_error",
        "watchdog",
        "Fatal Python error:",
        # CPython's fatal error handler (faulthandler prints the threads' stacks after it)
        r"^Fatal Python error: (?P<reason>[^\n]*?)\s*(?:\n|$)",
        "CPython 3.x faulthandler",
        "Fatal Python error: Aborted\n\nThread 0x00007f775a7fc640 (most recent call first):\n"
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
        subkind="fatal_python_error",
        yields={"reason": "Aborted"},
    ),
    P(
        "glibc_abort",
        "watchdog",
        "(): ",
        rf"(?P<reason>{GLIBC_ABORT}[^\n]*)",
        "glibc 2.x malloc_printerr (free(): invalid pointer, malloc(): … ; 'free(): double free detected in tcache 2'"
        " glibc 2.29)",
        "free(): invalid pointer",
        subkind="glibc_abort",
        yields={"reason": "free(): invalid pointer"},
    ),
    P(
        "glibc_abort_corrupted",
        "watchdog",
        "corrupt",
        rf"(?P<reason>{GLIBC_ABORT}[^\n]*)",
        "glibc 2.x malloc_printerr (double free or corruption, corrupted size vs. prev_size ≈glibc 2.26)",
        "double free or corruption (!prev)",
        subkind="glibc_abort",
        yields={"reason": "double free or corruption (!prev)"},
    ),
]

# The decode scheduler's retraction (scheduler.py, update_running_batch): the KV cache cannot hold the
# next decode step, so it takes requests out of the running batch and puts them back in the waiting queue,
# and raises new_token_ratio (the share of max_new_tokens it reserves per request). Every TP rank runs the
# same scheduler and prints the same line.
_RETRACT_FIELDS = (
    r"#retracted_reqs: (?P<retracted_reqs>\d+),(?: #[a-z_]+: [\d.]+,)* "
    r"#new_token_ratio: (?P<new_token_ratio_before>[\d.]+) -> (?P<new_token_ratio_after>[\d.]+)"
)
RETRACTION_PATTERNS = [
    P(
        "decode_out_of_memory",
        "retraction",
        "ecode out of memory happened",
        rf"[Dd]ecode out of memory happened[.,] {_RETRACT_FIELDS}",
        "v0.1 (2024-01, 'decode out of memory happened, '); 'Decode out of memory happened. ' ≈v0.3 (2024-09)",
        "[2025-01-06 02:58:44 TP5] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.9446",
        subkind="decode_out_of_memory",
        yields={
            "tp_rank": 5,
            "retracted_reqs": 1,
            "new_token_ratio_before": 0.098,
            "new_token_ratio_after": 0.9446,
        },
    ),
    P(
        "kv_cache_pool_full",
        "retraction",
        "KV cache pool is full. Retract requests.",
        rf"KV cache pool is full\. Retract requests\. {_RETRACT_FIELDS}",
        "≈v0.4.7 (2025-06); #new_tokens_gained ≈2026",
        "[2026-09-13 16:06:07] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 646,"
        " #new_token_ratio: 0.0980 -> 0.3487",
        subkind="kv_cache_pool_full",
        yields={"retracted_reqs": 1, "new_token_ratio_before": 0.098, "new_token_ratio_after": 0.3487},
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
        subkind="component_exception",
        yields={"component": "Scheduler", "function": "process_decode_queue", "line": 1773, "n_frames": 1},
    ),
    P(
        "traceback",
        "traceback",
        "Traceback (most recent call last)",
        r"Traceback \(most recent call last\)",
        "Python",
        "[2025-09-01 10:00:00 TP0] Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 10, in f\n    g()\nValueError: bad',
        subkind="traceback",
        yields={
            "exception": "ValueError",
            "exc_message": "bad",
            "function": "f",
            "file": "/x/scheduler.py",
            "line": 10,
        },
    ),
    P(
        "traceback_fragment",
        "traceback",
        'File "',
        TRACEBACK_FRAGMENT,
        "Python (a capture that began inside a traceback: journalctl -n, a paste)",
        '(EngineCore_DP0 pid=7)   File "/v/worker_base.py", line 326, in init_device\n'
        "(EngineCore_DP0 pid=7)     self.worker.init_device()\n"
        "(EngineCore_DP0 pid=7) ValueError: Free memory on device cuda:0 (0.85/23.56 GiB) on startup",
        subkind="traceback",
        yields={"exception": "ValueError", "function": "init_device", "line": 326, "n_frames": 1},
    ),
    P(
        "logged_frames",
        "traceback",
        'File "',
        LOGGED_FRAMES,
        "Ray Serve ≥2.40 (a request's failure logged with its frames and no `Traceback` line: ray#53267)",
        "ERROR 2025-05-23 00:42:04,876 default_LLMDeployment rcja4aht 700823bf -- Encountered failure while handling"
        ' request 700823bf\n  File "/ray/serve/error_handling_utils.py", line 50, in handle_failure\n'
        "    async for response in async_iterator:\n"
        '  File "/ray/serve/llm_server.py", line 528, in _predict\n'
        "    async for llm_response in self.engine.generate(llm_request):",
        subkind="traceback",
        yields={"function": "_predict", "line": 528, "n_frames": 2},
    ),
]

PYSPY_PATTERNS = [
    P(
        "pyspy_dump",
        "pyspy",
        "Pyspy dump for PID",
        r"Pyspy dump for PID \d+",
        "≈v0.5.4 (2025-10)",
        "[2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:\nProcess 309: sglang::scheduler_TP6\n"
        'Python v3.12.12 (/usr/bin/python3.12)\n\nThread 309 (active): "MainThread"\n'
        "    _apply (penaltylib/min_new_tokens.py:78)",
        subkind="pyspy_dump",
    ),
    P(
        "pyspy_process",
        "pyspy",
        "Process ",
        r"^Process \d+: ",
        "py-spy 0.3",
        "Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0\nPython v3.12.11 (/usr/bin/python3.12)\n\n"
        'Thread 3438121 (idle): "MainThread"\n    send (torch/distributed/distributed_c10d.py:2487)',
        subkind="pyspy_dump",
    ),
    P(
        "pyspy_thread",
        "pyspy",
        "Thread ",
        r"^Thread (?:(?:0x[0-9a-fA-F]+|\d+) )?\((?:active|idle|gil)",
        "py-spy 0.3",
        'Thread 12816 (idle): "Thread-10 (watchdog_thread)"\n    select (selectors.py:415)',
        subkind="pyspy_fragment",
    ),
    P(
        "pyspy_python",
        "pyspy",
        "Python v",
        r"^Python v\d+\.\d+\S* \(",
        "py-spy 0.1+ (a dump pasted from its second header line, the Process line left out)",
        'Python v3.12.3 (/usr/bin/python3.12)\n\nThread 88692 (idle): "MainThread"\n    0x7f9ba3169d71 (libc.so.6)',
        subkind="pyspy_fragment",
    ),
]


def _json_forms(name: str, kind: str, event: str, since: str, sample: str, **kw) -> list[LinePattern]:
    """A ``--log-requests-format json`` line with this ``"event"``, and the same line without spaces
    (``<name>_compact``: a log shipper re-encoding it)."""
    compact = json.dumps(json.loads(sample), separators=(",", ":"))
    return [
        P(name, kind, f'"event": "{event}"', f'"event": "{re.escape(event)}"', since, sample, **kw),
        P(f"{name}_compact", kind, f'"event":"{event}"', f'"event":"{re.escape(event)}"', _COMPACT, compact),
    ]


_COMPACT = "JSON without spaces (a log shipper re-encoding)"
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
        yields={
            "event": "received",
            "rid": "5b02aee35dae49aba98a333ce89964e6",
            "bootstrap_room": 1788380104266545413,
        },
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
        yields={"event": "finished", "finish_type": "length", "completion_tokens": 8, "output_text": "!"},
    ),
    P(
        "receive_openai",
        "request_received",
        "Receive OpenAI: obj=",
        r"Receive OpenAI: obj=",
        "≈2025-12 (serving_base.log_openai_received_request, --log-requests-level 2 and up)",
        "[2026-01-10 10:00:00] Receive OpenAI: obj={'model': 'default', 'messages': [{'role': 'user', 'content':"
        " 'Hi'}], 'rid': 'c0ffee'}",
        yields={"event": "received_openai", "rid": "c0ffee"},
    ),
    *_json_forms(
        "json_received",
        "request_received",
        "request.received",
        "≈v0.5.5 (2025-11, --log-requests-format json)",
        '{"timestamp": "2025-12-01T10:00:00.123456", "event": "request.received", "rid": "c0ffee",'
        ' "obj": {"text": "Hi", "rid": "c0ffee", "bootstrap_room": 42}}',
    ),
    *_json_forms(
        "json_received_openai",
        "request_received",
        "request.received.openai",
        "≈2025-12 (--log-requests-format json, level 2 and up)",
        '{"timestamp": "2026-01-10T10:00:00.1", "event": "request.received.openai", "rid": "c0ffee",'
        ' "obj": {"model": "default", "rid": "c0ffee"}}',
    ),
    *_json_forms(
        "json_finished",
        "request_finished",
        "request.finished",
        "≈v0.5.5 (2025-11, --log-requests-format json)",
        '{"timestamp": "2025-12-01T10:00:01.5", "event": "request.finished", "rid": "c0ffee",'
        ' "obj": {"rid": "c0ffee", "bootstrap_room": 42}, "out": {"meta_info": {"id": "c0ffee"}}}',
        yields={"event": "finished", "format": "json", "rid": "c0ffee", "bootstrap_room": 42},
    ),
]


# Req.log_time_stats (managers/schedule_batch.py, --enable-request-time-stats-logging), printed by
# attention-TP rank 0 when a request finishes; its type= is the engine's disaggregation mode.
_TIME_STATS_HEAD = (
    r"Req Time Stats\(rid=[^,\s)]+(?:, bootstrap_room=\d+)?, input len=(?P<input_len>\d+),"
    r" output len=(?P<output_len>\d+), type="
)
TIME_STATS_PATTERNS = [
    P(
        "req_time_stats_prefill",
        "req_time_stats",
        "Req Time Stats(rid=",
        _TIME_STATS_HEAD + r"(?P<disagg_mode>prefill)\)",
        "≈2025-10 (PD TimeStats); entry_time, transfer_speed, #retries ≈2026",
        "[2026-03-02 08:14:05 TP0] Req Time Stats(rid=9f1c2e0b7a6d4e3f8a1b2c3d4e5f6a7b,"
        " bootstrap_room=4611686018427387911, input len=1024, output len=1, type=prefill):"
        " bootstrap_duration=12.50ms, alloc_wait_duration=0.40ms, queue_duration=3.10ms,"
        " forward_duration=85.02ms, entry_time=1772439245.012, transfer_speed=18.25 GB/s,"
        " transfer_total=120.00 MB, #retries=0",
        "prefill",
        yields={
            "rid": "9f1c2e0b7a6d4e3f8a1b2c3d4e5f6a7b",
            "bootstrap_room": 4611686018427387911,
            "disagg_mode": "prefill",
            "input_len": 1024,
            "bootstrap_s": 0.0125,
            "forward_s": 0.08502,
            "transfer_gb_s": 18.25,
            "retries": 0,
            "role": "prefill",
        },
    ),
    P(
        "req_time_stats_decode",
        "req_time_stats",
        "Req Time Stats(rid=",
        _TIME_STATS_HEAD + r"(?P<disagg_mode>decode)\)",
        "≈2025-10 (PD TimeStats)",
        "[2025-10-20 16:02:11 TP0] Req Time Stats(rid=0d5c, bootstrap_room=77, input len=12, output len=256,"
        " type=decode): prealloc_duration=4.00ms, transfer_duration=30.50ms, queue_duration=0.20ms,"
        " forward_duration=2100.75ms, start_time=51234.567",
        "decode",
        yields={
            "rid": "0d5c",
            "bootstrap_room": 77,
            "output_len": 256,
            "prealloc_s": 0.004,
            "transfer_s": 0.0305,
            "queue_s": 0.0002,
            "entry_ts": None,
            "role": "decode",
        },
    ),
    P(
        "req_time_stats",
        "req_time_stats",
        "Req Time Stats(rid=",
        _TIME_STATS_HEAD + r"(?P<disagg_mode>\w+)\)",
        "≈v0.4.9 (2025-07)",
        "[2025-07-24 04:10:19] Req Time Stats(rid=b2bb906b3afe40ada934bcade595dcb3, input len=69, output len=4621,"
        " type=unified): queue_duration=0.00ms, forward_duration=1753355419058.33ms, start_time=0.0",
        yields={"disagg_mode": "unified", "bootstrap_room": None, "output_len": 4621, "queue_s": 0.0},
    ),
]

# SGLang's request-metrics exporter (--export-metrics-to-file, managers/request_metrics_exporter.py):
# files sglang-request-metrics-YYYYMMDD_HH.log, one record per finished request, the request's fields
# as a JSON string beside the meta_info keys.
METRICS_RECORD_PATTERNS = [
    P(
        "request_metrics_record",
        "request_finished",
        '{"request_parameters": ',
        r'^\{"request_parameters": "',
        "≈v0.5.4 (2025-10, --export-metrics-to-file, PR #10973)",
        '{"request_parameters": "{\\"rid\\": \\"c0ffee\\", \\"bootstrap_room\\": 42, \\"stream\\": false}",'
        ' "id": "c0ffee", "finish_reason": {"type": "abort", "message": "Abort before prefill", "status_code": 500},'
        ' "prompt_tokens": 12, "completion_tokens": 0, "cached_tokens": 0, "e2e_latency": 0.5,'
        ' "response_sent_to_client_ts": 1781167822.7474675}',
        yields={
            "event": "finished",
            "format": "metrics_export",
            "rid": "c0ffee",
            "bootstrap_room": 42,
            "finish_type": "abort",
            "status_code": 500,
            "prompt_tokens": 12,
            "e2e_latency_s": 0.5,
        },
    ),
]

HEALTH_PATTERNS = [
    P(
        "health_check_failed",
        "health",
        "Health check failed",
        r"Health check failed",
        "≈v0.4.3 (2025-02)",
        "[2025-09-01 10:00:00] Health check failed. Server couldn't get a response from detokenizer for last 20"
        " seconds. tic start time: 10:00:00. last_heartbeat time: 09:59:40",
        subkind="health_check_failed",
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
    + RETRACTION_PATTERNS
    + TRACEBACK_PATTERNS
    + PYSPY_PATTERNS
    + REQUEST_LOG_PATTERNS
    + METRICS_RECORD_PATTERNS
    + TIME_STATS_PATTERNS
    + HEALTH_PATTERNS
    + ENGINE_STATS_PATTERNS
)
# Access and mini_lb lines are found by the same anchor pass; router.kinds then says request/health.
ROUTER_ANCHOR_PATTERNS = [
    LinePattern(f.name, "request", f.anchor, f.regex, f.since, f.sample, f.role, None)
    for f in router.ACCESS_FORMATS
]
# systemd's messages about a unit (parsers/systemd.py) are found by the same anchor pass.
LIFECYCLE_PATTERNS = [
    LinePattern(f"{source}_{m.event}", "lifecycle", m.anchor, m.regex, since, m.sample, None, m.event)
    for source, since, messages in [
        ("systemd", "systemd 245-256", systemd.UNIT_MESSAGES),
        ("uvicorn", "uvicorn 0.11", systemd.SERVER_MESSAGES),
        ("sglang", "SGLang ≈v0.4.6 (2025-05, tokenizer_manager.sigterm_handler)", systemd.ENGINE_MESSAGES),
        # (one pattern name per message: the two shell wordings have one event)
        ("shell", "bash", systemd.SHELL_MESSAGES[:1]),
        ("shell_zh", "bash, zh_CN locale", systemd.SHELL_MESSAGES[1:]),
    ]
    for m in messages
]
ALL_PATTERNS = ENGINE_PATTERNS + ROUTER_ANCHOR_PATTERNS + LIFECYCLE_PATTERNS
ANCHORS = list(dict.fromkeys(p.anchor for p in ALL_PATTERNS))
# (priority = place in ALL_PATTERNS; kind and content_role of each pattern)
PATTERN_TABLE = pl.DataFrame(
    [(p.anchor, p.name, i, p.kind, p.role) for i, p in enumerate(ALL_PATTERNS)],
    schema=["anchor", "pattern", ("prio", pl.Int32), "kind", "content_role"],
    orient="row",
)
PATTERNS_BY_NAME = {p.name: p for p in ALL_PATTERNS}

# A record that starts like the middle of a py-spy dump (an excerpt pasted from the middle).
# Its first line is a frame: Python's ``f (file.py:N)`` or a native one in a library (``0x… (libc.so.6)``);
# unindented, two such lines (a stack pasted without its header and indent, sglang#36702, batch22/08).
PYSPY_FRAME_START = (
    r"^(?: {2,}\S[^\n]* \([^()\n]*(?::\d+|\.so(?:\.[\d.]+)?)\)\s*(?:\n|$)"
    rf"|{SURE_FRAME}\n{SURE_FRAME}(?:\n|$))"
)

# ---------------------------------------------------------------------------------------------
# Fields found anywhere in a record: request id and bootstrap room (first occurrence wins).
RID_REGEX = (
    r"\brid=(?:'(?P<q1>[^'\n]*)'|\"(?P<q2>[^\"\n]*)\"|(?P<bare>[\w.:-]+))"
    r"|[\"']rid[\"']: ?[\"'](?P<key>[^\"'\n]*)[\"']"
    r"|[\"']meta_info[\"']: ?\{[\"']id[\"']: ?[\"'](?P<meta>[^\"'\n]*)[\"']"
)
# Request ids of other components (events.request_id): vLLM's OpenAI ids (chatcmpl-…, cmpl-…), a KV
# connector's dict or JSON key 'request_id' (vLLM's NixlConnector failure Context), and an id after
# "request" or "stream" (a dashed UUID or 32 hex digits, bare or as chatcmpl-/cmpl-<…>[-suffix], with
# vLLM's "<n>_" of the n-th choice in front: Dynamo's "Error processing request …", "Failed to publish
# response for stream …", vLLM's "Added request 13_chatcmpl-…", "Aborted request …"), and an OpenAI
# response object's own 'id' (a printed chat.completion). In an SGLang-format record the id after
# "request" is SGLang's rid (an SGLang fork's OpenAI layer passes its request id on as the rid). Also
# the first id of a Python list of ids after "for" (vLLM's MooncakeConnector "pulling kv_caches for
# ['973ca62f1bc3666d'] failed"): a hex id of 12 digits or more, a UUID or an OpenAI id, quoted.
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_LISTED = rf"\bfor \[[\"'](?P<listed>(?:[0-9]+_)?(?:chatcmpl-|cmpl-)?(?:{_UUID}|[0-9a-f]{{12,}})(?:-[0-9A-Za-z]+)*)[\"']"
_COMPLETION = r"[\"'](?:chat\.completion(?:\.chunk)?|text_completion)[\"']"
REQUEST_ID_REGEX = (
    r"[\"']request_id[\"']: ?[\"'](?P<key>[^\"'\n]+)[\"']"
    rf"|\b(?:[Rr]equest|stream):? (?P<after>(?:[0-9]+_)?(?:chatcmpl-|cmpl-)?(?:{_UUID}|[0-9a-f]{{32}})(?:-[0-9A-Za-z]+)*)\b"
    r"|(?:^|[\s(\[=:'\"])(?P<openai>(?:[0-9]+_)?(?:chatcmpl|cmpl)-[0-9A-Za-z][\w-]{7,})"
    rf"|[\"']id[\"']: ?[\"'](?P<response>[^\"'\n]+)[\"'], ?[\"']object[\"']: ?{_COMPLETION}"
    rf"|{_LISTED}"
)
_Q1 = r"'(?:[^'\\\n]|\\.)*'"
_Q2 = r'"(?:[^"\\\n]|\\.)*"'
MASK_QUOTED = (
    rf"(?P<keep>\brid=(?:{_Q1}|{_Q2})|[\"']rid[\"']: ?(?:{_Q1}|{_Q2})|[\"']request_id[\"']: ?(?:{_Q1}|{_Q2})"
    rf"|[\"']meta_info[\"']: ?\{{[\"']id[\"']: ?(?:{_Q1}|{_Q2})"
    rf"|[\"']id[\"']: ?(?:{_Q1}|{_Q2}), ?[\"']object[\"']: ?{_COMPLETION}|\bfor \[(?:{_Q1}|{_Q2}))|{_Q1}|{_Q2}"
)
ROOM_REGEX = (
    r"bootstrap_room[\"']?[=:] ?(?P<a>-?\d+)|for room (?P<b>-?\d+)|Request (?P<c>-?\d+) timed out"
    r"|kv chunk of (?P<d>-?\d+)|Let room (?P<e>-?\d+)"
)
# Printed levels a header did not carry: Python's default format, JSON logs.
PRINTED_LEVEL = (
    r"^(?P<a>DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|^\{[^\n]*?\"level\": ?\"(?P<b>[A-Za-z]+)\""
)

# Reasons of KV failures, named (transfer_errors.cause); first match wins.
CAUSES = [
    ("aborted", r"Aborted by AbortReq", "KVTransferError(bootstrap_room=1): Aborted by AbortReq."),
    (
        "timeout",
        r"timed out after [\d.]+s in KVPoll",
        "Request 1 timed out after 300.0s in KVPoll.WaitingForInput",
    ),
    ("timeout", r"data transfer timeout after \d+ns", "Sync batch data transfer timeout after 33061142969ns"),
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
    # the peer's port is closed (nothing listens: the peer is down or not started), as Python's socket says it
    (
        "connection_refused",
        r"\[Errno 111\] Connection refused|ConnectionRefusedError",
        "[Errno 111] Connection refused",
    ),
    (
        "routing_conflict",
        r"follow_bootstrap_room conflict",
        "KVTransferError(bootstrap_room=1): follow_bootstrap_room conflict: dispatched to dp_rank 0 but"
        " bootstrap_room 1 implies dp_rank 1.",
    ),  # the request reached a prefill DP rank its room does not map to (SGLang 2026)
]

# KV transfer backends named by a failure's text (transfer_errors.backend); first match wins.
BACKENDS = [
    ("nixl", r"(?i)\bnixl\b|nixl/conn\.py|NIXL_ERR_", "nixl/conn.py, line 1153, in transfer_worker"),
    ("mooncake", r"(?i)mooncake", "remote mooncake session 10.0.0.9:16324 is not alive"),
    # a glog line of Mooncake's transfer engine names its source file, not the library (NIXL's are nixl_*.cpp)
    (
        "mooncake",
        r"\b\w*_transport\.cpp:\d+\]|\brdma_\w+\.cpp:\d+\]|\btransfer_engine\w*\.cpp:\d+\]",
        "E1210 03:24:54.778062 2548307 ascend_direct_transport.cpp:581] Failed to connect to segment: 10.0.9.3:16381",
    ),
    ("mori", r"(?i)\bmori\b|mori/conn\.py", "disaggregation/mori/conn.py"),
    ("ascend", r"(?i)ascend/conn\.py|\bascend\b", "disaggregation/ascend/conn.py"),
]
# Batch-line keys only a prefill-decode (PD) engine prints: a batch line without any of them comes
# from a server that is not half of a PD pair (role ``engine``).
PD_BATCH_KEYS = [
    f"#{k}-req:" for k in ("prealloc", "inflight", "bootstrap", "unbootstrapped", "transferring", "transfer")
]
# The event loop a traceback runs in names the engine's role (the one rule, in ``parsers/roles.py``).
TRACEBACK_ROLES = list(FRAME_ROLES)

CLASSIFY = {
    "kind": pl.String,
    "rid": pl.String,
    "bootstrap_room": ROOM_TYPE,
    "content_role": pl.String,
    "level": pl.String,
    "room_error": pl.String,
    "request_id": pl.String,
    router.PARSED: pl.Struct(router.PARSED_FIELDS),
}
