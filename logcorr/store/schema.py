"""The table contract: every table logcorr writes, its columns, their types and meaning, in one place.

Readers, parsers, the store, the queries and the renderers import their columns from here; nothing
re-declares a column. ``logcorr tables`` prints this module (``describe``), and a test fails when a
written table has a column this contract lacks, or the other way round.

Conventions (DESIGN.md "Tables"): times are ``Datetime("us", "UTC")``; ``log_ts`` is the time as
printed in the line (no zone); ranks are nullable Int16; ``bootstrap_room`` is Int64 (SGLang masks it
to 63 bits). Every table keeps provenance: ``source`` (path) and ``source_pos`` (``line N``, byte
offset or journal cursor), so any figure leads back to its line. Files live under
``OUT/<table>/origin=<host>/part-N.parquet``.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

UTC_US = pl.Datetime("us", "UTC")
RANK_COLUMNS = ("dp_rank", "pp_rank", "tp_rank", "ep_rank")
ROLES = ("prefill", "decode", "router", "engine", "unknown")
KINDS = (
    "batch",
    "abort",
    "transfer_error",
    "request",
    "request_received",
    "request_finished",
    "req_time_stats",
    "watchdog",
    "retraction",
    "pyspy",
    "traceback",
    "health",
    "lifecycle",
    "metric",
    "span",
    "engine_stats",
    "other",
)


@dataclass(frozen=True)
class Column:
    """One column: its polars type and one line of meaning."""

    dtype: pl.DataType
    meaning: str


@dataclass(frozen=True)
class Table:
    """One table: what a row is, the columns that identify a row, and its columns in order."""

    name: str
    row: str
    key: tuple[str, ...]
    columns: dict[str, Column]

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """``{column: polars type}`` in column order, for ``pl.DataFrame(schema=…)`` and ``conform``."""
        return {name: col.dtype for name, col in self.columns.items()}


TABLES: dict[str, Table] = {}


def _table(name: str, row: str, key: tuple[str, ...], columns: dict[str, Column]) -> Table:
    """Declare a table and register it in ``TABLES`` (whose order, definition order, ``describe`` keeps)."""
    TABLES[name] = Table(name, row, key, columns)
    return TABLES[name]


C = Column
_RANKS = {
    "dp_rank": C(
        pl.Int16, "data-parallel rank (DP) from the line's header or process title; null when not printed"
    ),
    "pp_rank": C(pl.Int16, "pipeline-parallel rank (PP); null when not printed"),
    "tp_rank": C(
        pl.Int16, "tensor-parallel rank (TP); PyTorch's global [rankN] lands here; null when not printed"
    ),
    "ep_rank": C(pl.Int16, "expert-parallel rank (EP); null when not printed"),
}
_PROVENANCE = {
    "source": C(pl.String, "the input path (or the name given to a paste)"),
    "source_pos": C(pl.String, "where in the source: 'line N', a byte offset or a journal cursor"),
}
# polars types of the rank columns, for frames that are not tables.
RANKS = {name: col.dtype for name, col in _RANKS.items()}
_EVENT_ID = C(pl.Int64, "events.event_id of the record this row comes from")
_TS = C(UTC_US, "journald's receive time where there is one, else the printed time read as UTC (µs)")
_HOST = C(
    pl.String,
    "host name: journald _HOSTNAME, a short capture's host, a container's node, a collect bundle's host, "
    "else one the record prints (NCCL host:pid:tid, UCX) or its process's; null when the data names none "
    "(a plain router.log): never guessed from the partition's origin",
)
_ROLE = C(pl.String, "prefill, decode, router, engine (a server that is not half of a PD pair) or unknown")
_PID = C(pl.Int32, "process id (journald _PID); null for plain text without one")
_LEVEL = C(pl.String, "log level as printed (INFO, WARNING, ERROR …); null when the line prints none")
# bootstrap_room's one type, used by every reader that fills it (SGLang draws rooms below 2^63)
ROOM_TYPE = pl.Int64
_ROOM = C(ROOM_TYPE, "bootstrap_room: the 63-bit key of a KV transfer between prefill and decode")
_RID = C(pl.String, "SGLang request id (rid)")
_REQUEST_ID = C(
    pl.String,
    "a request id another component printed, as printed: vLLM's (chatcmpl-…, cmpl-…, a KV connector's"
    " 'request_id'), Dynamo's, the router's; never SGLang's rid; joins across components only by equality",
)
# Columns every parsed event table copies from ``events``, and the ones it ends with.
_IDS = {"event_id": _EVENT_ID, "ts": _TS, "host": _HOST, "role": _ROLE, "pid": _PID}
_BASE = {**_IDS, **_RANKS}
_TAIL = {"level": _LEVEL, **_PROVENANCE}


EVENTS = _table(
    "events",
    "one logical record after multi-line re-joining (a traceback or an embedded dump is one row)",
    ("event_id",),
    {
        "event_id": C(pl.Int64, "unique id; bits 40-52 carry a tag of the origin, so hosts never collide"),
        "ts": _TS,
        "log_ts": C(pl.Datetime("us"), "the time as printed in the line (SGLang prints local time), no zone"),
        "zoned": C(
            pl.Boolean,
            "true: ts has a known zone (journald, an envelope with Z or an offset, the router's UTC); false: ts"
            " is a time printed without a zone, taken as printed; null: no time",
        ),
        "printed_time": C(
            pl.String,
            "a time the line prints without a year or a date, as printed (MM-DD hh:mm:ss.f, hh:mm:ss), which"
            " ts and log_ts cannot hold: no year or date is ever invented; null where log_ts holds the time",
        ),
        "host": _HOST,
        "boot_id": C(pl.String, "journald _BOOT_ID; with host and pid, the process a record came from"),
        "unit": C(pl.String, "systemd unit, compose service or container the record came from"),
        "role": _ROLE,
        "pid": _PID,
        **_RANKS,
        "level": _LEVEL,
        "kind": C(pl.String, "record kind: " + ", ".join(KINDS)),
        "rid": _RID,
        "request_id": _REQUEST_ID,
        "bootstrap_room": _ROOM,
        "message": C(pl.String, "the record's text, its lines joined by newlines"),
        "n_lines": C(pl.Int32, "how many lines were joined into this record"),
        **_PROVENANCE,
    },
)

# The columns that name an engine process, as in ``events``.
_PROCESS = {c: EVENTS.columns[c] for c in ("host", "boot_id", "unit", "role", "pid")}

SOURCES = _table(
    "sources",
    "one input as read",
    ("source",),
    {
        "source": _PROVENANCE["source"],
        "format": C(pl.String, "format found from content: journal, export, json, short, text, pyspy, …"),
        "bytes": C(pl.Int64, "bytes read"),
        "records": C(pl.Int64, "records kept"),
        "unparsed": C(pl.Int64, "records of no known kind (kept in events as kind 'other')"),
        "first_ts": C(
            UTC_US,
            "first record's time; of its zoned records when it holds both clocks (zoneless_first_ts: the others)",
        ),
        "last_ts": C(UTC_US, "last record's time; of its zoned records when it holds both clocks"),
        "errors": C(pl.String, "what could not be read and why; null when nothing"),
        "notes": C(
            pl.String, "how it was read: times printed without a zone taken as printed, entries read once, …"
        ),
        "zoned": C(
            pl.Int64, "records whose time has a known zone (journald, an offset or Z, the router's UTC)"
        ),
        "zoneless": C(
            pl.Int64, "records whose only time is printed without a zone: taken as printed, not UTC"
        ),
        "zoned_first_ts": C(UTC_US, "first time among the zoned records"),
        "zoned_last_ts": C(UTC_US, "last time among the zoned records"),
        "zoneless_first_ts": C(UTC_US, "first time among the zoneless records, as printed (zone unknown)"),
        "zoneless_last_ts": C(UTC_US, "last time among the zoneless records, as printed (zone unknown)"),
        "clock_offset_s": C(
            pl.Float64,
            "two clocks in one record: median seconds its printed time is ahead of its other stamp (the "
            "source's clock, or a second stamp after the header); null when no record carries two that differ",
        ),
        "clock_offset_records": C(pl.Int64, "records that carry two stamps more than 2 s apart"),
        "zone_offset_s": C(
            pl.Float64,
            "the zoneless records' clock ahead of UTC, seconds (-25200: UTC-7), from neighbouring records of"
            " the two clocks whose times differ by a time zone's step to within 2 s (the step most pairs"
            " show); null when no such neighbours (the zone stays unknown)",
        ),
        "zone_offset_pairs": C(pl.Int64, "neighbouring zoned/zoneless record pairs that show a zone's step"),
    },
)

# Batch-line fields: column → (type, meaning). The printed keys and their SGLang versions are in
# ``parsers/batch_lines.py`` (``BATCH_FIELDS``); ``*_pct`` columns are printed with ``%``.
_I, _F = pl.Int64, pl.Float64
BATCH_FIELD_COLUMNS = {
    "new_seq": C(_I, "#new-seq: sequences added by this prefill batch"),
    "new_token": C(_I, "#new-token: tokens prefilled by this batch"),
    "cached_token": C(_I, "#cached-token: prompt tokens served from the prefix cache"),
    "cache_hit_rate_pct": C(_F, "cache hit rate, percent (old versions)"),
    "token_usage": C(_F, "token usage: share of the KV pool in use, 0-1"),
    "full_token_usage": C(_F, "full token usage (SWA hybrid models), 0-1"),
    "swa_token_usage": C(_F, "swa token usage (SWA hybrid models), 0-1"),
    "mamba_usage": C(_F, "mamba usage (Mamba hybrid models), 0-1"),
    "token": C(_I, "#token: tokens in the KV pool"),
    "full_token": C(_I, "#full token (SWA hybrid models)"),
    "swa_token": C(_I, "#swa token (SWA hybrid models)"),
    "mamba_num": C(_I, "mamba num (Mamba hybrid models)"),
    "running_req": C(_I, "#running-req: requests in the running batch"),
    "queue_req": C(_I, "#queue-req: requests waiting"),
    "pending_token": C(_I, "#pending-token"),
    "prealloc_req": C(_I, "#prealloc-req: decode requests pre-allocating KV (PD)"),
    "inflight_req": C(_I, "#inflight-req: prefill requests whose KV is being sent (PD)"),
    "bootstrap_req": C(_I, "#bootstrap-req: requests bootstrapping a KV transfer (PD)"),
    "unbootstrapped_req": C(_I, "#unbootstrapped-req (PD, old versions)"),
    "transferring_req": C(_I, "#transferring-req (PD, old versions)"),
    "transfer_req": C(_I, "#transfer-req: decode requests receiving KV (PD)"),
    "retracted_req": C(_I, "#retracted-req: decode requests retracted for lack of memory"),
    "optimistic_req": C(_I, "#optimistic-req"),
    "pre_allocated_usage": C(_F, "pre-allocated usage (PD decode), 0-1"),
    "accept_len": C(_F, "accept len: speculative decoding's accepted tokens per step"),
    "accept_rate": C(_F, "accept rate: speculative decoding, 0-1"),
    "gen_throughput": C(_F, "gen throughput, token/s"),
    "input_throughput": C(_F, "input throughput, token/s"),
    "fwd_occupancy_pct": C(_F, "fwd occupancy, percent"),
}

BATCHES = _table(
    "batches",
    "one 'Prefill batch' or 'Decode batch' line",
    ("event_id",),
    {
        **_BASE,
        "boot_id": C(pl.String, "with host and pid, the process a batch ran in (pids repeat across boots)"),
        "batch_type": C(pl.String, "prefill or decode, as the line says"),
        "forward_iter": C(pl.Int64, "the [N] forward iteration printed with SGLANG_LOG_FORWARD_ITERS"),
        **BATCH_FIELD_COLUMNS,
        "graph": C(pl.Boolean, "'<device> graph: True|False' as printed (cuda, npu, cpu, musa graph)"),
        "graph_kind": C(pl.String, "which graph: cuda, npu, cpu, musa …"),
        "extra": C(pl.String, "JSON object of every other 'key: value' and of known keys that did not parse"),
        **_TAIL,
    },
)

ABORTS = _table(
    "aborts",
    "one request abort (an abort line, or a KV failure 'Aborted by AbortReq.')",
    ("event_id",),
    {
        **_BASE,
        "rid": _RID,
        "bootstrap_room": _ROOM,
        "abort_kind": C(
            pl.String,
            "abort_<queue>_request as printed, transfer_aborted, finish_abort (a response body whose request"
            " finished as an abort: finish_reason type abort), or aborted_request (another engine's 'Aborted"
            " request <id>.': vLLM, Dynamo; the id in events.request_id)",
        ),
        "error_kind": C(pl.String, "for transfer_aborted: which failure, as in transfer_errors.error_kind"),
        "reason": C(pl.String, "the line's own words"),
        **_TAIL,
    },
)

TRANSFER_ERRORS = _table(
    "transfer_errors",
    "one KV-transfer failure record (prefill or decode side)",
    ("event_id",),
    {
        **_BASE,
        "bootstrap_room": _ROOM,
        "rid": _RID,
        "request_id": _REQUEST_ID,
        "error_kind": C(
            pl.String, "prefill_transfer_failed, decode_transfer_failed, assert_transfer_infos, …"
        ),
        "cause": C(
            pl.String,
            "the named reason: aborted, timeout, prefill_dead, decode_dead, nixl_error, routing_conflict, other_rank (propagated "
            "from the rank that failed first: not the root cause), connection_refused (the peer's port closed), …",
        ),
        "backend": C(
            pl.String, "KV transfer backend the record names: nixl, mooncake, mori, ascend; null when none"
        ),
        "kv_poll_state": C(pl.String, "KVPoll state a timeout names (Bootstrapping, WaitingForInput, …)"),
        "timeout_s": C(pl.Float64, "timeout, seconds"),
        "exception": C(
            pl.String, "exception type as printed (KVTransferError, AssertionError, …); never guessed"
        ),
        "reason": C(pl.String, "the text after 'with exception …:' or the traceback's exception line"),
        "peer": C(pl.String, "address the line names (host:port)"),
        "traceback": C(pl.String, "the joined 'Traceback …' text"),
        **_TAIL,
    },
)

REQUESTS = _table(
    "requests",
    "one HTTP request line: router span/summary, uvicorn or aiohttp access line",
    ("event_id",),
    {
        **_IDS,
        "method": C(pl.String, "HTTP method"),
        "path": C(pl.String, "request path (/generate, /v1/chat/completions, /health …)"),
        "status": C(pl.Int32, "HTTP status code"),
        "latency_ms": C(pl.Float64, "latency, milliseconds"),
        "request_id": C(pl.String, "the router's request id"),
        "rid": _RID,
        "bootstrap_room": _ROOM,
        "prefill_url": C(pl.String, "prefill worker the router chose"),
        "decode_url": C(pl.String, "decode worker the router chose"),
        "bootstrap_port": C(pl.Int32, "prefill bootstrap port"),
        "client": C(pl.String, "client address"),
        "target": C(pl.String, "tracing target of a router line (module path)"),
        "message": C(
            pl.String,
            "the router line's message; for a client's record of an answer (httpx's raise_for_status), the answer's own words it prints",
        ),
        "format": C(pl.String, "which line shape: uvicorn, aiohttp, router_span, router_json …"),
        **_TAIL,
    },
)

ROOMS = _table(
    "rooms",
    "one rid↔bootstrap_room pairing per role and host, as seen in the ingest",
    ("rid", "bootstrap_room", "role", "host"),
    {
        "rid": _RID,
        "bootstrap_room": _ROOM,
        "role": _ROLE,
        "host": _HOST,
        "first_ts": C(UTC_US, "first record naming the pair"),
        "last_ts": C(UTC_US, "last record naming the pair"),
        "n_events": C(pl.Int64, "records naming the pair"),
        "event_id": C(pl.Int64, "events.event_id of the first such record"),
        **_PROVENANCE,
    },
)

REQUEST_LOG = _table(
    "request_log",
    "one --log-requests line of an engine's HTTP server: Receive:, Receive OpenAI:, Finish: or their JSON form;"
    " or one record of its request-metrics file (--export-metrics-to-file)",
    ("event_id",),
    {
        **_BASE,
        "event": C(pl.String, "received, received_openai (the OpenAI request, level 2 and up) or finished"),
        "rid": _RID,
        "bootstrap_room": _ROOM,
        "finish_type": C(
            pl.String, "finished: finish_reason's type (stop, length, abort); null when not logged"
        ),
        "finish_message": C(
            pl.String, "finished: finish_reason's message ('Request running timeout reached.' …)"
        ),
        "status_code": C(pl.Int32, "finished: finish_reason's status_code (503 …); null when none"),
        "prompt_tokens": C(pl.Int64, "finished: meta_info prompt_tokens"),
        "completion_tokens": C(pl.Int64, "finished: meta_info completion_tokens"),
        "cached_tokens": C(
            pl.Int64, "finished: meta_info cached_tokens (prompt tokens served from the prefix cache)"
        ),
        "e2e_latency_s": C(pl.Float64, "finished: meta_info e2e_latency, seconds"),
        "output_text": C(
            pl.String,
            "finished: the returned text as logged, unescaped, cut to its first 400 characters; null when the "
            "line holds none (--log-requests-level 0 or 1)",
        ),
        "output_chars": C(pl.Int64, "finished: characters of the returned text as logged (before our cut)"),
        "output_cut": C(
            pl.Boolean, "finished: SGLang cut the text to head ... tail (over 2048 characters, level 2)"
        ),
        "markup_leak": C(
            pl.String,
            "finished: the tool-call markup family in the returned text (deepseek_tool_calls, deepseek_dsml); "
            "null when none or no text",
        ),
        "markup": C(
            pl.String, "finished: the first markup token found, as printed (<｜DSML｜function_calls> …)"
        ),
        "format": C(
            pl.String,
            "text (a Python repr line), json (--log-requests-format json) or metrics_export (a record of"
            " --export-metrics-to-file: finished only, no text)",
        ),
        **_TAIL,
    },
)

REQ_TIME_STATS = _table(
    "req_time_stats",
    "one Req Time Stats line (--enable-request-time-stats-logging): a finished request's stage durations,"
    " logged by attention-TP rank 0 of the engine that ran the stage",
    ("event_id",),
    {
        **_BASE,
        "rid": _RID,
        "bootstrap_room": _ROOM,
        "disagg_mode": C(pl.String, "the line's type=: prefill, decode or unified (no PD)"),
        "input_len": C(pl.Int32, "input len=: prompt tokens"),
        "output_len": C(pl.Int32, "output len=: tokens generated"),
        "bootstrap_s": C(
            pl.Float64,
            "bootstrap_duration (or prefill's bootstrap_queue_duration): waiting for the peer's handshake, seconds",
        ),
        "alloc_wait_s": C(
            pl.Float64, "alloc_wait_duration: from bootstrap done to memory allocated, seconds"
        ),
        "prealloc_s": C(pl.Float64, "decode: prealloc_duration / prealloc_queue_duration, seconds"),
        "transfer_s": C(pl.Float64, "transfer_duration: the KV cache transfer, seconds"),
        "queue_s": C(pl.Float64, "queue_duration: in the wait queue before the forward pass, seconds"),
        "forward_s": C(pl.Float64, "forward_duration: from the first forward pass to completion, seconds"),
        "entry_ts": C(
            UTC_US,
            "entry_time=: when the request entered its first queue (wall clock, UTC); null when the line"
            " prints start_time (a perf_counter value, before ≈2025-11) or nothing",
        ),
        "transfer_gb_s": C(pl.Float64, "prefill: transfer_speed=, GB/s"),
        "transfer_mb": C(pl.Float64, "prefill: transfer_total=, MB"),
        "retries": C(pl.Int32, "prefill: #retries="),
        "durations": C(
            pl.String, "the text after the closing parenthesis, as printed (every field, any version)"
        ),
        **_TAIL,
    },
)

WATCHDOGS = _table(
    "watchdogs",
    "one watchdog record: SGLang's scheduler watchdog, a py-spy failure, SIGQUIT, a PyTorch NCCL/HCCL watchdog,"
    " a fatal Python error, glibc's abort on a broken heap",
    ("event_id",),
    {
        **_BASE,
        "watchdog_kind": C(
            pl.String,
            "watchdog_timeout, debug_info, pyspy_failed, sigquit, subprocess_crashed, nccl_watchdog "
            "(NCCL or HCCL: a collective past its timeout), gloo_timeout (Gloo's transport: a recv or send of a gloo "
            "collective past its timeout, raised as a RuntimeError), nccl_error (the NCCL watchdog ended on another error: an "
            "NCCL or CUDA error), collective_work_state, fatal_python_error (CPython's 'Fatal Python error:'), "
            "glibc_abort (glibc found its heap broken and aborted the process: 'free(): invalid pointer', 'double "
            "free or corruption', 'corrupted size vs. prev_size', 'malloc(): …'), "
            "rank_divergence (SGLang's rank-consensus check: ranks of a group hashed different events)",
        ),
        "timeout_s": C(pl.Float64, "timeout, seconds (NCCL's Timeout(ms), Gloo's 'waiting Nms' converted)"),
        "soft": C(pl.Boolean, "a soft watchdog (warns, does not kill)"),
        "target_pid": C(pl.Int32, "the pid py-spy failed to dump, or of the subprocess that crashed"),
        "nccl_seq": C(pl.Int64, "WorkNCCL SeqNum"),
        "nccl_op": C(
            pl.String, "WorkNCCL OpType (ALLREDUCE, _REDUCE_SCATTER_BASE …); Gloo's transport op (recv, send)"
        ),
        "numel_in": C(pl.Int64, "WorkNCCL NumelIn"),
        "numel_out": C(pl.Int64, "WorkNCCL NumelOut"),
        "ran_for_ms": C(pl.Int64, "how long the collective ran before the timeout, ms"),
        "last_enqueued": C(pl.Int64, "ProcessGroup's last enqueued collective work number"),
        "last_completed": C(pl.Int64, "ProcessGroup's last completed work number (-1: none ever completed)"),
        "exit_code": C(pl.Int32, "exit code of a crashed subprocess"),
        "exception": C(
            pl.String,
            "C++ exception type the record's process was terminated with, as std::terminate printed it ('terminate"
            " called after throwing an instance of 'c10::DistBackendError'' on the what() record's own line or on"
            " the record right above it); null when not printed, or when interleaved lines name different types",
        ),
        "nccl_error": C(
            pl.String,
            "NCCL result name the what() text prints (ncclRemoteError, ncclSystemError, ncclInternalError,"
            " ncclUnhandledCudaError, ncclInvalidUsage, ncclInvalidArgument, ncclInProgress); null when not printed",
        ),
        "peer": C(pl.String, "remote peer the error names, host:port (NCCL's 'remote peer host<port>')"),
        "rid": C(pl.String, "first rid of the batch the watchdog printed"),
        "reason": C(pl.String, "the line's own words"),
        **_TAIL,
    },
)

RETRACTIONS = _table(
    "retractions",
    "one decode retraction: a scheduler rank found the KV cache too full for the next decode step and put"
    " running requests back in the waiting queue ('Decode out of memory happened.', 'KV cache pool is full."
    " Retract requests.'); every TP rank of the group prints the same retraction",
    ("event_id",),
    {
        **_BASE,
        "retracted_reqs": C(pl.Int64, "#retracted_reqs: requests taken out of the running batch"),
        "new_token_ratio_before": C(pl.Float64, "#new_token_ratio before the retraction (a -> b: a)"),
        "new_token_ratio_after": C(
            pl.Float64,
            "#new_token_ratio after it (a -> b: b): how much of max_new_tokens the scheduler now reserves",
        ),
        **_TAIL,
    },
)

TRACEBACKS = _table(
    "tracebacks",
    "one Python traceback record",
    ("event_id",),
    {
        **{c: _IDS[c] for c in ("event_id", "ts")},
        # a traceback's time is often the only time of a crash: whose clock it is, as on its record
        "zoned": C(
            pl.Boolean,
            "events.zoned of its record: true: ts has a known zone; false: ts is a time printed without a"
            " zone, taken as printed (not UTC); null: no time",
        ),
        **{c: _BASE[c] for c in _BASE if c not in ("event_id", "ts")},
        "component": C(pl.String, "who raised: Scheduler in 'Scheduler hit an exception', …"),
        "exception": C(
            pl.String,
            "exception type of the last exception line after the frames; when the traceback is cut before it,"
            " the type the record prints before it (a logger.exception message's, an exception group member's"
            " '| X: msg'); null when none is printed",
        ),
        "exc_message": C(
            pl.String,
            "that exception line's message, as printed (an HTTPException's opens with its status: '500: …')",
        ),
        "function": C(pl.String, "innermost frame's function"),
        "file": C(pl.String, "innermost frame's file, as printed"),
        "line": C(pl.Int32, "innermost frame's line"),
        "n_frames": C(pl.Int32, "'File …' frames"),
        "traceback": C(pl.String, "the text from 'Traceback' to the end"),
        "lead": C(
            pl.String,
            "the message the record prints before its traceback, on its first line after the header (a"
            " logger.exception message: 'Exception in Replica(…), the replica will be stopped.'); null when the"
            " record opens with the traceback",
        ),
        **_TAIL,
    },
)

LIFECYCLE = _table(
    "lifecycle",
    "one systemd message about a unit (started, stopped, main process exited, restart scheduled, …) or the "
    "engine's HTTP server saying it started or stops",
    ("event_id",),
    {
        **{c: _IDS[c] for c in ("event_id", "ts", "host")},
        "boot_id": C(pl.String, "journald _BOOT_ID"),
        "unit": C(pl.String, "the unit the message is about (named in it, else journald's UNIT=)"),
        "role": _ROLE,
        "event": C(
            pl.String,
            "starting, started, stopping, stopped, exited, failed, start_failed, restart_scheduled, consumed, "
            "deactivated (systemd's); server_started, server_stopping, server_stopped (uvicorn's 'Started "
            "server process [N]', 'Shutting down', 'Finished server process [N]'; server_stopping also for "
            "SGLang's 'SIGTERM received. … shutting down')",
        ),
        "code": C(pl.String, "how the main process ended: exited, killed, dumped"),
        "status": C(pl.String, "its status as printed: 1/FAILURE, 9/KILL, 6/ABRT"),
        "result": C(pl.String, "the unit's result: exit-code, signal, timeout, core-dump, …"),
        "restart_counter": C(pl.Int32, "systemd's restart counter (Restart=): a crash loop counts up"),
        "cpu_s": C(pl.Float64, "CPU time the unit consumed, seconds"),
        "memory_peak_bytes": C(pl.Int64, "memory peak, bytes (systemd 256 and later)"),
        "message": C(pl.String, "the message as logged"),
        **_PROVENANCE,
    },
)

STACKS = _table(
    "stacks",
    "one frame of one thread of one py-spy dump",
    ("capture_id", "thread_id", "depth"),
    {
        "capture_id": C(pl.String, "one py-spy dump of one process"),
        "capture_ts": C(UTC_US, "when the dump was taken (its log line's time, or --captured-at)"),
        "host": _HOST,
        "pid": _PID,
        "process_name": C(pl.String, "process title py-spy printed (sglang::scheduler_TP3 …)"),
        "role": _ROLE,
        **_RANKS,
        "thread_id": C(pl.Int64, "thread id as py-spy printed it"),
        "thread_name": C(pl.String, "thread name (MainThread …); null when none"),
        "thread_state": C(
            pl.String,
            'active, idle, … as py-spy printed it; current: faulthandler\'s "Current thread" (the one that printed'
            " the dump: the one that crashed when a fatal error printed it)",
        ),
        "depth": C(pl.Int32, "0 = innermost frame"),
        "function": C(pl.String, "function name"),
        "file": C(pl.String, "file as printed"),
        "line": C(pl.Int32, "line number"),
        "is_native": C(pl.Boolean, "a native frame (py-spy --native, '0x… (lib.so)')"),
        "locals": C(pl.String, "the frame's locals (py-spy --locals), JSON"),
        "partial": C(pl.Boolean, "the stack is cut short (no thread-entry frame at its base, or elided)"),
        **_PROVENANCE,
    },
)

CAPTURES = _table(
    "captures",
    "one dumped thread of one py-spy dump, classified",
    ("capture_id", "thread_id"),
    {
        "capture_id": STACKS.columns["capture_id"],
        "capture_seq": C(pl.Int32, "order of the dump within its source"),
        **{c: STACKS.columns[c] for c in ("capture_ts", "host", "pid", "process_name", "role")},
        "python_version": C(pl.String, "Python version py-spy printed"),
        **_RANKS,
        **{c: STACKS.columns[c] for c in ("thread_id", "thread_name", "thread_state")},
        "is_main": C(pl.Boolean, "the main thread"),
        "n_frames": C(pl.Int32, "frames with a function"),
        "wait_class": C(pl.String, "where it waits: all_reduce, broadcast, recv, barrier, running, idle, …"),
        "backend": C(pl.String, "collective backend the stack shows: nccl, gloo, hccl; null when none"),
        "event_loop": C(pl.String, "SGLang event_loop_* function on the stack"),
        "wait_frame": C(pl.String, "the frame that decides wait_class, 'func (file:line)'"),
        "innermost": C(pl.String, "innermost frame, 'func (file:line)'"),
        "fingerprint": C(pl.String, "hash of the stack's functions: equal stacks, equal fingerprints"),
        "partial": STACKS.columns["partial"],
        **_PROVENANCE,
    },
)

PROBES = _table(
    "probes",
    "one step `logcorr collect` took on a host (an endpoint asked, a py-spy dump, the journal saved, a tool run), "
    "read from its bundle's manifest",
    ("event_id",),
    {
        **{c: _IDS[c] for c in ("event_id", "ts", "host")},
        "step": C(pl.String, "endpoint, pyspy, journal, container_log, gpu, kernel, check_env"),
        "round_no": C(pl.Int16, "the py-spy round (1, 2, …); null for other steps"),
        "pid": C(pl.Int32, "the process dumped (py-spy); null for other steps"),
        "target": C(pl.String, "the URL asked, the process title dumped, or the command run"),
        "status": C(pl.Int32, "the HTTP status, or the command's exit status; null: no answer (a timeout)"),
        "latency_ms": C(pl.Float64, "how long the answer or the command took, milliseconds"),
        "bytes": C(pl.Int64, "bytes of the answer or output kept in the bundle"),
        "error": C(
            pl.String,
            "why the step failed ('timed out after 5 s', 'Permission denied'); null when it did not",
        ),
        "fix": C(
            pl.String, "what would make it work (CAP_SYS_PTRACE, kernel.yama.ptrace_scope); null when none"
        ),
        **_PROVENANCE,
    },
)

METRICS = _table(
    "metrics",
    "one sample of a Prometheus scrape (SGLang's /metrics text saved to a file, an incident bundle's "
    "metrics.txt, its /v1/loads answers as loads:… samples)",
    ("event_id",),
    {
        **{c: _IDS[c] for c in ("event_id", "ts", "host", "role")},
        "name": C(pl.String, "the sample's name as printed: sglang:num_running_reqs, …_bucket, …_total"),
        "family": C(
            pl.String,
            "the metric it belongs to: the name a # TYPE line gives it, else the name without _bucket, _sum, _count, _total",
        ),
        "type": C(
            pl.String,
            "gauge, counter, histogram, summary or untyped, from the scrape's # TYPE line; null: none",
        ),
        "labels": C(
            pl.String, 'every label of the sample as a JSON object ({"engine_type":"decode","tp_rank":"0"})'
        ),
        "engine_type": C(pl.String, "SGLang's engine_type label: prefill, decode, unified; null when absent"),
        **_RANKS,
        "value": C(pl.Float64, "the sample's value (NaN and ±Inf as printed)"),
        **_PROVENANCE,
    },
)

SPANS = _table(
    "spans",
    "one OpenTelemetry span of SGLang's --enable-trace, as an OTLP JSON file holds it (the collector's file "
    "exporter); a request still in flight never ended its span and so is not in the file",
    ("trace_id", "span_id"),
    {
        **{c: _IDS[c] for c in ("event_id", "ts", "host", "role", "pid")},
        **_RANKS,
        "trace_id": C(pl.String, "the trace's id, 32 hex digits"),
        "span_id": C(pl.String, "the span's id, 16 hex digits"),
        "parent_span_id": C(pl.String, "the parent span's id; null for a trace's root"),
        "name": C(
            pl.String, "the span's name: '<role> Req <rid[:8]>', a thread's, or a stage (prefill_forward, …)"
        ),
        "start_ts": C(UTC_US, "when the span started (startTimeUnixNano), UTC µs; also ts"),
        "end_ts": C(UTC_US, "when it ended (endTimeUnixNano), UTC µs"),
        "duration_ms": C(pl.Float64, "end_ts - start_ts, milliseconds"),
        "status": C(pl.String, "OK, ERROR or null (unset): an aborted request's span is ERROR"),
        "rid": C(pl.String, "the request's rid: the span's rid attribute, else its trace root's"),
        "bootstrap_room": C(pl.Int64, "bootstrap_room: the span's (or its root's) hex attribute as a number"),
        "service": C(pl.String, "the resource's service.name: sglang (engine) or smg (gateway)"),
        **_PROVENANCE,
    },
)

PROCESSES = _table(
    "processes",
    "one process's records of one ingest, summed up (group again by the key after --append)",
    ("host", "boot_id", "unit", "role", "pid", *RANK_COLUMNS, "source"),
    {
        **_PROCESS,
        **_RANKS,
        "records": C(pl.Int64, "records (sum = count(*) of events)"),
        "first_ts": C(UTC_US, "first record's time"),
        "first_event_id": C(pl.Int64, "first record's event_id"),
        "last_ts": C(UTC_US, "last record's time"),
        "last_event_id": C(pl.Int64, "last record's event_id"),
        "ready_ts": C(UTC_US, "first 'The server is fired up and ready to roll!' line"),
        "ready_event_id": C(pl.Int64, "that line's event_id"),
        **_PROVENANCE,
    },
)

BATCH_SECONDS = _table(
    "batch_seconds",
    "batch lines per engine role (prefill, decode, engine) and second of one ingest (group again by (role, sec) after --append)",
    ("role", "sec"),
    {
        "role": _ROLE,
        "sec": C(pl.Int64, "Unix second, UTC"),
        "sec_ts": C(UTC_US, "the same second as a time (UTC), for reading and joining"),
        "batches": C(pl.Int64, "batch lines in that second"),
        "lo_ts": C(UTC_US, "first batch's time, in (ts, event_id) order"),
        "lo_event_id": C(pl.Int64, "first batch's event_id"),
        "hi_ts": C(UTC_US, "last batch's time"),
        "hi_event_id": C(pl.Int64, "last batch's event_id"),
    },
)

CONFIG = _table(
    "config",
    "one engine process's configuration: its server_args=ServerArgs(…) line and/or its launch command line",
    ("host", "boot_id", "unit", "pid", "event_id"),
    {
        **_PROCESS,
        "first_ts": C(
            UTC_US, "time of the server_args line, else of the process's first record with its command line"
        ),
        "event_id": C(
            pl.Int64,
            "events.event_id of the server_args line, else of that first record; null when a journal gave the command line (journalctl _CMDLINE=…)",
        ),
        "origin": C(pl.String, "where the values come from: server_args, cmdline, or server_args+cmdline"),
        "sglang_version": C(
            pl.String, "SGLang version where a line or the command line states it; null otherwise"
        ),
        "tp_size": C(pl.Int32, "tensor-parallel size (--tp-size, --tp)"),
        "dp_size": C(pl.Int32, "data-parallel size (--dp-size, --dp)"),
        "pp_size": C(pl.Int32, "pipeline-parallel size (--pp-size)"),
        "ep_size": C(pl.Int32, "expert-parallel size (--ep-size, --ep)"),
        "nnodes": C(pl.Int32, "nodes the engine spans (--nnodes)"),
        "enable_dp_attention": C(pl.Boolean, "DP attention on (--enable-dp-attention)"),
        "disaggregation_mode": C(pl.String, "null, prefill or decode (--disaggregation-mode)"),
        "disaggregation_transfer_backend": C(
            pl.String, "KV transfer backend: mooncake, nixl, … (--disaggregation-transfer-backend)"
        ),
        "disable_overlap_schedule": C(
            pl.Boolean, "overlap scheduler off (--disable-overlap-schedule); False = overlap on"
        ),
        "enable_hierarchical_cache": C(pl.Boolean, "HiCache on (--enable-hierarchical-cache)"),
        "hicache_storage_backend": C(pl.String, "HiCache L3 storage backend; null when none"),
        "speculative_algorithm": C(pl.String, "speculative decoding algorithm (EAGLE, …); null when none"),
        "watchdog_timeout": C(pl.Float64, "scheduler watchdog timeout, seconds"),
        "dist_timeout": C(
            pl.Float64, "torch.distributed timeout, seconds (--dist-timeout); null = PyTorch's default"
        ),
        "chunked_prefill_size": C(
            pl.Int64,
            "chunked prefill size, tokens (resolved; null when only a command line without it is known)",
        ),
        "model_path": C(pl.String, "model path (--model-path)"),
        "defaulted": C(
            pl.String,
            "typed columns above filled with SGLang's default because the command line does not name them (no server_args line)",
        ),
        "disagreements": C(
            pl.String,
            "fields where server_args and the command line differ: 'field: server_args X, cmdline Y; …'",
        ),
        "settings": C(
            pl.String, "every field as JSON: the server_args line's, plus the command line's it lacks"
        ),
        "cmdline": C(pl.String, "the launch command line (journald _CMDLINE)"),
        "note": C(pl.String, "what could not be read: a cut server_args line, an ambiguous or unknown flag"),
        **_PROVENANCE,
    },
)

FACTS = _table(
    "facts",
    "one fact a component states about itself in an informational record (a header read; INFO/DEBUG, or no"
    " level and no words of failure; no other kind): a 'key=value', 'key: value', 'N <things>' or '<name> <value>' clause of"
    " its first line (start-up figures and settings of SGLang, vLLM, NIXL, UCX, Mooncake, Dynamo …;"
    " parsers/facts.py); data only: no finding reads it",
    ("event_id", "key", "value"),
    {
        **_BASE,
        "format": C(
            pl.String, "the header family the record was read with: sglang, vllm, glog, ucx, router …"
        ),
        "statement": C(
            pl.String,
            "what the fact is about: the record's opening clause when it states none ('Load weight end',"
            " 'KV Cache is allocated'), the words before 'key: K=V' ('Modified UCX config') or before a"
            " trailing '<name> <value>' ('Starting master on'); null when none",
        ),
        "key": C(pl.String, "the key as printed: '#tokens', 'avail mem', 'Time elapsed', 'HCAs', 'pid' …"),
        "value": C(pl.String, "the value as printed (a unit kept): '10240', '24.71 GB', '9.40 s', 'v2'"),
        "number": C(pl.Float64, "the value when it is a number, alone or with a unit; null otherwise"),
        "value_unit": C(
            pl.String, "the unit printed after that number: GB, s, %, tokens/s …; null when none"
        ),
        **_TAIL,
    },
)

ENGINE_STATS = _table(
    "engine_stats",
    "one periodic statistics line of a vLLM engine ('Engine 000: Avg prompt throughput: … tokens/s, …'; v0's"
    " without the engine): not SGLang's batch lines, which the wedge and stop rules read from batches",
    ("event_id",),
    {
        **_BASE,
        "engine_index": C(
            pl.Int16, "the NNN of 'Engine NNN:' (a data-parallel engine); null when not printed"
        ),
        "prompt_throughput": C(pl.Float64, "Avg prompt throughput, tokens/s"),
        "generation_throughput": C(pl.Float64, "Avg generation throughput, tokens/s"),
        "running_reqs": C(pl.Int64, "Running: requests running"),
        "waiting_reqs": C(pl.Int64, "Waiting: (v0 Pending:) requests waiting"),
        "swapped_reqs": C(pl.Int64, "Swapped: requests swapped out (v0); null when not printed"),
        "gpu_kv_cache_usage_pct": C(pl.Float64, "GPU KV cache usage, percent"),
        "cpu_kv_cache_usage_pct": C(pl.Float64, "CPU KV cache usage, percent (v0)"),
        "prefix_cache_hit_rate_pct": C(pl.Float64, "Prefix cache hit rate, percent"),
        "extra": C(
            pl.String, "JSON object of every other 'key: value' (External prefix cache hit rate, MM cache …)"
        ),
        **_TAIL,
    },
)

# Each contract type's name in ``logcorr tables`` and its DuckDB SQL type.
_TYPES = {
    UTC_US: ("timestamp[us, UTC]", "TIMESTAMPTZ"),
    pl.Datetime("us"): ("timestamp[us]", "TIMESTAMP"),
    pl.Int16: ("int16", "SMALLINT"),
    pl.Int32: ("int32", "INTEGER"),
    pl.Int64: ("int64", "BIGINT"),
    pl.Float64: ("float64", "DOUBLE"),
    pl.String: ("string", "VARCHAR"),
    pl.Boolean: ("bool", "BOOLEAN"),
}

# Internal frame shapes (not tables): a reader's record before re-joining, and the extra columns
# journal readers carry for unit choice and process streams.
RECORD = {
    c: EVENTS.columns[c].dtype for c in ("ts", "host", "boot_id", "unit", "pid", "message", *_PROVENANCE)
}


def short_position(pos: str | None) -> str | None:
    """A ``source_pos`` as a person reads it: a journal cursor (``s=…;i=e8c;b=…;…``, ~120 characters)
    becomes ``entry i=e8c`` (its sequence number, which ``journalctl --cursor`` with the full cursor
    of the tables finds); ``line N`` and byte offsets stay as they are."""
    if pos and pos.startswith("s="):
        seq = next((part[2:] for part in pos.split(";") if part.startswith("i=")), None)
        return f"entry i={seq}" if seq else pos
    return pos


# The same in DuckDB SQL, over a column named source_pos.
SHORT_POSITION_SQL = (
    "CASE WHEN starts_with(source_pos, 's=') AND regexp_matches(source_pos, ';i=[0-9a-f]+;') "
    "THEN 'entry i=' || regexp_extract(source_pos, ';i=([0-9a-f]+);', 1) ELSE source_pos END"
)


def conform(df: pl.DataFrame, schema: dict | str | Table, *, strict: bool = True) -> pl.DataFrame:
    """Return ``df`` with exactly the columns of ``schema`` (a dict, a table name or a ``Table``), in
    order, cast to their types.

    Missing columns are added as nulls; extra columns are dropped. Raises ``polars`` errors only
    when a present column cannot be cast (a programming error, not bad input); with
    ``strict=False`` such a value becomes null instead.
    """
    if not isinstance(schema, dict):
        schema = (schema if isinstance(schema, Table) else TABLES[schema]).schema
    if df.width == 0:  # literals alone would make one row
        return pl.DataFrame(schema=schema)
    return df.select(
        [
            (pl.col(name) if name in df.columns else pl.lit(None)).cast(dtype, strict=strict).alias(name)
            for name, dtype in schema.items()
        ]
    )


def describe(names: list[str] | None = None) -> str:
    """The contract as Markdown: per table, what a row is, its key, and each column's type and meaning.

    ``names`` picks tables (all when None). Raises ``KeyError`` for an unknown name.
    """
    out = []
    for name in names or list(TABLES):
        t = TABLES[name]
        out.append(f"## {t.name}\n\nOne row: {t.row}. Key: {', '.join(t.key)}.\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        out.extend(f"| {c} | {_TYPES[col.dtype][0]} | {col.meaning} |" for c, col in t.columns.items())
        out.append("")
    return "\n".join(out)


def null_columns_sql(table: str, present: set[str]) -> str:
    """``, CAST(NULL AS T) AS "c"`` for each column of the contract table ``table`` not in ``present``
    (the columns an OUT's Parquet parts hold): an OUT written before a column existed reads it as NULL.
    Empty when every column is present."""
    return "".join(
        f', CAST(NULL AS {_TYPES[c.dtype][1]}) AS "{n}"'
        for n, c in TABLES[table].columns.items()
        if n not in present
    )


def empty_view_sql(table: str) -> str:
    """``CREATE OR REPLACE VIEW`` of a contract table with its columns and no row: the table an OUT
    written before it existed (or by a tool that wrote no part of it) lacks."""
    cols = null_columns_sql(table, set()).removeprefix(", ")
    return f'CREATE OR REPLACE VIEW "{table}" AS SELECT {cols} WHERE false'
