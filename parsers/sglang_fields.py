"""The fields SGLang's KV-failure, abort, traceback and ``--log-requests`` records print beside their
patterns, as data (``FieldRule``: a named group per column, the part of the record it is searched in, a
version and a sample with the values it must yield, checked by ``tests/test_sglang_parsers.py``); the
patterns themselves are in ``parsers/sglang_lines.py``, and ``parsers/fields.extract_fields`` applies both."""

from __future__ import annotations

import re

from logcorr.parsers.rules import FieldRule

# The exception line of a traceback: the first unindented line after its last frame (lines may follow
# it: a second log line glued on, a chained exception); null when the excerpt is cut before it. The last
# frame may be the record's first line (a fragment whose start is cut, after a worker prefix). A paste
# that lost the indentation leaves the last frame's code line unindented too: one line with a space or a
# parenthesis before any colon (``raise RuntimeError(f"…")``, never ``RuntimeError: …``) may come first
# (batch13/05).
EXCEPTION_AFTER_FRAMES = (
    r"(?s)(?:(?:.*\n)?(?:\((?:[A-Za-z][\w:.-]* )?pid=\d+[^)\n]*\) )*\s*File \"[^\n]*\n(?:[ \t]+[^\n]*\n)*(?:[^\n:]*[ (][^\n]*\n)?"
    # (or a traceback's very tail: its last code line, indented, and the exception line: batch13/11; behind a
    # worker prefix, batch21/02; its caret line alone, batch20/02)
    r"|^(?:\((?:[A-Za-z][\w:.-]* )?pid=\d+[^)\n]*\) )*(?:[ \t]+\S[^\n]*\n|\^+[ \t]*\n)+)"
    # the line itself: a type and its message, or a type alone, which names a class (CapWords, or a
    # name ending as exceptions do): a bare lower-case word is the tail of a frame line a paste wrapped
    # inside its function name (`… line 39, in R` / `untime`, FastChat#3372, batch25/02), never an exception
    r"([A-Za-z_][\w.]*:[^\n]*|(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*|\w*(?:Error|Exception|Exit|Interrupt|Warning"
    r"|Failure|Fault|Timeout|Abort|error)))(?:\n|$)"
)

# A chained traceback's lead line ("During handling of the above exception, another exception occurred:", "The
# above exception was the direct cause of the following exception:"): the text after the last one is the final
# exception's traceback; its exception line is searched there alone, so that a chain whose final part is cut
# keeps no exception of an earlier part (sglang#7918, batch23/06: a RuntimeError in moe_fused_gate, then the
# capture's own traceback cut before its line).
CHAIN_LEAD = (
    r"(?:During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception):[ \t]*"
)
LAST_CHAINED = rf"(?s)^.*\n(?:\([^)\n]*\) )*{CHAIN_LEAD}\n"

