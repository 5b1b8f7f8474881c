"""The fields SGLang's KV-failure, abort and traceback records print beside their patterns, as data
(``FieldRule``: a named group per column, the part of the record it is searched in, a version and a
sample with the values it must yield, checked by ``tests/test_sglang_parsers.py``); the patterns
themselves are in ``parsers/sglang_lines.py``, and ``parsers/sglang.extract_fields`` applies both."""

from __future__ import annotations

from logcorr.parsers.sglang_lines import FieldRule

# The exception line of a traceback: the first unindented line after its last frame (lines may follow
# it: a second log line glued on, a chained exception); null when the excerpt is cut before it.
EXCEPTION_AFTER_FRAMES = (
    r"(?s).*\n\s*File \"[^\n]*\n(?:[ \t]+[^\n]*\n)*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure"
    r"|Fault|Timeout|Abort|error)?(?::[^\n]*)?)(?:\n|$)"
)

# The parts of a record fields are searched in (``FieldRule.scope``; ``sglang.extract_fields``): its first line,
# its traceback (from ``Traceback`` to the end), that traceback's innermost frame line.
FIRST_LINE = r"^([^\n]*)"
TRACEBACK_TEXT = r"(?s)(Traceback \(most recent call last\):.*)$"
FRAME_LINE = r'File "[^"\n]*", line \d+, in [^\n]+'
ASSERTION_LINE = r"^AssertionError\b"

R = FieldRule
# transfer_errors: what a KV failure prints beside its pattern, in any of them (first rule wins).
TRANSFER_ERROR_FIELDS = [
    R(
        "with_exception",
        r"with exception:? (?:(?P<exception>[A-Za-z_][\w.]*)\((?:[^()]*)\): ?)?(?P<reason>.*)$",
        "first_line",
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
# tracebacks: the innermost frame and the exception line (after TRACEBACK_PATTERNS' own groups).
TRACEBACK_FIELDS = [
    R(
        "innermost_frame",
        r'File "(?P<file>[^"\n]*)", line (?P<line>\d+), in (?P<function>[^\n]+)',
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
