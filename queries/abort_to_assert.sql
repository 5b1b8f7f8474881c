-- question: Which aborts preceded each `assert room in self.transfer_infos` ("Unexpected transfer
--   worker error for room N"), for the same bootstrap room, and by how long? Which router request
--   carried that room?
-- tables: transfer_errors, aborts, rooms, requests, events
-- columns:
--   bootstrap_room     the 63-bit KV bootstrap room (BIGINT)
--   asserted           true: this room hit the assertion; false: nothing in the data asserted and
--                      the row lists an abort of a room instead, so the answer says so
--   assert_role        role whose transfer worker asserted (prefill/decode), NULL when not asserted
--   assert_tp_ranks    the TP ranks that asserted for this room and role, sorted (SMALLINT[])
--   assert_count       how many assertion records (one per rank and occurrence)
--   assert_first_ts    first assertion of the room and role (UTC)
--   assert_last_ts     last assertion of the room and role (UTC)
--   assert_event_id    events.event_id of the first assertion
--   assert_source      file or journal of the first assertion
--   assert_source_pos  its line number, byte offset or journal cursor
--   abort_event_id     events.event_id of the abort (NULL: no abort seen for this room)
--   abort_ts           when the abort was logged (UTC)
--   abort_role         the role that logged the abort
--   abort_tp_rank      the TP rank that logged it (NULL for HTTP-server lines)
--   abort_kind         aborts.abort_kind (client disconnect, AbortReq, queue removal …)
--   abort_rid          the request id in the abort line
--   abort_reason       aborts.reason
--   delta_ms           assert_first_ts - abort_ts in milliseconds; positive: the abort came first
--   abort_source       file or journal of the abort line
--   abort_source_pos   its position
--   abort_message      first line of the abort record (events.message)
--   request_event_id   the router/HTTP request of this room or of one of its rids, nearest in time
--   request_ts         its time (UTC)
--   request_id         its request_id (router) or rid
--   request_path       its path
--   request_status     its HTTP status
--   finding            the row in words: "abort 12.0 ms before the assertion", "no abort seen for
--                      this room", "no assert_transfer_infos error in the data"
-- parameters:
--   room        only this bootstrap room (BIGINT; default: every room)
--   error_kind  which transfer_errors.error_kind counts as the assertion (default
--               assert_transfer_infos; e.g. prefill_bootstrap_failed to ask the same of another failure)
--   since       only assertions (or, when none, aborts) at or after this time (TIMESTAMPTZ, UTC)
--   until       only those at or before this time (TIMESTAMPTZ, UTC)
-- reading: one row per (room that asserted, abort of that room), ordered by assertion then abort
--   time. The room links lines across roles: an abort logged under a rid (HTTP server, decode) is
--   matched to the room through the rooms table. A positive delta_ms means the abort was logged
--   before the assertion: abort cleanup removed the room while the transfer worker still used it.
--   When nothing asserted, the rows are the aborts of every room (asserted = false), so the answer
--   is "no assertion" rather than an empty table. Empty: no assertion and no abort with a room.
WITH params AS (
    SELECT
        getvariable('room')::BIGINT AS room,
        coalesce(getvariable('error_kind')::VARCHAR, 'assert_transfer_infos') AS error_kind,
        getvariable('since')::TIMESTAMPTZ AS since,
        getvariable('until')::TIMESTAMPTZ AS until
),
room_rids AS (
    SELECT DISTINCT bootstrap_room, rid FROM rooms
    WHERE bootstrap_room IS NOT NULL AND rid IS NOT NULL
    UNION
    SELECT DISTINCT bootstrap_room, rid FROM transfer_errors
    WHERE bootstrap_room IS NOT NULL AND rid IS NOT NULL
    UNION
    SELECT DISTINCT bootstrap_room, rid FROM aborts
    WHERE bootstrap_room IS NOT NULL AND rid IS NOT NULL
),
asserts AS (
    SELECT
        t.bootstrap_room,
        t.role,
        list_sort(list_distinct(list(t.tp_rank))) AS tp_ranks,
        count(*) AS n,
        min(t.ts) AS first_ts,
        max(t.ts) AS last_ts,
        arg_min(t.event_id, (t.ts, t.event_id)) AS event_id,
        arg_min(t.source, (t.ts, t.event_id)) AS source,
        arg_min(t.source_pos, (t.ts, t.event_id)) AS source_pos
    FROM transfer_errors AS t, params AS p
    WHERE t.error_kind = p.error_kind
      AND t.bootstrap_room IS NOT NULL
      AND (p.room IS NULL OR t.bootstrap_room = p.room)
      AND (p.since IS NULL OR t.ts >= p.since)
      AND (p.until IS NULL OR t.ts <= p.until)
    GROUP BY t.bootstrap_room, t.role
),
room_aborts AS (
    -- an abort with a room keeps it; one with only a rid takes the room(s) that rid is paired with
    SELECT a.*, a.bootstrap_room AS room FROM aborts AS a WHERE a.bootstrap_room IS NOT NULL
    UNION ALL BY NAME
    SELECT a.*, r.bootstrap_room AS room
    FROM aborts AS a JOIN room_rids AS r ON a.rid = r.rid
    WHERE a.bootstrap_room IS NULL
),
subjects AS (
    SELECT bootstrap_room, role, tp_ranks, n, first_ts, last_ts, event_id, source, source_pos, true AS asserted
    FROM asserts
    UNION ALL
    SELECT DISTINCT ra.room, NULL, NULL, 0, NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ, NULL, NULL, NULL, false
    FROM room_aborts AS ra, params AS p
    WHERE NOT EXISTS (SELECT 1 FROM asserts)
      AND (p.room IS NULL OR ra.room = p.room)
      AND (p.since IS NULL OR ra.ts >= p.since)
      AND (p.until IS NULL OR ra.ts <= p.until)
),
room_requests AS (
    SELECT s.bootstrap_room, q.event_id, q.ts, coalesce(q.request_id, q.rid) AS request_id, q.path, q.status,
           abs(epoch_us(q.ts) - epoch_us(coalesce(s.first_ts, q.ts))) AS distance
    FROM (SELECT DISTINCT bootstrap_room, first_ts FROM subjects) AS s
    JOIN (
        SELECT bootstrap_room AS room, q.* FROM requests AS q WHERE q.bootstrap_room IS NOT NULL
        UNION ALL BY NAME
        SELECT k.bootstrap_room AS room, q.* FROM requests AS q JOIN room_rids AS k ON q.rid = k.rid
        UNION ALL BY NAME
        -- a router's own request id in the OpenAI server's forms (chatcmpl-…, cmpl-…) is a rid of its own kind,
        -- never an SGLang engine rid, whatever text the two share
        SELECT k.bootstrap_room AS room, q.* FROM requests AS q JOIN room_rids AS k ON q.request_id = k.rid
        WHERE NOT regexp_matches(q.request_id, '^(?:chatcmpl|cmpl)-')
    ) AS q ON q.room = s.bootstrap_room
),
nearest_request AS (
    -- ties (the same request in two inputs) go to the lower event id: the same answer every run
    SELECT bootstrap_room,
           arg_min(event_id, (distance, event_id)) AS event_id,
           arg_min(ts, (distance, event_id)) AS ts,
           arg_min(request_id, (distance, event_id)) AS request_id,
           arg_min(path, (distance, event_id)) AS path,
           arg_min(status, (distance, event_id)) AS status
    FROM room_requests GROUP BY bootstrap_room
)
SELECT
    s.bootstrap_room,
    s.asserted,
    s.role AS assert_role,
    s.tp_ranks AS assert_tp_ranks,
    s.n AS assert_count,
    s.first_ts AS assert_first_ts,
    s.last_ts AS assert_last_ts,
    s.event_id AS assert_event_id,
    s.source AS assert_source,
    s.source_pos AS assert_source_pos,
    a.event_id AS abort_event_id,
    a.ts AS abort_ts,
    a.role AS abort_role,
    a.tp_rank AS abort_tp_rank,
    a.abort_kind,
    a.rid AS abort_rid,
    a.reason AS abort_reason,
    (epoch_us(s.first_ts) - epoch_us(a.ts)) / 1000.0 AS delta_ms,
    a.source AS abort_source,
    a.source_pos AS abort_source_pos,
    split_part(e.message, chr(10), 1) AS abort_message,
    r.event_id AS request_event_id,
    r.ts AS request_ts,
    r.request_id,
    r.path AS request_path,
    r.status AS request_status,
    CASE
        WHEN NOT s.asserted THEN 'no ' || p.error_kind || ' error in the data; abort of this room listed'
        WHEN a.event_id IS NULL THEN 'no abort seen for this room'
        WHEN a.ts <= s.first_ts THEN 'abort ' || round((epoch_us(s.first_ts) - epoch_us(a.ts)) / 1000.0, 1)
            || ' ms before the assertion'
        ELSE 'abort ' || round((epoch_us(a.ts) - epoch_us(s.first_ts)) / 1000.0, 1) || ' ms after the assertion'
    END AS finding
FROM subjects AS s
CROSS JOIN params AS p
LEFT JOIN room_aborts AS a
  ON a.room = s.bootstrap_room
 AND (s.asserted OR ((p.since IS NULL OR a.ts >= p.since) AND (p.until IS NULL OR a.ts <= p.until)))
LEFT JOIN events AS e ON e.event_id = a.event_id
LEFT JOIN nearest_request AS r ON r.bootstrap_room = s.bootstrap_room
ORDER BY s.asserted DESC, s.first_ts, s.bootstrap_room, s.role, a.ts, a.event_id