# The parts of a record fields are searched in (``FieldRule.scope``; ``fields.extract_fields``): its first line,
# its traceback (from ``Traceback`` to the end), that traceback's innermost frame line.
FIRST_LINE = r"^([^\n]*)"
# The first line with the indented lines right under it: one line a paste or terminal wrapped
# (sglang#29725: a record over 7 lines, each continuation indented by 2 spaces), joined by spaces. An
# indented line that opens with "+" or "|" is an exception group's border (PEP 654's display: "    +-----",
# "    | Traceback …"), never the rest of the line above: a message ends at the end of its line.
WRAPPED_LINE = r"^([^\n]*(?:\n[ \t]+[^\s+|][^\n]*)*)"
# An exception group member's exception line, behind the group's border (PEP 654's display, Python 3.11+):
# "    | fastapi.exceptions.HTTPException: 500: Prefill bootstrap failed …" (sglang#9926); its type and
# message as printed (an HTTPException's message opens with its status: "500: …").
GROUP_MEMBER_EXCEPTION = (
    r"(?m)^[ \t]*\| ([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Group))(?:: ?([^\n]*))?$"
)
# A traceback whose start is cut (a journal window, `-n 200`, began inside it): the record opens with a
# frame (after a Ray/vLLM worker prefix) and its frames end in an exception line; or, its end cut too (a
# paste of the middle of a stack), it opens with a frame or a frame's code line and holds two frames. A
# frame's tail before the first ``File`` line (its code line and the caret markers of Python 3.11+) is
# part of the cut frame, never the end of the fragment (batch5/11).
# A frame whose function name a terminal cut off (``line 426, in>``: the cut line's end mark) is a frame too.
_FRAME = r"[ \t]*File \"[^\"\n]*\", line \d+, in(?: [^\n]+|>)"
# the cut frame's tail: indented lines, or caret markers pasted from column 1 ("^^^^", sglang pull 3582, batch20/05)
_CUT_TAIL = r"(?:[ \t]+\S[^\n]*\n|\^+[ \t]*\n)*"
# a Ray/vLLM worker prefix before a line ("(EngineCore_DP0 pid=7) ", "(ServeReplica:app:deployment pid=N) ")
_WORKER = r"(?:\((?:[A-Za-z][\w:.-]* )?pid=\d+[^)\n]*\) )"
# a caret line (Python 3.11+'s markers under a code line: "    ^^^^^", "    ~~~~^^^^~~")
_CARETS = r"[ \t]*[~^]*\^[~^]*[ \t]*\n"
TRACEBACK_FRAGMENT = (
    rf"(?:^(?:\((?:[A-Za-z][\w:.-]* )?pid=\d+[^)\n]*\) )*{_CUT_TAIL}{_FRAME}(?:\n[ \t][^\n]*)*"
    r"\n[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|Timeout|Abort)(?::|\n|$)"
    rf"|^(?:\((?:[A-Za-z][\w:.-]* )?pid=\d+[^)\n]*\) )*{_CUT_TAIL}{_FRAME}(?:\n[ \t]+[^\n]*)*\n{_FRAME}"
    # a paste that lost the indentation: a frame in column 1, its code line, the next frame (batch13/05)
    rf"|^File \"[^\"\n]*\", line \d+, in [^\n]+\n(?:[^\n]*\n)?{_FRAME}"
    # the very tail of a traceback: the last frame's code line(s), indented, then its module-qualified
    # exception line (vLLM's API server: "    raise self._format_exception(outputs) from None" /
    # "vllm.v1.engine.exceptions.EngineDeadError: …", batch13/11), also behind a Ray worker prefix (Ray
    # Serve's replica: "(ServeReplica:default:LLMDeployment… pid=14262)     raise …", ray#53267, batch21/02)
    rf"|^{_WORKER}*(?:[ \t]+\S[^\n]*\n)+[a-z_]\w*(?:\.\w+)+\.[A-Z]\w*(?:Error|Exception): \S"
    # or the caret markers under the last frame's code line (Python 3.11+), then any exception line: the carets
    # are a traceback's own ("         ^^^^^^^^^" / "AssertionError: parent does not have child key, …",
    # sglang pull 22592, batch20/02)
    rf"|^{_WORKER}*(?:[ \t]+\S[^\n]*\n)*{_CARETS}"
    r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)(?::|\n|$))"
)
# A logged message with the frames of its exception right below it and no `Traceback` line between (two frames
# at least): Ray Serve's request failure ("… -- Encountered failure while handling request …", ray#53267,
# batch21/02). Its traceback is the text from the first frame on, and only where no ``TRACEBACK_TEXT`` is.
# Python's frames (a line number from 1): backward-cpp's native stacks printed in the same shape (`File "<unknown>",
# line 0, in ibv_destroy_qp`, batch5/14, batch16/08) are no Python traceback.
_PY_FRAME = r"[ \t]*File \"[^\"\n]*\", line [1-9][0-9]*, in(?: [^\n]+|>)"
LOGGED_FRAMES = rf"^[^\n]*\S[^\n]*\n{_PY_FRAME}(?:\n[ \t]+[^\n]*)*\n{_PY_FRAME}"
LOGGED_FRAMES_TEXT = rf"(?s)^[^\n]*\n({_FRAME}.*)$"
# A traceback pasted newest line first (a log viewer's order: each frame's caret line above its code line, that
# above its `File` line; vllm#42389, batch21/08): a caret line followed by a code line and then a `File` line
# never occurs in Python's own order, where the carets follow the code line. Its innermost frame is its first.
# The code line is indented as a code line is (four spaces or more) and is no `File` line itself (a frame without
# code, `File "uvloop/loop.pyx", …`, follows carets in Python's order).
REVERSED_FRAMES = r'(?m)^[ \t]*\^+[ \t]*\n(?:[ \t]*\n)*(?: {4,}|\t)[ \t]*(?:[^\s^F]|F[^i]|Fi[^l])[^\n]*\n(?:[ \t]*\n)*[ \t]*File "'
# From ``Traceback`` to the end, or the whole of a record that is a ``TRACEBACK_FRAGMENT``.
# A frame line after an escaped line end (``\n  File "…", line N, in f``): a traceback printed inside a string.
ESCAPED_FRAME = r'\\n {2}File "[^"\n]*", line \d+, in '
TRACEBACK_TEXT = rf"(?s)(Traceback \(most recent call last\):.*|{TRACEBACK_FRAGMENT}.*)$"
FRAME_LINE = r'File "[^"\n]*", line \d+, in(?: [^\n]+|>)'
ASSERTION_LINE = r"^AssertionError\b"

