-- question: When did each role stop advancing (no batch on any of its ranks), did the other role go
--   on meanwhile, how long until the restart or the next batch, and did /health keep answering 200?
-- tables: batch_seconds, batches, events, lifecycle, processes, requests
-- columns:
--   role               the role that stopped (prefill or decode)
--   stopped_ts         its last batch before the gap, on any rank: from here no rank advanced (UTC)
--   first_rank_stopped_ts  the earliest last batch among the ranks that were advancing (UTC)
--   stop_spread_s      stopped_ts - first_rank_stopped_ts, seconds: 0 = all ranks stopped together
--   ranks_stopped      how many ranks were advancing just before (batch within min_gap_s of stopped_ts)
--   rank_labels        those ranks, e.g. [TP0, TP1, TP2, TP3]
--   running_req_at_stop  #running-req of the last batches, counted once per DP group (its TP ranks
--                      log the same batch) and summed over DP groups (>0: work was pending)
--   resumed_ts         next batch of the role after the gap (UTC; NULL: none in the data)
--   resumed_event_id   events.event_id of that batch
--   stalled_s          from stopped_ts to resumed_ts, or to the end of the data, seconds
--   restart_ts         the restart of the role after stopped_ts (UTC): the first word of its old run
--                      going down (systemd's "Stopping", the HTTP server's "Shutting down") before
--                      its first new run, else that new run's start (a new process's first record;
--                      in a container's log a new run of the container; "Started server process")
--   restart_event_id   events.event_id of that record
--   until_restart_s    restart_ts - stopped_ts, seconds
--   ready_ts           first "The server is fired up and ready to roll!" of the role after the stop and
--                      before its next stop (UTC)
--   ready_event_id     events.event_id of that line
--   typical_gap_s      the role's usual pause between batches: 99th percentile of its gaps over 1 s
--   other_role         the other engine
--   other_role_batches batches of the other role between stopped_ts and the restart (or resumption)
--   other_role_last_ts the other role's last batch in that span (UTC)
--   other_role_continued  true when the other role advanced after this one stopped
--   health_checks      /health requests answered by this role between stopped_ts and the restart
--   health_200         how many of them returned 200
--   health_not_200     how many returned another status
--   health_failures    "Health check failed" records (events.kind = health, level WARNING/ERROR)
--   health_kept_200    true when /health was asked and answered only 200 meanwhile
--   verdict            the row in words: "wedged: …" (stopped with work waiting while the other role
--                      went on and /health kept answering 200), "stalled: …", "restarted: …" (no
--                      batch until a restart), "idle: …" (no running and no queued request at its
--                      last batch lines: nothing to advance), "no batches: …" (stopped or not logged)
--   event_id           events.event_id of the last batch (the stop)
--   source             its file or journal
--   source_pos         its position
-- parameters:
--   min_gap_s  a stop is a gap without batches of at least this many seconds (DOUBLE; default 60) …
--   gap_factor … and at least gap_factor times the role's usual pause (the 99th percentile of its
--              gaps over 1 s; DOUBLE; default 3), unless a restart of the role falls into it
--   since      only batches at or after this time (TIMESTAMPTZ, UTC)
--   until      only batches and records at or before this time (TIMESTAMPTZ, UTC)
-- reading: one row per stop of a role, in time order. A wedge is a row with ranks_stopped equal to the
--   engine's rank count, stop_spread_s near 0, running_req_at_stop > 0, other_role_continued true and
--   health_kept_200 true: the engine looked healthy but no batch advanced until the restart. A role's
--   batches ending at the end of the data count as a stop when the data goes on min_gap_s longer.
--   SGLang prints no batch line while idle, so a row with running_req_at_stop 0 and the other role
--   also stopped is more likely an idle period. Empty: no gap of min_gap_s in any role's batches.
WITH params AS (
    SELECT
        coalesce(getvariable('min_gap_s')::DOUBLE, 60.0) AS min_gap_s,
        coalesce(getvariable('gap_factor')::DOUBLE, 3.0) AS gap_factor,
        getvariable('since')::TIMESTAMPTZ AS since,
        getvariable('until')::TIMESTAMPTZ AS until
),
b AS (
    -- only the columns used below: this CTE is read several times and a day holds millions of batches
    SELECT bt.role, bt.ts, bt.event_id
    FROM batches AS bt, params AS p
    WHERE bt.role IN ('prefill', 'decode')
      AND (p.since IS NULL OR bt.ts >= p.since) AND (p.until IS NULL OR bt.ts <= p.until)
),
data_end AS (
    -- getvariable() inline, not params: without `until` the filter folds away and max(ts) comes from
    -- the Parquet statistics instead of a scan
    SELECT max(e.ts) AS ts FROM events AS e
    WHERE getvariable('until') IS NULL OR e.ts <= getvariable('until')::TIMESTAMPTZ
),
buckets AS (
    -- first and last batch of each role per bucket of least(1 s, min_gap_s): two batches in one bucket
    -- are less than a bucket apart, so every gap this query reads (over 1 s, or of min_gap_s) lies
    -- between one bucket's last batch and the next bucket's first. Sorting buckets, not batches,
    -- keeps the query fast on a day of millions of batches. With 1 s buckets and no since/until they
    -- come from batch_seconds, summed at ingest (grouped again: an --append adds rows for a second);
    -- otherwise from b. The getvariable() conditions fold to constants: only one side is read.
    SELECT role, min(lo_ts) AS lo_ts, max(hi_ts) AS hi_ts,
           (min(epoch_us(lo_ts)::HUGEINT * 9007199254740992 + lo_event_id) & 9007199254740991)::BIGINT AS lo_id,
           (max(epoch_us(hi_ts)::HUGEINT * 9007199254740992 + hi_event_id) & 9007199254740991)::BIGINT AS hi_id
    FROM batch_seconds
    WHERE coalesce(getvariable('min_gap_s')::DOUBLE, 60.0) >= 1.0
      AND getvariable('since') IS NULL AND getvariable('until') IS NULL
    GROUP BY role, sec
    UNION ALL
    -- (ts, event_id) packed in one HUGEINT, ordered as the pair: µs << 53 | event_id (< 2^53)
    -- (its low 53 bits, the event_id, taken by a mask: a HUGEINT modulo is a long division, 0.1 CPU s
    -- of a 64-host fleet's 97,000 buckets)
    SELECT b.role, min(b.ts) AS lo_ts, max(b.ts) AS hi_ts,
           (min(b.key) & 9007199254740991)::BIGINT AS lo_id, (max(b.key) & 9007199254740991)::BIGINT AS hi_id
    FROM (SELECT role, ts, epoch_us(ts)::HUGEINT * 9007199254740992 + event_id AS key FROM b) AS b, params AS p
    WHERE NOT (coalesce(getvariable('min_gap_s')::DOUBLE, 60.0) >= 1.0
               AND getvariable('since') IS NULL AND getvariable('until') IS NULL)
    GROUP BY b.role, epoch_us(b.ts) // greatest(least(p.min_gap_s, 1.0) * 1e6, 1)::BIGINT
),
stream AS (
    -- per role, each bucket's last batch and the next bucket's first: the gaps between batches
    SELECT role, hi_ts AS ts, hi_id AS event_id,
           lead(lo_ts) OVER w AS next_ts,
           lead(lo_id) OVER w AS next_event_id
    FROM buckets
    WINDOW w AS (PARTITION BY role ORDER BY lo_ts, lo_id)
),
cadence AS (
    -- the role's usual pause: the 99th percentile of its gaps longer than a second
    SELECT role,
           coalesce(quantile_cont((epoch_us(next_ts) - epoch_us(ts)) / 1e6, 0.99)
                        FILTER (WHERE epoch_us(next_ts) - epoch_us(ts) > 1e6), 0) AS typical_gap_s
    FROM stream GROUP BY role
),
candidates AS (
    SELECT s.role, s.ts AS stopped_ts, s.next_ts AS resumed_ts, s.next_event_id AS resumed_event_id, s.event_id,
           coalesce(s.next_ts, d.ts) AS gap_end, c.typical_gap_s
    FROM stream AS s JOIN cadence AS c USING (role), data_end AS d, params AS p
    WHERE epoch_us(coalesce(s.next_ts, d.ts)) - epoch_us(s.ts) >= p.min_gap_s * 1e6
),
procs AS (
    -- each process's first record, from the per-process summary ingest writes
    SELECT role, host, boot_id, pid, min(first_ts) AS first_ts, arg_min(first_event_id, (first_ts, first_event_id)) AS event_id
    -- (a container's log names no pid: its run, boot_id, is the process there)
    FROM processes WHERE role IN ('prefill', 'decode') AND (pid IS NOT NULL OR boot_id IS NOT NULL)
    GROUP BY ALL
),
starts AS (
    -- a new run of the role: a new process's first record, or systemd or its HTTP server saying it started
    SELECT role, first_ts AS ts, event_id FROM procs
    UNION ALL
    SELECT role, ts, event_id FROM lifecycle
    WHERE role IN ('prefill', 'decode') AND event IN ('started', 'server_started')
),
first_start AS (
    SELECT g.role, g.stopped_ts, min(st.ts) AS start_ts, arg_min(st.event_id, (st.ts, st.event_id)) AS start_event_id
    FROM candidates AS g JOIN starts AS st
      ON st.role = g.role AND st.ts > g.stopped_ts AND st.ts <= g.gap_end
    GROUP BY ALL
),
restarts AS (
    -- dated from the old run going down, when the data says so before the new run starts
    SELECT n.role, n.stopped_ts,
           coalesce(min(sp.ts), any_value(n.start_ts)) AS restart_ts,
           coalesce(arg_min(sp.event_id, (sp.ts, sp.event_id)), any_value(n.start_event_id)) AS restart_event_id
    FROM first_start AS n LEFT JOIN lifecycle AS sp
      ON sp.role = n.role AND sp.event IN ('stopping', 'server_stopping')
     AND sp.ts > n.stopped_ts AND sp.ts <= n.start_ts
    GROUP BY n.role, n.stopped_ts
),
gaps AS (
    -- a stop: a gap of gap_factor times the usual pause or more, or one a restart falls into
    SELECT g.* FROM candidates AS g CROSS JOIN params AS p LEFT JOIN restarts AS r USING (role, stopped_ts)
    WHERE r.restart_ts IS NOT NULL
       OR epoch_us(g.gap_end) - epoch_us(g.stopped_ts) >= p.gap_factor * g.typical_gap_s * 1e6
),
gap_seconds AS (
    -- the seconds of min_gap_s before each stop: the batches of rank_last are found by equal second
    SELECT g.role, g.stopped_ts,
           unnest(range((epoch_us(g.stopped_ts) - (p.min_gap_s * 1e6)::BIGINT) // 1000000,
                        epoch_us(g.stopped_ts) // 1000000 + 1)) AS sec
    FROM gaps AS g, params AS p
),
rank_last AS (
    -- per gap, each rank's last batch at or before the stop, if it came within min_gap_s of it
    SELECT g.role, g.stopped_ts, b.host, b.dp_rank, b.pp_rank, b.tp_rank, b.ep_rank,
           concat_ws(' ', 'DP' || b.dp_rank, 'PP' || b.pp_rank, 'TP' || b.tp_rank, 'EP' || b.ep_rank) AS rank_label,
           max(b.ts) AS last_ts, arg_max(b.running_req, b.ts) AS running_req,
           arg_max(b.queue_req, b.ts) AS queue_req
    FROM gap_seconds AS g, params AS p
    JOIN (
        -- the batches of the seconds before any stop only (the bounds let the scan skip row groups)
        SELECT * FROM batches
        WHERE ts >= (SELECT make_timestamptz(min(sec) * 1000000) FROM gap_seconds)
          AND ts <= (SELECT max(stopped_ts) FROM gaps)
    ) AS b ON b.role = g.role AND epoch_us(b.ts) // 1000000 = g.sec AND b.ts <= g.stopped_ts
          AND epoch_us(b.ts) > epoch_us(g.stopped_ts) - p.min_gap_s * 1e6
          AND (p.since IS NULL OR b.ts >= p.since)
    GROUP BY ALL
),
running AS (
    -- the TP ranks of one DP group log the same batch: count its requests once, then add the groups
    SELECT role, stopped_ts, sum(group_running)::BIGINT AS running_req_at_stop,
           sum(group_queued)::BIGINT AS queue_req_at_stop
    FROM (SELECT role, stopped_ts, host, dp_rank, pp_rank, max(running_req) AS group_running,
                 max(queue_req) AS group_queued
          FROM rank_last GROUP BY ALL)
    GROUP BY ALL
),
ranks AS (
    SELECT r.role, r.stopped_ts,
           min(r.last_ts) AS first_rank_stopped_ts,
           count(*) AS ranks_stopped,
           list(r.rank_label ORDER BY r.host, r.dp_rank, r.pp_rank, r.tp_rank, r.ep_rank) AS rank_labels,
           any_value(n.running_req_at_stop) AS running_req_at_stop,
           any_value(n.queue_req_at_stop) AS queue_req_at_stop
    FROM rank_last AS r JOIN running AS n USING (role, stopped_ts)
    GROUP BY r.role, r.stopped_ts
),
spans AS (
    SELECT g.*, r.restart_ts, r.restart_event_id, coalesce(r.restart_ts, g.gap_end) AS span_end,
           CASE g.role WHEN 'prefill' THEN 'decode' ELSE 'prefill' END AS other_role
    FROM gaps AS g LEFT JOIN restarts AS r USING (role, stopped_ts)
),
other AS (
    -- batches itself, not the CTE b: read once, b is not materialized (the span's own bounds apply)
    SELECT s.role, s.stopped_ts, count(bt.ts) AS other_role_batches, max(bt.ts) AS other_role_last_ts
    FROM spans AS s CROSS JOIN params AS p
    LEFT JOIN batches AS bt ON bt.role = s.other_role AND bt.ts > s.stopped_ts AND bt.ts <= s.span_end
     AND (p.since IS NULL OR bt.ts >= p.since) AND (p.until IS NULL OR bt.ts <= p.until)
    GROUP BY ALL
),
health AS (
    SELECT s.role, s.stopped_ts,
           count(q.event_id) AS health_checks,
           count(q.event_id) FILTER (WHERE q.status = 200) AS health_200,
           count(q.event_id) FILTER (WHERE q.status IS DISTINCT FROM 200) AS health_not_200
    FROM spans AS s LEFT JOIN requests AS q
      ON q.role = s.role AND q.path LIKE '/health%' AND q.ts > s.stopped_ts AND q.ts <= s.span_end
    GROUP BY ALL
),
ready AS (
    -- each process's first "ready to roll" line, from the per-process summary ingest writes
    SELECT s.role, s.stopped_ts, min(e.ready_ts) AS ready_ts, arg_min(e.ready_event_id, (e.ready_ts, e.ready_event_id)) AS ready_event_id
    FROM (SELECT *, lead(stopped_ts) OVER (PARTITION BY role ORDER BY stopped_ts) AS next_stop FROM spans) AS s
    JOIN processes AS e
      ON e.role = s.role AND e.ready_ts > s.stopped_ts AND e.ready_ts <= coalesce(s.next_stop, 'infinity'::TIMESTAMPTZ)
    GROUP BY ALL
),
health_fail AS (
    -- the events inside any span only (the bounds let the scan skip row groups of other hours)
    SELECT s.role, s.stopped_ts, count(e.event_id) AS health_failures
    FROM spans AS s LEFT JOIN (
        SELECT e.event_id, e.role, e.ts FROM events AS e
        WHERE e.kind = 'health' AND e.level IN ('WARNING', 'ERROR', 'CRITICAL')
          AND e.ts > (SELECT min(stopped_ts) FROM spans) AND e.ts <= (SELECT max(span_end) FROM spans)
    ) AS e ON e.role = s.role AND e.ts > s.stopped_ts AND e.ts <= s.span_end
    GROUP BY ALL
)
SELECT
    s.role,
    s.stopped_ts,
    k.first_rank_stopped_ts,
    (epoch_us(s.stopped_ts) - epoch_us(k.first_rank_stopped_ts)) / 1e6 AS stop_spread_s,
    k.ranks_stopped,
    k.rank_labels,
    k.running_req_at_stop,
    s.resumed_ts,
    s.resumed_event_id,
    (epoch_us(s.gap_end) - epoch_us(s.stopped_ts)) / 1e6 AS stalled_s,
    s.restart_ts,
    s.restart_event_id,
    (epoch_us(s.restart_ts) - epoch_us(s.stopped_ts)) / 1e6 AS until_restart_s,
    rd.ready_ts,
    rd.ready_event_id,
    s.typical_gap_s,
    s.other_role,
    o.other_role_batches,
    o.other_role_last_ts,
    o.other_role_batches > 0 AS other_role_continued,
    h.health_checks,
    h.health_200,
    h.health_not_200,
    f.health_failures,
    h.health_checks > 0 AND h.health_not_200 = 0 AND f.health_failures = 0 AS health_kept_200,
    CASE
        WHEN coalesce(k.running_req_at_stop, 0) = 0 AND coalesce(k.queue_req_at_stop, 0) = 0
             AND s.restart_ts IS NULL AND k.ranks_stopped IS NOT NULL
            THEN 'idle: ' || s.role || ' had no running and no queued request at its last batch lines'
        WHEN o.other_role_batches > 0 AND h.health_checks > 0 AND h.health_not_200 = 0 AND f.health_failures = 0
            THEN 'wedged: ' || s.role || ' stopped on ' || k.ranks_stopped || ' ranks while ' || s.other_role
                 || ' went on and /health kept answering 200'
        WHEN o.other_role_batches > 0
            THEN 'stalled: ' || s.role || ' stopped on ' || k.ranks_stopped || ' ranks while ' || s.other_role || ' went on'
        WHEN coalesce(k.running_req_at_stop, 0) > 0
            THEN 'stalled: ' || s.role || ' stopped with requests running; ' || s.other_role || ' did not advance either'
        WHEN s.restart_ts IS NOT NULL
            THEN 'restarted: ' || s.role || ' advanced no batch in the '
                 || round((epoch_us(s.restart_ts) - epoch_us(s.stopped_ts)) / 1e6, 1) || ' s before its restart'
        ELSE 'no batches: idle, stopped or not logged'
    END AS verdict,
    s.event_id,
    lb.source,
    lb.source_pos
FROM spans AS s
JOIN ranks AS k USING (role, stopped_ts)
JOIN other AS o USING (role, stopped_ts)
JOIN health AS h USING (role, stopped_ts)
JOIN health_fail AS f USING (role, stopped_ts)
LEFT JOIN ready AS rd USING (role, stopped_ts)
JOIN batches AS lb ON lb.event_id = s.event_id
ORDER BY s.stopped_ts, s.role
