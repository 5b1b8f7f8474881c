"""SGLang engine lines → typed rows: what each record means (``classify``) and the tables built from
it (``batches``, ``aborts``, ``transfer_errors``, ``rooms``, plus ``watchdogs``, ``retractions`` and
``tracebacks``).

Line formats are data (lnav style): the pattern tables of ``parsers/sglang_lines.py`` and the field
rules of ``parsers/sglang_fields.py``, each with the SGLang version (or date; ``≈``: dated from bug
reports, not from a release note) that introduced its line and a sample that the tests parse.

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

Batch lines are split into typed fields by ``logcorr.parsers.batch_lines`` (one regex per shape of
line); the other tables' fields come from their patterns' named groups and rules (``extract_fields``).
"""

from __future__ import annotations

import re

import polars as pl

from logcorr.parsers import router
from logcorr.parsers.batch_lines import BATCH_FIELD_BY_KEY as BATCH_FIELD_BY_KEY
from logcorr.parsers.batch_lines import BATCH_FIELDS as BATCH_FIELDS
from logcorr.parsers.batch_lines import GRAPH_KEY as GRAPH_KEY
from logcorr.parsers.batch_lines import first_line, parse_batch_lines
from logcorr.parsers.fields import SCOPES as SCOPES
from logcorr.parsers.fields import base_columns, extract_fields
from logcorr.parsers.prefix import epoch_seconds
from logcorr.parsers.rules import LinePattern
from logcorr.parsers.sglang_fields import (
    ABORT_FIELDS,
    ASSERTION_LINE,
    CPP_TYPE,
    FRAME_LINE,
    GROUP_MEMBER_EXCEPTION,
    LOGGED_FRAMES,
    TERMINATE_ANNOUNCE,
    TIME_STATS_FIELDS,
    TRACEBACK_FIELDS,
    TRACEBACK_FRAGMENT,
    TRANSFER_ERROR_FIELDS,
    WATCHDOG_FIELDS,
)
from logcorr.parsers.sglang_lines import (
    ABORT_PATTERNS,
    ALL_PATTERNS,
    BACKENDS,
    BATCH_PATTERNS,
    CAUSES,
    CLASSIFY,
    MASK_QUOTED,
    PATTERN_TABLE,
    PATTERNS_BY_NAME,
    PD_BATCH_KEYS,
    PRINTED_LEVEL,
    PYSPY_FRAME_START,
    REQUEST_ID_REGEX,
    RETRACTION_PATTERNS,
    RID_REGEX,
    ROOM_REGEX,
    TIME_STATS_PATTERNS,
    TRACEBACK_PATTERNS,
    TRACEBACK_ROLES,
    TRANSFER_ERROR_PATTERNS,
    WATCHDOG_PATTERNS,
)
from logcorr.store.schema import (
    ABORTS,
    BATCHES,
    REQ_TIME_STATS,
    RETRACTIONS,
    ROOM_TYPE,
    ROOMS,
    TRACEBACKS,
    TRANSFER_ERRORS,
    WATCHDOGS,
    conform,
)

# Prose that quotes a log line in an inline code span ("after ~430 s all ranks log `Scheduler watchdog timeout
# (watchdog_timeout=300, soft=False)` and the engine is torn down via SIGQUIT", sglang#34442, batch22/07): in a
# record with no header, a span closed within its line is the reporter's quote, not the record's own text, and
# no kind is read from it (batch20/03's rule for a quoted exception line, ``inputs.text``). A record with a
# header keeps its backticks: they are the program's.
INLINE_QUOTE = r"`[^`\n]+`"


