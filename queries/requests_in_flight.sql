-- question: Which client requests were in flight at one moment (by default when an engine stopped
--   advancing), on which engine, and how did each end?
-- tables: requests, wedge (for the default moment)
-- columns:
--   at             the moment asked about (UTC)
--   request_id     the router's request id
--   method         HTTP method
--   path           request path
--   started_ts     when the router began it (its "started processing request" line, else its
--                  finish time minus its latency), UTC
--   finished_ts    when the router finished or failed it (UTC); NULL: no end in the data (a
--                  disconnect, a crash, a hang)
--   in_flight_s    how long it had been running at `at`, seconds
--   status         HTTP status the router answered (NULL when it never finished)
--   outcome        finished, failed or no end in the data
--   engine         the decode (else prefill) worker URL the router named for it, NULL when no line did
--   event_id       events.event_id of its first router line
--   source         file or journal of that line
--   source_pos     line number or journal cursor of that line
-- parameters:
--   at   the moment (TIMESTAMPTZ, UTC; default: the first stop that wedge calls wedged or stalled,
--        else the end of the data)
-- reading: one row per router request that had begun at or before `at` and had not ended before
--   it, oldest first. engine is known only for requests whose lines named a worker (the router logs
--   the pair on failures, not at INFO for every request). Empty: no router log, or nothing in flight.
WITH moment AS (
    SELECT coalesce(
        getvariable('at')::TIMESTAMPTZ,
        (SELECT min(stopped_ts) FROM wedge WHERE verdict LIKE 'wedged%' OR verdict LIKE 'stalled%'),
        (SELECT max(ts) FROM requests)
    ) AS at
),
per_request AS (
    SELECT request_id,
           any_value(method) AS method, any_value(path) AS path,
           coalesce(min(ts) FILTER (WHERE message LIKE 'started processing%'),
                    min(ts - to_microseconds(CAST(latency_ms * 1000 AS BIGINT))) FILTER (WHERE latency_ms IS NOT NULL),
                    min(ts)) AS started_ts,
           max(ts) FILTER (WHERE message LIKE 'finished processing%' OR status IS NOT NULL
                           OR message LIKE '%failed%') AS finished_ts,
           max(status) AS status,
           bool_or(status >= 400 OR message LIKE '%failed%') AS failed,
           coalesce(any_value(decode_url), any_value(prefill_url)) AS engine,
           arg_min(event_id, (ts, event_id)) AS event_id,
           arg_min(source, (ts, event_id)) AS source,
           arg_min(source_pos, (ts, event_id)) AS source_pos
    FROM requests
    WHERE role = 'router' AND request_id IS NOT NULL
    GROUP BY request_id
)
SELECT m.at, r.request_id, r.method, r.path, r.started_ts, r.finished_ts,
       round((epoch_us(m.at) - epoch_us(r.started_ts)) / 1e6, 3) AS in_flight_s,
       r.status,
       CASE WHEN r.finished_ts IS NULL THEN 'no end in the data'
            WHEN r.failed THEN 'failed' ELSE 'finished' END AS outcome,
       r.engine, r.event_id, r.source, r.source_pos
FROM per_request AS r, moment AS m
WHERE r.started_ts <= m.at AND (r.finished_ts IS NULL OR r.finished_ts > m.at)
ORDER BY r.started_ts, r.request_id