R = FieldRule
# transfer_errors: what a KV failure prints beside its pattern, in any of them (first rule wins).
TRANSFER_ERROR_FIELDS = [
    R(
        "with_exception",
        # the reason without the closing backtick of a markdown paste (sglang#23342)
        r"with exception:? (?:(?P<exception>[A-Za-z_][\w.]*)\((?:[^()]*)\): ?)?(?P<reason>.*?)[`\s]*$",
        "wrapped_line",
        "≈v0.4.6 (2025-04)",
        "Prefill transfer failed for request rank=4 req.rid='af' req.bootstrap_room=1 with exception"
        " KVTransferError(bootstrap_room=1): Decode instance could be dead",
        {"exception": "KVTransferError", "reason": "Decode instance could be dead"},
        nonempty=True,
    ),
    R(
        "reason_after_room",
        r"(?:for room \d+|Transfer failed for room \d+): (?P<reason>.*)$",
        "first_line",
        "≈v0.5.5 (2025-11, NIXL)",
        "NIXL transport error for room 6555093254675405189: NIXL_ERR_REMOTE_DISCONNECT",
        {"reason": "NIXL_ERR_REMOTE_DISCONNECT"},
    ),
    R(
        "exception_type",
        r"^(?:[\w.]*\.)?(?P<exception>\w+)(?::|$)",
        "exception_line",
        "Python",
        "nixl_cu13._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND",
        {"exception": "nixlNotFoundError"},
    ),
    R(
        "exception_text",
        r"^(?P<reason>.*)$",
        "exception_line",
        "Python",
        "AssertionError: 42",
        {"reason": "AssertionError: 42"},
    ),
    R(
        "rank",
        r"\brank=(?P<tp_rank>\d+)",
        "body",
        "≈v0.4.6 (2025-04)",
        "failed for request rank=4",
        {"tp_rank": 4},
    ),
    R(
        "pp_rank",
        r"\bpp_rank=(?P<pp_rank>\d+)",
        "body",
        "≈v0.4.9 (2025-07, pipeline parallel)",
        "Failed to get kvcache from prefill instance, self.pp_rank=1",
        {"pp_rank": 1},
    ),
    R(
        "kv_poll_state",
        r"KVPoll\.(?P<kv_poll_state>\w+)",
        "body",
        "≈v0.4.8 (2025-06)",
        "Request 1 timed out after 120.0s in KVPoll.Bootstrapping",
        {"kv_poll_state": "Bootstrapping"},
    ),
    R(
        "timeout",
        r"timed out after (?P<timeout_s>[\d.]+)s",
        "body",
        "≈v0.4.8 (2025-06)",
        "Request 1 timed out after 120.0s in KVPoll.Bootstrapping",
        {"timeout_s": 120.0},
    ),
    R(
        "peer_kv_chunk",
        r"kv chunk of \d+ to (?P<peer>[^\s,]+)",
        "first_line",
        "≈v0.4.6 (2025-04, Mooncake)",
        "Failed to send kv chunk of 123 to 10.0.0.5:17001",
        {"peer": "10.0.0.5:17001"},
    ),
    R(
        "peer_bootstrap_addr",
        r"bootstrap_addr: (?P<peer>[^)]*)\)",
        "first_line",
        "≈v0.4.9 (2025-07)",
        "Lost connection with prefill instance (bootstrap_addr: 10.0.0.7:8998), 3 requests affected",
        {"peer": "10.0.0.7:8998"},
    ),
    R(
        "peer_remote_host",
        # a Context dict (vLLM's NixlConnector): 'remote_host': '10.0.7.3', …, 'remote_port': 20098
        r"'remote_host': '(?P<_remote_host>[^'\n]+)'(?:[^}\n]*?'remote_port': (?P<_remote_port>\d+))?",
        "body",
        "vLLM NixlConnector (2026)",
        "Context: {'failure_type': 'transfer_exception', 'remote_host': '10.0.7.3', 'remote_port': 20098}",
        {"_remote_host": "10.0.7.3", "_remote_port": "20098"},
    ),
    R(
        "peer_http_pool",
        # urllib3's error names the server it could not reach (requests to a bootstrap server)
        r"HTTPConnectionPool\(host='(?P<_remote_host>[^'\n]+)', port=(?P<_remote_port>\d+)\)",
        "first_line",
        "urllib3 1.x/2.x",
        "Error fetching prefill parallel info from bootstrap: HTTPConnectionPool(host='127.0.0.1', port=8998): Max",
        {"_remote_host": "127.0.0.1", "_remote_port": "8998"},
    ),
    R(
        "remote_engine",
        r"'remote_engine_id': '(?P<_remote_engine>[^'\n]+)'",
        "body",
        "vLLM NixlConnector (2026)",
        "Context: {'engine_id': 'c9', 'remote_engine_id': 'b6b76ae8-5a6c-4104-bb1d-4966a7cb9e8c'}",
        {"_remote_engine": "b6b76ae8-5a6c-4104-bb1d-4966a7cb9e8c"},
    ),
    R(
        "peer_mooncake_session",
        r"remote mooncake session (?P<peer>\S+) is not alive",
        "first_line",
        "≈v0.4.6 (2025-04, Mooncake)",
        "Decode instance could be dead, remote mooncake session 10.0.0.9:16324 is not alive",
        {"peer": "10.0.0.9:16324"},
    ),
]
# aborts: the line's own words (after ABORT_PATTERNS' own groups).
ABORT_FIELDS = [
    R(
        "client_side",
        r"(?P<reason>Request is disconnected from the client side(?: \(type \d+\))?)",
        "first_line",
        "≈v0.4.3 (2025-02)",
        "[http_server] Error: Request is disconnected from the client side (type 3). Abort request obj.rid='6'",
        {"reason": "Request is disconnected from the client side (type 3)"},
    ),
    R(
        "not_found",
        r"(?P<reason>not found[^\n]*)$",
        "first_line",
        "≈v0.5.4 (2025-10)",
        "Abort request for rid=5e5d not found in rid_to_state; likely already finished/removed",
        {"reason": "not found in rid_to_state; likely already finished/removed"},
    ),
    R(
        "whole_line",
        r"(?P<reason>.*)",
        "first_line",
        "any",
        "Abort bootstrap queue request. req.rid='b9c8'",
        {"reason": "Abort bootstrap queue request. req.rid='b9c8'"},
    ),
]
# watchdogs: what a PyTorch process-group watchdog's what() text prints beside its pattern. NCCL's result
# names are its ncclResult_t values (nccl.h); NCCL writes a socket address as host<port>
# (ncclSocketToString), after "remote peer", "recv from", "send to" or "connect to".
NCCL_RESULTS = (
    "UnhandledCudaError", "SystemError", "InternalError", "InvalidArgument", "InvalidUsage", "RemoteError", "InProgress",
)  # fmt: skip
WATCHDOG_FIELDS = [
    R(
        "nccl_error",
        rf"\b(?P<nccl_error>nccl(?:{'|'.join(NCCL_RESULTS)}))\b",
        "body",
        "PyTorch 2.x ProcessGroupNCCL (getNcclErrorDetailStr: the result's name, then NCCL's last error)",
        "NCCL error: remote process exited or there was a network error, NCCL version 2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        {"nccl_error": "ncclRemoteError"},
    ),
    R(
        "global_rank",
        # PyTorch's ProcessGroupNCCL opens its messages with the global rank ("[Rank 4] Watchdog caught …");
        # a "[PG 2 Rank 0]" rank is of another group, never read here
        r"^\[Rank (?P<tp_rank>[0-9]+)\] ",
        "body",
        "PyTorch 2.x ProcessGroupNCCL (logPrefix: '[Rank N] ')",
        "[Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=20518, OpType=ALLREDUCE)",
        {"tp_rank": 4},
    ),
    R(
        "nccl_peer",
        r"(?:remote peer|recv from|send to|connect to) (?P<_peer_host>[^\s<>]+)<(?P<_peer_port>\d+)>",
        "body",
        "NCCL 2.x socket errors (net_socket / socket.cc), inside PyTorch's what() text",
        "socketProgress: Connection closed by remote peer ip-172-31-36-217.eu-north-1.compute.internal<59116>",
        {"_peer_host": "ip-172-31-36-217.eu-north-1.compute.internal", "_peer_port": "59116"},
    ),
]
# C++'s std::terminate: "terminate called after throwing an instance of 'T'" then "  what():  <message>"
# (libstdc++'s verbose terminate handler). Processes aborting at once interleave these lines mid-word.
TERMINATE_ANNOUNCE = "terminate called after throwing an instance of '"
CPP_TYPE = r"(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*(?:<[^\n]*>)?"