def unquoted(base: pl.DataFrame) -> pl.DataFrame:
    """``base`` with each inline code span (``INLINE_QUOTE``) of a headerless record's ``body`` emptied to ``````
    (the kind of a record is recognised on this; every other column is unchanged)."""
    body = base["body"]
    quoting = (base["header"].is_null() & body.str.contains("`", literal=True)).fill_null(False)
    if not quoting.any():  # most chunks: every record has a header, or no backtick
        return base
    at = quoting.arg_true()  # only those rows' text is rewritten
    return base.with_columns(body.clone().scatter(at, body.gather(at).str.replace_all(INLINE_QUOTE, "``")))


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
        ``request_id`` (another component's request id: vLLM's, Dynamo's, a KV connector's; ``rid_room``),
        ``bootstrap_room`` (Int64 or null), ``content_role`` (``prefill``/``decode``/``router`` or
        null: the role the text itself implies, issue item 8) and ``level`` (``ev.level``, else a
        level printed in the text: Python's ``LEVEL:name:`` format or a JSON ``"level"``; else
        null, never guessed from words) and ``room_error`` (why a room the record names is not in
        ``bootstrap_room``: a number outside Int64; SGLang draws rooms below 2^63); ``_request``: a
        router line's ``requests`` fields, parsed once here to tell its kind (``router.kinds``), for
        ``router.requests`` to read (null on every other row; not an ``events`` column).

    Never raises on any text. Formats: the pattern tables of this module and of
    ``logcorr.parsers.router``.
    """
    base = base_columns(ev)
    if base.height == 0:
        return pl.DataFrame(schema=CLASSIFY)
    hit = recognise(unquoted(base))
    kind = hit["kind"]
    ids = rid_room(base, kind)
    level = base["level"]
    printed = (level.is_null() & base["body"].str.contains(PRINTED_LEVEL)).fill_null(False)
    if printed.any():
        g = base["body"].filter(printed).str.extract_groups(PRINTED_LEVEL).struct
        found = g.field("a").fill_null(g.field("b").str.to_uppercase().replace({"WARN": "WARNING"}))
        level = level.scatter(printed.arg_true(), found)
    role = _content_role(kind, hit["content_role"], base["body"]).alias("content_role")
    return ids.with_columns(kind, role, level, hit[router.PARSED]).select(
        pl.col(c).cast(t) for c, t in CLASSIFY.items()
    )


def _content_role(kind: pl.Series, role: pl.Series, body: pl.Series) -> pl.Series:
    """The role a record's own text implies, over ``role`` (``content_role`` of its pattern): a batch
    line without a PD key is an ``engine`` that is not half of a PD pair; a traceback names its role
    by its event loop. Each text is searched on the rows of its kind only."""
    batch = (kind == "batch").fill_null(False)
    if batch.any():  # (searched over every row: gathering the batch lines first copies them)
        engine = batch & ~body.str.contains_any(PD_BATCH_KEYS).fill_null(False)
        role = pl.select(pl.when(engine).then(pl.lit("engine")).otherwise(role)).to_series()
    tb = (kind == "traceback").fill_null(False)
    if tb.any():
        at = tb.arg_true()
        by_frames = pl.coalesce(_first_named(body.gather(at), TRACEBACK_ROLES), role.gather(at))
        role = role.scatter(at, pl.select(by_frames).to_series())
    return role


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
        base = base_columns(ev.filter(pl.col("kind") == "batch"))
    else:
        base = base_columns(ev)
        base = base.filter(pl.col("body").str.contains(r"^(?:Prefill|Decode) batch"))
    if base.height == 0:
        return pl.DataFrame(schema=BATCHES.schema)
    parsed = parse_batch_lines(first_line(base["body"]))
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
        ``lost_connection``, ``transfer_done_signal_missing`` and ``bootstrap_timeout_warning`` (notices naming no
        request), ``batch_transfer_timeout`` (Mooncake's transfer engine gave up on a batch), ``bootstrap_info_fetch_failed``,
        ``transfer_failed`` (a KV connector of another engine: vLLM's MooncakeConnector), ``connect_failed``
        (the transfer engine could not reach a peer: Mooncake's ``Failed to connect to target/segment``)),
        ``cause`` (the reason named by ``CAUSES``: ``aborted``, ``timeout``, ``send_kv_chunk_failed``,
        ``lost_connection``, ``prefill_dead``, ``decode_dead``, ``assert_transfer_infos``, ``nixl_error``,
        ``connection_refused`` or null),
        ``kv_poll_state`` (``Bootstrapping``/``WaitingForInput``/… when a timeout names it),
        ``timeout_s`` (seconds), ``exception`` (``KVTransferError``, ``AssertionError``, …),
        ``reason`` (the text after ``with exception …:``, or the exception line of a traceback),
        ``peer`` (address named by the line), ``traceback`` (the joined ``Traceback …`` text),
        ``level``, ``source``, ``source_pos``. ``tp_rank``/``pp_rank`` fall back to the ``rank=N``
        and ``self.pp_rank=N`` the line prints when the header had none.
    """
    rules = TRANSFER_ERROR_PATTERNS + TRANSFER_ERROR_FIELDS  # a pattern's own groups first
    df = _family(ev, "transfer_error", TRANSFER_ERROR_PATTERNS, rules, TRANSFER_ERRORS)
    if df is None:
        return pl.DataFrame(schema=TRANSFER_ERRORS.schema)
    body, tb, exc_line = pl.col("body"), pl.col("_traceback"), pl.col("_exception_line")
    is_assert = tb.str.contains(_CAUSE_REGEX["assert_transfer_infos"]) | (
        exc_line.str.contains(ASSERTION_LINE) & tb.str.contains("transfer_infos", literal=True)
    )
    error_kind = (
        pl.when((pl.col("pattern") == "transfer_worker_error") & is_assert.fill_null(False))
        .then(pl.lit("assert_transfer_infos"))
        .otherwise(pl.col("_subkind"))
    )
    by_state = {"WaitingForInput": "decode", "Bootstrapping": "prefill"}
    state_role = pl.col("kv_poll_state").replace_strict(by_state, default=None, return_dtype=pl.String)
    content_role = pl.coalesce(pl.col("content_role"), state_role)
    df = df.with_columns(
        error_kind.alias("error_kind"),
        # the body names the backend, else the header does (a glog line's transfer-engine source file)
        pl.coalesce(_first_named(body, BACKENDS), _first_named(pl.col("message"), BACKENDS)).alias("backend"),
        pl.coalesce(_first_named(body, CAUSES), pl.col("cause")).alias("cause"),
        tb.alias("traceback"),
        # a Context dict's remote host and port, and the remote engine a failure without them names
        pl.coalesce(
            "peer", pl.col("_remote_host") + pl.coalesce(pl.lit(":") + pl.col("_remote_port"), pl.lit(""))
        ).alias("peer"),
        _resolve_role(content_role).alias("role"),
        # inside a JSON answer (a client's copy of the error) the reason ends with its string
        pl.when(body.str.starts_with("{"))
        .then(pl.col("reason").str.replace(r'"\s*[,}].*$', ""))
        .otherwise(pl.col("reason"))
        .alias("reason"),
    ).with_columns(
        pl.when(pl.col("_remote_engine").is_not_null() & pl.col("_remote_host").is_null())
        .then(pl.concat_str([pl.col("reason"), pl.lit("; remote engine "), pl.col("_remote_engine")]))
        .otherwise(pl.col("reason"))
        .alias("reason"),
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
        ``abort_bootstrap_queue_request``, ``abort_prealloc_queue_request``, … as printed,
        ``transfer_aborted`` or ``finish_abort`` (``_finish_aborts``)), ``error_kind`` (for ``transfer_aborted``: which failure, as in
        ``transfer_errors``), ``reason`` (the line's own words), ``level``, ``source``, ``source_pos``.
    """
    parts = []
    df = _family(ev, "abort", ABORT_PATTERNS, ABORT_PATTERNS + ABORT_FIELDS, ABORTS)
    if df is not None:
        where = pl.col("_where").str.replace_all(" ", "_")
        parts.append(
            df.with_columns(
                pl.coalesce("_subkind", pl.lit("abort_") + where + pl.lit("_request")).alias("abort_kind"),
                _resolve_role(pl.col("content_role")).alias("role"),
            )
        )
    answered = _finish_aborts(ev)
    if answered.height:
        parts.append(answered)
    te = transfer_errors(ev).filter(pl.col("cause") == "aborted")
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


# An HTTP answer a client printed (curl, a benchmark's error): SGLang's response body whose request
# finished as an abort, {"meta_info": {"id": rid, "finish_reason": {"type": "abort", "message": …,
# "status_code": N}, …}} (FINISH_ABORT's to_json, python/sglang/srt/managers/schedule_batch.py).
FINISH_ABORT = r'"finish_reason":\s*\{"type":\s*"abort"'
FINISH_ABORT_MESSAGE = r'"finish_reason":\s*\{"type":\s*"abort",\s*"message":\s*"((?:[^"\\]|\\.)*)"'
META_INFO_ID = r'"meta_info":\s*\{"id":\s*"([0-9a-f]{16,})"'


def _finish_aborts(ev: pl.DataFrame) -> pl.DataFrame:
    """An ``aborts`` row (``abort_kind`` ``finish_abort``) per record that holds a response body whose
    request finished as an abort: ``reason`` its message, ``rid`` its ``meta_info.id`` where the record
    names none. The request-metrics export (kind ``request_finished``) keeps its own rows."""
    if "message" not in ev.columns or not ev["message"].str.contains(FINISH_ABORT).any():
        return pl.DataFrame(schema=ABORTS.schema)
    held = pl.col("message").str.contains(FINISH_ABORT)
    if "kind" in ev.columns:
        held = held & (pl.col("kind") != "request_finished")
    rows = ev.filter(held)
    named = [pl.lit(None, pl.String).alias("rid"), pl.lit(None, ROOM_TYPE).alias("bootstrap_room")]
    named = [
        rows[c] if c in rows.columns else lit for c, lit in zip(("rid", "bootstrap_room"), named, strict=True)
    ]
    out = (
        base_columns(rows)
        .with_columns(*named)
        .with_columns(
            pl.lit("finish_abort").alias("abort_kind"),
            pl.col("message").str.extract(FINISH_ABORT_MESSAGE, 1).str.slice(0, 500).alias("reason"),
            pl.coalesce(pl.col("rid"), pl.col("message").str.extract(META_INFO_ID, 1)).alias("rid"),
        )
    )
    return _conform(out, ABORTS)


def merge_rooms(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """``rooms`` rows of several chunks merged into one row per (rid, bootstrap_room, role, host):
    first and last time over all, ``n_events`` summed, ``event_id``/``source``/``source_pos`` of the
    first record (smallest event_id)."""
    frames = [p for p in parts if p.height]
    if not frames:
        return pl.DataFrame(schema=ROOMS.schema)
    return (
        pl.concat(frames)
        .sort("event_id", maintain_order=True)
        .group_by(["rid", "bootstrap_room", "role", "host"], maintain_order=True)
        .agg(
            pl.col("first_ts").min(),
            pl.col("last_ts").max(),
            pl.col("n_events").sum(),
            pl.col("event_id", "source", "source_pos").first(),
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
    df = base_columns(ev)
    named = ev if {"rid", "bootstrap_room"} <= set(ev.columns) else classify(df)
    df = df.with_columns(
        named["rid"].cast(pl.String), named["bootstrap_room"].cast(ROOM_TYPE, strict=False)
    ).filter(pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_not_null())
    if (df["role"].is_null() | (df["role"] == "unknown")).any():  # the text may say the role
        df = df.with_columns(_resolve_role(classify(df)["content_role"]).alias("role"))
    one = df.with_columns(first_ts=pl.col("ts"), last_ts=pl.col("ts"), n_events=pl.lit(1, pl.Int64))
    return merge_rooms([_conform(one, ROOMS)])


def req_time_stats(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per ``Req Time Stats(rid=…)`` line (``TIME_STATS_PATTERNS``; SGLang's
    ``Req.log_time_stats``, ``--enable-request-time-stats-logging``).

    Returns:
        ``REQ_TIME_STATS`` columns: provenance, ``rid``, ``bootstrap_room`` (printed under PD),
        ``disagg_mode`` (the line's ``type=``), ``input_len``/``output_len`` (Int32), each stage's
        duration in seconds (``bootstrap_s``, ``alloc_wait_s``, ``prealloc_s``, ``transfer_s``,
        ``queue_s``, ``forward_s``; null when the line's version prints none), ``entry_ts`` (UTC, from
        the wall-clock ``entry_time=``; an older ``start_time=`` is a perf_counter value and gives
        null), ``transfer_gb_s``, ``transfer_mb``, ``retries``, ``durations`` (the fields as printed),
        ``level``, ``source``, ``source_pos``. ``role`` is ``type=``'s prefill/decode when the source
        named none.
    """
    df = _family(
        ev, "req_time_stats", TIME_STATS_PATTERNS, TIME_STATS_PATTERNS + TIME_STATS_FIELDS, REQ_TIME_STATS
    )
    if df is None:
        return pl.DataFrame(schema=REQ_TIME_STATS.schema)
    df = df.with_columns(
        epoch_seconds(pl.col("_entry_time")).dt.replace_time_zone("UTC").alias("entry_ts"),
        _resolve_role(pl.col("content_role")).alias("role"),
    )
    return _conform(df, REQ_TIME_STATS)


def watchdogs(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per watchdog-family record (``WATCHDOG_PATTERNS``), with its fields parsed.

    Returns:
        ``WATCHDOGS`` columns: provenance, ``watchdog_kind`` (``watchdog_timeout``, ``debug_info``,
        ``pyspy_failed``, ``sigquit``, ``nccl_watchdog`` (NCCL or HCCL), ``fatal_python_error``), ``timeout_s`` (seconds; the NCCL
        ``Timeout(ms)`` converted), ``soft`` (Boolean), ``target_pid`` (the PID py-spy failed on),
        ``nccl_seq``, ``nccl_op``, ``numel_in``, ``numel_out``, ``ran_for_ms`` (the NCCL
        ``WorkNCCL(…)`` fields), ``rid`` (first rid of the batch a watchdog printed), ``reason``
        (the error text of a failed py-spy), ``level``, ``source``, ``source_pos``.
    """
    df = _family(ev, "watchdog", WATCHDOG_PATTERNS, WATCHDOG_PATTERNS + WATCHDOG_FIELDS, WATCHDOGS)
    if df is None:
        return pl.DataFrame(schema=WATCHDOGS.schema)
    host = pl.col("_peer_host")
    host = pl.when(host.str.contains(":", literal=True)).then("[" + host + "]").otherwise(host)  # IPv6
    df = df.with_columns(
        pl.col("_subkind").alias("watchdog_kind"),
        _resolve_role(pl.lit(None, pl.String)).alias("role"),
        pl.concat_str([host, pl.col("_peer_port")], separator=":").alias("peer"),
    )
    df = df.drop("exception", strict=False).join(
        thrown_types(ev), on="event_id", how="left", maintain_order="left"
    )
    return _conform(df, WATCHDOGS)


def thrown_types(ev: pl.DataFrame) -> pl.DataFrame:
    """Per record of ``ev`` (``event_id``, ``message`` or ``body``, ``source``; in input order) that a
    std::terminate announcement names a type for: ``event_id`` and ``exception``, the type. A record
    holding ``terminate called after throwing an instance of 'T'`` has T; a record that opens at its
    ``what():`` line (the announcement went to a record of its own: interleaved output, or a fragment
    between them) has the type of the record right above it in its input when that one is announcements
    without a ``what()`` of their own. Several processes aborting at once interleave their announcements
    mid-word (open-r1#620: ``'c10::DistBackendErrorterminate called … ''``): the type is read only when
    every name left between the announcements, quotes and line ends is copies of one name, else it stays
    null (two names glued with no quote between them cannot be told from one name)."""
    text = pl.coalesce(*[c for c in ("body", "message") if c in ev.columns], pl.lit(""))
    df = ev.select("event_id", pl.col("source").cast(pl.String), text.alias("_text"))
    df = df.with_columns(pl.col("_text").str.contains(TERMINATE_ANNOUNCE, literal=True).alias("_says"))
    if not df["_says"].any():
        return pl.DataFrame(schema={"event_id": pl.Int64, "exception": pl.String})
    # the announcements: the text before the record's what() line
    head = pl.col("_text").str.extract(r"(?s)^(.*?)(?:\n\s*what\(\):.*)?$", 1)
    own = pl.when(pl.col("_says")).then(head).map_elements(_one_thrown_type, return_dtype=pl.String)
    df = df.with_columns(
        own.alias("_own"),
        (pl.col("_says") & ~pl.col("_text").str.contains(r"(?m)^\s*what\(\):")).alias("_bare"),
    )
    above = pl.when(pl.col("_bare").shift(1).over("source")).then(pl.col("_own").shift(1).over("source"))
    opens_at_what = pl.col("_text").str.contains(r"^\s*what\(\):")
    thrown = pl.coalesce(pl.col("_own"), pl.when(opens_at_what).then(above))
    return df.select("event_id", thrown.alias("exception")).filter(pl.col("exception").is_not_null())


def _one_thrown_type(head: str) -> str | None:
    """The type std::terminate's announcements in ``head`` name (``thrown_types``): the names between its
    announcements, quotes and line ends, when each is one or more copies of the same name."""
    names = [p.strip() for p in re.split(rf"{re.escape(TERMINATE_ANNOUNCE)}|'|\n", head) if p.strip()]
    if not names:
        return None
    one = min(names, key=len)
    copies = all(len(n) % len(one) == 0 and n == one * (len(n) // len(one)) for n in names)
    return one if copies and re.fullmatch(CPP_TYPE, one) else None


def retractions(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per decode retraction record (``RETRACTION_PATTERNS``: SGLang's ``Decode out of memory
    happened.`` and its later wording ``KV cache pool is full. Retract requests.``), one per TP rank that
    printed it.

    Returns:
        ``RETRACTIONS`` columns: provenance, ``retracted_reqs`` (Int64), ``new_token_ratio_before`` and
        ``new_token_ratio_after`` (Float64, the ``a -> b`` as printed), ``level``, ``source``,
        ``source_pos``. ``role`` is the source's (the line names no half: a server that is no PD pair
        decodes too).
    """
    df = _family(ev, "retraction", RETRACTION_PATTERNS, RETRACTION_PATTERNS, RETRACTIONS)
    if df is None:
        return pl.DataFrame(schema=RETRACTIONS.schema)
    return _conform(df.with_columns(_resolve_role(pl.lit(None, pl.String)).alias("role")), RETRACTIONS)


def tracebacks(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per record holding a Python traceback (any kind), with its innermost frame.

    Returns:
        ``TRACEBACKS`` columns: provenance, ``component`` (``Scheduler`` in ``Scheduler hit an
        exception``, else null), ``exception`` (type of the last exception line; when the excerpt is
        cut before it, the type a logger.exception message opens with, else that of the last exception
        group member line ``    | X: msg``; null when none is printed), ``exc_message`` (that line's
        message, as printed: an HTTPException's opens with its status), ``function``/``file``/``line`` of the innermost
        ``File "…", line N, in f`` frame (``file`` is the path as printed), ``n_frames`` (Int32),
        ``traceback`` (text from ``Traceback`` to the end; a record that opens with a frame, its start
        cut, whole), ``level``, ``source``, ``source_pos``.
    """
    # filtered before _base copies every column (on the ``body`` of ``_base``)
    text = pl.coalesce(*[c for c in ("body", "message") if c in ev.columns], pl.lit(""))
    # a traceback, or a record that is one whose start was cut (``TRACEBACK_FRAGMENT``)
    held = (
        text.str.contains("Traceback (most recent call last)", literal=True)
        | text.str.contains(TRACEBACK_FRAGMENT)
        | text.str.contains(LOGGED_FRAMES)
    )
    base = base_columns(ev.filter(held))
    if base.height == 0:
        return pl.DataFrame(schema=TRACEBACKS.schema)
    df = extract_fields(base, TRACEBACK_PATTERNS + TRACEBACK_FIELDS, TRACEBACKS)
    tb, exc_line = pl.col("_traceback"), pl.col("_exception_line")
    # An exception line only counts when it follows the frames (not a frame's source line).
    df = df.with_columns(
        pl.col("function").str.strip_chars(),
        tb.str.extract_all(FRAME_LINE).list.len().cast(pl.Int32).alias("n_frames"),
        tb.alias("traceback"),
        _lead(pl.col("body") if "body" in df.columns else pl.col("message"), tb).alias("lead"),
        pl.when(pl.col("exception").is_not_null() & ~exc_line.str.starts_with(" "))
        .then(pl.col("exception"))
        .alias("exception"),
    )
    if "body" in df.columns:  # a traceback cut before its last line: the type the message opens with
        lead = pl.col("body").str.extract_groups(LEAD_EXCEPTION).struct
        said = pl.col("exception").is_null() & lead.field("type").is_not_null()
        df = df.with_columns(
            pl.when(said).then(lead.field("type")).otherwise(pl.col("exception")).alias("exception"),
            pl.when(said)
            .then(pl.coalesce(lead.field("repr"), lead.field("repr2"), lead.field("text").str.strip_chars()))
            .otherwise(pl.col("exc_message"))
            .alias("exc_message"),
        )
    # else the last exception group member's exception line the record prints (behind its "| " border),
    # with its message as printed
    member = (
        pl.col("body")
        .str.extract_all(GROUP_MEMBER_EXCEPTION)
        .list.last()
        .str.extract_groups(GROUP_MEMBER_EXCEPTION.removeprefix("(?m)"))
    )
    df = df.with_columns(member.alias("_member"))
    df = df.with_columns(
        pl.when(pl.col("exception").is_null())
        .then(pl.col("_member").struct.field(name))
        .otherwise(pl.col(column))
        .alias(column)
        for column, name in (("exception", "1"), ("exc_message", "2"))
    )
    return _conform(df, TRACEBACKS)


def _lead(body: pl.Expr, tb: pl.Expr) -> pl.Expr:
    """The message a record prints before its traceback: the text of its first line (after the header)
    before the traceback starts, stripped; null when the traceback is the record's start (a fragment, a
    bare ``Traceback`` line). A logger's ``logger.exception("…")`` line names what failed where the
    traceback is cut before its exception (Ray Serve's "Exception in Replica(…), the replica will be
    stopped.", ray#51242, batch21/03; "Encountered failure while handling request …", ray#53267, batch21/02)."""
    at = body.str.find(tb, literal=True)
    before = body.str.slice(0, at).str.extract(r"^([^\n]*)", 1).str.strip_chars()
    return pl.when(at.is_not_null() & (before.str.len_chars() > 0)).then(before)


# A logger.exception message that names the exception before its traceback: "nixlUnknownError('…')",
# "engine.start: nixlBackendError('NIXL_ERR_BACKEND')" (a Rust target first), "KVTransferError: …";
# its message: the one string the repr holds, or the text after ": " on that line.
LEAD_EXCEPTION = (
    r"^(?:[\w.]+: )?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))"
    r"(?:\('(?P<repr>[^'\n]*)'\)|\(\"(?P<repr2>[^\"\n]*)\"\)|\(|: (?P<text>[^\n]*))"
)


def recognise(base: pl.DataFrame, patterns: list[LinePattern] | None = None) -> pl.DataFrame:
    """Per row of ``base``: ``pattern`` (name or null), ``kind`` (``other`` when none),
    ``content_role``. With ``patterns`` only those are tried (used to re-find a known kind)."""
    n = base.height
    idx = pl.int_range(n, dtype=pl.UInt32, eager=True).alias("_i")
    frame = pl.DataFrame([idx, base["body"].fill_null("")])
    anchors = list(dict.fromkeys(p.anchor for p in (patterns or ALL_PATTERNS)))
    table = PATTERN_TABLE
    if patterns is not None:
        table = table.filter(pl.col("pattern").is_in([p.name for p in patterns]))
    router_rows = pl.Series("r", [False] * n) if patterns is not None else router.is_router_line(base)
    # another program's lines in the router's Rust tracing format (Dynamo's) are read by the engine
    # patterns too: a row one of them types is that kind, the rest are the router module's
    foreign = (
        router_rows & ~router.is_own_router_line(base, router_rows) if router_rows.any() else router_rows
    )
    # Fast path for the bulk of a journal: a body that starts with a batch head or is a whole
    # uvicorn access line has its leftmost anchor at the start, so it needs no anchor search.
    found = []
    todo = ~router_rows | foreign
    for pattern in [*BATCH_PATTERNS, PATTERNS_BY_NAME["uvicorn_access"]] if patterns is None else []:
        hit = (todo & frame["body"].str.contains(pattern.regex)).fill_null(False)
        if hit.any():
            found.append(frame.filter(hit).select("_i", pl.lit(pattern.name).alias("pattern")))
            todo = todo & ~hit
    pairs = (
        frame.filter(todo)
        .select("_i", pl.col("body").str.extract_many(anchors).alias("anchor"))
        .explode("anchor")
        .drop_nulls("anchor")
        .with_row_index("_p")
        .join(table, on="anchor", how="inner")
        # a pattern is confirmed once per record, at its first anchor (a dump repeats its anchors)
        .unique(["_i", "pattern"], keep="first", maintain_order=True)
    )
    confirmed = [
        sub.filter(
            frame["body"].gather(sub["_i"]).str.contains(PATTERNS_BY_NAME[name].regex).fill_null(False)
        )
        for (name,), sub in pairs.partition_by("pattern", as_dict=True).items()
    ]
    if confirmed:
        leftmost = (
            pl.concat(confirmed).sort(["_i", "_p", "prio"]).unique("_i", keep="first", maintain_order=True)
        )
        found.append(leftmost.select("_i", "pattern"))
    best = pl.concat(found) if found else pl.DataFrame(schema={"_i": pl.UInt32, "pattern": pl.String})
    best = best.join(PATTERN_TABLE.select("pattern", "kind", "content_role"), on="pattern")
    out = pl.DataFrame([idx]).join(best, on="_i", how="left", maintain_order="left")
    if patterns is not None:
        return out
    # Router rows and the access and mini_lb lines an anchor confirmed: request/health/other by the
    # router module; a record that starts like the middle of a py-spy dump is ``pyspy``; else ``other``.
    kind, role = out["kind"], out["content_role"]
    request = pl.Series(router.PARSED, dtype=pl.Struct(router.PARSED_FIELDS)).clear(n)
    todo = (kind == "request").fill_null(False) | (router_rows & ~(foreign & kind.is_not_null()))
    if todo.any():
        rk = router.kinds(base.filter(todo))
        kind = kind.scatter(todo.arg_true(), rk["kind"])
        role = role.scatter(todo.arg_true(), rk["content_role"])
        request = router.spread(rk[router.PARSED], todo.arg_true(), n)
    starts_like_dump = kind.is_null() & frame["body"].str.contains(PYSPY_FRAME_START)
    kind = kind.scatter(starts_like_dump.arg_true(), "pyspy").fill_null("other")
    return out.with_columns(kind.alias("kind"), role.alias("content_role"), request)


def _family(
    ev: pl.DataFrame, kind: str, patterns: list[LinePattern], rules: list, table
) -> pl.DataFrame | None:
    """The records of ``ev`` of one ``kind`` (by its ``kind`` column when it has one, else by
    ``classify``) that one of ``patterns`` confirms, with ``pattern``, its ``content_role`` and
    ``_subkind``, ``rid``/``bootstrap_room``/``room_error`` and the fields of ``rules``
    (``extract_fields``); None when there are none."""
    if "kind" in ev.columns:
        base = base_columns(ev.filter(pl.col("kind") == kind))
    else:
        base = base_columns(ev)
        base = base.filter(recognise(base)["kind"] == kind) if base.height else base
    if base.height == 0:
        return None
    hit = recognise(base, patterns).select("pattern", "content_role")
    df = pl.concat([base, hit], how="horizontal").filter(pl.col("pattern").is_not_null())
    if df.height == 0:
        return None
    df = pl.concat([df, rid_room(df, pl.Series([kind] * df.height))], how="horizontal")
    subkind = {p.name: p.subkind for p in patterns}
    return extract_fields(df, rules, table).with_columns(
        pl.col("pattern").replace_strict(subkind, default=None, return_dtype=pl.String).alias("_subkind")
    )


def rid_room(df: pl.DataFrame, kind: pl.Series) -> pl.DataFrame:
    """``rid`` and ``bootstrap_room`` named anywhere in each record (batches, access lines and
    py-spy dumps are skipped: they name none). Quoted strings are blanked out first (but for the
    value of a ``rid``/``id`` field), so a prompt text quoting ``rid=`` cannot fool it; JSON lines
    are read by key (``rid``, ``obj.rid``, ``out.meta_info.id``, ``obj.bootstrap_room``; a request-metrics
    record's ``id`` and the ``rid``/``bootstrap_room`` inside its ``request_parameters`` string).
    ``request_id`` is another component's request id the record names (``REQUEST_ID_REGEX``; a JSON
    line's ``request_id`` key), never one that went to ``rid``: the id after "request" is the rid in an
    SGLang-format record (``header`` sglang) and a ``request_id`` in any other."""
    none = pl.DataFrame(
        schema={
            "rid": pl.String,
            "bootstrap_room": ROOM_TYPE,
            "room_error": pl.String,
            "request_id": pl.String,
        }
    )
    none = none.clear(df.height)
    look = ~kind.is_in(["batch", "request", "health", "pyspy"]).fill_null(False)
    if not look.any():
        return none
    pos = look.arg_true()
    body = df["body"].fill_null("").filter(look)
    is_json = body.str.starts_with("{") & ~body.str.starts_with("{'")  # a Python dict's repr is no JSON
    cand = (
        body.str.contains_any(
            ["rid", "'id'", '"id"', "room", "timed out", "kv chunk", "equest", "cmpl-", "stream ", "for ["]
        )
        | is_json
    ).fill_null(False)
    if not cand.any():
        return none
    sglang = df["header"].filter(look).filter(cand) == "sglang" if "header" in df.columns else None
    sub = pl.DataFrame(
        {
            "b": body.filter(cand),
            "j": is_json.filter(cand),
            "sg": sglang.fill_null(False) if sglang is not None else pl.repeat(False, cand.sum(), eager=True),
        }
    )
    masked = pl.col("b").str.replace_all(MASK_QUOTED, "${keep}")

    # a JSON object read up to its last brace: a paste may go on after it (a shell prompt)
    obj = pl.col("b").str.extract(r"(?s)^(\{.*\})", 1)

    def js(*paths: str) -> pl.Expr:
        return pl.coalesce([obj.str.json_path_match(p) for p in paths])

    # an HTTP answer's error text names the room its transfer failed for (sglang#7338)
    said = js("$.meta_info.finish_reason.message", "$.out.meta_info.finish_reason.message", "$.error.message")
    said_room = said.str.extract_groups(ROOM_REGEX)
    # a request-metrics record (--export-metrics-to-file) holds the request as a JSON string
    params = obj.str.json_path_match("$.request_parameters")
    exported_rid = pl.coalesce(
        params.str.json_path_match("$.rid"), pl.when(params.is_not_null()).then(js("$.id"))
    )

    g = masked.str.extract_groups(RID_REGEX)
    r = masked.str.extract_groups(ROOM_REGEX)
    q = masked.str.extract_groups(REQUEST_ID_REGEX)
    after = q.struct.field("after")  # the id after "request": SGLang's rid in SGLang's own format
    text_rid = pl.coalesce(
        *[g.struct.field(f) for f in ("q1", "q2", "bare", "key", "meta")], pl.when("sg").then(after)
    )
    text_request_id = pl.coalesce(
        q.struct.field("key"),
        pl.when(~pl.col("sg")).then(after),
        q.struct.field("openai"),
        q.struct.field("response"),
        q.struct.field("listed"),
    )
    text_room = pl.coalesce(*[r.struct.field(f) for f in "abcde"])
    out = sub.select(
        pl.when(pl.col("j"))
        .then(pl.coalesce(js("$.rid", "$.obj.rid", "$.out.meta_info.id", "$.meta_info.id"), exported_rid))
        .otherwise(text_rid)
        .alias("rid"),
        pl.when(pl.col("j"))
        .then(
            pl.coalesce(
                js("$.obj.bootstrap_room", "$.bootstrap_room"),
                params.str.json_path_match("$.bootstrap_room"),
                *[said_room.struct.field(f) for f in "abcde"],
            )
        )
        .otherwise(text_room)
        .alias("text"),
        pl.when(pl.col("j")).then(js("$.request_id")).otherwise(text_request_id).alias("request_id"),
    ).with_columns(
        pl.col("text").cast(ROOM_TYPE, strict=False).alias("bootstrap_room"),
        pl.when(pl.col("request_id") != pl.col("rid").fill_null("")).then("request_id").alias("request_id"),
    )
    out = out.with_columns(  # SGLang's rooms are 63-bit: a wider number is kept as text, said, not stored
        pl.when(pl.col("text").is_not_null() & pl.col("bootstrap_room").is_null())
        .then(
            pl.format(
                "bootstrap room {} is outside the signed 64-bit range: record kept, its room left empty",
                pl.col("text"),
            )
        )
        .alias("room_error")
    )
    return pl.DataFrame([none[c].scatter(pos.filter(cand), out[c]) for c in none.columns])


_CAUSE_REGEX = {name: rx for name, rx, _ in CAUSES}


def _first_named(text: pl.Expr | pl.Series, named: list[tuple]) -> pl.Expr:
    """The name of the first ``(name, regex, …)`` entry whose regex ``text`` holds, or null."""
    return pl.coalesce([pl.when(text.str.contains(rx)).then(pl.lit(name)) for name, rx, *_ in named])


def _resolve_role(content_role: pl.Expr) -> pl.Expr:
    """The source's own role wins; an unknown one takes the role the text implies."""
    own = pl.col("role")
    unknown = own.is_null() | (own == "unknown")
    return pl.when(unknown).then(pl.coalesce(content_role, pl.lit("unknown"))).otherwise(own)


def _conform(df: pl.DataFrame, table) -> pl.DataFrame:
    return conform(df, table, strict=False)
