-- question: What did an incident do to requests between two times: how many were answered with an
--   error (5xx), how many were aborted, how many answered fine, per role that logged them?
-- tables: requests, aborts, request_errors, transfer_errors, watchdogs, events
-- columns:
--   role       the role that logged the requests or aborts (router, prefill, decode, engine)
--   requests   HTTP request lines in the window, /health and /metrics left out
--   failed     of them answered 5xx
--   client_err of them answered 4xx
--   ok         of them answered 2xx
--   statuses   the 5xx statuses with counts, e.g. "502×137"
--   first_failed_ts  the first 5xx (UTC)
--   last_failed_ts   the last 5xx (UTC)
--   errors     failed requests seen only as an ERROR record without a status (request_errors'
--              error_record: e.g. "Failed to select PD pair")
--   aborted    distinct requests (rid, else room) aborted in the window
--   transfer_failed  distinct requests (rid, else room) a KV transfer or bootstrap failure names
--              (transfer_errors), in the window
--   in_stuck_batch   distinct requests (rid) of a batch a watchdog printed when it fired (watchdogs.rid:
--              the batch's first rid), in the window
--   untimed_failed  5xx answers whose record prints no time, left out of a window (since or until set):
--              they cannot be placed in it, so the counts above leave them out and this says how many
--   probe_failed  answers 5xx to the health and metrics probes (/health, /health_generate, /metrics), which
--              requests and failed leave out: a probe answered 503 is a server saying it is unhealthy
--   zoned      whether the 5xx answers' records print their zone (false: first/last_failed_ts are times
--              printed without a zone, stated as printed; NULL without a 5xx)
-- parameters:
--   since   window start (TIMESTAMPTZ, UTC; default: the data's start)
--   until   window end (TIMESTAMPTZ, UTC; default: the data's end)
-- reading: one row per role with requests or aborts in the window. The router's rows are what clients
--   saw; an engine's rows are its own HTTP server's. A request whose line printed no status is counted
--   in requests only. Without since and until, records that print no time count too (the whole data).
WITH w AS (
    SELECT coalesce(getvariable('since')::TIMESTAMPTZ, TIMESTAMPTZ '0001-01-01 00:00:00+00') AS since,
           coalesce(getvariable('until')::TIMESTAMPTZ, TIMESTAMPTZ '9999-12-31 00:00:00+00') AS until,
           getvariable('since') IS NULL AND getvariable('until') IS NULL AS whole
),
r AS (
    SELECT q.role, count(*) AS requests,
           count(*) FILTER (WHERE status >= 500) AS failed,
           count(*) FILTER (WHERE status BETWEEN 400 AND 499) AS client_err,
           count(*) FILTER (WHERE status BETWEEN 200 AND 299) AS ok,
           min(ts) FILTER (WHERE status >= 500) AS first_failed_ts, max(ts) FILTER (WHERE status >= 500) AS last_failed_ts
    FROM requests q, w
    WHERE (q.ts BETWEEN w.since AND w.until OR (q.ts IS NULL AND w.whole)) AND coalesce(q.path, '') NOT IN ('/health', '/health_generate', '/metrics')
    GROUP BY q.role
),
s AS (  -- the 5xx answers: statuses, and whether their records print their zone (events.zoned)
    SELECT role, string_agg(status || '×' || n, ', ' ORDER BY n DESC) AS statuses, bool_and(zoned) AS zoned
    FROM (SELECT q.role, q.status, count(*) AS n,
                 bool_and(e.zoned IS DISTINCT FROM false) FILTER (WHERE q.ts IS NOT NULL) AS zoned
          FROM requests q CROSS JOIN w LEFT JOIN events e ON e.event_id = q.event_id
          WHERE (q.ts BETWEEN w.since AND w.until OR (q.ts IS NULL AND w.whole)) AND q.status >= 500 GROUP BY ALL)
    GROUP BY role
),
u AS (  -- the 5xx answers a window leaves out because their record prints no time
    SELECT q.role, count(*) AS untimed_failed FROM requests q, w
    WHERE q.ts IS NULL AND NOT w.whole AND q.status >= 500
      AND coalesce(q.path, '') NOT IN ('/health', '/health_generate', '/metrics')
    GROUP BY q.role
),
x AS (
    SELECT role, count(*) AS errors FROM request_errors, w
    WHERE failure = 'error_record' AND (ts BETWEEN w.since AND w.until OR (ts IS NULL AND w.whole)) GROUP BY role
),
a AS (
    SELECT role, count(DISTINCT coalesce(rid, CAST(bootstrap_room AS VARCHAR))) AS aborted
    FROM aborts, w WHERE ts BETWEEN w.since AND w.until OR (ts IS NULL AND w.whole) GROUP BY role
),
t AS (
    SELECT role, count(DISTINCT coalesce(rid, CAST(bootstrap_room AS VARCHAR))) AS transfer_failed
    FROM transfer_errors, w
    WHERE (rid IS NOT NULL OR bootstrap_room IS NOT NULL)
      AND (ts BETWEEN w.since AND w.until OR (ts IS NULL AND w.whole)) GROUP BY role
),
p AS (  -- 5xx answers to the probes left out of r (sglang#10856, batch22/05: GET /health 503)
    SELECT q.role, count(*) AS probe_failed FROM requests q, w
    WHERE (q.ts BETWEEN w.since AND w.until OR (q.ts IS NULL AND w.whole)) AND q.status >= 500
      AND coalesce(q.path, '') IN ('/health', '/health_generate', '/metrics')
    GROUP BY q.role
),
wd AS (
    SELECT role, count(DISTINCT rid) AS in_stuck_batch
    FROM watchdogs, w
    WHERE rid IS NOT NULL AND (ts BETWEEN w.since AND w.until OR (ts IS NULL AND w.whole)) GROUP BY role
)
SELECT coalesce(r.role, a.role, x.role, t.role, wd.role, u.role, p.role) AS role, coalesce(r.requests, 0) AS requests, coalesce(r.failed, 0) AS failed,
       coalesce(r.client_err, 0) AS client_err, coalesce(r.ok, 0) AS ok, s.statuses,
       r.first_failed_ts, r.last_failed_ts, coalesce(x.errors, 0) AS errors, coalesce(a.aborted, 0) AS aborted,
       coalesce(t.transfer_failed, 0) AS transfer_failed, coalesce(wd.in_stuck_batch, 0) AS in_stuck_batch,
       coalesce(u.untimed_failed, 0) AS untimed_failed, coalesce(p.probe_failed, 0) AS probe_failed,
       CASE WHEN r.failed > 0 THEN s.zoned END AS zoned
FROM r FULL JOIN a ON a.role IS NOT DISTINCT FROM r.role
FULL JOIN x ON x.role IS NOT DISTINCT FROM coalesce(r.role, a.role)
FULL JOIN t ON t.role IS NOT DISTINCT FROM coalesce(r.role, a.role, x.role)
FULL JOIN wd ON wd.role IS NOT DISTINCT FROM coalesce(r.role, a.role, x.role, t.role)
FULL JOIN u ON u.role IS NOT DISTINCT FROM coalesce(r.role, a.role, x.role, t.role, wd.role)
FULL JOIN p ON p.role IS NOT DISTINCT FROM coalesce(r.role, a.role, x.role, t.role, wd.role, u.role)
LEFT JOIN s ON s.role IS NOT DISTINCT FROM coalesce(r.role, a.role, x.role, t.role, wd.role)
ORDER BY role