# tracebacks: the innermost frame and the exception line (after TRACEBACK_PATTERNS' own groups).
TRACEBACK_FIELDS = [
    R(
        "innermost_frame",
        # a function name a terminal cut off (``in>``) stays unknown
        r'File "(?P<file>[^"\n]*)", line (?P<line>\d+), in(?: (?P<function>[^\n]+)|>)',
        "last_frame",
        "Python",
        'File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py", line 1773, in pop',
        {
            "file": "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py",
            "line": 1773,
            "function": "pop",
        },
    ),
    R(
        "exception",
        r"^(?P<exception>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Error\w*)?)(?::\s?(?P<exc_message>.*))?$",
        "exception_line",
        "Python",
        "AssertionError: room 42 not in transfer_infos",
        {"exception": "AssertionError", "exc_message": "room 42 not in transfer_infos"},
    ),
]


# --log-requests lines, read by key over SGLang's Python repr (``_dataclass_to_string_truncated``:
# dataclasses as ``Name(f=v, …)``, dicts as ``{'k': v, …}``, strings as ``repr`` and, at level 2, a
# string over 2048 characters as ``'head' ... 'tail'``). A quoted string is one token, so a key is only
# found outside strings, and nested braces/brackets/parentheses (two levels) are skipped whole, so a
# key is only found at the level asked for.
PY_STR = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_FLAT = rf"""[^'"{{}}()\[\]]|{PY_STR}"""
_NEST1 = rf"""[{{(\[](?:{_FLAT})*[}})\]]"""
_NEST2 = rf"""[{{(\[](?:{_FLAT}|{_NEST1})*[}})\]]"""
_TOKEN = rf"""(?:{_FLAT}|{_NEST2})"""


