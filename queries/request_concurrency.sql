-- question: How many requests were running on its engine when each request finished, and did the
--   answer it returned carry tool-call markup?
-- tables: request_log, batches
-- columns:
--   ts                the Finish line's time (UTC)
--   host              host of the engine
--   role              the engine (prefill, decode, engine)
--   rid               the request id
--   bootstrap_room    its room (PD), else NULL
--   finish_type       stop, length, abort
--   status_code       finish_reason's status code (NULL when none)
--   completion_tokens tokens generated
--   e2e_latency_s     end-to-end latency, seconds
--   text_logged       true when the line holds the returned text (--log-requests-level 2 or 3)
--   markup_leak       the tool-call markup family in the text (deepseek_tool_calls, deepseek_dsml), else NULL
--   markup            the first markup token, as printed
--   running_req       #running-req of the engine's last batch line at or before ts, counted once per
--                     DP group (its TP ranks log the same batch) and summed over the DP groups whose last
--                     line is at most max_batch_age_s old; NULL when none is (unknown)
--   dp_groups         how many DP groups were counted
--   band              running_req as a band: 0-1, 2-4, 5-16, 17+, or unknown
--   batch_ts          the freshest of the engine's last batch lines (UTC)
--   batch_age_s       ts - batch_ts, seconds
--   batch_event_id    events.event_id of that batch line
--   event_id          events.event_id of the Finish line
--   source            its file or journal
--   source_pos        its position
-- parameters:
--   max_batch_age_s   a DP group's last batch line counts when at most this many seconds before the
--                     Finish line (DOUBLE; default 60): SGLang prints no batch line while idle
-- reading: one row per Finish line, in time order. The engine is the host and role of the Finish
--   line (the HTTP server's); its batch lines on the same host count (a DP group on another node does
--   not: multi-node DP attention is undercounted). Decode prints a batch line every
--   --decode-log-interval steps, so running_req is the count at that line, up to a few seconds before.
--   Reads request_log and only the batch lines of the roles and the time span of the Finish lines.
WITH params AS (
    SELECT coalesce(getvariable('max_batch_age_s')::DOUBLE, 60.0) AS max_age_s
),
fin AS (
    SELECT event_id, ts, host, role, rid, bootstrap_room, finish_type, status_code, completion_tokens,
           e2e_latency_s, output_text IS NOT NULL AS text_logged, markup_leak, markup, source, source_pos,
           coalesce(host, '') AS h,
           -- (ts, event_id) packed as in wedge: every batch of the same µs counts as before the line
           epoch_us(ts)::HUGEINT * 9007199254740992 + 9007199254740991 AS key,
           epoch_us(ts) // 1000000 AS sec
    FROM request_log
    WHERE event = 'finished' AND ts IS NOT NULL
),
span AS (
    SELECT min(f.ts) - to_microseconds((max(p.max_age_s) * 1e6)::BIGINT) AS lo, max(f.ts) AS hi
    FROM fin AS f, params AS p
),
b AS NOT MATERIALIZED (
    -- the batch lines the Finish lines need: their roles, their span (the bounds skip row groups);
    -- read twice from Parquet rather than held in memory (materialising millions of rows cost more)
    SELECT coalesce(bt.host, '') AS h, bt.role, coalesce(bt.dp_rank, -1) AS dp, bt.ts, bt.event_id, bt.running_req,
           epoch_us(bt.ts)::HUGEINT * 9007199254740992 + bt.event_id AS key,
           epoch_us(bt.ts) // 1000000 AS sec
    FROM batches AS bt
    WHERE bt.running_req IS NOT NULL
      AND bt.ts >= (SELECT lo FROM span) AND bt.ts <= (SELECT hi FROM span)
      AND bt.role IN (SELECT DISTINCT role FROM fin)
),
b_sec AS (
    -- each DP group's last batch of each second: a day of millions of batch lines becomes one row
    -- per second, and no sort of every batch line is needed (an ASOF join over them took seconds)
    SELECT h, role, dp, sec, max(key) AS key, arg_max(ts, key) AS ts, arg_max(event_id, key) AS event_id,
           arg_max(running_req, key) AS running_req
    FROM b GROUP BY h, role, dp, sec
),
fx AS (
    -- each Finish line once per DP group of its engine
    SELECT f.event_id, f.ts, f.h, f.role, f.key, f.sec, g.dp
    FROM fin AS f JOIN (SELECT DISTINCT h, role, dp FROM b_sec) AS g ON g.h = f.h AND g.role = f.role
),
same_sec AS (
    -- the group's last batch at or before the line within the line's own second
    SELECT fx.event_id, fx.dp, max(b.key) AS batch_key, arg_max(b.ts, b.key) AS batch_ts,
           arg_max(b.event_id, b.key) AS batch_event_id, arg_max(b.running_req, b.key) AS running_req
    FROM fx JOIN b ON b.h = fx.h AND b.role = fx.role AND b.dp = fx.dp AND b.sec = fx.sec AND b.key <= fx.key
    GROUP BY fx.event_id, fx.dp
),
earlier AS (
    -- else its last batch of an earlier second
    SELECT fx.event_id, fx.dp, s.key AS batch_key, s.ts AS batch_ts, s.event_id AS batch_event_id, s.running_req
    FROM fx ASOF JOIN b_sec AS s ON fx.h = s.h AND fx.role = s.role AND fx.dp = s.dp AND fx.sec > s.sec
),
last_b AS (
    SELECT fx.event_id, fx.ts,
           coalesce(m.batch_ts, e.batch_ts) AS batch_ts,
           coalesce(m.batch_event_id, e.batch_event_id) AS batch_event_id,
           CASE WHEN m.batch_key IS NOT NULL THEN m.running_req ELSE e.running_req END AS running_req,
           coalesce(m.batch_key, e.batch_key) AS batch_key
    FROM fx
    LEFT JOIN same_sec AS m ON m.event_id = fx.event_id AND m.dp = fx.dp
    LEFT JOIN earlier AS e ON e.event_id = fx.event_id AND e.dp = fx.dp
    WHERE m.batch_key IS NOT NULL OR e.batch_key IS NOT NULL
),
per AS (
    SELECT l.event_id,
           sum(l.running_req) FILTER (WHERE fresh)::BIGINT AS running_req,
           count(*) FILTER (WHERE fresh) AS dp_groups,
           max(l.batch_ts) AS batch_ts,
           arg_max(l.batch_event_id, l.batch_key) AS batch_event_id
    FROM (SELECT *, epoch_us(ts) - epoch_us(batch_ts) <= (SELECT max_age_s FROM params) * 1e6 AS fresh
          FROM last_b) AS l
    GROUP BY l.event_id
)
SELECT f.ts, f.host, f.role, f.rid, f.bootstrap_room, f.finish_type, f.status_code, f.completion_tokens,
       f.e2e_latency_s, f.text_logged, f.markup_leak, f.markup,
       CASE WHEN coalesce(p.dp_groups, 0) > 0 THEN p.running_req END AS running_req,
       coalesce(p.dp_groups, 0) AS dp_groups,
       CASE WHEN coalesce(p.dp_groups, 0) = 0 THEN 'unknown'
            WHEN p.running_req <= 1 THEN '0-1'
            WHEN p.running_req <= 4 THEN '2-4'
            WHEN p.running_req <= 16 THEN '5-16'
            ELSE '17+' END AS band,
       p.batch_ts,
       (epoch_us(f.ts) - epoch_us(p.batch_ts)) / 1e6 AS batch_age_s,
       p.batch_event_id,
       f.event_id, f.source, f.source_pos
FROM fin AS f LEFT JOIN per AS p USING (event_id)
ORDER BY f.ts, f.event_id
