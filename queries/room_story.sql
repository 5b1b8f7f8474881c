-- question: What happened to one bootstrap room, record by record, on every role: its requests, the
--   aborts, the transfer failures and the assertion, in time order?
-- tables: events, rooms, transfer_errors, aborts
-- columns:
--   bootstrap_room  the room
--   ts              time of the record (UTC)
--   role            prefill, decode or router
--   rank_label      e.g. "TP1" (NULL for the HTTP server and the router)
--   kind            events.kind: abort, transfer_error, request, traceback …
--   rid             the request id in the record (prefill and decode log different rids for one room)
--   linked_by       room (the record names the room) or rid (it names a rid paired with the room)
--   event_id        events.event_id
--   source          file or journal
--   source_pos      line number, byte offset or journal cursor
--   message         the first line of the record
-- parameters:
--   room   the room to follow (BIGINT; default: every room that hit the transfer_infos assertion)
-- reading: one row per record, oldest first. A record links to the room when it names the room or a
--   rid that some line pairs with the room (rooms table, transfer and abort lines). Records that name
--   neither (router lines at INFO) cannot be linked and are not here. Empty: no such room, or no
--   room asserted and none was given.
WITH wanted AS (
    SELECT getvariable('room')::BIGINT AS bootstrap_room WHERE getvariable('room') IS NOT NULL
    UNION
    SELECT DISTINCT bootstrap_room FROM transfer_errors
    WHERE getvariable('room') IS NULL AND error_kind = 'assert_transfer_infos' AND bootstrap_room IS NOT NULL
),
rids AS (
    SELECT DISTINCT r.bootstrap_room, r.rid FROM (
        SELECT bootstrap_room, rid FROM rooms
        UNION ALL SELECT bootstrap_room, rid FROM transfer_errors
        UNION ALL SELECT bootstrap_room, rid FROM aborts
    ) AS r JOIN wanted AS w USING (bootstrap_room)
    WHERE r.rid IS NOT NULL
),
linked AS (
    SELECT e.bootstrap_room, e.event_id, 'room' AS linked_by
    FROM events AS e JOIN wanted AS w USING (bootstrap_room)
    UNION ALL
    SELECT r.bootstrap_room, e.event_id, 'rid'
    FROM events AS e JOIN rids AS r ON e.rid = r.rid
    WHERE e.bootstrap_room IS NULL
),
ev AS (
    -- the linked records' columns: an IN list from list(), so DuckDB keeps the few ids as the build side
    -- and skips the Parquet row groups without them (a plain join read every event's message)
    SELECT * FROM events WHERE event_id IN (SELECT unnest(ids) FROM (SELECT list(event_id) AS ids FROM linked))
)
SELECT l.bootstrap_room, e.ts, e.role,
       nullif(concat_ws(' ', 'DP' || e.dp_rank, 'PP' || e.pp_rank, 'TP' || e.tp_rank, 'EP' || e.ep_rank), '')
           AS rank_label,
       e.kind, e.rid, l.linked_by, e.event_id, e.source, e.source_pos, split_part(e.message, chr(10), 1) AS message
FROM linked AS l JOIN ev AS e ON e.event_id = l.event_id
ORDER BY l.bootstrap_room, e.ts, e.event_id