def _key(key: str, value: str, group: str) -> str:
    """A regex over a dict's text (from its ``{``) whose group ``group`` is the value of ``'key'`` at its
    top level."""
    return rf"""(?s)^\{{(?:(?:{_TOKEN})*?, )??'{re.escape(key)}': (?P<{group}>{value})"""


# The dicts of a ``Finish`` line (``FieldRule.scope``; ``fields.extract_fields``): its ``out={…}``, that
# dict's ``meta_info`` and its ``finish_reason`` (a dict or None); group 1 is the dict's text.
REQUEST_OUT = rf"""(?s)Finish: obj=(?:[^'"]|{PY_STR})*?, out=(\{{.*)$"""
META_INFO = _key("meta_info", _NEST2, "meta_info")
FINISH_REASON = _key("finish_reason", rf"{_NEST1}|None", "finish_reason")

# A level-2 Finish line (tests/test_request_log.py's, with the finish reason of the real2 case 05).
FINISH_SAMPLE = (
    "[2025-10-29 21:30:02] Finish: obj=GenerateReqInput(text='Hi', rid='r1', bootstrap_room=7), out={'text':"
    " 'The weather is fine.', 'meta_info': {'id': 'r1', 'finish_reason': {'type': 'abort', 'message':"
    " 'Request running timeout reached.', 'status_code': 503, 'err_type': None}, 'prompt_tokens': 12,"
    " 'completion_tokens': 5, 'cached_tokens': 0, 'e2e_latency': 0.42}}"
)
# request_log, text form (v0.3 onwards, tokenizer_manager.py, since 2025-12-24 utils/request_logger.py):
# column (``_…``: decoded by ``request_log``), key, regex of its value, the dict it is a key of, and
# what FINISH_SAMPLE yields (repr tokens: ``request_log`` strips the quotes of ``finish_type``/``_id``).
_REQUEST_FIELDS = [
    ("finish_type", "type", PY_STR, "finish_reason", "'abort'"),
    ("_message", "message", PY_STR, "finish_reason", "'Request running timeout reached.'"),
    ("status_code", "status_code", r"\d+", "finish_reason", 503),
    ("prompt_tokens", "prompt_tokens", r"-?\d+", "meta_info", 12),
    ("completion_tokens", "completion_tokens", r"-?\d+", "meta_info", 5),
    ("cached_tokens", "cached_tokens", r"-?\d+", "meta_info", 0),
    ("e2e_latency_s", "e2e_latency", r"-?[0-9.]+(?:[eE][-+]?\d+)?", "meta_info", 0.42),
    ("_text", "text", rf"(?:{PY_STR})(?: \.\.\. (?:{PY_STR}))?", "request_out", "'The weather is fine.'"),
    ("_id", "id", PY_STR, "meta_info", "'r1'"),
]
REQUEST_LOG_FIELDS = [
    R(column, _key(key, value, column), scope, "v0.3 (2024, --log-requests)", FINISH_SAMPLE, {column: want})
    for column, key, value, scope, want in _REQUEST_FIELDS
]
# The same fields in the JSON form (``--log-requests-format json``, since 2025-12-24), where those dicts
# are objects; ``request_log`` reads a JSON line's rid from its own ``$.rid``.
_JSON_DICTS = {
    "request_out": "$.out",
    "meta_info": "$.out.meta_info",
    "finish_reason": "$.out.meta_info.finish_reason",
}
REQUEST_LOG_JSON = {
    column: f"{_JSON_DICTS[scope]}.{key}" for column, key, _, scope, _ in _REQUEST_FIELDS if column != "_id"
}
# A request-metrics record (--export-metrics-to-file) has the meta_info keys at its top level and no text.
_METRICS_DICTS = {"meta_info": "$", "finish_reason": "$.finish_reason"}
REQUEST_METRICS_JSON = {
    column: f"{_METRICS_DICTS[scope]}.{key}"
    for column, key, _, scope, _ in _REQUEST_FIELDS
    if column != "_id" and scope in _METRICS_DICTS
}


