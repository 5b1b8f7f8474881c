-- question: Which request records say a request failed: an answer 5xx (router response, access line) or
--   an ERROR record that prints no status (the router's "Failed to select PD pair", a router line cut
--   short, a router line pasted without its time and level)?
-- tables: requests, events
-- columns:
--   event_id  events.event_id of the record
--   ts        when (UTC; NULL when the record prints no time)
--   role      the role that logged it (router: what clients saw; an engine: its own HTTP server)
--   method    HTTP method (NULL when not printed)
--   path      request path (NULL when not printed)
--   status    the 5xx status; NULL for an ERROR record without one
--   failure   answered_5xx, error_record (an ERROR without a status: a failed request of its own), or
--             error_of_5xx (an ERROR without a status of a request_id that also has a 5xx answer)
--   message   the router line's message (the words after its target), NULL for an access line
--   source    file or journal of the record
--   source_pos  its line number, byte offset or journal cursor
-- parameters: none.
-- reading: one row per record (rule "failed request"). /health, /health_generate and /metrics and
--   health-check records are left out. An error record is a requests row at level ERROR or CRITICAL with
--   no status, or a record that is a bare Rust tracing body (`crate::module: file.rs:N: …`, as pasted
--   without its time and level) saying fail or error: role router when its target names a router or
--   gateway. A router that logs one request twice (its error, then its 5xx response) has two rows: the
--   error is error_of_5xx when they share a request_id (the same failed request, said once by impact).
WITH q AS (
    SELECT q.event_id, q.ts, q.role, q.method, q.path, q.status, q.level, q.message, q.source, q.source_pos,
           q.request_id IS NOT NULL AND coalesce(bool_or(q.status >= 500) OVER (PARTITION BY q.request_id), false) AS answered
    FROM requests q LEFT JOIN events e ON e.event_id = q.event_id
    WHERE coalesce(q.path, '') NOT IN ('/health', '/health_generate', '/metrics') AND coalesce(e.kind, '') <> 'health'
),
bare AS (  -- a router record pasted without its header: it starts at the tracing target
    SELECT event_id, ts,
           CASE WHEN regexp_extract(message, '^([a-z_][a-z0-9_]*(?:::[a-z0-9_]+)+): ', 1) ~ 'router|smg|gateway'
                THEN 'router' ELSE role END AS role,
           NULL::VARCHAR AS method, NULL::VARCHAR AS path, NULL::INTEGER AS status, 'error_record' AS failure,
           regexp_replace(split_part(message, chr(10), 1), '^[a-z_][a-z0-9_]*(?:::[a-z0-9_]+)+: \S+\.rs:\d+: ', '') AS message,
           source, source_pos
    -- every record but the batch lines alone (no batch line starts with a tracing target), read by two
    -- one-column filters: the scan skips the row groups a combined fleet's batch lines fill (issue 49)
    FROM (SELECT event_id, ts, role, message, source, source_pos FROM events WHERE kind IS DISTINCT FROM 'batch'
          UNION ALL
          SELECT event_id, ts, role, message, source, source_pos FROM events
          WHERE kind = 'batch' AND n_lines IS DISTINCT FROM 1) AS events
    WHERE message LIKE '%.rs:%' AND regexp_matches(message, '^[a-z_][a-z0-9_]*(?:::[a-z0-9_]+)+: \S+\.rs:\d+: [^\n]*(?i:fail|error)')
      AND event_id NOT IN (SELECT event_id FROM requests)
)
SELECT event_id, ts, role, method, path, status,
       CASE WHEN status >= 500 THEN 'answered_5xx' WHEN answered THEN 'error_of_5xx' ELSE 'error_record' END AS failure,
       message, source, source_pos
FROM q WHERE status >= 500 OR (status IS NULL AND level IN ('ERROR', 'CRITICAL'))
UNION ALL BY NAME SELECT * FROM bare
ORDER BY ts NULLS LAST, event_id