# req_time_stats: TimeStats.convert_to_duration's fields (managers/schedule_batch.py, later
# observability/req_time_stats.py), each "<stage>_duration=X.XXms"; which ones a line has depends on
# its type= and the version.
_MS = r"(?P<{}_ms>-?\d+(?:\.\d+)?)ms"
_TIME_STATS_SAMPLE = (
    "Req Time Stats(rid=a, bootstrap_room=1, input len=8, output len=1, type=prefill): bootstrap_queue_duration=2.00ms,"
    " queue_duration=3.10ms, forward_duration=85.02ms, transfer_duration=7.25ms, entry_time=1772439245.012,"
    " transfer_speed=18.25 GB/s, transfer_total=120.00 MB, #retries=2"
)
TIME_STATS_FIELDS = [
    R(
        "bootstrap",
        r"\bbootstrap(?:_queue)?_duration=" + _MS.format("bootstrap"),
        "first_line",
        "≈2025-10 (PD TimeStats)",
        _TIME_STATS_SAMPLE,
        {"bootstrap_s": 0.002},
    ),
    R(
        "alloc_wait",
        r"\balloc_wait_duration=" + _MS.format("alloc_wait"),
        "first_line",
        "≈2026",
        "type=decode): bootstrap_duration=1.00ms, alloc_wait_duration=0.50ms,",
        {"alloc_wait_s": 0.0005},
    ),
    R(
        "prealloc",
        r"\bprealloc(?:_queue)?_duration=" + _MS.format("prealloc"),
        "first_line",
        "≈2025-10 (PD TimeStats)",
        "type=decode): prealloc_queue_duration=4.00ms, transfer_duration=1.00ms",
        {"prealloc_s": 0.004},
    ),
    R(
        "transfer",
        r"\btransfer_duration=" + _MS.format("transfer"),
        "first_line",
        "≈2025-10 (PD TimeStats)",
        _TIME_STATS_SAMPLE,
        {"transfer_s": 0.00725},
    ),
    R(
        "queue",
        r"\bqueue_duration=" + _MS.format("queue"),
        "first_line",
        "≈v0.4.9 (2025-07)",
        _TIME_STATS_SAMPLE,
        {"queue_s": 0.0031},
    ),
    R(
        "forward",
        r"\bforward_duration=" + _MS.format("forward"),
        "first_line",
        "≈v0.4.9 (2025-07)",
        _TIME_STATS_SAMPLE,
        {"forward_s": 0.08502},
    ),
    R(
        "entry_time",
        r"\bentry_time=(?P<_entry_time>\d+(?:\.\d+)?)",
        "first_line",
        "≈2026",
        _TIME_STATS_SAMPLE,
        {"_entry_time": "1772439245.012"},
    ),
    R(
        "transfer_speed",
        r"\btransfer_speed=(?P<transfer_gb_s>\d+(?:\.\d+)?) GB/s",
        "first_line",
        "≈2026",
        _TIME_STATS_SAMPLE,
        {"transfer_gb_s": 18.25},
    ),
    R(
        "transfer_total",
        r"\btransfer_total=(?P<transfer_mb>\d+(?:\.\d+)?) MB",
        "first_line",
        "≈2026",
        _TIME_STATS_SAMPLE,
        {"transfer_mb": 120.0},
    ),
    R("retries", r"#retries=(?P<retries>\d+)", "first_line", "≈2026", _TIME_STATS_SAMPLE, {"retries": 2}),
    R(
        "durations",
        r"type=\w+\): (?P<durations>[^\n]*)$",
        "first_line",
        "≈v0.4.9 (2025-07)",
        "Req Time Stats(rid=a, input len=1, output len=2, type=unified): queue_duration=0.00ms, start_time=0.0",
        {"durations": "queue_duration=0.00ms, start_time=0.0"},
    ),
]
